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

from vaultmem import clock
from vaultmem.config import Config, load_config
from vaultmem.core.lifecycle import DecayStep, plan_decay
from vaultmem.core.model import TIERS, Note
from vaultmem.core.note import parse, render, skill_body, slugify
from vaultmem.core.schedule import grade as schedule_grade
from vaultmem.core.schedule import parse_rating
from vaultmem.errors import BadInput, ConflictError, NoteError, NotFound
from vaultmem.store.catalog import Catalog
from vaultmem.store.discovery import STATE_DIR, default_vault_path, discover
from vaultmem.store.files import append_jsonl, atomic_write, read_text, rewrite_and_move
from vaultmem.store.template import init_vault

if TYPE_CHECKING:
    from vaultmem.core.prompt import PromptBlock
    from vaultmem.ops.corrections import Related
    from vaultmem.search.engine import Hit

ARCHIVE_DIR = "archive"
ID_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"
NAMESPACE_PATTERN = re.compile(r"^[\w.-]+(/[\w.-]+)*$")
WRITE_RETRIES = 5


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
            from vaultmem.store.ledger import Ledger

            self._ledger = Ledger(self.state_dir / "ledger.jsonl", lambda: self.catalog(refresh=False).db)
        return self._ledger

    def record(self, op: str, note: Note, text: str | None, detail: dict | None = None) -> None:
        """Append one act to the ledger (caller holds the write lock)."""
        self.ledger.append(op, note.id, note.path, text, clock.format_datetime(clock.now()), detail)

    def _record_unseen_edit(self, note: Note, text: str, noticed_by: str) -> None:
        """Before vaultmem rewrites a note, record a change made by hand since its last record."""
        from vaultmem.store.ledger import content_hash

        last = self.ledger.last(note.id)
        if last is None or last.get("content") != content_hash(text):
            detail = {"noticed_by": noticed_by}
            if last is None:
                detail["first_seen"] = True
            self.record("external-edit", note, text, detail)

    def write_lock(self):
        """The vault-wide write lock (one per Vault object: it is re-entrant)."""
        if self._write_lock is None:
            from filelock import FileLock

            self.state_dir.mkdir(parents=True, exist_ok=True)
            self._write_lock = FileLock(str(self.state_dir / "write.lock"), timeout=60)
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
            self._catalog = Catalog(self.root, self.cache_dir / "catalog.sqlite", self.read_note,
                                    self.config.max_note_bytes)
        if refresh and (fresh or full or not self._refreshed):
            self._catalog.refresh(full=full)
            self._refreshed = True
        return self._catalog

    def forget_catalog(self) -> None:
        """Drop the connection to the catalog (after its file was deleted)."""
        if self._catalog is not None:
            self._catalog.close()
        self._catalog, self._refreshed = None, False

    def notes(self, include_hidden: bool = False) -> list[Note]:
        """Every readable note; archived, suspended and superseded ones only with `include_hidden`."""
        notes = self.catalog(fresh=True).notes
        return notes if include_hidden else [n for n in notes if not n.is_hidden]

    def get(self, note_id: str) -> Note:
        """The note with this id (or, for hand-written notes, this file name)."""
        matches = self.find(note_id)
        if not matches:
            problem = self.catalog().problem_of_stem(str(note_id).strip())
            if problem is not None:
                path, message = problem
                raise NoteError(path, message.split("; ")[0], message.split("; ", 1)[-1])
            raise NotFound(f"no note with id {note_id!r}; `vaultmem list` shows the ids")
        if len(matches) > 1:
            paths = ", ".join(n.path for n in matches)
            raise BadInput(f"id {note_id!r} is in {len(matches)} files ({paths}); give all but one a new id")
        return matches[0]

    def find(self, note_id: str) -> list[Note]:
        """Notes with this id, or for hand-written notes this file name (usually one).

        A lookup in the catalog, checked against the files it names (one stat
        each: a note edited in place a moment ago is read as it is now); when it
        finds nothing, or a file is not where the catalog says, the vault's
        folders are checked again.
        """
        note_id = str(note_id).strip()
        catalog = self.catalog()
        for attempt in range(2):
            if attempt:
                catalog = self.catalog(fresh=True)
            matches = catalog.by_id(note_id) or catalog.by_stem(note_id)
            if matches and catalog.refresh_paths([n.path for n in matches]):
                matches = catalog.by_id(note_id) or catalog.by_stem(note_id)
            if matches and all((self.root / n.path).is_file() for n in matches):
                return matches
        return [n for n in matches if (self.root / n.path).is_file()]

    # ------------------------------------------------------------ writing

    def update_note(self, note_id: str, change: Callable[[Note], dict], op: str = "edit",
                    detail: dict | None = None) -> tuple[Note, Note]:
        """Apply `change(note) -> property changes` to the file as it is now.

        Holds the write lock; re-reads the file, and if it changes between the
        read and the rename (a person saving), re-applies on top of the new text.
        A hand edit since the ledger's last record is recorded first, then
        this change as `op`. Returns (before, after).
        """
        with self.write_lock():
            for _attempt in range(WRITE_RETRIES):
                before = self.get(note_id)
                path = self.root / before.path
                text = read_text(path, self.config.max_note_bytes)
                before = parse(text, before.path, self.defaults_for(before.path, path))
                after = replace(before, **change(before))
                new_text = render(after, text)
                if read_text(path, self.config.max_note_bytes) != text:
                    continue
                if new_text != text:
                    self.check_size(before.path, new_text)
                    self._record_unseen_edit(before, text, op)
                    atomic_write(path, new_text)
                    self.catalog(refresh=False).wrote(before.path, new_text)
                    self.record(op, after, new_text, detail)
                return before, after
        raise ConflictError(f"{before.path} kept changing while vaultmem tried to write it; "
                            "nothing was written, try again")

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
        body_text = (text or "").strip()
        if not body_text:
            raise BadInput("the memory's text is empty; give the text to remember, e.g. vaultmem add \"...\" -n work")
        if "\x00" in body_text:
            raise BadInput("the memory's text contains a NUL byte; give plain text")
        self.check_size("the memory's text", body_text)
        tier = (tier or self.config.default_tier).upper()
        if tier not in TIERS:
            raise BadInput(f"unknown tier {tier!r}; use one of: {', '.join(TIERS)}")
        body_text, redacted = self.screen(body_text, redact)
        source, source_redacted = self.screen(source or "", redact)  # a URL may carry a password
        redacted = list(dict.fromkeys([*redacted, *source_redacted]))
        title = self.screen(title, True)[0] if title and redacted else title
        now = clock.now()
        created = created or now
        session, project = current_session(session), current_project(project)
        clean_tags = tuple(dict.fromkeys(t.strip().lstrip("#") for t in tags if t and t.strip().lstrip("#")))
        folder = "skills" if kind == "skill" else "memories"
        with self.write_lock():
            # The check runs under the lock: two processes adding contradicting
            # memories at once see each other's notes.
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
            note_id = _new_id(catalog.id_taken)
            stem = _free_stem(slugify(title or body_text.splitlines()[0]),
                              lambda s: catalog.stem_taken(s) or (self.root / f"{folder}/{namespace}/{s}.md").exists())
            rel = f"{folder}/{namespace}/{stem}.md"
            note = Note(
                id=note_id, type=kind, namespace=namespace, tags=clean_tags, status="active", tier=tier,
                strength=self.config.strength_initial, state="learning", step=0, stability=None,
                difficulty=None, due=created, last_review=None, reps=0, lapses=0, created=created,
                updated=now, decayed=None, source=source or "",
                body=body_text + "\n", path=rel, redacted=bool(redacted),
            )
            note = replace(note, **with_evidence(note, session, project, now, explicit))
            reasons = []
            if superseded:
                note = replace(note, supersedes=superseded[0].note.link)
            if contested:
                note = replace(note, contested=True, contested_with=tuple(i.note.link for i in contested))
            text_out = render(note)
            self.check_size(rel, text_out)
            atomic_write(self.root / rel, text_out)
            catalog.wrote(rel, text_out)
            self.record("add", note, text_out, {"redacted": list(redacted)} if redacted else None)
            for item in superseded:
                corrections.supersede(self, item.note.id, note, item.reason)
                reasons.append(f"supersedes {item.note.id}: {item.reason}")
            for item in contested:
                corrections.contest(self, item.note.id, note, item.reason)
                reasons.append(f"contested with {item.note.id}: {item.reason}")
        return Added(note, "added", tuple(i.note.id for i in superseded), tuple(i.note.id for i in contested),
                     "; ".join(reasons), tuple(redacted))

    def check_size(self, what: str, text: str) -> None:
        """BadInput, before anything is written, for text that reading would refuse
        (over notes.max_note_bytes): a note vaultmem writes must read back."""
        size = len(text.encode("utf-8", "surrogatepass"))
        limit = self.config.max_note_bytes
        if size > limit:
            raise BadInput(f"{what} is {size:,} bytes, over the {limit:,}-byte limit for a note; nothing was written. "
                           "Split it into smaller notes, or raise notes.max_note_bytes in .vaultmem/config.yaml")

    def screen(self, text: str, redact: bool) -> tuple[str, list[str]]:
        """Pass text through the redaction filter with this vault's policy: raise
        SecretFound, or with `redact` return (masked text, kinds masked)."""
        from vaultmem.core.redact import Policy, describe, mask, scan
        from vaultmem.errors import SecretFound

        findings = scan(text, Policy(emails=self.config.redact_emails, phones=self.config.redact_phones))
        if not findings:
            return text, []
        if not redact:
            raise SecretFound(f"the text holds {describe(findings)}; nothing was written. Remove it, "
                              "or pass --redact to store the text with it masked", findings)
        return mask(text, findings), list(dict.fromkeys(f.kind for f in findings))

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

        with self.write_lock():
            _before, after = self.update_note(note_id, change, op="grade", detail={"rating": rating})
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
        with self.write_lock():
            return [self.grade(note_id, rating) for note_id, rating in checked]

    def archive(self, note_id: str, reason: str = "manual") -> Note:
        """Move a note to archive/ (same relative path), logging a snapshot. Never deletes."""
        with self.write_lock():
            note = self.get(note_id)
            if note.path.startswith(ARCHIVE_DIR + "/"):
                raise BadInput(f"{note.id} is already archived ({note.path})")
            return self._move_to_archive(note, {"status": "archived"}, reason)

    def _move_to_archive(self, note: Note, changes: dict, reason: str) -> Note:
        source = self.root / note.path
        text = read_text(source, self.config.max_note_bytes)
        current = parse(text, note.path, self.defaults_for(note.path, source))
        after = replace(current, **changes)
        target_rel = f"{ARCHIVE_DIR}/{note.path}"
        target = self.root / target_rel
        if target.exists():
            raise ConflictError(f"{target_rel} already exists; move it aside, then archive {note.id} again")
        new_text = render(after, text)
        self.check_size(note.path, new_text)
        self._record_unseen_edit(current, text, "archive")
        rewrite_and_move(source, new_text, target)
        self.catalog(refresh=False).wrote(target_rel, new_text, moved_from=note.path)
        self.record("archive", replace(after, path=target_rel), new_text, {"reason": reason})
        append_jsonl(self.archive_log, {
            "op": "archive", "id": note.id, "from": note.path, "to": target_rel, "reason": reason,
            "time": clock.format_datetime(clock.now()), "text": text,
        })
        return replace(after, path=target_rel)

    def restore(self, note_id: str) -> Note:
        """Bring an archived note back to where it was, or un-suspend a leech.

        The file returns to its old path with its text as it was; only status
        (active), `updated` and the idle-decay anchor change, so a restored
        memory is not archived again by the next decay.
        """
        now = clock.now()
        with self.write_lock():
            note = self.get(note_id)
            if note.path.startswith(ARCHIVE_DIR + "/"):
                source = self.root / note.path
                target_rel = note.path[len(ARCHIVE_DIR) + 1:]
                target = self.root / target_rel
                if target.exists():
                    raise ConflictError(f"{target_rel} exists already; rename one of them, then restore {note.id}")
                text = read_text(source, self.config.max_note_bytes)
                current = parse(text, note.path, self.defaults_for(note.path, source))
                after = replace(current, status="active", updated=now, decayed=now)
                new_text = render(after, text)
                self.check_size(note.path, new_text)
                self._record_unseen_edit(current, text, "restore")
                rewrite_and_move(source, new_text, target)
                self.catalog(refresh=False).wrote(target_rel, new_text, moved_from=note.path)
                self.record("restore", replace(after, path=target_rel), new_text)
                append_jsonl(self.archive_log, {"op": "restore", "id": note.id, "from": note.path, "to": target_rel,
                                                "time": clock.format_datetime(now)})
                return replace(after, path=target_rel)
            if note.status in ("suspended", "archived", "stale"):
                _before, after = self.update_note(
                    note.id, lambda n: {"status": "active", "updated": now, "decayed": now}, op="restore")
                append_jsonl(self.archive_log, {"op": "restore", "id": note.id, "from": note.path, "to": note.path,
                                                "time": clock.format_datetime(now), "status_before": note.status})
                return after
            raise BadInput(f"{note.id} is {note.status}, not archived or suspended; nothing to restore")

    def decay(self, stale_after_days: float | None = None, dry_run: bool = False) -> list[DecayStep]:
        """Apply idle decay and the lifecycle to every note; returns what changed."""
        now = clock.now()
        with self.write_lock():
            steps = plan_decay(self.catalog(fresh=True).notes, now, self.config, stale_after_days)
            if dry_run:
                return steps
            done = []
            for step in steps:
                try:
                    if step.archive:
                        self._move_to_archive(step.note, step.changes, "decay")
                    else:
                        self.update_note(
                            step.note.id, lambda n, s=step: _recomputed(n, s, now, self.config, stale_after_days),
                            op="decay")
                    done.append(step)
                except (NoteError, ConflictError):
                    continue  # reported by health; the rest of the vault still decays
            return done

    # ------------------------------------------------------------ reading for agents

    def recall(self, query: str, k: int | None = None, namespace: str | None = None, kind: str | None = None,
               include_hidden: bool = False, history: bool = False) -> list[Hit]:
        """The `k` notes that best answer `query` (recall.py); `history` adds superseded ones."""
        from vaultmem.core.model import recall_scope
        from vaultmem.search.engine import engine_for

        return engine_for(self).recall(query, k, namespace, kind, recall_scope(include_hidden, history))

    def review(self, limit: int = 20) -> list[Note]:
        """Notes due for confirmation, most at risk first."""
        from vaultmem.core.lifecycle import due_for_review

        return [n for n, _r in due_for_review(self.notes(), clock.now(), self.config)[:limit]]

    def prompt(self, max_tokens: int = 1500, namespace: str | None = None) -> PromptBlock:
        """The context block for an agent's session start (prompt.py)."""
        from vaultmem.core.prompt import prompt_lines, render_prompt

        return render_prompt(prompt_lines(self.notes(), clock.now(), self.config, namespace), max_tokens)

    # ------------------------------------------------------------ corrections

    def correct(self, note_id: str, text: str, reason: str | None = None, *,
                session: str | None = None, project: str | None = None) -> Added:
        """Replace a wrong memory: grade it `again`, add the right one, supersede the wrong one
        (corrections.py)."""
        from vaultmem.ops.corrections import correct

        return correct(self, note_id, text, reason, session=session, project=project)

    def resolve(self, keep_id: str, both: bool = False) -> list[str]:
        """Settle a contest: `keep_id` supersedes the memories it was contested with, or
        with `both` they all hold; returns the other ids (corrections.py)."""
        from vaultmem.ops.corrections import resolve

        return resolve(self, keep_id, both)

    def why(self, ref: str) -> dict:
        """Where a memory came from: its source, the evidence that promoted it,
        its supersede/contest links, and every recorded change and grade.
        `ref` is an id, or a claim (the best-matching memory, superseded ones included)."""
        from vaultmem.core.trust import explain

        matches = self.find(ref)
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

        return set_tier(self, note_id, tier, reason)

    # ------------------------------------------------------------ tamper evidence

    def verify(self, record: bool = True) -> dict:
        """Walk the ledger's chain and compare every note with its last record; with
        `record`, put changes made by hand on the ledger (audit.py)."""
        from vaultmem.ops.audit import verify

        return verify(self, record)

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
        path = self.root / rel
        with self.write_lock():
            if path.exists():
                if read_text(path, self.config.max_note_bytes) == text:
                    return self.read_note(rel)
                raise ConflictError(f"{rel} exists with different text; move it aside or import into an empty vault")
            self.check_size(rel, text)
            note = parse(text, rel, self.defaults_for(rel, path))
            if self.find(note.id):
                raise ConflictError(f"id {note.id} is already used by {self.find(note.id)[0].path}; not imported")
            atomic_write(path, text)
            self.catalog(refresh=False).wrote(rel, text)
            self.record("import", note, text, {"source": source} if source else None)
            return self.read_note(rel, text)


def _recomputed(note: Note, planned: DecayStep, now: datetime, config: Config, stale_after_days) -> dict:
    """Decay re-planned on the file as it is under the lock (it may have been edited)."""
    from vaultmem.core.lifecycle import decay_step

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


def _new_id(taken: Callable[[str], bool]) -> str:
    while True:
        candidate = "".join(secrets.choice(ID_ALPHABET) for _ in range(8))
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
