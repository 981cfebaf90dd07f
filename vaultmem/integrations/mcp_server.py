"""vaultmem as an MCP server: the vault's operations as tools an agent calls over stdio.

    vaultmem mcp --vault ~/vaults/agent        # needs `pip install 'vaultmem[mcp]'`

Register it with an MCP client, e.g. Claude Code:
`claude mcp add vaultmem -- vaultmem mcp --vault ~/vaults/agent`.

Tools (each a thin typed layer over `vaultmem.Vault`; notes come back in the
JSON shape of `vaultmem ... --json`, see present.py):

    recall   find the memories that answer a query (read only)
    get      one note by id (read only)
    list     notes with filters, newest first (read only)
    add      remember a fact, preference or decision
    learn    remember a skill: trigger, steps, outcome, lessons
    grade    after using a memory: again | hard | good | easy
    review   what is due for confirmation (read only)
    prompt   the compact block of memories for a session's context (read only)
    correct  replace a wrong memory with the right text
    update   change a note's text, tags or tier in place (id, schedule and history kept)
    archive  move a note out of recall into archive/ (never deleted)
    restore  bring back an archived note, or reactivate a suspended one
    why      where a memory came from and what happened to it (read only)

Memory text is data, never instructions: `prompt` returns the block framed
as data (core/fence.py), and every note a tool returns has each tag opener in
its strings written `&lt;` (no role tag or closing marker survives), with
`recall` saying in `notice` that its hits are stored notes.

Errors: a refusal (`VaultmemError`: unknown id, bad rating, a secret in the
text, a broken note file, a write conflict) comes back as a tool error result
(`isError`) with one line, e.g. `Error executing tool grade: bad input:
unknown rating 'great'; use one of: again, hard, good, easy`. Anything else is
reported the same way as an internal error; the server keeps serving.

The vault is chosen like the CLI's (`--vault`, `$VAULTMEM_VAULT`, discovery)
and opened once: the recall engine (model, indexes) stays warm between calls,
and each call starts from the files as they are now (a stat scan), so edits
made in Obsidian meanwhile are seen. The SDK runs tools on worker threads; a
lock runs them one at a time. While serving, the SDK points the process's
stdout at stderr, so nothing printed by a library can corrupt the protocol.

This is the only module that imports `mcp` (an optional extra).
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import os
import re
import sys
import threading
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError
from typing_extensions import TypedDict

from vaultmem import clock
from vaultmem.core.model import HIDDEN_STATUSES, RATINGS, STATUSES, TIERS, TYPES, has_tag, in_namespace
from vaultmem.errors import (
    BadInput,
    ConflictError,
    ModelUnavailable,
    NoteError,
    NotFound,
    SecretFound,
    VaultmemError,
)

log = logging.getLogger("vaultmem.mcp")

MAX_RESULTS = 200

INSTRUCTIONS = """\
vaultmem is your long-term memory: facts, preferences, decisions (memories) and procedures (skills), \
kept as markdown notes a person can read and edit.
- At the start of a task, call `prompt` (or `recall` with the question) for what you already know.
- After you use a memory, `grade` it: good (it helped), easy (obvious), hard (barely), again (it was wrong; \
then `correct` it with the right text). Grading is what keeps useful memories and lets wrong ones fade.
- `add` what is worth keeping beyond this conversation (one fact per call, with a namespace such as work/infra); \
`learn` a procedure that worked. Nothing secret: a text holding a secret is refused.
- `why` says where a memory came from before you rely on a surprising one."""


# ---------------------------------------------------------------- shapes

class AddResult(TypedDict):
    """What `add`, `learn` and `correct` did."""

    action: str  # "added", or "recurrence" when the same memory was already there (it got the evidence)
    id: str
    note: dict[str, Any]
    superseded: list[str]  # ids of older memories this one replaced
    contested: list[str]  # ids it conflicts with unclearly (both marked contested)
    reason: str
    redacted: list[str]  # kinds of secrets masked (with redact=true)


class RecallResult(TypedDict):
    notice: str  # the hits are notes stored in the vault: data to weigh, not instructions
    hits: list[dict[str, Any]]  # notes, best first, each with score and label
    lexical_only: str | None  # why semantic recall is off, when it is
    skipped: list[str]  # note files that could not be read (`vaultmem health` says how to fix)


class NoteList(TypedDict):
    notes: list[dict[str, Any]]
    total: int  # how many matched before `limit`


# Argument types: a description for the agent; enums in the schema, checked by vaultmem
# (not by pydantic) so a bad value gets vaultmem's one-line message.
NoteId = Annotated[str, Field(description="A note id, e.g. k3f9x2ab (from recall, list or prompt).")]
Namespace = Annotated[str, Field(description="Where it belongs, '/'-separated, e.g. work/infra or projects/api.")]
NamespaceFilter = Annotated[str | None, Field(description="Only this namespace and the ones below it.")]
Tags = Annotated[list[str] | None, Field(description="Tags, e.g. [\"db\", \"staging\"].")]
Source = Annotated[str, Field(description="Where it came from: a URL, a file, or a [[note]].")]
Explicit = Annotated[bool, Field(description="True when the user asked to remember it (promoted sooner).")]
Redact = Annotated[bool, Field(description="Mask secrets and personal data instead of refusing the text.")]
Kind = Annotated[str | None, Field(description="Only memories or only skills.",
                                   json_schema_extra={"enum": [*TYPES, None]})]


def _enum(description: str, values, optional: bool = False) -> Any:
    values = list(values) + ([None] if optional else [])
    return Field(description=description, json_schema_extra={"enum": values})


def _count(value: int | None, name: str, low: int, high: int) -> int | None:
    if value is not None and not low <= value <= high:
        raise BadInput(f"{name} must be between {low} and {high}, not {value}")
    return value


def _choice(value: str | None, name: str, allowed) -> str | None:
    if value is None or value == "":
        return None
    if value not in allowed:
        raise BadInput(f"unknown {name} {value!r}; use one of: {', '.join(allowed)}")
    return value


def _plain(data):
    """JSON-able data: datetimes as text, tuples as lists (as the CLI's --json prints them)."""
    return json.loads(json.dumps(data, ensure_ascii=False, default=str))


_KINDS = ((SecretFound, "secret found"), (NotFound, "not found"), (NoteError, "broken note"),
          (ConflictError, "conflict, try again"), (ModelUnavailable, "model unavailable"), (BadInput, "bad input"))


# vaultmem's messages name CLI commands and flags; an agent over MCP calls tools instead.
_AS_TOOLS = ("recall", "get", "list", "add", "learn", "grade", "review", "prompt", "correct", "resolve", "update",
             "archive", "restore", "why")
_CLI_COMMAND = re.compile(r"`vaultmem (\w+)[^`]*`|\bvaultmem (list) ")
_CLI_FLAG = re.compile(r'--(steps|trigger|outcome|lessons|namespace|tags|redact)\b')


def _for_tools(text: str) -> str:
    """A message with its CLI commands and flags told as this server's tools and arguments."""
    text = _CLI_COMMAND.sub(lambda m: f"the {m[1] or m[2]} tool " if (m[1] or m[2]) in _AS_TOOLS else m[0], text)
    return _CLI_FLAG.sub(lambda m: f"the {m[1]} argument", text).replace("tool  ", "tool ")


def error_text(exc: BaseException) -> str:
    """The one line an agent reads for a failed call."""
    if isinstance(exc, VaultmemError):
        kind = next((word for cls, word in _KINDS if isinstance(exc, cls)), "refused")
        return f"{kind}: {_for_tools(' '.join(str(exc).split()))}"
    return f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())}"


# ---------------------------------------------------------------- the server

class _OneLineServer(MCPServer):
    """MCPServer whose argument errors read as vaultmem's own: one line. (The library checks
    the arguments against each tool's schema before the tool runs, and reports pydantic's
    several-line text with a link.)"""

    async def call_tool(self, name, arguments, context=None):
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            problems = "; ".join(f"{'.'.join(map(str, error['loc'])) or 'arguments'}: {error['msg']}"
                                 for error in exc.__cause__.errors())
            raise ToolError(f"bad input: {name}: {problems}") from exc.__cause__


class VaultTools:
    """The vault, opened once, behind the tool functions."""

    def __init__(self, vault):
        self.vault = vault
        self.lock = threading.Lock()

    def now(self):
        return clock.now()

    def note(self, note, extra: dict | None = None) -> dict:
        """A note as data for the agent: no string in it can open or close a tag (fence.py)."""
        from vaultmem.core.fence import neutralize_data
        from vaultmem.core.present import note_dict

        return neutralize_data(note_dict(note, self.now(), self.vault.config, extra))

    def added(self, result) -> AddResult:
        return {"action": result.action, "id": result.note.id, "note": self.note(result.note),
                "superseded": list(result.superseded), "contested": list(result.contested),
                "reason": result.reason or "", "redacted": list(result.redacted)}

    def engine(self):
        from vaultmem.search.engine import engine_for

        engine = engine_for(self.vault)
        engine.serving = True  # a tool call never waits for another process's index writes
        return engine

    def warm_up(self) -> None:
        """Load the model and indexes now, so the first recall is not the slow one. Fails open."""
        with self.lock:
            try:
                self.engine().warm_up()
            except Exception as exc:  # noqa: BLE001 - recall will say what is wrong when asked
                log.warning("vaultmem: warm-up failed (%s); recall loads on first use", error_text(exc))


def _call(tools: VaultTools, fn):
    """Run a tool body one at a time, on the files as they are now; errors become one-line tool errors."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with tools.lock:
            try:
                tools.vault.catalog(fresh=True)
                return fn(*args, **kwargs)
            except ToolError:
                raise
            except VaultmemError as exc:
                raise ToolError(error_text(exc)) from exc
            except Exception as exc:  # an error result, never a dead server
                if os.environ.get("VAULTMEM_DEBUG"):
                    log.exception("vaultmem: %s failed", fn.__name__)
                hint = " (set VAULTMEM_DEBUG=1 for the traceback in the server's log)"
                raise ToolError(error_text(exc) + hint) from exc

    return wrapper


READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)


def build_server(vault) -> tuple[MCPServer, VaultTools]:
    """An MCPServer whose tools work on `vault` (an open `vaultmem.Vault`)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        our_version = version("vaultmem")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        our_version = "0"
    server = _OneLineServer("vaultmem", title="vaultmem memory", version=our_version, instructions=INSTRUCTIONS,
                       log_level="WARNING")
    tools = VaultTools(vault)

    def tool(name: str, annotations: ToolAnnotations):
        def register(fn):
            server.add_tool(_call(tools, fn), name=name, description=inspect.cleandoc(fn.__doc__ or ""),
                            annotations=annotations)
            return fn

        return register

    @tool("recall", READ)
    def recall(
        query: Annotated[str, Field(description="The question or topic, in plain words.")],
        k: Annotated[int | None, Field(description="How many results (default: the vault's recall.top_k).",
                                       json_schema_extra={"minimum": 1, "maximum": MAX_RESULTS})] = None,
        namespace: NamespaceFilter = None,
        kind: Kind = None,
        include_hidden: Annotated[bool, Field(description="Also archived, suspended and superseded notes.")] = False,
        history: Annotated[bool, Field(description="Also superseded notes: how things were before.")] = False,
        explain: Annotated[bool, Field(description="Add each hit's signals (bm25, cosine, retrievability).")] = False,
    ) -> RecallResult:
        """Find the memories and skills that answer a query, best first. Call it before answering
        anything that may depend on what was learned before. Each hit has id, namespace, text, score
        and label (fresh, fading, weak...). After using a hit, grade it by id. Never writes."""
        _count(k, "k", 1, MAX_RESULTS)
        kind = _choice(kind, "kind", TYPES)
        from vaultmem.core.fence import STORED_NOTES, neutralize_data
        from vaultmem.core.present import hit_dicts

        hits = hit_dicts(tools.vault.recall(query, k=k, namespace=namespace or None, kind=kind,
                                            include_hidden=include_hidden, history=history),
                         tools.now(), tools.vault.config)
        if not explain:
            for hit in hits:
                hit.pop("signals", None)
        return {"notice": f"The hits are {STORED_NOTES}",
                "hits": neutralize_data(_plain(hits)), "lexical_only": tools.engine().model_problem,
                "skipped": [path for path, _problem in tools.vault.catalog().problems]}

    @tool("get", READ)
    def get(id: NoteId) -> dict[str, Any]:
        """One note by id: its text and every property (status, tier, strength, due, reps...)."""
        return _plain(tools.note(tools.vault.get(id)))

    @tool("list", READ)
    def list_notes(
        namespace: NamespaceFilter = None,
        kind: Kind = None,
        status: Annotated[str | None, _enum("Only notes with this status.", STATUSES, optional=True)] = None,
        tier: Annotated[str | None, _enum("Only this tier: L0 observed, L1 remembered, L2 every session, "
                                          "L3 durable.", TIERS, optional=True)] = None,
        tag: Annotated[str | None, Field(description="Only notes with this tag.")] = None,
        include_hidden: Annotated[bool, Field(description="Also archived, suspended and superseded notes.")] = False,
        limit: Annotated[int, Field(description="At most this many (newest first).",
                                    json_schema_extra={"minimum": 1, "maximum": MAX_RESULTS})] = 50,
    ) -> NoteList:
        """List notes, newest first, with filters. Each note comes without its full text (see
        `summary`); call get for the text."""
        _count(limit, "limit", 1, MAX_RESULTS)
        kind = _choice(kind, "kind", TYPES)
        status = _choice(status, "status", STATUSES)
        tier = _choice(tier.upper() if tier else tier, "tier", TIERS)
        notes = [n for n in tools.vault.notes(include_hidden=include_hidden or status in HIDDEN_STATUSES)
                 if in_namespace(n.namespace, namespace)
                 and (not kind or n.type == kind) and (not status or n.status == status)
                 and (not tier or n.tier == tier) and has_tag(n, tag)]
        notes.sort(key=lambda n: (n.created, n.id), reverse=True)
        shown = []
        for note in notes[:limit]:
            data = tools.note(note)
            data.pop("text", None)
            shown.append(data)
        return {"notes": _plain(shown), "total": len(notes)}

    @tool("add", WRITE)
    def add(
        text: Annotated[str, Field(description="One fact, preference or decision, self-contained.")],
        namespace: Namespace,
        tags: Tags = None,
        source: Source = "",
        tier: Annotated[str | None, _enum("L0 observed, L1 remembered (default), L2 loaded every session, "
                                          "L3 durable across projects.", TIERS, optional=True)] = None,
        explicit: Explicit = False,
        redact: Redact = False,
    ) -> AddResult:
        """Remember something worth keeping beyond this conversation. The same memory again counts as
        a recurrence (action "recurrence") instead of a copy; one that contradicts an older memory
        supersedes it. A text holding a secret is refused unless redact is true."""
        return tools.added(tools.vault.add(text, namespace, tags=tags or (), source=source or "", tier=tier,
                                           explicit=explicit, redact=redact))

    @tool("learn", WRITE)
    def learn(
        title: Annotated[str, Field(description="What the procedure does, e.g. \"Release the CLI\".")],
        steps: Annotated[str, Field(description="The steps, e.g. \"1. bump the version 2. tag 3. push\".")],
        namespace: Namespace,
        trigger: Annotated[str, Field(description="When to use it.")] = "",
        outcome: Annotated[str, Field(description="What success looks like.")] = "",
        lessons: Annotated[str, Field(description="What went wrong before and how to avoid it.")] = "",
        tags: Tags = None,
        source: Source = "",
        redact: Redact = False,
    ) -> AddResult:
        """Remember a skill: a procedure that worked, with its trigger, steps, outcome and lessons.
        Recall finds skills like memories; grade them after use."""
        return tools.added(tools.vault.learn(title, trigger, steps, outcome, lessons, namespace,
                                             tags=tags or (), source=source or "", redact=redact))

    @tool("grade", WRITE)
    def grade(
        id: NoteId,
        rating: Annotated[str, _enum("again: it was wrong or useless; hard: right but barely recalled; "
                                     "good: it helped; easy: obvious.", RATINGS)],
        comment: Annotated[str | None, Field(description="Why, in a few words (kept in the review log).")] = None,
    ) -> dict[str, Any]:
        """Grade a memory after using it. This is how memory learns: good/easy strengthen it and
        schedule it later, again weakens it (a memory that keeps failing is suspended). If it was
        wrong, also call correct. Returns the note with its new schedule."""
        return _plain(tools.note(tools.vault.grade(id, rating, comment=comment or None)))

    @tool("review", READ)
    def review(
        limit: Annotated[int, Field(description="At most this many.",
                                    json_schema_extra={"minimum": 1, "maximum": MAX_RESULTS})] = 20,
    ) -> NoteList:
        """Memories due for confirmation, most at risk of being forgotten first. Check each one
        and grade it (good if still true, again if not)."""
        _count(limit, "limit", 1, MAX_RESULTS)
        due = tools.vault.review(limit=limit)
        return {"notes": _plain([tools.note(n) for n in due]), "total": len(due)}

    @tool("prompt", READ)
    def prompt(
        max_tokens: Annotated[int, Field(description="Budget for the block, in tokens (about 4 characters each).",
                                         json_schema_extra={"minimum": 50, "maximum": 100000})] = 1500,
        namespace: NamespaceFilter = None,
    ) -> str:
        """The compact block of what you should know, for the start of a session: durable memories
        first, one line each with its id. Grade the ones you use."""
        _count(max_tokens, "max_tokens", 50, 100000)
        block = tools.vault.prompt(max_tokens=max_tokens, namespace=namespace or None)
        return block.said(max_tokens, "max_tokens")

    @tool("correct", WRITE)
    def correct(
        id: NoteId,
        text: Annotated[str, Field(description="The right content, replacing the wrong memory's text.")],
        reason: Annotated[str | None, Field(description="Why the old one was wrong.")] = None,
    ) -> AddResult:
        """Replace a wrong memory: grades it again, adds the right text as a new memory that says what
        it corrects, and marks the old one superseded (kept for history, no longer recalled)."""
        return tools.added(tools.vault.correct(id, text, reason=reason or None))

    @tool("resolve", WRITE)
    def resolve(
        id: NoteId,
        both: Annotated[bool, Field(description="True: every memory of the contest holds and none is superseded; "
                                                "false (default): this one is right and supersedes the others.")]
        = False,
        others: Annotated[list[str] | None, Field(description="Settle the contest with these memories only "
                                                              "(ids); omit for all it is contested with.")] = None,
    ) -> dict[str, Any]:
        """Settle a contest (memories marked contested: they may contradict each other): this memory
        is right and supersedes the ones it was contested with, or with both=true they all hold.
        Returns the ids of the other memories involved."""
        return {"id": id, "others": tools.vault.resolve(id, both=both, only=others or ()), "both": both}

    @tool("update", WRITE)
    def update(
        id: NoteId,
        text: Annotated[str | None, Field(description="The new text (the whole note body); omit to keep it.")] = None,
        tags: Annotated[list[str] | None, Field(description="The new tags (replacing the old); omit to keep them.")]
        = None,
        tier: Annotated[str | None, _enum("Set the tier: L0 observed, L1 remembered, L2 every session, "
                                          "L3 durable.", TIERS, optional=True)] = None,
        redact: Redact = False,
    ) -> dict[str, Any]:
        """Change a note in place: its text (a typo, a detail added), its tags or its tier. Its id,
        schedule and history stay. If the memory was wrong, call correct instead (the wrong one is
        kept as history). Returns the note."""
        from vaultmem.ops.corrections import edit

        tier = _choice(tier.upper() if tier else tier, "tier", TIERS)
        if text is None and tags is None and tier is None:
            raise BadInput("nothing to update: give text, tags or tier")
        note = None
        if text is not None or tags is not None:
            note = edit(tools.vault, id, text=text, tags=tags, redact=redact)
        if tier is not None:
            note = tools.vault.set_tier(id, tier, reason="set over MCP")
        return _plain(tools.note(note))

    @tool("archive", WRITE)
    def archive(
        id: NoteId,
        reason: Annotated[str, Field(description="Why it is archived, in a few words (kept in the log).")] = "manual",
    ) -> dict[str, Any]:
        """Move a note out of recall into archive/ (never deleted; restore brings it back). For a
        memory that no longer matters; a wrong one is for correct."""
        return _plain(tools.note(tools.vault.archive(id, reason=reason or "manual")))

    @tool("restore", WRITE)
    def restore(id: NoteId) -> dict[str, Any]:
        """Bring back an archived note, or reactivate a suspended or stale one."""
        return _plain(tools.note(tools.vault.restore(id)))

    @tool("why", READ)
    def why(
        ref: Annotated[str, Field(description="A note id, or a claim in words (the best-matching memory, "
                                              "superseded ones included).")],
    ) -> dict[str, Any]:
        """Where a memory came from: its source, the evidence that promoted it, what it superseded or
        conflicts with, and every recorded change and grade."""
        from vaultmem.core.fence import neutralize_data

        return neutralize_data(_plain(tools.vault.why(ref)))

    return server, tools


def serve(vault_path=None, warm: bool = True) -> None:
    """Open the vault (as the CLI would) and serve MCP over stdin/stdout until stdin closes."""
    from vaultmem.vault import Vault

    vault = Vault.open(vault_path)
    server, tools = build_server(vault)
    tools.engine()  # (serving from the first tool call on)
    if warm:
        threading.Thread(target=tools.warm_up, name="vaultmem-warm-up", daemon=True).start()
    try:
        server.run("stdio")
    except KeyboardInterrupt:
        pass
    finally:
        sys.stderr.flush()
