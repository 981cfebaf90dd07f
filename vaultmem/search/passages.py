"""What text of a note is embedded: the same for every model and every vector store."""

from __future__ import annotations

from vaultmem.core.model import Note, heading, section


def embed_text(note: Note) -> str:
    """What gets embedded for a note: its text without markdown heading marks, plus tags;
    for a skill, its title and trigger (see passage_for)."""
    return passage_for(note.type, note.body, note.tags)


def passage_for(kind: str, body: str, tags=()) -> str:
    """The text embedded for a note of `kind`. A skill is embedded by its title and trigger:
    when to use it, which is what a question about it asks. Embedded whole, its steps,
    outcome and lessons made it near every query on its topic and skills crowded out the
    memories that answer (bench/recall_quality.py, "skill on top"); BM25 still indexes every
    section, so a word from the steps still finds it."""
    if kind == "skill":
        title = heading(body)
        trigger = section(body, "Trigger")
        if title or trigger:
            body = f"{title}. {trigger}" if title and trigger else title or trigger
    return passage_text(body, tags)


def passage_text(body: str, tags=()) -> str:
    lines = [line.lstrip("#").strip() for line in body.splitlines()]
    text = " ".join(line for line in lines if line)
    if tags:
        text += " (" + ", ".join(tags) + ")"
    return text
