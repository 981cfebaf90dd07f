"""The vault on disk: discovery, the only writer of note files, and the logs.

Every write is atomic (temp file in the same folder, fsync, rename) and made
under the vault's write lock, so two processes grading or adding at once lose
nothing. A rewrite re-reads the file under the lock and applies its change to
what is there now: a person's save in Obsidian is never overwritten, and a
file that keeps changing under us is left alone with a clear error.
Reading never writes a note.
"""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from . import clock
from .catalog import Catalog, refresh
from .config import Config, load_config
from .discovery import STATE_DIR, default_vault_path, discover
from .errors import BadInput, ConflictError, NotFound, NoteError
from .files import append_jsonl, atomic_write, read_text, rewrite_and_move
from .lifecycle import DecayStep, plan_decay
from .model import TIERS, Note
from .note import parse, render, skill_body, slugify
from .schedule import grade as schedule_grade
from .schedule import parse_rating
from .template import init_vault

if TYPE_CHECKING:
    from .prompt import PromptBlock
    from .recall import Hit

ARCHIVE_DIR = "archive"
ID_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"
NAMESPACE_PATTERN = re.compile(r"^[\w.-]+(/[\w.-]+)*$")
WRITE_RETRIES = 5
# How close (0..1 on the model's scale, recall.RecallEngine.similar) two memories
# must be before a difference between them counts as a contradiction.
SAME_SUBJECT_SIMILARITY = 0.5


@dataclass(frozen=True)
class Related:
    """An existing memory on the same subject as a text about to be added."""

    note: Note
    relation: str  # duplicate | conflict | unclear | compatible
    reason: str
    similarity: float


@dataclass(frozen=True)
class Added:
    """What an add did: wrote `note`, or counted it as a recurrence of an existing one.

    `superseded`: ids of older memories the new one contradicted (now
    `status: superseded`); `contested`: ids it conflicts with unclearly (both
    marked `contested: true`); `reason` says why, in one line.
    """

    note: Note
    action: str  # "added" | "recurrence"
    superseded: tuple[str, ...] = ()
    contested: tuple[str, ...] = ()
    reason: str = ""
    redacted: tuple[str, ...] = ()  # kinds of secrets masked


# ---------------------------------------------------------------- the vault

class Vault:
    """A vault folder: notes under memories/, skills/ and archive/, state under .vaultmem/."""

    def __init__(self, root: str | os.PathLike, config: Config | None = None):
        self.root = Path(root).resolve()
        self.state_dir = self.root / STATE_DIR
        self.config = config or load_config(self.state_dir / "config.yaml")
        self._catalog: Catalog | None = None
        # The last catalog read, kept as the starting point of the next refresh
        # (`_catalog` is dropped after writes; this one only speeds re-reading).
        self._last_catalog: Catalog | None = None
        self._write_lock = None
        self._seen_generation = -1
        self._ledger = None

    @classmethod
    def open(cls, path: str | os.PathLike | None = None, create: bool = False) -> "Vault":
        """The vault at `path` (or the discovered one).

        A path without `.vaultmem/` is refused unless `create` is set, except
        the default vault, which is created on first use.
        """
        root = discover(path)
        if not (root / STATE_DIR).is_dir():
            if create or (path is None and not os.environ.get("VAULTMEM_VAULT") and root == default_vault_path()):
                init_vault(root)
            else:
                raise NotFound(f"{root} is not a vaultmem vault (no {STATE_DIR}/); run `vaultmem init {root}` first")
        return cls(root)

    # ------------------------------------------------------------ paths

    @property
    def reviews_log(self) -> Path:
        return self.state_dir / "reviews.jsonl"

    @property
    def archive_log(self) -> Path:
        return self.state_dir / "archive.jsonl"

    @property
    def cache_dir(self) -> Path:
        return self.state_dir / "cache"

    @property
    def ledger(self):
        """The hash chain of every change (`.vaultmem/ledger.jsonl`, committed with the vault)."""
        if self._ledger is None:
            from .ledger import Ledger

            self._ledger = Ledger(self.state_dir / "ledger.jsonl", self.cache_dir / "ledger.pickle")
        return self._ledger

    def _record(self, op: str, note: Note, text: str | None, detail: dict | None = None) -> None:
        """Append one act to the ledger (caller holds the write lock)."""
        self.ledger.append(op, note.id, note.path, text, clock.format_datetime(clock.now()), detail)

    def _record_unseen_edit(self, note: Note, text: str, noticed_by: str) -> None:
        """Before vaultmem rewrites a note, record a change made by hand since its last record."""
        from .ledger import content_hash

        last = self.ledger.last(note.id)
        if last is None or last.get("content") != content_hash(text):
            detail = {"noticed_by": noticed_by}
            if last is None:
                detail["first_seen"] = True
            self._record("external-edit", note, text, detail)

    def _lock(self):
        """The vault-wide write lock (one per Vault object: it is re-entrant)."""
        if self._write_lock is None:
            from filelock import FileLock

            self.state_dir.mkdir(parents=True, exist_ok=True)
            self._write_lock = FileLock(str(self.state_dir / "write.lock"), timeout=60)
        return self._write_lock

    # ------------------------------------------------------------ reading

    def read_note(self, rel: str) -> Note:
        """Parse one note file (relative path), with defaults for what it lacks."""
        path = self.root / rel
        text = read_text(path, self.config.max_note_bytes)
        return parse(text, rel, self._defaults(rel, path))

    def _defaults(self, rel: str, path: Path) -> dict:
        """What a hand-written note means when a property is missing."""
        parts = rel.split("/")
        archived = parts[0] == ARCHIVE_DIR
        if archived:
            parts = parts[1:]
        kind = "skill" if parts and parts[0] == "skills" else "memory"
        namespace = "/".join(parts[1:-1]) or "default"
        try:
            modified = datetime.fromtimestamp(path.stat().st_mtime, tz=clock.now().tzinfo).replace(microsecond=0)
        except OSError:
            modified = clock.now()
        return {
            "id": Path(rel).stem, "type": kind, "namespace": namespace, "tags": (),
            "status": "archived" if archived else "active", "tier": self.config.default_tier,
            "strength": self.config.strength_initial, "state": "learning", "step": 0,
            "stability": None, "difficulty": None, "due": modified, "last_review": None,
            "reps": 0, "lapses": 0, "created": modified, "updated": modified, "decayed": None,
            "source": "",
        }

    def catalog(self, fresh: bool = False) -> Catalog:
        """All notes as the files are now (cached per call unless `fresh`)."""
        if self._catalog is None or fresh:
            self._catalog = refresh(self.root, self.cache_dir / "catalog.pickle", self.read_note,
                                    previous=self._last_catalog)
            self._last_catalog = self._catalog
        return self._catalog

    def _read_generation(self) -> int:
        try:
            return int((self.state_dir / "add.generation").read_text() or 0)
        except (OSError, ValueError):
            return 0

    def _note_written(self, rel: str) -> None:
        """Update the in-memory catalog for one file vaultmem just wrote (no full rescan)."""
        from .catalog import refresh_paths

        if self._catalog is not None:
            self._catalog, _ = refresh_paths(self.root, self._catalog, [rel], self.read_note)
            self._last_catalog = self._catalog

    def forget_catalog(self) -> None:
        """Drop what this object remembers of the files (after the cache was deleted)."""
        self._catalog = self._last_catalog = None

    def adopt_catalog(self, catalog: Catalog) -> None:
        """Take a catalog updated elsewhere (the watcher's incremental refresh) as current."""
        self._catalog = self._last_catalog = catalog

    def notes(self, include_hidden: bool = False) -> list[Note]:
        """Every readable note; archived, suspended and superseded ones only with `include_hidden`."""
        notes = self.catalog().notes
        return notes if include_hidden else [n for n in notes if not n.is_hidden]

    def get(self, note_id: str) -> Note:
        """The note with this id (or, for hand-written notes, this file name)."""
        matches = self._find(note_id)
        if not matches:
            for path, problem in self.catalog().problems:
                if Path(path).stem == str(note_id).strip():
                    raise NoteError(path, problem.split("; ")[0], problem.split("; ", 1)[-1])
            raise NotFound(f"no note with id {note_id!r}; `vaultmem list` shows the ids")
        if len(matches) > 1:
            paths = ", ".join(n.path for n in matches)
            raise BadInput(f"id {note_id!r} is in {len(matches)} files ({paths}); give all but one a new id")
        return matches[0]

    def _find(self, note_id: str) -> list[Note]:
        note_id = str(note_id).strip()
        notes = self.catalog().notes
        matches = [n for n in notes if n.id == note_id]
        if not matches:
            matches = [n for n in notes if Path(n.path).stem == note_id]
        return matches

    # ------------------------------------------------------------ writing

    def _update(self, note_id: str, change: Callable[[Note], dict], op: str = "edit",
                detail: dict | None = None) -> tuple[Note, Note]:
        """Apply `change(note) -> property changes` to the file as it is now.

        Holds the write lock; re-reads the file, and if it changes between the
        read and the rename (a person saving), re-applies on top of the new text.
        A hand edit since the ledger's last record is recorded first, then
        this change as `op`. Returns (before, after).
        """
        with self._lock():
            self._catalog = None
            for _attempt in range(WRITE_RETRIES):
                before = self.get(note_id)
                path = self.root / before.path
                text = read_text(path, self.config.max_note_bytes)
                before = parse(text, before.path, self._defaults(before.path, path))
                after = replace(before, **change(before))
                new_text = render(after, text)
                if read_text(path, self.config.max_note_bytes) != text:
                    self._catalog = None
                    continue
                if new_text != text:
                    self._record_unseen_edit(before, text, op)
                    atomic_write(path, new_text)
                    self._record(op, after, new_text, detail)
                self._catalog = None
                return before, after
        raise ConflictError(f"{before.path} kept changing while vaultmem tried to write it; nothing was written, try again")

    def add(
        self,
        text: str,
        namespace: str,
        tags: Iterable[str] = (),
        source: str = "",
        created: datetime | None = None,
        tier: str | None = None,
        kind: str = "memory",
        title: str | None = None,
        *,
        session: str | None = None,
        project: str | None = None,
        explicit: bool = False,
        redact: bool = False,
        supersede: bool = True,
        merge: bool = True,
    ) -> Added:
        """Write a new memory (or skill), after three checks.

        - Secrets and personal data (redact.py): refused with SecretFound, or
          masked with `redact=True` (the note is marked `redacted: true`).
        - The same memory again (`merge`): counted as a recurrence of the
          existing note (evidence for promotion) instead of a copy.
        - A contradiction (`supersede`): a clear conflict with an older memory
          of the namespace supersedes it; an unclear one marks both contested.
        `session` and `project` say where this happened (provenance.py).
        """
        from .provenance import current_project, current_session
        from .tiers import with_evidence

        namespace = check_namespace(namespace)
        body_text = (text or "").strip()
        if not body_text:
            raise BadInput("the memory's text is empty; give the text to remember, e.g. vaultmem add \"...\" -n work")
        if "\x00" in body_text:
            raise BadInput("the memory's text contains a NUL byte; give plain text")
        tier = (tier or self.config.default_tier).upper()
        if tier not in TIERS:
            raise BadInput(f"unknown tier {tier!r}; use one of: {', '.join(TIERS)}")
        body_text, redacted = self._screen(body_text, redact)
        title = self._screen(title, True)[0] if title and redacted else title
        now = clock.now()
        created = created or now
        session, project = current_session(session), current_project(project)
        clean_tags = tuple(dict.fromkeys(t.strip().lstrip("#") for t in tags if t and t.strip().lstrip("#")))
        related = (self.related(body_text, namespace, kind, created=created)
                   if (merge or supersede) and self.config.check_conflicts else [])
        with self._lock():
            # Adds by other processes bump the generation: only then re-read the vault.
            generation = self._read_generation()
            catalog = self.catalog(fresh=generation != self._seen_generation)
            if merge:
                duplicate = next((r for r in related if r.relation == "duplicate"), None)
                if duplicate is not None and self._find(duplicate.note.id):
                    evidence = with_evidence(duplicate.note, session, project, now, explicit)
                    _before, after = self._update(
                        duplicate.note.id, lambda n: {**with_evidence(n, session, project, now, explicit),
                                                      "updated": now} if evidence else {},
                        op="recur", detail={"session": session, "project": project})
                    return Added(after, "recurrence", reason=duplicate.reason)
            note_id = _new_id({n.id for n in catalog.notes})
            folder = "skills" if kind == "skill" else "memories"
            taken = {Path(p).stem for p in catalog.entries}
            while True:
                # Another process may have added a file since our catalog was read:
                # a name that exists on disk is taken too.
                stem = _unique_stem(slugify(title or body_text.splitlines()[0]), taken)
                rel = f"{folder}/{namespace}/{stem}.md"
                if not (self.root / rel).exists():
                    break
                taken.add(stem)
            note = Note(
                id=note_id, type=kind, namespace=namespace, tags=clean_tags, status="active", tier=tier,
                strength=self.config.strength_initial, state="learning", step=0, stability=None,
                difficulty=None, due=created, last_review=None, reps=0, lapses=0, created=created,
                updated=now, decayed=None, source=source or "",
                body=body_text + "\n", path=rel, redacted=bool(redacted),
            )
            note = replace(note, **with_evidence(note, session, project, now, explicit))
            superseded, contested, reasons = [], [], []
            if supersede:
                for item in related:
                    if item.relation == "conflict" and not superseded:
                        superseded.append(item)
                    elif item.relation in ("conflict", "unclear"):
                        contested.append(item)
                if superseded:
                    note = replace(note, supersedes=superseded[0].note.link)
                if contested:
                    note = replace(note, contested=True, contested_with=tuple(i.note.link for i in contested))
            text_out = render(note)
            atomic_write(self.root / rel, text_out)
            self._record("add", note, text_out, {"redacted": list(redacted)} if redacted else None)
            self._note_written(rel)
            self._seen_generation = generation + 1
            (self.state_dir / "add.generation").write_text(str(self._seen_generation))
            for item in superseded:
                self._supersede(item.note.id, note, item.reason)
                reasons.append(f"supersedes {item.note.id}: {item.reason}")
            for item in contested:
                self._contest(item.note.id, note, item.reason)
                reasons.append(f"contested with {item.note.id}: {item.reason}")
        return Added(note, "added", tuple(i.note.id for i in superseded), tuple(i.note.id for i in contested),
                     "; ".join(reasons), tuple(redacted))

    def _screen(self, text: str, redact: bool) -> tuple[str, list[str]]:
        """Pass text through the redaction filter: refuse, or mask when `redact`."""
        from .errors import SecretFound
        from .redact import Policy, describe, mask, scan

        findings = scan(text, Policy(emails=self.config.redact_emails, phones=self.config.redact_phones))
        if not findings:
            return text, []
        if not redact:
            raise SecretFound(f"the text holds {describe(findings)}; nothing was written. Remove it, "
                              "or pass --redact to store the text with it masked", findings)
        return mask(text, findings), list(dict.fromkeys(f.kind for f in findings))

    def related(self, text: str, namespace: str, kind: str = "memory", limit: int = 8,
                created: datetime | None = None) -> list:
        """Memories of `namespace` on the same subject as `text`, each with its relation
        (duplicate, conflict or unclear; conflicts.py), closest first. Without the
        embedding model only word-level duplicates are found."""
        from .conflicts import classify

        out = []
        for note, similarity in self._similar(text, namespace, kind, limit):
            verdict = classify(text, note.text, similarity or 0.0)
            relation, reason = verdict.relation, verdict.reason
            if relation in ("conflict", "unclear") and (similarity or 0.0) < SAME_SUBJECT_SIMILARITY:
                # Words alone overrate chat lines that share names and filler: without the
                # model agreeing they are on one subject, a difference is not a contradiction.
                relation = "compatible"
            if relation == "conflict" and created is not None and created < note.created:
                # A backfilled memory older than the one it contradicts does not replace it.
                relation, reason = "unclear", f"{reason}; the new one is dated earlier ({created:%Y-%m-%d})"
            out.append(Related(note, relation, reason, similarity or 0.0))
        return [r for r in out if r.relation != "compatible"]

    def _similar(self, text: str, namespace: str, kind: str, limit: int) -> list[tuple[Note, float]]:
        """Ask the vault's watcher when one runs (it owns the indexes), else search in-process."""
        from .recall import engine_for

        if not os.environ.get("VAULTMEM_NO_SERVER"):
            from .server import ask

            answer = ask(str(self.root), {"op": "similar", "text": text, "namespace": namespace, "kind": kind,
                                          "limit": limit})
            if answer and answer.get("ok"):
                found = [(self._find(i), cosine) for i, cosine in answer["similar"]]
                return [(notes[0], cosine) for notes, cosine in found if len(notes) == 1]
        return engine_for(self).similar(text, namespace, kind, limit)

    def _supersede(self, old_id: str, newer: Note, reason: str) -> Note:
        """Mark `old_id` superseded by `newer` (both links show in Obsidian's graph)."""
        now = clock.now()
        _before, after = self._update(old_id, lambda n: {"status": "superseded", "superseded_by": newer.link,
                                                         "updated": now},
                                      op="supersede", detail={"by": newer.id, "reason": reason})
        return after

    def _contest(self, other_id: str, newer: Note, reason: str) -> Note:
        now = clock.now()

        def change(n: Note) -> dict:
            links = n.contested_with if newer.link in n.contested_with else (*n.contested_with, newer.link)
            return {"contested": True, "contested_with": links, "updated": now}

        _before, after = self._update(other_id, change, op="contest", detail={"with": newer.id, "reason": reason})
        return after

    def learn(self, title: str, trigger: str, steps: str, outcome: str, lessons: str, namespace: str, **kwargs) -> Added:
        """Write a skill: a procedure with its trigger, steps, outcome and lessons."""
        if not (title or "").strip():
            raise BadInput("a skill needs a title, e.g. vaultmem learn \"Deploy the API\" --trigger ... -n work")
        if not (steps or "").strip():
            raise BadInput("a skill needs its steps: --steps \"1. ... 2. ...\"")
        body = skill_body(title, trigger, steps, outcome, lessons)
        return self.add(body, namespace, kind="skill", title=title, **kwargs)

    def grade(self, note_id: str, rating: str, comment: str | None = None, *,
              session: str | None = None, project: str | None = None) -> Note:
        """Record a review: FSRS update, strength, leech check, a review-log line, and
        for good/easy one more act of evidence for promotion (tiers.py)."""
        from .provenance import current_project, current_session
        from .tiers import with_evidence

        rating = parse_rating(rating)
        now = clock.now()
        records: list[dict] = []
        session, project = current_session(session), current_project(project)

        def change(note: Note) -> dict:
            if note.status == "archived":
                raise BadInput(f"{note.id} is archived; `vaultmem restore {note.id}` first")
            changes, record = schedule_grade(note, rating, now, self.config)
            records[:] = [record]
            if rating in ("good", "easy"):
                changes.update(with_evidence(note, session, project, now))
            return changes

        with self._lock():
            _before, after = self._update(note_id, change, op="grade", detail={"rating": rating})
            record = dict(records[0], comment=comment or None, path=after.path, status=after.status)
            append_jsonl(self.reviews_log, record)
        return after

    def grade_batch(self, pairs: list[tuple[str, str]]) -> list[Note]:
        """Grade several notes; all or nothing on bad input (checked before any write)."""
        checked = []
        for note_id, rating in pairs:
            note = self.get(note_id)
            if note.status == "archived":
                raise BadInput(f"{note.id} is archived; `vaultmem restore {note.id}` first")
            checked.append((note.id, parse_rating(rating)))
        with self._lock():
            return [self.grade(note_id, rating) for note_id, rating in checked]

    def archive(self, note_id: str, reason: str = "manual") -> Note:
        """Move a note to archive/ (same relative path), logging a snapshot. Never deletes."""
        with self._lock():
            note = self.get(note_id)
            if note.path.startswith(ARCHIVE_DIR + "/"):
                raise BadInput(f"{note.id} is already archived ({note.path})")
            return self._move_to_archive(note, {"status": "archived"}, reason)

    def _move_to_archive(self, note: Note, changes: dict, reason: str) -> Note:
        source = self.root / note.path
        text = read_text(source, self.config.max_note_bytes)
        current = parse(text, note.path, self._defaults(note.path, source))
        after = replace(current, **changes)
        target_rel = f"{ARCHIVE_DIR}/{note.path}"
        target = self.root / target_rel
        if target.exists():
            raise ConflictError(f"{target_rel} already exists; move it aside, then archive {note.id} again")
        new_text = render(after, text)
        self._record_unseen_edit(current, text, "archive")
        rewrite_and_move(source, new_text, target)
        self._record("archive", replace(after, path=target_rel), new_text, {"reason": reason})
        append_jsonl(self.archive_log, {
            "op": "archive", "id": note.id, "from": note.path, "to": target_rel, "reason": reason,
            "time": clock.format_datetime(clock.now()), "text": text,
        })
        self._catalog = None
        return replace(after, path=target_rel)

    def restore(self, note_id: str) -> Note:
        """Bring an archived note back to where it was, or un-suspend a leech.

        The file returns to its old path with its text as it was; only status
        (active), `updated` and the idle-decay anchor change, so a restored
        memory is not archived again by the next decay.
        """
        now = clock.now()
        with self._lock():
            note = self.get(note_id)
            if note.path.startswith(ARCHIVE_DIR + "/"):
                source = self.root / note.path
                target_rel = note.path[len(ARCHIVE_DIR) + 1:]
                target = self.root / target_rel
                if target.exists():
                    raise ConflictError(f"{target_rel} exists already; rename one of them, then restore {note.id}")
                text = read_text(source, self.config.max_note_bytes)
                current = parse(text, note.path, self._defaults(note.path, source))
                after = replace(current, status="active", updated=now, decayed=now)
                new_text = render(after, text)
                self._record_unseen_edit(current, text, "restore")
                rewrite_and_move(source, new_text, target)
                self._record("restore", replace(after, path=target_rel), new_text)
                append_jsonl(self.archive_log, {"op": "restore", "id": note.id, "from": note.path, "to": target_rel,
                                                "time": clock.format_datetime(now)})
                self._catalog = None
                return replace(after, path=target_rel)
            if note.status in ("suspended", "archived", "stale"):
                _before, after = self._update(note.id, lambda n: {"status": "active", "updated": now, "decayed": now},
                                              op="restore")
                append_jsonl(self.archive_log, {"op": "restore", "id": note.id, "from": note.path, "to": note.path,
                                                "time": clock.format_datetime(now), "status_before": note.status})
                return after
            raise BadInput(f"{note.id} is {note.status}, not archived or suspended; nothing to restore")

    def decay(self, stale_after_days: float | None = None, dry_run: bool = False) -> list[DecayStep]:
        """Apply idle decay and the lifecycle to every note; returns what changed."""
        now = clock.now()
        with self._lock():
            self._catalog = None
            steps = plan_decay(self.catalog().notes, now, self.config, stale_after_days)
            if dry_run:
                return steps
            done = []
            for step in steps:
                try:
                    if step.archive:
                        self._move_to_archive(step.note, step.changes, "decay")
                    else:
                        self._update(step.note.id, lambda n, s=step: _recomputed(n, s, now, self.config, stale_after_days),
                                     op="decay")
                    done.append(step)
                except (NoteError, ConflictError):
                    continue  # reported by health; the rest of the vault still decays
            return done

    # ------------------------------------------------------------ reading for agents

    def recall(self, query: str, k: int | None = None, namespace: str | None = None, kind: str | None = None,
               include_hidden: bool = False, history: bool = False) -> list[Hit]:
        """The `k` notes that best answer `query` (recall.py); `history` adds superseded ones."""
        from .recall import engine_for

        scope = True if include_hidden else ("history" if history else False)
        return engine_for(self).recall(query, k, namespace, kind, scope)

    def review(self, limit: int = 20) -> list[Note]:
        """Notes due for confirmation, most at risk first."""
        from .lifecycle import due_for_review

        return [n for n, _r in due_for_review(self.notes(), clock.now(), self.config)[:limit]]

    def prompt(self, max_tokens: int = 1500, namespace: str | None = None) -> PromptBlock:
        """The context block for an agent's session start (prompt.py)."""
        from .prompt import prompt_lines, render_prompt

        return render_prompt(prompt_lines(self.notes(), clock.now(), self.config, namespace), max_tokens)

    # ------------------------------------------------------------ corrections

    def correct(self, note_id: str, text: str, reason: str | None = None, *,
                session: str | None = None, project: str | None = None) -> Added:
        """Replace a wrong memory: grade it `again`, add the right one, supersede the wrong one.

        The new note says what it corrects (`supersedes`, and a Correction
        section with the old text and the reason); the old one links forward.
        """
        with self._lock():
            wrong = self.get(note_id)
            if wrong.status == "superseded":
                raise BadInput(f"{wrong.id} is already superseded by {wrong.superseded_by}; correct that one instead")
            why = (reason or "").strip()
            if wrong.status != "archived":
                self.grade(wrong.id, "again", comment=f"corrected: {why}" if why else "corrected",
                           session=session, project=project)
            old = " ".join(wrong.text.split())
            body = (text or "").strip()
            if not body:
                raise BadInput("give the right content, e.g. vaultmem correct ID \"Staging runs Postgres 16\"")
            correction = f"\n\n## Correction\nReplaces {wrong.link}, which said: {old}" + (f"\nWhy: {why}" if why else "")
            added = self.add(body + correction, wrong.namespace, tags=wrong.tags, source=wrong.source,
                             tier=wrong.tier, kind=wrong.type, session=session, project=project,
                             supersede=False, merge=False)
            self._update(added.note.id, lambda n: {"supersedes": wrong.link}, op="edit",
                         detail={"corrects": wrong.id})
            self._supersede(wrong.id, added.note, why or "corrected")
            return replace(added, note=self.get(added.note.id), superseded=(wrong.id,),
                           reason=f"corrects {wrong.id}" + (f": {why}" if why else ""))

    def why(self, ref: str) -> dict:
        """Where a memory came from: its source, the evidence that promoted it,
        its supersede/contest links, and every recorded change and grade.
        `ref` is an id, or a claim (the best-matching memory, superseded ones included)."""
        from .trust import explain

        matches = self._find(ref)
        if matches:
            note = self.get(ref)
        else:
            hits = self.recall(ref, k=1, history=True)
            if not hits:
                raise NotFound(f"no memory with id {ref!r} and none matching it; `vaultmem recall` to look")
            note = hits[0].note
        return explain(note, self.ledger.history(note.id), _read_jsonl(self.reviews_log, note.id),
                       {n.link: n for n in self.catalog().notes})

    # ------------------------------------------------------------ tiers

    @property
    def staged_promotions(self) -> Path:
        return self.state_dir / "staged" / "promotions.json"

    def promote(self, adopt: bool = False) -> list[dict]:
        """Plan promotions (tiers.py) and stage them for a person to review, or
        with `adopt` apply the staged ones whose evidence still holds."""
        import json

        from .tiers import next_tier, plan_promotions

        now = clock.now()
        with self._lock():
            if not adopt:
                proposals = [p.as_dict() for p in plan_promotions(self.notes(), now, self.config)]
                atomic_write(self.staged_promotions, json.dumps({"staged": clock.format_datetime(now),
                                                                 "proposals": proposals}, indent=2) + "\n")
                return proposals
            try:
                staged = json.loads(self.staged_promotions.read_text(encoding="utf-8")).get("proposals", [])
            except FileNotFoundError:
                raise NotFound("nothing is staged; run `vaultmem promote` first to see and stage proposals") from None
            except ValueError:
                raise BadInput(f"{self.staged_promotions} is not valid JSON; run `vaultmem promote` again") from None
            done = []
            for item in staged:
                try:
                    note = self.get(item["id"])
                except (NotFound, NoteError, BadInput):
                    continue
                earned = next_tier(note, now, self.config)
                if note.tier != item.get("from") or earned is None:
                    continue  # changed since staging: the next `promote` re-plans it
                target = item["to"] if TIERS.index(item["to"]) <= TIERS.index(earned[0]) else earned[0]
                self._update(note.id, lambda n, t=target: {"tier": t, "promoted": now, "updated": now},
                             op="promote", detail={"from": note.tier, "to": target, "reason": item.get("reason", "")})
                done.append({**item, "to": target})
            self.staged_promotions.unlink(missing_ok=True)
            return done

    def set_tier(self, note_id: str, tier: str, reason: str = "set by hand") -> Note:
        """Promote or demote one memory explicitly (a person's call, not evidence)."""
        tier = tier.upper()
        if tier not in TIERS:
            raise BadInput(f"unknown tier {tier!r}; use one of: {', '.join(TIERS)}")
        now = clock.now()
        _before, after = self._update(note_id, lambda n: {"tier": tier, "promoted": now, "updated": now}
                                      if n.tier != tier else {}, op="promote", detail={"to": tier, "reason": reason})
        return after

    # ------------------------------------------------------------ tamper evidence

    def verify(self, record: bool = True) -> dict:
        """Walk the ledger's chain and compare every note with its last record.

        With `record`, changes made by hand (unrecorded edits, notes never
        recorded) are appended as `external-edit`, and notes gone as
        `external-delete`: they are legitimate, and now on the record.
        Breaks of the chain are only ever reported.
        """
        from .ledger import check_chain, check_notes, content_hash

        with self._lock():
            self._catalog = None
            catalog = self.catalog()
            files: dict[str, tuple[str, str]] = {}
            texts: dict[str, tuple[Note, str]] = {}
            for note in catalog.notes:
                try:
                    text = read_text(self.root / note.path, self.config.max_note_bytes)
                except NoteError:
                    continue
                files[note.id] = (note.path, content_hash(text))
                texts[note.id] = (note, text)
            breaks = check_chain(self.ledger.records())
            changes = check_notes(self.ledger.state().last, files)
            recorded = []
            if record:
                for problem in changes:
                    note_id = problem.detail.split(" ", 1)[0]
                    if problem.kind in ("unrecorded edit", "untracked note") and note_id in texts:
                        note, text = texts[note_id]
                        self._record("external-edit", note, text, {"noticed_by": "verify",
                                                                   "first_seen": problem.kind == "untracked note"})
                        recorded.append(problem)
                    elif problem.kind == "missing note":
                        last = self.ledger.last(note_id) or {}
                        self.ledger.append("external-delete", note_id, last.get("path", ""), None,
                                           clock.format_datetime(clock.now()), {"noticed_by": "verify"})
                        recorded.append(problem)
            return {"breaks": [p.as_dict() for p in breaks], "changes": [p.as_dict() for p in changes],
                    "recorded": len(recorded), "notes": len(files)}

    def record_external_edits(self, paths: Iterable[str]) -> int:
        """Record hand edits of `paths` (the watcher's events) in the ledger; returns how many."""
        from .ledger import content_hash

        count = 0
        with self._lock():
            for rel in paths:
                path = self.root / rel
                if not path.exists():
                    count += self._record_deletion(rel)
                    continue
                try:
                    text = read_text(path, self.config.max_note_bytes)
                    note = parse(text, rel, self._defaults(rel, path))
                except NoteError:
                    continue
                last = self.ledger.last(note.id)
                if last is None or last.get("content") != content_hash(text):
                    self._record("external-edit", note, text, {"noticed_by": "watcher", "first_seen": last is None})
                    count += 1
        return count

    def _record_deletion(self, rel: str) -> int:
        """A note file gone by hand: record it, unless its note lives on elsewhere (moved, archived)."""
        state = self.ledger.state()
        gone = [i for i, r in state.last.items() if r.get("path") == rel and r.get("content") is not None]
        living = {n.id for n in self.catalog(fresh=True).notes}
        for note_id in gone:
            if note_id not in living:
                self.ledger.append("external-delete", note_id, rel, None, clock.format_datetime(clock.now()),
                                   {"noticed_by": "watcher"})
        return sum(1 for i in gone if i not in living)

    # ------------------------------------------------------------ moving in

    def import_file(self, rel: str, text: str, source: str = "") -> Note:
        """Write a whole note file as given (a vaultmem export), byte for byte.

        Refuses a path outside the note folders and an existing file with
        different text; an identical existing file is left as it is.
        """
        from .catalog import is_note_path

        rel = rel.replace("\\", "/").lstrip("/")
        if ".." in rel.split("/") or not is_note_path(rel):
            raise BadInput(f"{rel!r} is not a note path inside the vault (memories/, skills/ or archive/, *.md)")
        path = self.root / rel
        with self._lock():
            if path.exists():
                if read_text(path, self.config.max_note_bytes) == text:
                    return self.read_note(rel)
                raise ConflictError(f"{rel} exists with different text; move it aside or import into an empty vault")
            note = parse(text, rel, self._defaults(rel, path))
            if self._find(note.id):
                raise ConflictError(f"id {note.id} is already used by {self._find(note.id)[0].path}; not imported")
            atomic_write(path, text)
            self._record("import", note, text, {"source": source} if source else None)
            self._catalog = None
            return self.read_note(rel)


def _recomputed(note: Note, planned: DecayStep, now: datetime, config: Config, stale_after_days) -> dict:
    """Decay re-planned on the file as it is under the lock (it may have been edited)."""
    from .lifecycle import decay_step

    step = decay_step(note, now, config, stale_after_days)
    return {k: v for k, v in (step.changes if step else {}).items() if k != "status" or v != "archived"}


def _read_jsonl(path: Path, note_id: str) -> list[dict]:
    """The lines of a log that concern one note."""
    import json

    found = []
    try:
        with open(path, encoding="utf-8") as handle:
            for raw in handle:
                try:
                    record = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(record, dict) and record.get("id") == note_id:
                    found.append(record)
    except FileNotFoundError:
        pass
    return found


def check_namespace(namespace: str | None) -> str:
    text = (namespace or "").strip().strip("/")
    if not text:
        raise BadInput("a namespace is required: add -n NAMESPACE (e.g. -n work or -n projects/api)")
    if not NAMESPACE_PATTERN.match(text) or any(part in (".", "..") for part in text.split("/")):
        raise BadInput(f"namespace {namespace!r} may use letters, digits, '.', '_', '-' and '/' between parts")
    return text


def _new_id(taken: set[str]) -> str:
    while True:
        candidate = "".join(secrets.choice(ID_ALPHABET) for _ in range(8))
        if candidate not in taken:
            return candidate


def _unique_stem(stem: str, taken: set[str]) -> str:
    """Obsidian resolves [[links]] by file name, so names are unique vault-wide."""
    if stem not in taken:
        return stem
    number = 2
    while f"{stem}-{number}" in taken:
        number += 1
    return f"{stem}-{number}"
