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
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Callable, Iterable

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

ARCHIVE_DIR = "archive"
ID_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"
NAMESPACE_PATTERN = re.compile(r"^[\w.-]+(/[\w.-]+)*$")
WRITE_RETRIES = 5


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

    def _update(self, note_id: str, change: Callable[[Note], dict]) -> tuple[Note, Note]:
        """Apply `change(note) -> property changes` to the file as it is now.

        Holds the write lock; re-reads the file, and if it changes between the
        read and the rename (a person saving), re-applies on top of the new text.
        Returns (before, after).
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
                    atomic_write(path, new_text)
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
    ) -> Note:
        """Write a new memory (or skill) note and return it."""
        namespace = check_namespace(namespace)
        body_text = (text or "").strip()
        if not body_text:
            raise BadInput("the memory's text is empty; give the text to remember, e.g. vaultmem add \"...\" -n work")
        if "\x00" in body_text:
            raise BadInput("the memory's text contains a NUL byte; give plain text")
        tier = (tier or self.config.default_tier).upper()
        if tier not in TIERS:
            raise BadInput(f"unknown tier {tier!r}; use one of: {', '.join(TIERS)}")
        now = clock.now()
        created = created or now
        clean_tags = tuple(dict.fromkeys(t.strip().lstrip("#") for t in tags if t and t.strip().lstrip("#")))
        with self._lock():
            # Adds by other processes bump the generation: only then re-read the vault.
            generation = self._read_generation()
            catalog = self.catalog(fresh=generation != self._seen_generation)
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
                body=body_text + "\n", path=rel,
            )
            atomic_write(self.root / rel, render(note))
            self._note_written(rel)
            self._seen_generation = generation + 1
            (self.state_dir / "add.generation").write_text(str(self._seen_generation))
        return note

    def learn(self, title: str, trigger: str, steps: str, outcome: str, lessons: str, namespace: str, **kwargs) -> Note:
        """Write a skill: a procedure with its trigger, steps, outcome and lessons."""
        if not (title or "").strip():
            raise BadInput("a skill needs a title, e.g. vaultmem learn \"Deploy the API\" --trigger ... -n work")
        if not (steps or "").strip():
            raise BadInput("a skill needs its steps: --steps \"1. ... 2. ...\"")
        body = skill_body(title, trigger, steps, outcome, lessons)
        return self.add(body, namespace, kind="skill", title=title, **kwargs)

    def grade(self, note_id: str, rating: str, comment: str | None = None) -> Note:
        """Record a review: FSRS update, strength, leech check, and a review-log line."""
        rating = parse_rating(rating)
        now = clock.now()
        records: list[dict] = []

        def change(note: Note) -> dict:
            if note.status == "archived":
                raise BadInput(f"{note.id} is archived; `vaultmem restore {note.id}` first")
            changes, record = schedule_grade(note, rating, now, self.config)
            records[:] = [record]
            return changes

        with self._lock():
            _before, after = self._update(note_id, change)
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
        rewrite_and_move(source, render(after, text), target)
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
                rewrite_and_move(source, render(after, text), target)
                append_jsonl(self.archive_log, {"op": "restore", "id": note.id, "from": note.path, "to": target_rel,
                                                "time": clock.format_datetime(now)})
                self._catalog = None
                return replace(after, path=target_rel)
            if note.status in ("suspended", "archived", "stale"):
                _before, after = self._update(note.id, lambda n: {"status": "active", "updated": now, "decayed": now})
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
                        self._update(step.note.id, lambda n, s=step: _recomputed(n, s, now, self.config, stale_after_days))
                    done.append(step)
                except (NoteError, ConflictError):
                    continue  # reported by health; the rest of the vault still decays
            return done


def _recomputed(note: Note, planned: DecayStep, now: datetime, config: Config, stale_after_days) -> dict:
    """Decay re-planned on the file as it is under the lock (it may have been edited)."""
    from .lifecycle import decay_step

    step = decay_step(note, now, config, stale_after_days)
    return {k: v for k, v in (step.changes if step else {}).items() if k != "status" or v != "archived"}


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
