"""`vaultmem export --jsonl` and its way back: every note file as one JSON line.

Each line holds the note's path relative to the vault and its full text
(frontmatter included, byte for byte: unknown properties, comments and CRLF
line endings stay), plus a few fields read from it for convenience. Archived,
suspended and superseded notes are exported too, and so is a note vaultmem
cannot parse (with `problem` saying why), so the export is everything.

After the notes come the vault's review and archive logs, one line each
(`{"log": "reviews.jsonl", "record": {...}}`): the grades' history, which `why`
shows and an FSRS optimizer would learn from, is not in the notes.

Importing an export (`vaultmem import FILE.jsonl`) recreates each file at the
same relative path with the same text, through `Vault.import_file`, and
appends the log lines the vault does not have yet. Into a
vault that already has notes, a note whose id (or path) exists with the same
text is `unchanged`; with other text it is a `conflict` and is left alone.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from vaultmem.core.note import load_frontmatter, split_frontmatter
from vaultmem.errors import BadInput, NoteError
from vaultmem.store.files import atomic_write, read_text
from vaultmem.timefmt import format_datetime

NOTE_FOLDERS = ("memories", "skills", "archive")


# ---------------------------------------------------------------- export

def export_records(vault) -> Iterator[dict]:
    """One dict per note file of the vault, sorted by path."""
    catalog = vault.catalog(full=True)
    notes = {note.path: note for note in catalog.notes}
    problems = dict(catalog.problems)
    for rel in catalog.paths():
        try:
            text = read_text(vault.root / rel, vault.config.max_note_bytes)
        except NoteError as exc:
            yield {"path": rel, "text": None, "problem": exc.problem}
            continue
        note = notes.get(rel)
        record = {"path": rel}
        if note is not None:
            record.update(id=note.id, type=note.type, namespace=note.namespace, status=note.status, tier=note.tier,
                          tags=list(note.tags), created=format_datetime(note.created))
        else:
            record["problem"] = problems.get(rel)
        record["text"] = text
        yield record


EXPORTED_LOGS = ("reviews.jsonl", "archive.jsonl")  # under .vaultmem/: history no note file holds


def log_records(vault) -> Iterator[dict]:
    """One dict per line of the review and archive logs, in their order (unreadable lines skipped)."""
    for name in EXPORTED_LOGS:
        path = vault.state_dir / name
        if not path.exists():
            continue
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict):
                    yield {"log": name, "record": record}


def write_export(vault, target: str | os.PathLike | None = None, stream=None) -> tuple[int, list[dict], int]:
    """Write the export to `target` (atomically) or to `stream`.

    Returns (notes written, files left out, log lines written): a file whose bytes are not text
    (binary, not UTF-8, over the size limit) has nothing to carry.
    """
    buffer = io.StringIO()
    count, left_out = 0, []
    for record in export_records(vault):
        if record["text"] is None:
            left_out.append({"path": record["path"], "problem": record["problem"]})
            continue
        buffer.write(json.dumps(record, ensure_ascii=False) + "\n")
        count += 1
    logged = 0
    for line in log_records(vault):
        buffer.write(json.dumps(line, ensure_ascii=False) + "\n")
        logged += 1
    if target is not None:
        atomic_write(Path(os.path.expanduser(str(target))).resolve(), buffer.getvalue())
    elif stream is not None:
        stream.write(buffer.getvalue())
    return count, left_out, logged


def export_folder(vault, folder: str | os.PathLike) -> tuple[int, list[dict]]:
    """Copy every note file into `folder` at its vault path (`export-all DIR`, the name skillmem uses).

    A file already there with the same text counts as exported; one with other
    text is left as it is and reported (an export never overwrites). A folder
    inside the vault is refused: the copies would be notes too.
    """
    root = Path(os.path.expanduser(str(folder))).resolve()
    if root == vault.root.resolve() or vault.root.resolve() in root.parents:
        raise BadInput(f"{root} is inside the vault; export to a folder outside it")
    count, left_out = 0, []
    for record in export_records(vault):
        if record["text"] is None:
            left_out.append({"path": record["path"], "problem": record["problem"]})
            continue
        target = root / record["path"]
        if target.exists():
            if target.read_bytes() != record["text"].encode("utf-8"):
                left_out.append({"path": record["path"], "conflict": True, "problem": (
                    f"{target} exists with other text; not replaced (export into an empty folder for a "
                    "copy of the vault as it is now)")})
                continue
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, record["text"])
        count += 1
    return count, left_out


# ---------------------------------------------------------------- restore

@dataclass
class NoteIndex:
    """The vault's notes by id and by path, kept current while an import writes."""

    by_id: dict[str, str] = field(default_factory=dict)  # id -> path
    paths: set[str] = field(default_factory=set)
    readable: set[str] = field(default_factory=set)  # the paths of notes that read (the others: problems)

    @classmethod
    def of(cls, vault) -> NoteIndex:
        index = cls()
        catalog = vault.catalog(full=True)
        index.paths.update(catalog.paths())
        for note in catalog.notes:
            index.by_id.setdefault(note.id, note.path)
            index.readable.add(note.path)
        return index

    def free_path(self, rel: str) -> str:
        """`rel`, or the first `name-N.md` beside it whose name no note of the vault has
        (Obsidian finds a note by its file name alone, so names are unique vault-wide)."""
        folder, _slash, name = rel.rpartition("/")
        stem = name.removesuffix(".md")
        names = {path.rpartition("/")[2].removesuffix(".md") for path in self.paths}
        number = 2
        while f"{stem}-{number}" in names:
            number += 1
        return f"{folder}/{stem}-{number}.md"


def check_rel(rel: str) -> str:
    """A note path from an export, made safe: relative, inside a note folder, `.md`."""
    text = str(rel or "").replace("\\", "/")
    path = PurePosixPath(text)
    if (not text or path.is_absolute() or ".." in path.parts or any(p.startswith(".") for p in path.parts)
            or path.parts[0] not in NOTE_FOLDERS or path.suffix != ".md" or len(path.parts) < 2):
        raise BadInput(f"{rel!r} is not a note path (memories/, skills/ or archive/ ... .md)")
    return path.as_posix()


def note_id(text: str, rel: str) -> str:
    """The id a note file has: its `id` property, else its file name (also for a file
    the vault will refuse to read: writing it is refused later, with the reason)."""
    block, _body = split_frontmatter(text)
    if block is not None:
        try:
            data = load_frontmatter(block, rel).data
        except NoteError:
            data = {}
        if data.get("id") not in (None, "") and not isinstance(data["id"], (list, dict)):
            return str(data["id"]).strip()
    return PurePosixPath(rel).stem


def restore_file(vault, rel: str, text: str, source: str = "", dry_run: bool = False,
                 index: NoteIndex | None = None) -> tuple[str, dict]:
    """Recreate one note file; returns ("added" | "unchanged" | "conflict", details).

    A note the vault has (same id, else same path) is never overwritten; a note of
    another id whose file name another note holds is written under the next free name.
    """
    rel = check_rel(rel)
    index = index or NoteIndex.of(vault)
    ident = note_id(text, rel)
    if ident not in index.by_id and rel in index.readable:
        rel = index.free_path(rel)  # another note has the name: this one beside it, under the next free one
    existing = index.by_id.get(ident) or (rel if rel in index.paths else None)
    if existing is not None:
        try:
            current = read_text(vault.root / existing, vault.config.max_note_bytes)
        except NoteError:
            current = None
        if current == text:
            return "unchanged", {"id": ident, "path": existing}
        what = f"{existing} has other text" if existing == rel else f"id {ident} is {existing}, with other text"
        return "conflict", {"id": ident, "path": existing, "reason": f"{what}; left as it is"}
    vault.screen(text, False, f"note file {rel}")  # as import_file would: refused (skipped), never masked
    if dry_run:
        result = {"id": ident, "path": rel}
    else:
        if not hasattr(vault, "import_file"):
            raise BadInput("this vaultmem cannot restore note files yet (no Vault.import_file)")
        note = vault.import_file(rel, text, source=source)
        result = {"id": getattr(note, "id", ident), "path": getattr(note, "path", rel) or rel}
    index.by_id.setdefault(result["id"], result["path"])
    index.paths.add(result["path"])
    index.readable.add(result["path"])
    return "added", result
