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
import secrets
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, TypeVar

from vaultmem import clock
from vaultmem.config import Config, load_config
from vaultmem.core.lifecycle import DecayStep, plan_decay
from vaultmem.core.model import TIERS, Note, check_namespace, check_text, tidy_tags  # noqa: F401 - check_namespace: API
from vaultmem.core.note import (
    as_read_back,
    load_frontmatter,
    parse,
    render,
    skill_body,
    slugify,
    split_frontmatter,
    with_properties,
)
from vaultmem.core.schedule import grade as schedule_grade
from vaultmem.core.schedule import parse_rating
from vaultmem.errors import BadInput, ConflictError, LockTimeout, NoteError, NotFound, VaultmemError
from vaultmem.store.catalog import Catalog, content_digest, folder_mtimes
from vaultmem.store.discovery import STATE_DIR, default_vault_path, discover
from vaultmem.store.files import (
    SpareFiles,
    append_jsonl,
    batched_durability,
    create_new,
    decode_note,
    move,
    read_text,
    remove_leftover_temps,
    rewrite,
    rewrite_many,
)
from vaultmem.store.template import init_vault
from vaultmem.timefmt import parse_datetime

if TYPE_CHECKING:
    from vaultmem.core.prompt import PromptBlock
    from vaultmem.ops.corrections import Related
    from vaultmem.search.engine import Hit

ARCHIVE_DIR = "archive"
ID_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"  # 32 characters: _new_id takes 5 bits for each
WRITE_RETRIES = 5
ORIGINAL_ID = "original_id"  # an imported note's id in the store it came from (Vault.by_original_id)
# How to ask for masking, in each of the ways in (an MCP agent was told of a --redact it cannot pass).
REDACT_HINT = "Remove it, or ask for redaction (--redact; redact=True in the API and MCP)"
# Looks for a note that moved while we looked (each look re-lists the folders that changed):
# 3 lost half the grades of a note moved every 50 ms on a loaded machine, 8 none in 320 races.
FIND_ATTEMPTS = 8
REWRITE_BATCH = 500  # notes rewritten per filesystem sync and ledger append (decay, a batch's contests)
T = TypeVar("T")  # what an act on a note found by its id returns (_where_it_is_now)
# One note of a batch rewrite: (the note as found, its change, the ledger op, one record's detail per entry).
BatchJob = tuple[Note, Callable[[Note], dict], str, list[dict | None]]
INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff"  # zero-width characters: a text of only these is empty
ADD_BATCH = 500  # at most this many adds per sync in add_many, and texts embedded ahead (the engine keeps 512)
EMBED_AHEAD_BATCHES = 3  # add_many's batches embedded ahead in the background (search/ahead.py)
# add_many writes the older notes its adds contested at its end, or once this long has passed since
# it last did: a crash loses at most that long of their marks (the new notes keep their links).
CONTESTS_HELD_SECONDS = 30.0
BATCH_GAP = 0.06  # add_many's pause between batches (at least, counting its embedding) for other processes
ADD_BATCH_SECONDS = 2.5  # and a batch ends (syncs, lets the write lock go) after this long: 200 checked adds
_MTIME_DEFAULTS = frozenset({"created", "due", "updated"})  # what a note lacking them takes from its file's mtime


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
        self._refreshed = False
        self._write_lock = None
        self._making = threading.RLock()  # one catalog, ledger and write lock however many threads ask at once
        self._ledger = None
        self._in_batch = False  # inside add_many: its checks search in-process, with vectors embedded ahead
        self._contests: dict[str, list[tuple[Note, str]]] = {}  # to mark contested: note id -> [(newer, reason)]
        self._folders_inside: set[str] = set()  # add_many: note folders found inside the vault this batch

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
            from vaultmem.store.ledger import Ledger

            with self._making:
                if self._ledger is None:
                    self._ledger = Ledger(self.state_dir / "ledger.jsonl", lambda: self.catalog(refresh=False).db)
        return self._ledger

    def record(self, op: str, note: Note, text: str | None, detail: dict | None = None) -> None:
        """Append one act to the ledger (caller holds the write lock)."""
        self.ledger.append(op, note.id, note.path, text, clock.format_datetime(clock.now()), detail)

    def _record_unseen_edit(self, note: Note, text: str, noticed_by: str) -> None:
        """Before vaultmem rewrites a note, record a change made by hand since its last record."""
        entry = self.unseen_edit(note, text, noticed_by)
        if entry:
            self.ledger.append_many([entry])

    def has_unrecorded_edit(self, note: Note) -> bool:
        """Whether the note's file holds a change made by hand that the ledger has not recorded yet
        (it is recorded when vaultmem next rewrites the note, or by `verify` or the watcher)."""
        text = read_text(self.root / note.path, self.config.max_note_bytes)
        return self.unseen_edit(note, text, "") is not None

    def unseen_edit(self, note: Note, text: str, noticed_by: str) -> tuple | None:
        """The ledger entry for a change made by hand since the note's last record, if any."""
        from vaultmem.store.ledger import content_hash

        last = self.ledger.last(note.id)
        if last is not None and last.get("op") == "merge":
            return None  # the text a merge made: the merge record vouches for it, the change records the rest
        if last is None or last.get("content") != content_hash(text):
            detail = {"noticed_by": noticed_by}
            if last is None:
                detail["first_seen"] = True
            return ("external-edit", note.id, note.path, text, clock.format_datetime(clock.now()), detail)
        return None

    def write_lock(self):
        """The vault-wide write lock (one per Vault object: it is re-entrant). Waiting longer
        than VAULTMEM_LOCK_WAIT seconds (default 60) raises LockTimeout (store/lock.py)."""
        if self._write_lock is None:
            from vaultmem.store.lock import WriteLock

            # Made once: threads sharing this Vault that each made their own found the lock held
            # by their own process (another WriteLock of it) and waited on themselves for 60 s.
            with self._making:
                if self._write_lock is None:
                    self.state_dir.mkdir(parents=True, exist_ok=True)
                    self._write_lock = WriteLock(self.state_dir / "write.lock")
        return self._write_lock

    # ------------------------------------------------------------ reading

    def read_note(self, rel: str, text: str | None = None) -> Note:
        """Parse one note file (relative path), with defaults for what it lacks."""
        path = self.root / rel
        if text is None:
            text = read_text(path, self.config.max_note_bytes)
        return parse(text, rel, self.defaults_for(rel, path))

    def defaults_for(self, rel: str, path: Path) -> dict:
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

    def catalog(self, fresh: bool = False, full: bool = False, refresh: bool = True) -> Catalog:
        """The catalog of the vault's notes (store/catalog.py).

        Brought in step with the files on first use in this object, and again
        when `fresh` (bounded work: changed folders, a full check every few
        seconds) or `full` (stat every note file). vaultmem's own writes, in
        any process, are in it as soon as they are made.
        """
        if self._catalog is None:
            with self._making:
                if self._catalog is None:
                    self._catalog = Catalog(self.root, self.cache_dir / "catalog.sqlite", self.read_note,
                                            self.config.max_note_bytes)
        if refresh and (fresh or full or not self._refreshed):
            if not self.state_dir.is_dir():  # as a write says it (store/lock.py): not an empty vault
                raise NotFound(f"{self.root} is no vault any more (its {STATE_DIR}/ folder is gone: moved, renamed "
                               "or deleted); open the vault where it is now")
            self._catalog.refresh(full=full)
            self._refreshed = True
        return self._catalog

    def catalog_replaced(self) -> bool:
        """Whether the catalog this object has open was deleted or made anew by another process."""
        return self._catalog is not None and self._catalog.replaced()

    def forget_catalog(self, close: bool = True) -> None:
        """Drop the connection to the catalog (after its file was deleted). `close=False` while
        other threads may still be reading through it (the watcher's requests): its connections
        then close when the last of them lets go of it."""
        if self._catalog is not None and close:
            self._catalog.close()
        if self._ledger is not None:
            self._ledger.forget_connection()
        self._catalog, self._refreshed = None, False

    def problems(self) -> list[tuple[str, str]]:
        """(path, problem) of each note file that does not parse (broken YAML, a merge conflict,
        binary bytes, over the size limit): left out of `notes()` and `recall()`, which the CLI
        and MCP say and an API caller learns here."""
        return self.catalog(fresh=True).problems

    def notes(self, include_hidden: bool = False) -> list[Note]:
        """Every readable note; archived, suspended and superseded ones only with `include_hidden`."""
        notes = self.catalog(fresh=True).notes
        return notes if include_hidden else [n for n in notes if not n.is_hidden]

    def get(self, note_id: str) -> Note:
        """The note with this id (or, for hand-written notes, this file name)."""
        matches = self.find(note_id) or self.by_original_id(note_id)
        if not matches:
            # Before "no such note": one full check (a stat of every note file), which does not
            # go by folder mtimes as find's checks do (a folder renamed back and forth while
            # checks of other threads or processes ran can be left looking unchanged).
            self.catalog(full=True)
            matches = self.find(note_id, attempts=1)
        if not matches:
            problem = self.catalog().problem_of(str(note_id).strip())
            if problem is not None:
                path, message = problem
                raise NoteError(path, message.split("; ")[0], message.split("; ", 1)[-1])
            raise NotFound(f"no note with id {note_id!r}; `vaultmem list` shows the ids")
        if len(matches) > 1:
            paths = ", ".join(n.path for n in matches)
            raise BadInput(f"id {note_id!r} is in {len(matches)} files ({paths}); give all but one a new id")
        return matches[0]

    def find(self, note_id: str, attempts: int = FIND_ATTEMPTS) -> list[Note]:
        """Notes with this id, or for hand-written notes this file name (usually one).

        A lookup in the catalog, checked against the files it names (one stat
        each: a note edited in place a moment ago is read as it is now); when it
        finds nothing, or a file is not where the catalog says, the vault's
        folders are checked again.
        """
        note_id = str(note_id).strip()
        catalog = self.catalog()
        for attempt in range(attempts):  # a file moved while we looked is looked for again
            if attempt:
                catalog = self.catalog(fresh=True)
            matches = catalog.by_id(note_id) or catalog.by_stem(note_id)
            if matches and catalog.refresh_paths([n.path for n in matches]):
                matches = catalog.by_id(note_id) or catalog.by_stem(note_id)
            if matches and all((self.root / n.path).is_file() for n in matches):
                return matches
        there = [n for n in matches if (self.root / n.path).is_file()]
        if matches and not there:
            # Listed each time, gone from there each time: moving faster than we look (a person
            # renaming its folder again and again), not missing. "Try again", not "no such note".
            raise ConflictError(f"note {note_id} kept moving while vaultmem looked for it "
                                f"({matches[0].path}); nothing was written, try again")
        return there

    def by_original_id(self, old_id: str) -> list[Note]:
        """Imported notes whose `original_id` (their id in the store they came from) is `old_id`,
        so references kept elsewhere still resolve. Reads only the files that have one. A note
        imported again after it changed leaves its earlier import superseded with the same
        `original_id`: the one in force answers."""
        old_id = str(old_id).strip()
        found = []
        for note in self.catalog().notes:
            if ORIGINAL_ID not in note.present:
                continue
            try:
                block, _body = split_frontmatter(read_text(self.root / note.path, self.config.max_note_bytes))
                value = load_frontmatter(block or "", note.path).data.get(ORIGINAL_ID)
            except (OSError, VaultmemError):
                continue
            if value is not None and str(value) == old_id:
                found.append(note)
        return [n for n in found if n.status != "superseded"] or found

    # ------------------------------------------------------------ writing

    def update_note(self, note_id: str, change: Callable[[Note], dict], op: str = "edit",
                    detail: dict | None = None, properties: dict | None = None) -> tuple[Note, Note]:
        """Apply `change(note) -> property changes` to the file as it is now.

        Holds the write lock; re-reads the file, and if it changes between the
        read and the rename (a person saving), re-applies on top of the new text.
        A hand edit since the ledger's last record is recorded first, then
        this change as `op`. Returns (before, after).
        """
        with self.write_lock():
            return self._where_it_is_now(
                note_id, lambda found: self._rewrite(found, change, op, detail, properties=properties)[:2], "write")

    def _rewrite(self, found: Note, change: Callable[[Note], dict], op: str, detail: dict | None,
                 moved_from: str | None = None, properties: dict | None = None,
                 folders: dict[str, int | None] | None = None) -> tuple[Note, Note, str]:
        """Rewrite the file of `found` with `change` (and `properties` vaultmem does not
        model), on top of whatever a person saved meanwhile (files.rewrite); record a hand
        edit first, then `op`. Returns the note before and after, and the text the change was
        applied to. `folders`: a move's folder mtimes from before it (catalog.folder_mtimes)."""
        rel = found.path
        path, compute, decode, applied = self._job(found, change, properties=properties)
        folders = folder_mtimes(self.root, [rel]) if folders is None else folders
        base, new_text = rewrite(path, compute, decode)
        before, after = applied[base]
        if new_text != base or moved_from:
            self._record_unseen_edit(before, base, op)
            self.catalog(refresh=False).wrote(rel, new_text, moved_from=moved_from, before=folders,
                                              note=as_read_back(after))
            self.record(op, after, new_text, detail)
        return before, after, base

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
        from vaultmem.core.tiers import with_evidence
        from vaultmem.ops import corrections
        from vaultmem.ops.provenance import current_project, current_session

        namespace = check_namespace(namespace)
        body_text = self.text_to_write(text, "the memory's text", 'give the text to remember, e.g. vaultmem add "..." '
                                                                  "-n work")
        source, title = check_text(source, "the source"), check_text(title, "the title") or None
        if created is not None:
            created = parse_datetime(created, "created")  # a naive datetime is UTC, a date its midnight
        if kind not in ("memory", "skill"):
            raise BadInput(f"kind {kind!r} is neither memory nor skill")
        tier = (tier or self.config.default_tier).upper()
        if tier not in TIERS:
            raise BadInput(f"unknown tier {tier!r}; use one of: {', '.join(TIERS)}")
        session, project = current_session(session), current_project(project)
        clean_tags = tidy_tags(tags)
        # Every field that lands in a file is screened before anything is written.
        self.screen_names(namespace=namespace, session=session, project=project)
        body_text, redacted = self.screen(body_text, redact)
        source, source_redacted = self.screen(source or "", redact, "source")  # a URL may carry a password
        title, title_redacted = self.screen(title or "", redact, "title")
        clean_tags, tags_redacted = self.screen_tags(clean_tags, redact)
        redacted = list(dict.fromkeys([*redacted, *source_redacted, *title_redacted, *tags_redacted]))
        title = title or None
        folder = "skills" if kind == "skill" else "memories"
        with self.write_lock():
            # The check runs under the lock: two processes adding contradicting
            # memories at once see each other's notes. The time is taken under it
            # too, so a memory that waited for the lock is not dated before one
            # written meanwhile (it would look like a backfill and only contest it).
            now = clock.now()
            created = created or now
            related = (self.related(body_text, namespace, kind, created=created, tags=clean_tags)
                       if (merge or supersede) and self.config.check_conflicts else [])
            duplicate, superseded, contested = corrections.decide(related)
            if not supersede:
                superseded, contested = [], []
            if merge and duplicate is not None and self.find(duplicate.note.id):
                def recur(n: Note) -> dict:
                    evidence = with_evidence(n, session, project, now, explicit)
                    return {**evidence, "updated": now} if evidence else {}

                _before, after = self.update_note(duplicate.note.id, recur, op="recur",
                                                  detail={"session": session, "project": project})
                return Added(after, "recurrence", reason=duplicate.reason)
            catalog = self.catalog()
            note = Note(
                id=_new_id(catalog.id_taken), type=kind, namespace=namespace, tags=clean_tags, status="active",
                tier=tier, strength=self.config.strength_initial, state="learning", step=0, stability=None,
                difficulty=None, due=created, last_review=None, reps=0, lapses=0, created=created,
                updated=now, decayed=None, source=source or "",
                body=body_text + "\n", path="", redacted=bool(redacted),
            )
            note = replace(note, **with_evidence(note, session, project, now, explicit))
            reasons = []
            if superseded:
                # An update of a durable fact is as durable (L3's replacement fell out of the core
                # block): the higher of its tier and the one it supersedes
                held = max(tier, superseded[0].note.tier, key=TIERS.index)
                note = replace(note, supersedes=superseded[0].note.link, tier=held)
            if contested:
                note = replace(note, contested=True,  # the closest, as many as an older note keeps
                               contested_with=tuple(i.note.link for i in contested)[:corrections.CONTESTED_KEPT])
            with catalog.transaction():  # the note's catalog row and its ledger record: one commit
                note, text_out = self._create(note, f"{folder}/{namespace}",
                                              slugify(title or body_text.splitlines()[0]))
                self.record("add", note, text_out, {"redacted": list(redacted)} if redacted else None)
            for item in superseded:
                corrections.supersede(self, item.note.id, note, item.reason)
                reasons.append(f"supersedes {item.note.id}: {item.reason}")
            for item in contested:  # written together, after the new note (_write_contests)
                self._contests.setdefault(item.note.id, []).append((note, item.reason))
                reasons.append(f"contested with {item.note.id}: {item.reason}")
            if not self._in_batch:  # add_many writes them once per note, at the end of each batch
                self._write_contests()
        return Added(note, "added", tuple(i.note.id for i in superseded), tuple(i.note.id for i in contested),
                     "; ".join(reasons), tuple(redacted))

    def add_many(self, items: Iterable[dict], batch: int = ADD_BATCH) -> list[Added | VaultmemError]:
        """Many adds at once (an import, a backfill): each item holds `add`'s arguments
        (text, namespace, and any of its keywords) and gets `add`'s checks, in order, so
        the result is what the same adds one by one would give: per item its Added, or
        the error that refused it (the others still go in).

        What it saves is the per-add overhead: texts are embedded in batches for the
        checks, the write lock is taken once per batch, new notes and their ledger
        lines are made durable by one filesystem sync per batch (files.batched_durability),
        and, with the checks on, the new notes go into the BM25 index in one commit at the end.
        An item that is not a set of `add`'s arguments (no namespace, an unknown keyword) gets
        a BadInput, as `add` would refuse it, before any is written."""
        items = list(items)
        refused = _refusals_of_items(self.add, items)
        added = iter(self._add_many([item for number, item in enumerate(items) if number not in refused], batch))
        return [refused[number] if number in refused else next(added) for number in range(len(items))]

    def _add_many(self, items: list[dict], batch: int) -> list[Added | VaultmemError]:
        """add_many for items that are each a set of add's arguments."""
        from vaultmem.ops.provenance import current_project

        here = current_project()  # the same for every item (the working folder's repository): found once
        items = [item if item.get("project") else {**item, "project": here} for item in items]
        results: list[Added | VaultmemError] = []
        start = 0
        ended = None  # when the last batch let the locks go
        contests_written = time.monotonic()
        # The old files of the notes a batch's contests rewrite take the next batch's rewrites
        # (files.SpareFiles: making a file is most of a rewrite's cost on some filesystems).
        with SpareFiles() as spares, self._embedding_ahead():
            while start < len(items):
                chunk = items[start:start + batch]
                checked = self.config.check_conflicts and any(map(_wants_checks, chunk))
                if checked:
                    # Before the lock: the model needs none, and takes a while. The next batches' texts
                    # are embedded in the background while this one is added.
                    self._embed_ahead(chunk, items[start + len(chunk):start + (1 + EMBED_AHEAD_BATCHES) * len(chunk)])
                if ended is not None:
                    # Others wait for the write lock or for the catalog (a hook's refresh, a reindex) by
                    # polling (filelock every 50 ms, SQLite's busy wait up to every 100 ms): without a
                    # gap between batches a long import takes them back at once and starves them.
                    time.sleep(max(0.0, BATCH_GAP - (time.monotonic() - ended)))
                self._in_batch, self._folders_inside = True, set()  # (the contests still to write carry over)
                try:
                    # One sync for the batch's files. The catalog commits per add, not per batch: a
                    # process reading meanwhile (a hook's refresh, a reindex) writes to the catalog too,
                    # and would wait for the whole batch, once for each of its own commits.
                    with self.write_lock(), batched_durability(self.root), self._indexes_held(checked):
                        if checked:
                            # The files are checked once a batch, here: the adds' checks then follow
                            # the catalog alone (a batch takes seconds, under the write lock), and a
                            # person's edit made meanwhile is seen by the next batch.
                            self.catalog(fresh=True)
                        began = time.monotonic()
                        for item in chunk:
                            try:
                                results.append(self.add(**item))
                            except VaultmemError as exc:
                                results.append(exc)
                            start += 1
                            if time.monotonic() - began > ADD_BATCH_SECONDS:
                                break  # the rest in the next batch: another process's write waits no longer
                        # The older notes the adds contested: at the end, or after CONTESTS_HELD_SECONDS.
                        # A note an import contests again and again is rewritten once, not once a batch
                        # (10k of bench/peers.py's memories: 3,733 rewrites instead of 15,044).
                        if start >= len(items) or time.monotonic() - contests_written >= CONTESTS_HELD_SECONDS:
                            self._write_contests(spares)
                            contests_written = time.monotonic()
                    ended = time.monotonic()
                except BaseException:
                    from vaultmem.search.engine import forget_engines

                    forget_engines(self)  # the failed add's catalog rows were rolled back: views built on them go too
                    self._write_contests_after_failure()
                    raise
                finally:
                    self._in_batch, self._folders_inside = False, set()
        self._contests = {}
        if self.config.check_conflicts and any(map(_wants_checks, items)) and any(
                isinstance(r, Added) and r.action == "added" for r in results):
            from vaultmem.search.engine import REQUEST_LOCK_WAIT, engine_for

            try:  # the new notes into the BM25 index: one commit, not one per batch
                engine_for(self).sync(lock_wait=REQUEST_LOCK_WAIT)
            except LockTimeout:
                pass  # another process writes the indexes now (a reindex: it takes them in): the next sync does
        return results

    def _write_contests_after_failure(self) -> None:
        """add_many stopped by an error: the contests of the adds that went in are still
        written (best effort: if that fails too, the first error is the one raised)."""
        try:
            if self._contests:
                with self.write_lock(), batched_durability(self.root):
                    self._write_contests()
        except Exception:  # noqa: BLE001 - the caller re-raises the error that stopped the import
            pass
        finally:
            self._contests = {}

    @contextmanager
    def _embedding_ahead(self):
        """add_many's texts embedded ahead (`_embed_ahead`), until it returns: what runs them in
        the background (a second process, search/embed_worker.py) ends with it, as do the
        namespace blocks its checks searched (search/blocks.py). (An import without the checks
        never loads the engine: nothing to end.)"""
        try:
            yield
        finally:
            engine_module = sys.modules.get("vaultmem.search.engine")
            engine = engine_module.existing_engine(self) if engine_module is not None else None
            if engine is not None:
                engine.end_import()

    @contextmanager
    def _indexes_held(self, checked: bool):
        """For a batch whose adds run the checks: the index lock, held through it (each
        check's sync updates the vector rows; see RecallEngine.indexes_held)."""
        if not checked:
            yield
            return
        from vaultmem.search.engine import engine_for

        with engine_for(self).indexes_held():
            yield

    def _write_contests(self, spares: SpareFiles | None = None) -> None:
        """The older notes an add (or a batch of adds) contested, as one batch rewrite: one
        sync for all of them instead of three per note, and each note rewritten once with
        all its new links. The ledger gets one `contest` record per pair. `spares`: as for
        `_rewrite_batch`."""
        from vaultmem.ops.corrections import contest_change

        jobs = []
        pending, self._contests = self._contests, {}
        for other_id, by in pending.items():
            try:
                found = self.get(other_id)
            except NotFound:
                continue  # gone since (moved out, deleted): nothing to mark
            jobs.append((found, contest_change([newer for newer, _reason in by], clock.now()), "contest",
                         [{"with": newer.id, "reason": reason} for newer, reason in by]))
        self._rewrite_batch(jobs, spares)

    @property
    def in_batch(self) -> bool:
        """Inside add_many (its checks search in this process, not through a watcher)."""
        return self._in_batch

    def _embed_ahead(self, items: list[dict], following: list[dict]) -> None:
        """Embed the texts a batch's checks will search with, together (one model run per
        64 texts, not one per add); each add then finds its vector ready. The texts of the
        `following` items are embedded meanwhile in the background (search/ahead.py)."""
        from vaultmem.search.engine import engine_for, passage_for

        def passages(items: list[dict]) -> list[str]:
            # The text add's check searches with (corrections.related): the vectors it asks for.
            return [passage_for(item.get("kind", "memory"), (item.get("text") or "").strip(),
                                tidy_tags(item.get("tags", ())))
                    for item in items if _wants_checks(item)]

        texts = passages(items)
        if texts:  # adds without checks need no model (loading it takes a second)
            engine_for(self).embed_passages(texts, passages(following))

    def _create(self, note: Note, folder: str, stem: str) -> tuple[Note, str]:
        """Write a new note file under `folder` with a free name from `stem`; a file
        someone creates under the same name meanwhile is never replaced."""
        self._check_inside(folder)
        catalog = self.catalog(refresh=False)
        collided = False  # a file the catalog does not know yet took a name: look at the folder too
        for _attempt in range(WRITE_RETRIES):
            catalogued = catalog.stems_numbered(stem)
            name = _free_stem(stem, lambda s: s in catalogued or (
                collided and (self.root / f"{folder}/{s}.md").exists()))
            rel = f"{folder}/{name}.md"
            note = replace(note, path=rel)
            text = render(note)
            self.check_size(rel, text)
            folders = folder_mtimes(self.root, [rel])
            try:
                create_new(self.root / rel, text)  # never over a file there (FileExistsError)
            except FileExistsError:
                collided = True
                continue  # the name was taken meanwhile: made again under another
            except FileNotFoundError:
                continue  # a person renamed the folder meanwhile: made again
            catalog.wrote(rel, text, before=folders, note=as_read_back(note))
            return note, text
        raise ConflictError(f"files named like {stem}.md keep appearing in {folder}/; nothing was written, try again")

    def text_to_write(self, text, what: str, if_empty: str) -> str:
        """`text` trimmed, or BadInput naming `what`, before anything is written, for text no
        note should hold: not a string or not UTF-8, empty (zero-width characters count for
        nothing), without a letter or digit, with a NUL byte, or over the size limit. One list
        for `add` and for `correct`, which must refuse what `add` would before it grades."""
        body = check_text(text, what).strip()
        if not body.strip(INVISIBLE):
            raise BadInput(f"{what} is empty; {if_empty}")
        if not any(ch.isalnum() for ch in body):
            raise BadInput(f"{what} {body[:40]!r} holds no letter or digit; give the text to remember")
        if "\x00" in body:
            raise BadInput(f"{what} contains a NUL byte; give plain text")
        self.check_size(what, body)
        return body

    def check_size(self, what: str, text: str) -> None:
        """BadInput, before anything is written, for text that reading would refuse
        (over notes.max_note_bytes): a note vaultmem writes must read back."""
        size = len(text.encode("utf-8", "surrogatepass"))
        limit = self.config.max_note_bytes
        if size > limit:
            raise BadInput(f"{what} is {size:,} bytes, over the {limit:,}-byte limit for a note; nothing was written. "
                           "Split it into smaller notes, or raise notes.max_note_bytes in .vaultmem/config.yaml")

    def _check_inside(self, folder: str) -> None:
        """Refuse a note folder that leads out of the vault (a symlink): notes written
        there would be invisible to vaultmem and land somewhere nobody chose. Inside
        add_many, a folder is checked once per batch (a batch takes milliseconds)."""
        if folder in self._folders_inside:
            return
        resolved = (self.root / folder).resolve()
        if resolved != self.root and self.root not in resolved.parents:
            raise BadInput(f"{folder}/ leads outside the vault (to {resolved}); vaultmem writes notes only inside "
                           "the vault: replace the link with a real folder or use another namespace")
        if self._in_batch:
            self._folders_inside.add(folder)

    def screen(self, text: str | None, redact: bool, field: str = "text") -> tuple[str, list[str]]:
        """Pass one field through the redaction filter with this vault's policy: raise
        SecretFound naming the field, or with `redact` return (masked text, kinds masked)."""
        from vaultmem.core.redact import mask

        text = text or ""
        findings = self._secrets_in(text)
        if not findings:
            return text, []
        if not redact:
            raise _refusal(field, findings, REDACT_HINT + " to store the text with it masked")
        return mask(text, findings), list(dict.fromkeys(f.kind for f in findings))

    def screen_names(self, **fields: str | None) -> None:
        """Fields that become folders, ledger entries or log lines (namespace, session, project,
        a grade's comment, a reason) are never masked: a secret in one refuses the write."""
        for field, value in fields.items():
            findings = self._secrets_in(value or "")
            if findings:
                raise _refusal(field, findings, f"Remove it from the {field} (it is never masked)")

    def screen_tags(self, tags: tuple[str, ...], redact: bool) -> tuple[tuple[str, ...], list[str]]:
        """Tags holding a secret: refused, or with `redact` left out (a masked tag means nothing)."""
        kept, kinds = [], []
        for tag in tags:
            findings = self._secrets_in(tag)
            if findings and not redact:
                raise _refusal("tags", findings, REDACT_HINT.replace("it,", "that tag,", 1) + " to leave it out")
            kinds += [f.kind for f in findings]
            if not findings:
                kept.append(tag)
        return tuple(kept), list(dict.fromkeys(kinds))

    def _secrets_in(self, text: str) -> list:
        from vaultmem.core.redact import Policy, scan

        return scan(text, Policy(emails=self.config.redact_emails, phones=self.config.redact_phones))

    def related(self, text: str, namespace: str, kind: str = "memory", limit: int = 8,
                created: datetime | None = None, tags: Iterable[str] = ()) -> list[Related]:
        """Memories of `namespace` on the same subject as `text`, each with its relation
        (duplicate, conflict or unclear), closest first (corrections.py)."""
        from vaultmem.ops.corrections import related

        return related(self, text, namespace, kind, limit, created, tuple(tags))

    def learn(self, title: str, trigger: str, steps: str, outcome: str, lessons: str, namespace: str,
              **kwargs) -> Added:
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
        from vaultmem.core.tiers import with_evidence
        from vaultmem.ops.provenance import current_project, current_session

        rating = parse_rating(rating)
        records: list[dict] = []
        session, project = current_session(session), current_project(project)
        self.screen_names(comment=comment, session=session, project=project)  # the review log keeps them

        def change(note: Note) -> dict:
            _check_gradable(note)
            changes, record = schedule_grade(note, rating, now, self.config)
            records[:] = [record]
            if rating in ("good", "easy"):
                changes.update(with_evidence(note, session, project, now))
            return changes

        with self.write_lock():
            # The review's time once the lock is held: the ledger's record of it is written then
            # (a grade that waited for a long decay was logged before its record by the wait,
            # which verify takes for a ledger whose tail was cut).
            now = clock.now()
            _before, after = self.update_note(note_id, change, op="grade", detail={"rating": rating})
            record = dict(records[0], comment=comment or None, path=after.path, status=after.status)
            append_jsonl(self.reviews_log, record)
        return after

    def grade_batch(self, pairs: list[tuple[str, str]]) -> list[Note]:
        """Grade several notes; all or nothing on bad input (checked before any write)."""
        checked = []
        if any(not isinstance(pair, (list, tuple)) or len(pair) != 2 for pair in pairs):
            raise BadInput("grade_batch takes (id, rating) pairs, e.g. [(\"k3f9x2ab\", \"good\")]")
        for note_id, rating in pairs:
            note = self.get(note_id)
            _check_gradable(note)
            checked.append((note.id, parse_rating(rating)))
        with self.write_lock():
            return [self.grade(note_id, rating) for note_id, rating in checked]

    def archive(self, note_id: str, reason: str = "manual") -> Note:
        """Move a note to archive/ (same relative path), logging a snapshot. Never deletes."""
        self.screen_names(reason=reason)

        def archive_found(note: Note) -> Note:
            if note.path.startswith(ARCHIVE_DIR + "/"):
                if note.status == "archived":
                    raise BadInput(f"{note.id} is already archived ({note.path})")
                # Moved into archive/ by hand: its status says so too now (health suggests this).
                _before, after = self.update_note(note.id, lambda n: {"status": "archived"}, op="archive",
                                                  detail={"reason": reason})
                append_jsonl(self.archive_log, {"op": "archive", "id": note.id, "from": note.path, "to": note.path,
                                                "reason": reason, "time": clock.format_datetime(clock.now()),
                                                "status_before": note.status})
                return after
            return self._move_to_archive(note, {"status": "archived"}, reason)

        with self.write_lock():
            archived = self._where_it_is_now(note_id, archive_found, "move")
            self._archive_history(archived)
            return archived

    def _archive_history(self, note: Note) -> None:
        """The memories `note` superseded (and those they superseded) go to archive/ with it, as
        decay takes them (core/lifecycle.plan_decay): left in memories/, the old fact outlived its
        archived correction, and `recall --history` answered with it alone."""
        from vaultmem.core.lifecycle import history_of

        for older in history_of(self.notes(include_hidden=True), [note.link]):
            try:
                self._move_to_archive(older, {"status": "archived"}, f"with {note.id}, which superseded it")
            except (VaultmemError, FileNotFoundError):
                continue  # moved or unreadable meanwhile: the next decay takes it

    def _where_it_is_now(self, note_id: str, act: Callable[[Note], T], verb: str) -> T:
        """`act` on the note as found now (caller holds the write lock); when a person moves
        its file meanwhile (FileNotFoundError: before vaultmem's write or move, or just after
        its own move), find it again by its id and act where it is now."""
        found = None
        for _attempt in range(WRITE_RETRIES):
            try:
                found = self.get(note_id)
            except NotFound:
                if found is None:
                    raise
                continue  # moved again while we looked: look again
            try:
                return act(found)
            except FileNotFoundError:
                continue
        raise ConflictError(f"{found.path} kept moving while vaultmem tried to {verb} it; "
                            "nothing was written, try again")

    def _job(self, found: Note, change: Callable[[Note], dict], found_digest: str | None = None,
             properties: dict | None = None):
        """(path, compute, decode, applied) to rewrite `found` with `change` (files.rewrite);
        `applied` maps each text the change was applied to to (before, after).
        `found_digest`: the catalog's hash of the bytes `found` was parsed from; a file
        still holding them is not parsed again (unless a missing date took its file's mtime).
        `properties`: ones vaultmem does not model, set as well (an import's `original_id`)."""
        rel = found.path
        path = self.root / rel
        applied: dict[str, tuple[Note, Note]] = {}
        reuse = found_digest is not None and _MTIME_DEFAULTS <= found.present

        def compute(base: str) -> str:
            if reuse and content_digest(base.encode("utf-8")) == found_digest:
                before = found
            else:
                before = parse(base, rel, self.defaults_for(rel, path))
            if before.id != found.id:
                raise ConflictError(f"{rel} now holds note {before.id}, not {found.id}; nothing was written")
            after = replace(before, **change(before))
            applied[base] = (before, after)
            new_text = with_properties(render(after, base), properties or {}, rel)
            if properties:
                after = parse(new_text, rel, self.defaults_for(rel, path))
                applied[base] = (before, after)
            if new_text != base:
                self.check_size(rel, new_text)
            return new_text

        return path, compute, lambda data: decode_note(path, data, self.config.max_note_bytes), applied

    def _move_to_archive(self, note: Note, changes: dict, reason: str) -> Note:
        target_rel = f"{ARCHIVE_DIR}/{note.path}"
        _before, after, text = self._move(note, target_rel, changes, "archive", {"reason": reason})
        append_jsonl(self.archive_log, {
            "op": "archive", "id": note.id, "from": note.path, "to": target_rel, "reason": reason,
            "time": clock.format_datetime(clock.now()), "text": text,
        })
        return after

    def _move(self, note: Note, target_rel: str, changes: dict, op: str,
              detail: dict | None = None) -> tuple[Note, Note, str]:
        """Move a note's file to `target_rel` (never over a file there), then apply
        `changes` to it where it now is, on top of any save made meanwhile."""
        source, target = self.root / note.path, self.root / target_rel
        self._check_inside(str(Path(target_rel).parent))
        folders = folder_mtimes(self.root, [note.path, target_rel])
        try:
            move(source, target)
        except FileExistsError:
            raise ConflictError(f"{target_rel} already exists; move one of them aside, then {op} {note.id} "
                                "again") from None
        try:
            return self._rewrite(replace(note, path=target_rel), lambda n: changes, op, detail,
                                 moved_from=note.path, folders=folders)
        except BaseException:
            if target.exists() and not source.exists():
                move(target, source)  # the change failed: the note goes back where it was
            raise

    def restore(self, note_id: str) -> Note:
        """Bring an archived note back to where it was, or un-suspend a leech.

        The file returns to its old path with its text as it was; only status
        (active), `updated` and the idle-decay anchor change, so a restored
        memory is not archived again by the next decay. A note a newer one
        superseded (its `superseded_by` link is still there) comes back as
        superseded: restoring it must not put the corrected fact back in recall.
        """
        now = clock.now()
        with self.write_lock():
            return self._where_it_is_now(note_id, lambda note: self._restore_found(note, now), "move")

    def _restore_found(self, note: Note, now: datetime) -> Note:
        """restore() for the note as found: moved back from archive/, or its status made active."""
        status = "superseded" if note.superseded_by else "active"
        if note.path.startswith(ARCHIVE_DIR + "/"):
            target_rel = note.path[len(ARCHIVE_DIR) + 1:]
            _before, after, _text = self._move(note, target_rel,
                                               {"status": status, "updated": now, "decayed": now}, "restore")
            append_jsonl(self.archive_log, {"op": "restore", "id": note.id, "from": note.path, "to": target_rel,
                                            "time": clock.format_datetime(now)})
            return after
        if note.status in ("suspended", "archived", "stale"):
            _before, after = self.update_note(
                note.id, lambda n: {"status": status, "updated": now, "decayed": now}, op="restore")
            append_jsonl(self.archive_log, {"op": "restore", "id": note.id, "from": note.path, "to": note.path,
                                            "time": clock.format_datetime(now), "status_before": note.status})
            return after
        raise BadInput(f"{note.id} is {note.status}, not archived or suspended; nothing to restore")

    def decay(self, stale_after_days: float | None = None, dry_run: bool = False) -> list[DecayStep]:
        """Apply idle decay and the lifecycle to every note; returns what changed."""
        if stale_after_days is not None and not (isinstance(stale_after_days, (int, float))
                                                 and 0 <= stale_after_days < float("inf")):
            raise BadInput(f"stale_after_days {stale_after_days!r} should be a number of days, 0 or more")
        now = clock.now()
        with self.write_lock():
            steps = plan_decay(self.catalog(fresh=True).notes, now, self.config, stale_after_days)
            if dry_run:
                return steps
            remove_leftover_temps(self.root)  # the daily job tidies what a crash left
            done = []
            for step in (s for s in steps if s.archive):
                try:
                    self._move_to_archive(step.note, step.changes, "decay")
                    done.append(step)
                except (VaultmemError, FileNotFoundError):
                    continue  # moved, unreadable or contested meanwhile: the rest of the vault still decays
            rewrites = [s for s in steps if not s.archive]
            written = self._rewrite_batch(
                [(step.note, lambda n, s=step: _recomputed(n, s, now, self.config, stale_after_days), "decay", [None])
                 for step in rewrites])
            # Moved, unreadable or changed meanwhile: reported by health, retried next time.
            return done + [step for step, after in zip(rewrites, written) if after is not None]

    def _rewrite_batch(self, jobs: list[BatchJob], spares: SpareFiles | None = None) -> list[Note | None]:
        """Rewrite many notes, REWRITE_BATCH at a time (files.rewrite_many: one sync per
        batch, not three per note). Each job is (note as found, change, ledger op, the
        details of one record each). By file, not by id: a note copied by hand (two files,
        one id) is rewritten file by file and reported by health, never stopping the rest.
        Returns each note after, or None where its file could not be rewritten. `spares`:
        old files kept from earlier rewrites (add_many's batches share them)."""
        if spares is None:
            if len(jobs) <= REWRITE_BATCH:
                # One batch: no later one would take its old files, and deleting them after the
                # catalog took their folder's mtime made the next call list the folder again (an
                # add's contests: each add listed the whole folder).
                return self._rewrite_one_batch(jobs, None)
            with SpareFiles() as own:  # each batch's old files take the next batch's texts
                return self._rewrite_batch(jobs, own)
        written: list[Note | None] = []
        for start in range(0, len(jobs), REWRITE_BATCH):
            written += self._rewrite_one_batch(jobs[start:start + REWRITE_BATCH], spares)
        return written

    def _rewrite_one_batch(self, jobs: list[BatchJob], spares: SpareFiles | None) -> list[Note | None]:
        """`_rewrite_batch` for at most REWRITE_BATCH jobs: one rewrite_many, one ledger append."""
        digests = self.catalog(refresh=False).hashes_of(note.path for note, *_rest in jobs)
        prepared = [self._job(note, change, digests.get(note.path)) for note, change, *_rest in jobs]
        folders = folder_mtimes(self.root, [note.path for note, *_rest in jobs])
        results = rewrite_many([job[:3] for job in prepared], spares)
        written: list[Note | None] = []
        entries = []
        files = []
        for (_note, _change, op, details), job, result in zip(jobs, prepared, results):
            if isinstance(result, Exception):
                written.append(None)
                continue
            base, new_text = result
            before, after = job[3][base]
            if new_text != base:
                unseen = self.unseen_edit(before, base, op)
                entries += [unseen] if unseen else []
                files.append((after.path, new_text, as_read_back(after)))
                when = clock.format_datetime(clock.now())
                entries += [(op, after.id, after.path, new_text, when, detail) for detail in details]
            written.append(after)
        self.catalog(refresh=False).wrote_many(files, before=folders)
        if entries:
            self.ledger.append_many(entries)
        return written

    # ------------------------------------------------------------ reading for agents

    def recall(self, query: str, k: int | None = None, namespace: str | None = None, kind: str | None = None,
               include_hidden: bool = False, history: bool = False, min_score: float | None = None) -> list[Hit]:
        """The `k` notes that best answer `query` (search/engine.py); `history` adds superseded ones;
        `min_score` overrides the relevance floor (0: every candidate, even unrelated ones)."""
        from vaultmem.core.model import check_query, recall_scope
        from vaultmem.search.engine import engine_for

        query = check_query(query)
        if kind not in (None, "memory", "skill"):
            raise BadInput(f"kind {kind!r} is neither memory nor skill")
        if min_score is not None and (isinstance(min_score, bool) or not isinstance(min_score, (int, float))
                                      or not 0 <= min_score <= 1):
            raise BadInput(f"min_score {min_score!r} should be a number from 0 to 1")
        return engine_for(self).recall(query, k, namespace, kind, recall_scope(include_hidden, history),
                                       min_score=min_score)

    def review(self, limit: int = 20) -> list[Note]:
        """Notes due for confirmation, most at risk first."""
        from vaultmem.core.lifecycle import due_for_review

        _check_count(limit, "limit", 1)
        return [n for n, _r in due_for_review(self.notes(), clock.now(), self.config)[:limit]]

    def prompt(self, max_tokens: int = 1500, namespace: str | None = None, core_only: bool = False) -> PromptBlock:
        """The context block for an agent's session start (prompt.py); `core_only`: L2 and L3 only."""
        from vaultmem.core.prompt import prompt_lines, render_prompt

        _check_count(max_tokens, "max_tokens", 50)  # (the CLI's floor: less holds no line)
        lines = prompt_lines(self.notes(), clock.now(), self.config, namespace)
        return render_prompt([line for line in lines if line.section == "core"] if core_only else lines, max_tokens)

    # ------------------------------------------------------------ corrections

    def correct(self, note_id: str, text: str, reason: str | None = None, *,
                session: str | None = None, project: str | None = None) -> Added:
        """Replace a wrong memory: grade it `again`, add the right one, supersede the wrong one
        (corrections.py)."""
        from vaultmem.ops.corrections import correct

        self.screen(text, False)  # before the wrong one is graded: a refusal writes nothing
        self.screen_names(reason=reason)
        return correct(self, note_id, text, reason, session=session, project=project)

    def resolve(self, keep_id: str, both: bool = False, only: Iterable[str] = ()) -> list[str]:
        """Settle a contest: `keep_id` supersedes the memories it was contested with (those in
        `only`, when given), or with `both` they all hold; returns the other ids (corrections.py)."""
        from vaultmem.ops.corrections import resolve

        return resolve(self, keep_id, both, tuple(only))

    def why(self, ref: str) -> dict:
        """Where a memory came from: its source, the evidence that promoted it,
        its supersede/contest links, and every recorded change and grade.
        `ref` is an id, or a claim (the best-matching memory, superseded ones included)."""
        from vaultmem.core.trust import explain

        matches = self.find(ref) or self.by_original_id(ref)
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
        """Stage the promotions evidence has earned for a person to review, or with
        `adopt` apply the staged ones that still hold (promotion.py)."""
        from vaultmem.ops.promotion import promote

        return promote(self, adopt)

    def set_tier(self, note_id: str, tier: str, reason: str = "set by hand") -> Note:
        """Promote or demote one memory explicitly: a person's call, not evidence."""
        from vaultmem.ops.promotion import set_tier

        self.screen_names(reason=reason)
        return set_tier(self, note_id, tier, reason)

    # ------------------------------------------------------------ tamper evidence

    def verify(self, record: bool = True, re_anchor: bool = False) -> dict:
        """Walk the ledger's chain and compare every note with its last record; with
        `record`, put changes made by hand on the ledger, never over signs that the
        ledger itself lost records unless `re_anchor` (audit.py)."""
        from vaultmem.ops.audit import verify

        return verify(self, record, re_anchor)

    def record_external_edits(self, paths: Iterable[str]) -> int:
        """Record hand edits and deletions of `paths` (the watcher's events) on the ledger."""
        from vaultmem.ops.audit import record_external_edits

        return record_external_edits(self, paths)

    # ------------------------------------------------------------ moving in

    def import_file(self, rel: str, text: str, source: str = "") -> Note:
        """Write a whole note file as given (a vaultmem export), byte for byte.

        Refuses a path outside the note folders and an existing file with
        different text; an identical existing file is left as it is.
        """
        from vaultmem.store.catalog import is_note_path

        rel = rel.replace("\\", "/").lstrip("/")
        if ".." in rel.split("/") or not is_note_path(rel):
            raise BadInput(f"{rel!r} is not a note path inside the vault (memories/, skills/ or archive/, *.md)")
        self.check_size(rel, text)  # first: screening a text over the limit for secrets took seconds
        self.screen(text, False, f"note file {rel}")  # restored byte for byte: refused, never masked
        path = self.root / rel
        with self.write_lock():
            if path.exists():
                if read_text(path, self.config.max_note_bytes) == text:
                    return self.read_note(rel)
                raise ConflictError(f"{rel} exists with different text; move it aside or import into an empty vault")
            note = parse(text, rel, self.defaults_for(rel, path))
            if self.find(note.id):
                raise ConflictError(f"id {note.id} is already used by {self.find(note.id)[0].path}; not imported")
            folders = folder_mtimes(self.root, [rel])
            try:
                create_new(path, text)
            except FileExistsError:
                raise ConflictError(f"{rel} appeared while importing; nothing was imported over it") from None
            self.catalog(refresh=False).wrote(rel, text, before=folders)
            self.record("import", note, text, {"source": source} if source else None)
            return self.read_note(rel, text)


def _recomputed(note: Note, planned: DecayStep, now: datetime, config: Config, stale_after_days) -> dict:
    """Decay re-planned on the file as it is under the lock (it may have been edited)."""
    from vaultmem.core.lifecycle import decay_step

    step = decay_step(note, now, config, stale_after_days)
    return {k: v for k, v in (step.changes if step else {}).items() if k != "status" or v != "archived"}


def _check_count(value, name: str, least: int) -> None:
    """A whole number argument of at least `least`, as the CLI's option takes it (a negative
    `limit` silently dropped the last item)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise BadInput(f"{name} {value!r} should be a whole number, {least} or more")


def _check_gradable(note: Note) -> None:
    """Archived and suspended notes are out of the schedule until a person restores them:
    grading a leech would quietly put a memory that kept being wrong back in use. A superseded
    note is history: its grade would count as evidence for the fact replaced."""
    if note.status == "archived":
        raise BadInput(f"{note.id} is archived; `vaultmem restore {note.id}` first")
    if note.status == "suspended":
        raise BadInput(f"{note.id} is suspended (a leech: graded wrong {note.lapses} times); "
                       f"check it, fix its text if needed, then `vaultmem restore {note.id}` to grade it again")
    if note.status == "superseded":  # a grade would count as evidence for the old fact (promotion, strength)
        raise BadInput(f"{note.id} is superseded by {note.superseded_by or 'a newer memory'}: grade the memory in "
                       "force instead (this one is kept as history)")


def _refusal(field: str, findings: list, fix: str):
    """SecretFound naming the field and the kinds found (never the secret), and the fix."""
    from vaultmem.core.redact import describe
    from vaultmem.errors import SecretFound

    return SecretFound(f"the {field} holds {describe(findings)}; nothing was written. {fix}", findings)


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


def _refusals_of_items(add: Callable[..., Added], items: list) -> dict[int, BadInput]:
    """add_many's items that `add` could not even be called with, by position: the error each gets."""
    import inspect

    signature = inspect.signature(add)
    refused = {}
    for number, item in enumerate(items):
        try:
            if not isinstance(item, dict):
                raise TypeError(f"a {type(item).__name__}, not a dict")
            signature.bind(**item)
        except TypeError as exc:
            refused[number] = BadInput(f"item {number + 1}: {exc}; each item holds add's arguments, e.g. "
                                       "{'text': 'Staging runs Postgres 16', 'namespace': 'work'}")
    return refused


def _wants_checks(item: dict) -> bool:
    """Whether an add_many item runs add's duplicate/contradiction checks (so needs the model)."""
    return item.get("merge", True) or item.get("supersede", True)


def _new_id(taken: Callable[[str], bool]) -> str:
    while True:
        # One read of the system's randomness for the 8 characters (32 of them: a byte's low 5 bits
        # pick one, evenly), not one per character.
        candidate = "".join(ID_ALPHABET[byte & 31] for byte in secrets.token_bytes(8))
        if not taken(candidate):
            return candidate


def _free_stem(stem: str, taken: Callable[[str], bool]) -> str:
    """Obsidian resolves [[links]] by file name, so names are unique vault-wide."""
    if not taken(stem):
        return stem
    number = 2
    while taken(f"{stem}-{number}"):
        number += 1
    return f"{stem}-{number}"
