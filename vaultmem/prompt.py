"""Context injection: the compact block of memories an agent hook puts in front of a session.

Order: durable tiers first (L3, then L2), then the rest by strength times
retrievability, so what the agent should hold on to leads and the block can
be cut anywhere. Each line carries the id, so the agent can grade what it used.
`max_tokens` is a budget in approximate tokens (4 characters each).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .config import Config
from .model import Note
from .schedule import label, retrievability

CHARS_PER_TOKEN = 4
MAX_LINE_CHARS = 400
HEADER = "Memories from vaultmem (id, namespace, label). Grade what you use: vaultmem grade ID good|again"


@dataclass(frozen=True)
class PromptLine:
    note: Note
    label: str
    text: str


def prompt_lines(notes: list[Note], now: datetime, config: Config, namespace: str | None = None) -> list[PromptLine]:
    """Visible notes in prompt order, each rendered as one line."""
    def rank(note: Note):
        r = retrievability(note, now, config)
        tier_order = {"L3": 0, "L2": 1}.get(note.tier, 2)
        return (tier_order, -(note.strength * (1.0 if r is None else r)), note.created)

    chosen = [n for n in notes if not n.is_hidden and (not namespace or n.namespace == namespace
                                                       or n.namespace.startswith(namespace + "/"))]
    lines = []
    for note in sorted(chosen, key=rank):
        word = label(note, now, config)
        text = note.summary
        if len(text) > MAX_LINE_CHARS:
            text = text[: MAX_LINE_CHARS - 1] + "…"
        lines.append(PromptLine(note, word, f"- [{note.id}] ({note.namespace}, {note.tier}, {word}) {text}"))
    return lines


def render_prompt(lines: list[PromptLine], max_tokens: int) -> tuple[str, list[PromptLine]]:
    """The block within `max_tokens`; returns (text, lines that fit)."""
    budget = max_tokens * CHARS_PER_TOKEN
    used = len(HEADER) + 1
    kept = []
    for line in lines:
        if used + len(line.text) + 1 > budget:
            break
        kept.append(line)
        used += len(line.text) + 1
    if not kept:
        return "", []
    return HEADER + "\n" + "\n".join(l.text for l in kept) + "\n", kept
