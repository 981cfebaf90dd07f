"""Corrections: finding the memories a new one repeats or contradicts, and acting on it.

`add` asks `related` which memories of the same namespace are on the same
subject (lexical and semantic candidates, from the watcher when one runs)
and how each relates (conflicts.py). A clear conflict supersedes the older
memory, an unclear one contests both, and `correct` replaces a memory a
person or agent knows is wrong. Writes go through the vault's primitives
(`update_note` under its write lock), so every change is on the ledger.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from vaultmem import clock
from vaultmem.core.capture import CAPTURED_TAG
from vaultmem.core.model import Note, tidy_tags
from vaultmem.errors import BadInput

if TYPE_CHECKING:
    from vaultmem.vault import Added


@dataclass(frozen=True)
class Related:
    """An existing memory on the same subject as a text about to be added."""

    note: Note
    relation: str  # duplicate | conflict | unclear | compatible
    reason: str
    similarity: float


def related(
    vault, text: str, namespace: str, kind: str = "memory", limit: int = 8, created: datetime | None = None,
    tags: tuple[str, ...] = (),
) -> list[Related]:
    """Memories of `namespace` on the same subject as `text`, each with its relation
    (duplicate, conflict or unclear; conflicts.py), closest first. Without the
    embedding model only word-level duplicates are found."""
    from vaultmem.core.conflicts import agreed, classify

    out = []
    from vaultmem.search.engine import passage_for

    # Searched with the text the note will be embedded as, so the add reuses the vector.
    for note, similarity in similar(vault, passage_for(kind, text, tags), namespace, kind, limit):
        # Without the model (similarity None) a difference is never a contradiction: only duplicates count.
        verdict = agreed(classify(text, note.claim, similarity or 0.0), similarity or 0.0)
        relation, reason = verdict.relation, verdict.reason
        if relation == "conflict" and created is not None and created < note.created:
            # A backfilled memory older than the one it contradicts does not replace it.
            relation, reason = "unclear", f"{reason}; the new one is dated earlier ({created:%Y-%m-%d})"
        out.append(Related(note, relation, reason, similarity or 0.0))
    return [r for r in out if r.relation != "compatible"]


def decide(related: list[Related]) -> tuple[Related | None, list[Related], list[Related]]:
    """What an add does with its related memories: (the one it repeats, the one it
    supersedes, the ones it contests). One memory is superseded per add, the closest
    clear conflict; other conflicts and the unclear ones are contested."""
    duplicate = next((r for r in related if r.relation == "duplicate"), None)
    conflicts = [r for r in related if r.relation == "conflict"]
    superseded = conflicts[:1]
    contested = [r for r in related if r.relation == "unclear" or (r.relation == "conflict" and r not in superseded)]
    return duplicate, superseded, contested


def forked_corrections(notes: list[Note]) -> list[list[Note]]:
    """Notes in force that each correct the same memory, two or more, not yet contested with
    each other (oldest first): two machines corrected it differently and git merged both, so
    each is in force and the memory's `superseded_by` names only one of them."""
    by_target: dict[str, list[Note]] = {}
    for note in notes:
        if note.supersedes and not note.is_hidden:
            by_target.setdefault(note.supersedes, []).append(note)
    forks = []
    for target in sorted(by_target):
        group = sorted(by_target[target], key=lambda n: (n.created, n.id))
        if len(group) > 1 and not all(other.link in note.contested_with
                                      for note in group for other in group if other is not note):
            forks.append(group)
    return forks


def similar(vault, text: str, namespace: str, kind: str, limit: int) -> list[tuple[Note, float]]:
    """Ask the vault's watcher when one runs (it owns the indexes), else search in-process."""
    from vaultmem.search.engine import engine_for

    if not os.environ.get("VAULTMEM_NO_SERVER") and not vault.in_batch:
        from vaultmem.service.server import ask

        answer = ask(
            str(vault.root), {"op": "similar", "text": text, "namespace": namespace, "kind": kind, "limit": limit}
        )
        if answer and answer.get("ok"):
            found = [(vault.find(i), cosine) for i, cosine in answer["similar"]]
            return [(notes[0], cosine) for notes, cosine in found if len(notes) == 1]
    # Inside add_many's batch the files were checked at its start (Vault.add_many).
    return engine_for(vault).similar(text, namespace, kind, limit, files=not vault.in_batch)


def supersede(vault, old_id: str, newer: Note, reason: str) -> Note:
    """Mark `old_id` superseded by `newer` (both links show in Obsidian's graph)."""
    now = clock.now()
    _before, after = vault.update_note(
        old_id,
        lambda n: {"status": "superseded", "superseded_by": newer.link, "updated": now},
        op="supersede",
        detail={"by": newer.id, "reason": reason},
    )
    return after


# A note links to at most this many memories contested with it (at its add the closest, later the
# newest); the ledger keeps a record of every contest. Unbounded, a fact restated often carried
# dozens of links in its Properties view (52-60 in a 10k bulk import), each new contest rewriting
# the whole list.
CONTESTED_KEPT = 8


def contest_change(newer: list[Note], now: datetime) -> Callable[[Note], dict]:
    """The change that marks a note contested with each of `newer` (links kept once, in order,
    the newest CONTESTED_KEPT of them)."""
    def change(n: Note) -> dict:
        links = tuple(dict.fromkeys([*n.contested_with, *(note.link for note in newer)]))
        return {"contested": True, "contested_with": links[-CONTESTED_KEPT:], "updated": now}

    return change


def contest_forks(vault, changed: set[str]) -> list[list[str]]:
    """Contest with each other the corrections of one memory that a merge left in force side
    by side (forked_corrections), where one of them or the memory is among the `changed`
    paths: recall then shows them as contested, and `resolve` keeps the right one. Forks the
    merge did not touch are left as they are (a person may have kept both with `resolve --both`).
    Returns the ids of each fork contested."""
    done = []
    with vault.write_lock():
        notes = vault.notes(include_hidden=True)
        by_link = {note.link: note for note in notes}
        for fork in forked_corrections(notes):
            corrected = by_link.get(fork[0].supersedes)
            if not ({note.path for note in fork} | {corrected.path if corrected else ""}) & changed:
                continue
            contest_group(vault, fork, f"another correction of {fork[0].supersedes}")
            done.append([note.id for note in fork])
    return done


def contest_crossed_adds(vault, theirs: set[str], ours: set[str]) -> list[list[str]]:
    """Memories added on two machines that contradict each other: each add checked only the
    notes its machine had, so after the merge both stood in force, uncontested. Each memory
    the merge brought in (`theirs`, paths) is checked as an add would check it, against the
    memories added here since the two sides parted (`ours`); a pair the add would have
    superseded or contested is contested (which one is current is a person's call: the dates
    say when each was written, not which is true). Returns the ids of each pair contested."""
    done = []
    with vault.write_lock():
        notes = {note.path: note for note in vault.notes()}
        our_ids = {notes[path].id for path in ours if path in notes}
        for path in sorted(theirs):
            note = notes.get(path)
            if note is None or note.type != "memory" or not our_ids:
                continue
            for item in related(vault, note.claim, note.namespace, note.type, created=note.created):
                other = item.note
                if other.id not in our_ids or item.relation not in ("conflict", "unclear") \
                        or other.link in note.contested_with:
                    continue
                note = contest_pair(vault, note, other, f"added on two machines: {item.reason}")
                done.append([note.id, other.id])
    return done


def contest_pair(vault, note: Note, other: Note, reason: str) -> Note:
    """Mark two memories contested with each other (a `contest` record each); `note` after."""
    return contest_group(vault, [note, other], reason)[0]


def contest_group(vault, notes: list[Note], reason: str) -> list[Note]:
    """Mark each of `notes` contested with every other (a `contest` record each); them after."""
    now = clock.now()
    after = []
    for note in notes:
        others = [other for other in notes if other is not note]
        _before, changed = vault.update_note(note.id, contest_change(others, now), op="contest",
                                             detail={"with": [other.id for other in others], "reason": reason})
        after.append(changed)
    return after


def correct(
    vault, note_id: str, text: str, reason: str | None = None, *, session: str | None = None, project: str | None = None
) -> Added:
    """Replace a wrong memory: grade it `again`, add the right one, supersede the wrong one.

    The new note says what it corrects (`supersedes`, and a Correction
    section with the old text and the reason); the old one links forward.
    """
    with vault.write_lock():
        wrong = vault.get(note_id)
        if wrong.status == "superseded":
            raise BadInput(f"{wrong.id} is already superseded by {wrong.superseded_by}; correct that one instead")
        if wrong.status == "archived":
            raise BadInput(f"{wrong.id} is archived; `vaultmem restore {wrong.id}` first, then correct it")
        why = (reason or "").strip()
        old = " ".join(wrong.claim.split())
        # What `add` would refuse is refused before the grade: a refused correction changes nothing.
        body = vault.text_to_write(text, "the corrected text",
                                   'give the right content, e.g. vaultmem correct ID "Staging runs Postgres 16"')
        if " ".join(body.split()) == old:
            raise BadInput(f"{wrong.id} already says that; give the corrected content (nothing was written)")
        correction = f"\n\n## Correction\nReplaces {wrong.link}, which said: {old}" + (f"\nWhy: {why}" if why else "")
        vault.check_size("the corrected text", body + correction)
        vault.screen(body, False)
        vault.screen(why, False, "reason")
        vault.grade(wrong.id, "again", comment=f"corrected: {why}" if why else "corrected", session=session,
                    project=project)
        added = vault.add(
            body + correction,
            wrong.namespace,
            # Its topic's tags; not where the wrong one came from (its `source`, the "captured"
            # tag of a transcript line): that line stated the wrong fact, not this one.
            tags=tuple(tag for tag in wrong.tags if tag != CAPTURED_TAG),
            source=None,
            tier=wrong.tier,
            kind=wrong.type,
            session=session,
            project=project,
            supersede=False,
            merge=False,
        )
        vault.update_note(added.note.id, lambda n: {"supersedes": wrong.link}, op="edit", detail={"corrects": wrong.id})
        supersede(vault, wrong.id, added.note, why or "corrected")
        _carry_contests(vault, wrong, vault.get(added.note.id))
        return replace(
            added,
            note=vault.get(added.note.id),
            superseded=(wrong.id,),
            reason=f"corrects {wrong.id}" + (f": {why}" if why else ""),
        )


def _carry_contests(vault, wrong: Note, correction: Note) -> None:
    """The memories the wrong one was contested with are contested with its correction: the
    question between them is still open (a later `resolve` of one of them left it and the
    correction both in force, uncontested)."""
    if not wrong.contested:
        return
    by_link = {note.link: note for note in vault.notes()}
    others = [by_link[link] for link in wrong.contested_with if link in by_link and link != correction.link]
    if not others:
        return
    now = clock.now()
    for other in others:
        vault.update_note(other.id, contest_change([correction], now), op="contest",
                          detail={"with": correction.id, "reason": f"the correction of {wrong.id}"})
    vault.update_note(correction.id, contest_change(others, now), op="contest",
                      detail={"with": [other.id for other in others], "reason": f"carried from {wrong.id}"})


def resolve(vault, keep_id: str, both: bool = False, only: tuple[str, ...] = ()) -> list[str]:
    """Settle a contested memory: `keep_id` is right and supersedes the memories it
    was contested with, or (`both`) they all hold and nothing is superseded. `only`: settle
    the contest with these memories alone (ids or file names), leaving its others as they
    are (a memory contested with six others that are about other things). Returns the ids
    of the other memories involved."""
    now = clock.now()
    with vault.write_lock():
        keep = vault.get(keep_id)
        if not keep.contested:
            raise BadInput(f"{keep.id} is not contested; nothing to resolve")
        notes = vault.notes(include_hidden=True)
        by_link = {n.link: n for n in notes}
        others = {by_link[link].id: by_link[link] for link in keep.contested_with if link in by_link}
        others.update({n.id: n for n in notes if keep.link in n.contested_with and n.id != keep.id})
        if only:
            named = {vault.get(ref).id for ref in only}
            if named - others.keys():
                raise BadInput(f"{keep.id} is not contested with {', '.join(sorted(named - others.keys()))}; "
                               f"it is with {', '.join(sorted(others)) or 'none'}")
            others = {note_id: note for note_id, note in others.items() if note_id in named}

        def without(links: tuple[str, ...], link: str) -> dict:
            rest = tuple(x for x in links if x != link)
            return {"contested": bool(rest), "contested_with": rest, "updated": now}

        for other in others.values():
            vault.update_note(other.id, lambda n: without(n.contested_with, keep.link), op="resolve",
                              detail={"kept": keep.id, "both": both})
            if not both and other.status != "superseded":
                supersede(vault, other.id, keep, f"contest resolved in favour of {keep.id}")
        links = {o.link for o in others.values()}

        def settle(n: Note) -> dict:
            rest = tuple(x for x in n.contested_with if x not in links)
            changes = {"contested": bool(rest), "contested_with": rest, "updated": now}
            if not both and not n.supersedes and others:
                changes["supersedes"] = next(iter(others.values())).link
            return changes

        vault.update_note(keep.id, settle, op="resolve", detail={"others": sorted(others), "both": both})
        return sorted(others)


def supersede_pair(vault, old_id: str, new_id: str, reason: str = "superseded by hand",
                   chain: bool = False) -> tuple[Note, Note]:
    """`supersede OLD NEW` between two notes that exist: OLD is marked superseded by NEW and
    NEW says what it supersedes (the links `correct` writes). Returns (old, new) after.
    `chain`: NEW may itself be superseded (an imported chain a -> b -> c, linked link by link)."""
    with vault.write_lock():
        old, new = vault.get(old_id), vault.get(new_id)
        if old.id == new.id:
            raise BadInput(f"{old.id} cannot supersede itself")
        if new.status == "superseded" and not chain:
            raise BadInput(f"{new.id} is itself superseded by {new.superseded_by}; supersede with the newest")
        if old.status == "superseded" and old.superseded_by == new.link and new.supersedes == old.link:
            return old, new  # already so: nothing to write
        if old.superseded_by and old.superseded_by != new.link:
            raise BadInput(f"{old.id} is already superseded by {old.superseded_by}; only one note can supersede it")
        old_after = supersede(vault, old.id, new, reason)
        now = clock.now()
        _before, new_after = vault.update_note(new.id, lambda n: {"supersedes": old.link, "updated": now},
                                               op="edit", detail={"supersedes": old.id, "reason": reason})
        return old_after, new_after


def edit(vault, note_id: str, text: str | None = None, tags=None, redact: bool = False) -> Note:
    """Change a note's text or tags in place, keeping its id, schedule and history (a typo, a
    detail added). A memory that was wrong is for `correct`, which keeps the old one as history.
    The new text and tags pass the redaction filter like an add's; a hand edit saved meanwhile
    is recorded first and the change is applied on top of it."""
    if text is None and tags is None:
        raise BadInput("nothing to update: give a new text or tags")
    if text is not None and not text.strip():
        raise BadInput("the new text is empty; archive the note instead")
    if text is not None and "\x00" in text:
        raise BadInput("the new text contains a NUL byte; give plain text")
    body, masked = vault.screen(text.strip(), redact) if text is not None else (None, [])
    clean = None
    if tags is not None:
        clean, tag_kinds = vault.screen_tags(tidy_tags(tags), redact)
        masked += tag_kinds
    now = clock.now()

    def change(note: Note) -> dict:
        changes: dict = {"updated": now}
        if body is not None:
            changes["body"] = body + "\n"
        if clean is not None:
            changes["tags"] = clean
        if masked:
            changes["redacted"] = True
        if note.status == "stale":  # an edit is a touch, as a grade is (core/lifecycle.py): in use again
            changes["status"] = "active"
        return changes

    detail = {"fields": [name for name, value in (("text", body), ("tags", clean)) if value is not None]}
    with vault.write_lock():
        before, after = vault.update_note(note_id, change, op="edit", detail=detail)
        if body is not None and " ".join(before.claim.split()) != " ".join(after.claim.split()):
            after = _contest_what_it_now_contradicts(vault, after)
    return after


def _contest_what_it_now_contradicts(vault, note: Note) -> Note:
    """The edited text checked as an add would check it: the memories of its namespace it now
    contradicts are contested with it (never superseded: an edit is no newer fact). Returns the
    note as it is then."""
    for item in related(vault, note.claim, note.namespace, note.type):
        other = item.note
        if other.id == note.id or item.relation not in ("conflict", "unclear") or other.link in note.contested_with:
            continue
        note = contest_pair(vault, note, other, f"an edit of {note.id}: {item.reason}")
    return note
