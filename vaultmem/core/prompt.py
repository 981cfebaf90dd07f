"""Context injection: the block of memories an agent hook puts in front of a session. Pure.

Three sections, in this order, so the block can be cut anywhere and what
matters most survives:

1. Core: L3 (durable) then L2 (every session) memories, strongest first.
2. Learning queue: memories still in learning (new, learning, relearning).
   They are always shown, since exposure is how they gain strength: Core
   leaves them a quarter of the budget (LEARNING_SHARE) when it would fill it.
3. Review queue: graduated memories, ranked by stability x usage x state
   (usage: reviews so far; state: retrievability now), so the ones that have
   proved themselves come before the ones drifting out of reach.

Each line carries the id, namespace and a label (new, learning, strong,
fading, weak, or contested: a disputed memory is never shown as plain
fact), so the agent can grade what it used. The sections sit in one block
framed as data (fence.py): a note saying "ignore previous instructions" or
holding a role tag is a stored note, and cannot end the block. `max_tokens`
is a budget in approximate tokens (4 characters each), the frame included.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

from vaultmem.config import Config
from vaultmem.core.fence import OVERHEAD, fence, neutralize
from vaultmem.core.model import Note, in_namespace
from vaultmem.core.schedule import label, retrievability

CHARS_PER_TOKEN = 4
MAX_LINE_CHARS = 400
LEARNING_SHARE = 0.25  # of the budget Core leaves to the learning queue when it would fill it
HEADER = "Memories from vaultmem (id, namespace, label). Grade what you use: vaultmem grade ID good|again"
SECTIONS = {
    "core": "## Core (always applies)",
    "learning": "## Learning (new; confirm or correct)",
    "review": "## Review (known; stronger first)",
}


@dataclass(frozen=True)
class PromptLine:
    note: Note
    label: str
    section: str
    text: str


@dataclass(frozen=True)
class PromptBlock:
    """The rendered block and the memories in it; `body` is the sections without the frame
    (for a caller that frames them together with other lines, as the SessionStart hook does)."""

    text: str
    lines: list[PromptLine] = field(default_factory=list)
    left_out: int = 0  # memories that did not fit the budget
    body: str = ""

    def said(self, max_tokens: int, option: str = "--max-tokens") -> str:
        """The block, or when it is empty why: no memories, or none fits the budget (the CLI's and
        the MCP tool's answer; "No memories yet" for a full vault sent people looking for a bug)."""
        if self.text:
            return self.text
        if self.left_out:
            return f"none of the {self.left_out} memories fits in {max_tokens} tokens; raise {option}"
        return "no memories yet"

    def to_dict(self, now: datetime, config: Config) -> dict:
        from vaultmem.core.present import note_dict

        return {"text": self.text, "left_out": self.left_out,
                "memories": [note_dict(line.note, now, config, {"label": line.label, "section": line.section})
                             for line in self.lines]}


def section_of(note: Note) -> str:
    if note.tier in ("L3", "L2"):
        return "core"
    if note.state in ("learning", "relearning") or note.reps == 0:
        return "learning"
    return "review"


def prompt_lines(notes: list[Note], now: datetime, config: Config, namespace: str | None = None) -> list[PromptLine]:
    """Visible notes of `namespace` in prompt order, each rendered as one line."""
    def rank(note: Note):
        r = retrievability(note, now, config)
        r = 1.0 if r is None else r
        section = section_of(note)
        if section == "core":
            key = ({"L3": 0, "L2": 1}[note.tier], -note.strength * r)
        elif section == "learning":
            # What the user asked to keep first; then cards already graded, most due first; then the
            # never graded, newest first (oldest first, the same notes filled every session's budget
            # and a memory saved today never showed)
            key = (0 if note.explicit else 1, note.due.timestamp() if note.reps else float("inf"),
                   -note.created.timestamp())
        else:
            key = (0, -((note.stability or 0.0) * math.log2(2 + note.reps) * r))
        return (list(SECTIONS).index(section), *key, note.created)

    chosen = [n for n in notes if not n.is_hidden and in_namespace(n.namespace, namespace)]
    lines = []
    for note in sorted(chosen, key=rank):
        word = label(note, now, config)
        text = neutralize(note.summary)
        if len(text) > MAX_LINE_CHARS:
            text = text[: MAX_LINE_CHARS - 1] + "…"
        lines.append(PromptLine(note, word, section_of(note), f"- [{note.id}] ({note.namespace}, {word}) {text}"))
    return lines


def render_prompt(lines: list[PromptLine], max_tokens: int) -> PromptBlock:
    """The block within `max_tokens` (section headings included in the count). Core takes
    at most what leaves LEARNING_SHARE of the budget to the learning queue, when it has
    lines: exposure is how a new memory gains strength (with 66 core memories the queue
    never showed, and new memories faded unseen)."""
    budget = max_tokens * CHARS_PER_TOKEN
    out: list[str] = []
    used = len(HEADER) + 1 + OVERHEAD
    learning = [line for line in lines if line.section == "learning"]
    wanted = sum(len(line.text) + 1 for line in learning) + (len(SECTIONS["learning"]) + 1 if learning else 0)
    reserve = min(wanted, int(max(0, budget - used) * LEARNING_SHARE))
    kept: list[PromptLine] = []
    current = None
    for line in lines:
        heading = SECTIONS[line.section] if line.section != current else None
        cost = len(line.text) + 1 + (len(heading) + 1 if heading else 0)
        if used + cost > budget - (reserve if line.section == "core" else 0):
            if line.section == "core" and learning:
                continue  # the rest of Core gives way to the learning queue's share
            break
        if heading:
            out.append(heading)
            current = line.section
        out.append(line.text)
        kept.append(line)
        used += cost
    if not kept:
        return PromptBlock("", [], len(lines))
    body = "\n".join(out)
    return PromptBlock(f"{HEADER}\n{fence(body)}", kept, len(lines) - len(kept), body)
