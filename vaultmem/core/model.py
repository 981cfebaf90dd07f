"""Domain values: a note (memory or skill) with its scheduling state. No I/O.

A `Note` is frozen: operations return a changed copy (`dataclasses.replace`),
so a caller can always compare what was with what will be written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, get_args

from vaultmem.errors import BadInput

# The fixed value sets, each defined once: a Literal type for annotations, and the
# tuple of its members (in this order: the order help texts and reports list them).
# Plain strings, so the note format and JSON output are the strings themselves.
NoteType = Literal["memory", "skill"]
Status = Literal["active", "stale", "archived", "suspended", "superseded"]
Tier = Literal["L0", "L1", "L2", "L3"]
CardState = Literal["learning", "review", "relearning"]
Rating = Literal["again", "hard", "good", "easy"]

TYPES: tuple[NoteType, ...] = get_args(NoteType)
STATUSES: tuple[Status, ...] = get_args(Status)
TIERS: tuple[Tier, ...] = get_args(Tier)
CARD_STATES: tuple[CardState, ...] = get_args(CardState)
RATINGS: tuple[Rating, ...] = get_args(Rating)

# Statuses left out of recall, review and prompts unless asked for.
HIDDEN_STATUSES: tuple[Status, ...] = ("archived", "suspended", "superseded")
VISIBLE_STATUSES: tuple[Status, ...] = tuple(s for s in STATUSES if s not in HIDDEN_STATUSES)

# Which hidden notes a recall may return: every one (True), the superseded ones
# ("history": what was believed before), or none (False).
RecallScope = Literal[True, "history", False]
RECALL_SCOPES: tuple[RecallScope, ...] = get_args(RecallScope)


def recall_scope(include_hidden: bool = False, history: bool = False) -> RecallScope:
    """The scope of `--all` / `--history`: --all wins."""
    return True if include_hidden else ("history" if history else False)

SKILL_SECTIONS = ("Trigger", "Steps", "Outcome", "Lessons")


@dataclass(frozen=True, slots=True)  # slots: a catalog holds one per note, 10k-100k of them
class Note:
    """One markdown file of the vault, as vaultmem understands it."""

    id: str
    type: NoteType
    namespace: str
    tags: tuple[str, ...]
    status: Status
    tier: Tier
    strength: float
    state: CardState
    step: int | None
    stability: float | None
    difficulty: float | None
    due: datetime
    last_review: datetime | None
    reps: int
    lapses: int
    created: datetime
    updated: datetime
    decayed: datetime | None
    source: str
    body: str
    # Where the file is, relative to the vault root, with forward slashes.
    path: str = ""
    # Evidence and trust (optional properties: written only once they say something).
    explicit: bool = False  # stated as "remember this", not inferred
    sessions: tuple[str, ...] = ()  # distinct sessions it recurred in (added again, graded good)
    days: tuple[str, ...] = ()  # distinct calendar days of that evidence, YYYY-MM-DD
    projects: tuple[str, ...] = ()  # distinct projects it was held in
    promoted: datetime | None = None  # when it reached its current tier by promotion
    supersedes: str = ""  # "[[older note]]" this one corrected
    superseded_by: str = ""  # "[[newer note]]" that corrected this one
    contested: bool = False  # conflicts with another memory in a way vaultmem did not resolve
    contested_with: tuple[str, ...] = ()  # "[[other note]]" links
    redacted: bool = False  # secrets or personal data were masked before writing
    # Property names present in the file (the rest took defaults when read).
    present: frozenset[str] = field(default_factory=frozenset)

    @property
    def title(self) -> str:
        """A skill's `# heading`, else the first line of the text."""
        if self.type == "skill":
            return heading(self.body) or self.path.rsplit("/", 1)[-1].removesuffix(".md")
        for line in self.body.splitlines():
            stripped = line.strip()
            if stripped.startswith("# "):
                return stripped[2:].strip()
            if stripped:
                return stripped[:80]
        return self.path.rsplit("/", 1)[-1].removesuffix(".md")

    @property
    def text(self) -> str:
        """The body without surrounding blank lines: what recall and prompts show."""
        return self.body.strip()

    @property
    def summary(self) -> str:
        """One line for prompts and tables: the text, or a skill's title and trigger. A correction's
        `## Correction` section (`correct` writes the wrong text it replaces there) is left out: an
        agent shown it would read the wrong value again at every session."""
        if self.type == "skill":
            trigger = section(self.body, "Trigger")
            return f"{self.title} (when: {trigger})" if trigger else self.title
        return " ".join(self.claim.split())

    @property
    def claim(self) -> str:
        """What the note states: its text without the `## Correction` section `correct` writes
        (the wrong text it replaced), which compared with a new memory would read as a difference."""
        text = self.text
        correction = CORRECTION_HEADING.search(text)
        return text[:correction.start()].rstrip() if correction and correction.start() else text

    @property
    def link(self) -> str:
        """An Obsidian wiki link to this note (links resolve by file name)."""
        return f"[[{self.path.rsplit('/', 1)[-1].removesuffix('.md')}]]"

    @property
    def is_hidden(self) -> bool:
        return self.status in HIDDEN_STATUSES


def namespace_filter(wanted: str | None) -> str:
    """A namespace filter as a person types it (`work/`, ` /work`) in the stored form (`work`); '' for none."""
    return (wanted or "").strip().strip("/")


def in_namespace(note_namespace: str, wanted: str | None) -> bool:
    """Whether a note of `note_namespace` passes the filter `wanted`: the namespace itself or one
    below it (`work` takes `work` and `work/infra`, not `workshop`). No filter (None, '') takes all."""
    ns = namespace_filter(wanted)
    return not ns or note_namespace == ns or note_namespace.startswith(ns + "/")


def has_tag(note: Note, tag: str | None) -> bool:
    """Whether `note` carries `tag` as Obsidian reads tags: any case, and a nested tag under
    it (`infra` takes `infra/prod`); no tag asked: every note."""
    wanted = (tag or "").strip().lstrip("#").lower()
    return not wanted or any(t.lower() == wanted or t.lower().startswith(wanted + "/") for t in note.tags)


def tidy_tags(tags) -> tuple[str, ...]:
    """Tags as stored: trimmed, without a leading '#', each once, in order; empty ones dropped.
    One string is one tag (not its letters); None is none."""
    if tags is None:
        return ()
    if isinstance(tags, str):
        tags = [tags]
    if not isinstance(tags, (list, tuple, set, frozenset)):
        raise BadInput(f"tags must be a list of text, not {type(tags).__name__} ({tags!r:.40})")
    return tuple(dict.fromkeys(t for t in (str(t).strip().lstrip("#") for t in tags if t) if t))


def heading(body: str) -> str:
    """The text of a body's first `# heading` ('' if it has none): a skill's title."""
    return next((line.strip()[2:].strip() for line in body.splitlines() if line.strip().startswith("# ")), "")


CORRECTION_HEADING = re.compile(r"^## Correction[ \t]*$", re.MULTILINE)


def section(body: str, name: str) -> str:
    """The text under `## name` in a body, flattened to one line ('' if absent)."""
    lines, inside = [], False
    for line in body.splitlines():
        if line.startswith("## "):
            inside = line[3:].strip().lower() == name.lower()
            continue
        if inside and line.startswith("# "):
            break
        if inside:
            lines.append(line.strip().lstrip("#").strip())  # a heading inside the section: its words
    return " ".join(line for line in lines if line)


NAMESPACE_PATTERN = re.compile(r"^[\w.-]+(/[\w.-]+)*$")
NAMESPACE_PART_BYTES = 100  # a folder name: well under the 255 bytes filesystems allow


def check_query(query) -> str:
    """A recall's query: text with something to look for (an empty one found nothing and said so
    with exit 0, as if the vault had no answer)."""
    query = check_text(query, "the query")
    if not query.strip():
        raise BadInput('the query is empty; give the words to look for, e.g. "staging database port"')
    return query


def check_text(value, what: str) -> str:
    """`value` if it is text that can be written as UTF-8 (None: ""), else BadInput naming `what`.
    A shell passes bytes of another encoding (Latin-1's "caf\xe9") as unpaired surrogates, which
    no file, socket or model takes."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadInput(f"{what} must be text, not {type(value).__name__} ({value!r:.40})")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInput(f"{what} is not valid UTF-8 (bytes in another encoding?); give it as UTF-8 text") from None
    return value


def check_namespace(namespace: str | None) -> str:
    """`namespace` tidied (no slashes at the ends), or BadInput saying what a namespace may hold."""
    text = check_text(namespace, "the namespace").strip().strip("/")
    if not text:
        raise BadInput("a namespace is required: add -n NAMESPACE (e.g. -n work or -n projects/api)")
    if not NAMESPACE_PATTERN.match(text) or any(part.startswith(".") for part in text.split("/")):
        # (a part starting with '.' is a hidden folder: its notes would be written, then never read)
        raise BadInput(f"namespace {namespace!r} may use letters, digits, '.', '_', '-' and '/' between parts, "
                       "and no part may start with '.'")
    longest = max(text.split("/"), key=len)
    if len(longest.encode("utf-8")) > NAMESPACE_PART_BYTES:
        raise BadInput(f"namespace part {longest[:20]!r}... is {len(longest.encode('utf-8'))} bytes; a part is a "
                       f"folder name, at most {NAMESPACE_PART_BYTES} bytes")
    return text
