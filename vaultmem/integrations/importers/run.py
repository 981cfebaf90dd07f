"""`run_import`: one source's records written into a vault, and the `Report` of it.

Reads the source with `read` (the package's format detection and readers) and
writes what it holds: memories and skills through `Vault.add`, merged rather
than copied when the vault already has them and never superseding anything,
whole note files through `exporters.restore_file`. The `Report` lists every
record as added, updated, merged, unchanged, a conflict, skipped or an error;
`vaultmem import` (cli_agents.py) prints it and takes its exit code from it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from vaultmem.errors import BadInput, SecretFound, VaultmemError
from vaultmem.integrations.importers import default_namespace, fields_of, read
from vaultmem.integrations.importers.base import Incoming, LogLine, Restore, Skip, clean_namespace
from vaultmem.integrations.importers.fidelity import keep_state, link_chains
from vaultmem.ops.provenance import portable_path


@dataclass
class Report:
    """What an import did (or, with dry_run, would do), one entry per record."""

    path: str
    format: str
    dry_run: bool = False
    added: list[dict] = field(default_factory=list)
    # A markdown note imported before whose file changed since: its new text supersedes the old import.
    updated: list[dict] = field(default_factory=list)
    merged: list[dict] = field(default_factory=list)  # a recurrence of an existing memory, or a repeat
    unchanged: list[dict] = field(default_factory=list)  # a restored note the vault already has, identical
    conflicts: list[dict] = field(default_factory=list)  # a restored note the vault has with other text
    skipped: list[dict] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)
    # What became of each field the source format has: {field: "kept" | "mapped: ..." | "dropped: ..."}.
    fields: dict = field(default_factory=dict)
    reviews: int = 0  # review-history lines appended to reviews.jsonl
    archive_lines: int = 0  # archive-log lines appended to archive.jsonl (an export carries them)
    chains: int = 0  # supersede links made between imported notes

    def to_dict(self) -> dict:
        lists = ("added", "updated", "merged", "unchanged", "conflicts", "skipped", "errors")
        return {"path": self.path, "format": self.format, "dry_run": self.dry_run, "fields": self.fields,
                "reviews": self.reviews, "archive_lines": self.archive_lines, "chains": self.chains,
                "counts": {name: len(getattr(self, name)) for name in lists},
                **{name: getattr(self, name) for name in lists}}

    def summary(self) -> str:
        verb = "would import" if self.dry_run else "imported"
        parts = [f"{verb} {len(self.added)}"] + ([f"updated {len(self.updated)}"] if self.updated else []) \
            + [f"merged {len(self.merged)}"]
        if self.unchanged or self.conflicts:
            parts += [f"unchanged {len(self.unchanged)}", f"conflicts {len(self.conflicts)}"]
        parts += [f"skipped {len(self.skipped)}", f"errors {len(self.errors)}"]
        if self.reviews or self.chains or self.archive_lines:
            parts += [f"reviews {self.reviews}", f"supersede links {self.chains}"]
            if self.archive_lines:
                parts.append(f"archive log lines {self.archive_lines}")
        lines = [f"{self.format} {self.path}: " + ", ".join(parts)]
        lines += [f"  field {name}: {fate}" for name, fate in self.fields.items()]
        for name, label in (("conflicts", "conflict"), ("skipped", "skipped"), ("errors", "error")):
            lines += [f"  {label}: {item['source']}: {item['reason']}" for item in getattr(self, name)]
        return "\n".join(lines)


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def run_import(vault, path, fmt: str = "auto", namespace: str | None = None, dry_run: bool = False,
               redact: bool = False) -> Report:
    """Read `path` and write what it holds into `vault`.

    Memories go through `Vault.add` (the redaction filter, and near-duplicates
    merged into a recurrence); an exact repeat, inside the import or of a memory
    the namespace already has, is merged without writing anything, so importing
    the same file twice changes nothing. Imports never supersede or contest
    existing memories, but for one case that is no guess: a markdown note
    imported before whose file now says something else supersedes the note
    its earlier text became (unless that note was edited in the vault since:
    then it is a conflict, left as it is). Whole note files (an export, a note with vaultmem
    properties) are restored byte for byte; one that exists with other text is a
    conflict and is left alone. Nothing is written with `dry_run`.
    """
    from vaultmem.integrations.exporters import NoteIndex, restore_file
    from vaultmem.vault import check_namespace

    source_path = Path(os.path.expanduser(str(path))).resolve()
    base = check_namespace(namespace) if namespace else ""
    fmt, records = read(source_path, fmt, vault.config.max_note_bytes)
    report = Report(str(source_path), fmt, dry_run, fields=dict(fields_of(fmt)))
    shown_path = portable_path(source_path)
    imported: dict[str, str] = {}  # original id -> note id, for chains and the report
    chains: list[tuple[str, str, str]] = []
    fallback = default_namespace(source_path, fmt)
    notes = vault.notes(include_hidden=True)  # (read once: both below look at every note)
    known = _known_texts(notes)
    earlier = ImportedFiles(vault, notes) if fmt == "markdown" else None
    seen: dict[tuple, str] = {}
    index = NoteIndex.of(vault)
    incoming = sorted((r for r in records if isinstance(r, Incoming)),
                      key=lambda r: (r.created is None, r.created or datetime.min.replace(tzinfo=timezone.utc)))
    logs = ExistingLogs(vault)
    for record in [r for r in records if not isinstance(r, Incoming)] + incoming:
        if isinstance(record, Skip):
            report.skipped.append({"source": record.source, "reason": record.reason})
        elif isinstance(record, LogLine):
            if logs.append(record, dry_run):
                if record.log == "reviews.jsonl":
                    report.reviews += 1
                else:
                    report.archive_lines += 1
        elif isinstance(record, Restore):
            try:
                action, detail = restore_file(vault, record.rel, record.text, record.source, dry_run, index)
            except VaultmemError as exc:
                _refused(report, record.source, exc)
                continue
            entry = dict(detail, source=record.source)
            {"added": report.added, "unchanged": report.unchanged, "conflict": report.conflicts}[action].append(entry)
        else:
            if record.source.startswith(str(source_path)):  # no /home/<user>/ in the vault's sources
                record = replace(record, source=shown_path + record.source[len(str(source_path)):])
            note_id = _add_one(vault, record, base, fallback, known, seen, report, dry_run, redact, earlier)
            original = record.extra.get("original_id")
            if note_id and original not in (None, ""):
                imported[str(original)] = note_id
            extra = record.extra
            chains += [(str(original), newer, record.source) for newer in _listed(extra.get("superseded_by"))]
            chains += [(older, str(original), record.source) for older in _listed(extra.get("supersedes"))]
    if not dry_run:
        report.chains = link_chains(vault, imported, chains, report)
    return report


class ExistingLogs:
    """The vault's review and archive logs as they are, read once (by the export's own reader,
    exporters.log_records): a line an export carries is appended unless the log holds it
    (importing the same export twice adds nothing)."""

    def __init__(self, vault):
        self.vault = vault
        self.seen: dict[str, set[str]] | None = None  # log -> its records, canonical; read at the first line

    def append(self, line: LogLine, dry_run: bool) -> bool:
        """Whether `line` is new to its log (appended unless `dry_run`)."""
        from vaultmem.integrations.exporters import log_records
        from vaultmem.store.files import append_jsonl

        if self.seen is None:
            self.seen = {}
            for item in log_records(self.vault):
                self.seen.setdefault(item["log"], set()).add(_canonical(item["record"]))
        held = self.seen.setdefault(line.log, set())
        key = _canonical(line.record)
        if key in held:
            return False
        held.add(key)
        if not dry_run:
            append_jsonl(self.vault.state_dir / line.log, line.record)
        return True


def _canonical(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False, sort_keys=True)


def _listed(value) -> list[str]:
    """An id or a list of ids, as sources write a chain's other end."""
    if value in (None, "", False):
        return []
    return [str(v) for v in value if v not in (None, "")] if isinstance(value, (list, tuple)) else [str(value)]


def _known_texts(notes) -> dict[tuple, str]:
    known = {}
    for note in notes:
        known.setdefault((note.namespace, note.type, _norm(note.text)), note.id)
    return known


class ImportedFiles:
    """The memories in force that a markdown import made, by (source file, namespace, type): what
    a file imported again replaces when its text changed (the newest, when an older import left
    two), and whether the vault changed one of them since."""

    def __init__(self, vault, notes):
        self.vault = vault
        self.notes = {}
        for note in sorted(notes,
                           key=lambda n: n.created or datetime.min.replace(tzinfo=timezone.utc)):
            if note.source and note.status not in ("superseded", "archived"):
                self.notes[(note.source, note.namespace, note.type)] = note
        self._text_edits: set[str] | None = None

    def of(self, record: Incoming, namespace: str):
        return self.notes.get((record.source, namespace, record.kind))

    def edited_in_vault(self, note) -> bool:
        """Whether the note's text may have been changed in the vault since it was written: an
        `edit` of its text or a change by hand the ledger records (one of its properties only
        counts too, which errs on the side of leaving the note alone), or a change by hand it has
        not recorded yet. The ledger is read once, for every note an import finds changed."""
        try:
            if self.vault.has_unrecorded_edit(note):
                return True
        except (OSError, VaultmemError):
            return True  # unreadable now: certainly not the text the import wrote
        if self._text_edits is None:
            self._text_edits = {r["id"] for _n, r, _raw in self.vault.ledger.records() if r and (
                r.get("op") == "external-edit"
                or (r.get("op") == "edit" and "text" in ((r.get("detail") or {}).get("fields") or ())))}
        return note.id in self._text_edits


def _update_one(vault, old, record: Incoming, text: str, namespace: str, report: Report, dry_run: bool,
                redact: bool, edited: bool) -> str | None:
    """A markdown note imported before as `old`, whose file now holds `text`: a new note with the
    file's text supersedes `old` (its grades and history stay with it), or a conflict when `old`
    was edited in the vault since, so neither side's change is lost."""
    from vaultmem.ops.corrections import supersede_pair

    entry = {"namespace": namespace, "source": record.source, "supersedes": old.id}
    if edited:
        report.conflicts.append({"id": old.id, "source": record.source, "reason": (
            f"changed since it was imported as {old.id}, which was edited in the vault too; both left as they "
            f"are (`vaultmem correct {old.id} TEXT` takes the file's text)")})
        return old.id
    if dry_run:
        report.updated.append(dict(entry, id=None))
        return None
    try:
        result = vault.add(text, namespace, tags=record.tags, source=record.source, created=record.created,
                           tier=record.tier or old.tier, kind=record.kind, title=record.title, redact=redact,
                           supersede=False, merge=False)
        keep_state(vault, result.note.id, record, report)
        _old, new = supersede_pair(vault, old.id, result.note.id, f"its source changed: {record.source}")
    except VaultmemError as exc:
        _refused(report, record.source, exc)
        return None
    report.updated.append(dict(entry, id=new.id, path=new.path))
    return new.id


def _add_one(vault, record: Incoming, base: str, fallback: str, known: dict, seen: dict, report: Report,
             dry_run: bool, redact: bool, earlier: ImportedFiles | None = None) -> str | None:
    """Write one record; the id of the note that holds it now (new or merged into), or None."""
    from vaultmem.vault import check_namespace

    text = record.text.strip()
    if not text:
        report.skipped.append({"source": record.source, "reason": "empty"})
        return
    sub = clean_namespace(record.namespace)
    try:
        namespace = check_namespace("/".join(p for p in (base, sub) if p) or fallback)
    except BadInput as exc:
        report.errors.append({"source": record.source, "reason": str(exc)})
        return
    key = (namespace, record.kind, _norm(text))
    if key in seen:
        report.merged.append({"id": seen[key], "namespace": namespace, "source": record.source,
                              "reason": "repeated in the import"})
        return seen[key]
    if key in known:
        seen[key] = known[key]
        report.merged.append({"id": known[key], "namespace": namespace, "source": record.source,
                              "reason": "already in the vault"})
        return known[key]
    old = earlier.of(record, namespace) if earlier is not None else None
    if old is not None:
        seen[key] = old.id
        return _update_one(vault, old, record, text, namespace, report, dry_run, redact, earlier.edited_in_vault(old))
    if dry_run:
        _predict(vault, record, text, namespace, key, seen, report, redact)
        return
    try:
        result = _call_add(vault, record, text, namespace, redact)
    except VaultmemError as exc:
        _refused(report, record.source, exc)
        return
    note = result.note
    seen[key] = note.id
    entry = {"id": note.id, "namespace": namespace, "path": note.path, "source": record.source}
    if result.action == "recurrence":
        report.merged.append(dict(entry, reason=result.reason or "same memory"))
        return note.id
    known[(note.namespace, note.type, _norm(note.text))] = note.id
    status = keep_state(vault, note.id, record, report)
    if status and status != "active":
        entry["status"] = status
    if record.extra.get("status") == "archived":
        try:
            note = vault.archive(note.id, reason="import")
            entry.update(path=note.path, status="archived")
        except VaultmemError as exc:
            report.errors.append({"source": record.source, "reason": f"added as {note.id}, not archived: {exc}"})
    report.added.append(entry)
    report.reviews += len(record.extra.get("reviews") or ())
    return note.id


def _refused(report: Report, source: str, exc: VaultmemError) -> None:
    """A record vaultmem would not write: a secret is skipped, anything else is an error."""
    if isinstance(exc, SecretFound):
        report.skipped.append({"source": source, "reason": f"secret found: {exc}"})
    else:
        report.errors.append({"source": source, "reason": str(exc)})


def _call_add(vault, record: Incoming, text: str, namespace: str, redact: bool):
    """`Vault.add`, merging near-duplicates but never superseding what the vault holds
    (an imported fact may well be older than the memory it seems to contradict)."""
    return vault.add(text, namespace, tags=record.tags, source=record.source, created=record.created,
                     tier=record.tier, kind=record.kind, title=record.title, redact=redact, supersede=False,
                     merge=True)


def _predict(vault, record: Incoming, text: str, namespace: str, key: tuple, seen: dict, report: Report,
             redact: bool) -> None:
    """What `add` would do, without writing: refused for a secret, merged, or added."""
    try:  # the same filters, and the same refusals, as the real add
        vault.screen_names(namespace=namespace)
        vault.screen(text, redact)
        vault.screen(record.source, redact, "source")
        vault.screen(record.title, redact, "title")
        vault.screen_tags(tuple(record.tags or ()), redact)
    except SecretFound as exc:
        _refused(report, record.source, exc)
        return
    seen[key] = None
    try:
        related = vault.related(text, namespace, record.kind)
    except Exception:  # noqa: BLE001 - a prediction; the real add decides
        related = []
    duplicate = next((r for r in related if r.relation == "duplicate"), None)
    if duplicate is not None:
        seen[key] = duplicate.note.id
        report.merged.append({"id": duplicate.note.id, "namespace": namespace, "source": record.source,
                              "reason": duplicate.reason})
    else:
        report.added.append({"id": None, "namespace": namespace, "source": record.source})
