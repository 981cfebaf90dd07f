"""The `vaultmem` command line: options -> one library call -> output.

Every command takes `--json` (data for agents), `-q` (exit code only) and
`--vault PATH`. Errors are one line on stderr and a documented exit code:
0 ok, 1 not found, 2 bad usage or input, 3 a file kept changing under a write,
4 the ledger is broken (verify), 70 internal error, 130 interrupted; all named
in vaultmem/errors.py.
Heavy modules (whoosh, fsrs, onnxruntime) are imported inside the commands
that need them, so `vaultmem --help` and light commands start fast.
"""

from __future__ import annotations

import sys
from datetime import datetime

import click

from vaultmem.cli.common import (  # noqa: F401 - shared with the command modules
    NOTE_HEADERS,
    Number,
    Output,
    VaultmemGroup,
    _emit_added,
    _note_json,
    _note_rows,
    _parse_created,
    _short,
    _split_tags,
    _table,
    _vault,
    _vault_root,
    _warn_problems,
    common,
)
from vaultmem.core.model import (
    HIDDEN_STATUSES,
    STATUSES,
    TIERS,
    TYPES,
    has_tag,
    in_namespace,
    namespace_filter,
    recall_scope,
)
from vaultmem.errors import EXIT_BAD_INPUT, EXIT_LOCKED, BadInput

# ---------------------------------------------------------------- commands

@click.group(cls=VaultmemGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--vault", "vault_path", type=click.Path(file_okay=False), default=None, help="The vault folder.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for agents.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing; the exit code says how it went.")
@click.version_option(package_name="vaultmem")
def cli(vault_path, as_json, quiet):
    """vaultmem: an agent's memory as plain markdown notes, with spaced repetition.

    \b
    Quick tour:
      vaultmem init ~/notes/agent-vault
      vaultmem add "The staging DB is Postgres 16" -n work --tags db
      vaultmem recall "which postgres version on staging" --json
      vaultmem grade ID good
      vaultmem review
    """


@cli.command()
@click.argument("path", required=False, type=click.Path(file_okay=False))
@click.option("--obsidian", "with_obsidian", is_flag=True,
              help="Also install and enable the Obsidian plugin (as `vaultmem obsidian install`).")
@click.option("--claude-code", "claude_code", is_flag=True,
              help="Also install the Claude Code hooks and register the MCP server, for this vault.")
@click.option("--project", is_flag=True, help="With --claude-code: this project's .claude/settings.json and .mcp.json.")
@click.option("--local", is_flag=True, help="With --claude-code: this project's settings.local.json, local MCP scope.")
@click.option("--core-only", is_flag=True, help="With --claude-code: SessionStart injects only L2 and L3 memories.")
@click.option("--command", "command", default=None, help="With --claude-code: how hooks and MCP run vaultmem.")
@click.option("--git", "with_git", is_flag=True,
              help="Inside a git repository: also set up vaultmem's merge drivers (`vaultmem git install`).")
@common
def init(path, with_obsidian, claude_code, project, local, core_only, command, with_git, out, vault_path):
    """Create a vault, or add what is missing to an existing (Obsidian) folder.

    With --claude-code, in one step: the vault, vaultmem's hooks in Claude
    Code's settings (as `hooks install`) and the MCP server registered
    (`.mcp.json` with --project, else `claude mcp add`), all using this vault.
    With --obsidian, the Obsidian plugin too. Inside a git repository it says how
    to set up merging (or does it with --git); it never asks.

    Example: vaultmem init ~/vaults/agent --claude-code --obsidian
    """
    from pathlib import Path

    from vaultmem.integrations import gitvault
    from vaultmem.vault import init_vault

    root = Path(path or vault_path or ".").expanduser().resolve()
    added = init_vault(root)
    data = {"vault": str(root), "added": added}
    human = f"vault ready at {root}" + (f" (added {len(added)}: {', '.join(added)})" if added else " (nothing to add)")
    if claude_code:
        from vaultmem.cli.agents import _settings_target
        from vaultmem.integrations.claude_mcp import register
        from vaultmem.integrations.claude_settings import install

        change = install(_settings_target(False, project, local, None), command=command, vault=str(root),
                         core_only=core_only)
        mcp = register(root, "project" if project else ("local" if local else "user"), command=command)
        data.update(hooks=change.to_dict(), mcp=mcp.to_dict())
        human += f"\nhooks: {'installed in' if change.changed else 'already in'} {change.path}"
        human += (f"\nmcp: run this to register the server: {mcp.todo}" if mcp.todo else
                  f"\nmcp: {'registered' if mcp.changed else 'already registered'} ({mcp.how})")
    if with_obsidian:
        from vaultmem.integrations.obsidian import install as install_plugin

        data["obsidian"] = install_plugin(root)
        human += f"\nObsidian plugin installed in {data['obsidian']['plugin_dir']}; reload Obsidian to use it"
    else:
        human += f"\nto review and grade in Obsidian: vaultmem obsidian install {root}"
    setup = gitvault.status(root)
    git = None
    if setup.repository:
        git = {"installed": gitvault.install(root) if with_git else [], "hint": None}
        if not with_git and not setup.installed:
            git["hint"] = f"this vault is in the git repository {setup.repository}: `vaultmem git install` sets " \
                          "up merging of notes, logs and the ledger between branches and clones"
    elif with_git:
        git = {"installed": [], "hint": f"{root} is not in a git repository: nothing set up for git; "
                                        "`git init` it, then `vaultmem git install`"}
    if git and git["installed"]:
        human += "\ngit merge drivers set up (.gitattributes, .git/config): commit .gitattributes"
    elif git and git["hint"]:
        human += "\n" + git["hint"]
    data["git"] = git
    out.emit(data, human)


@cli.command()
@click.argument("text")
@click.option("-n", "--namespace", help="Where the memory belongs, e.g. work or projects/api (required).")
@click.option("-t", "--tags", multiple=True, help="Tags, comma-separated or repeated.")
@click.option("-s", "--source", default="", help="Where it came from: a URL, a file, or a [[note]].")
@click.option("--created", help="When it was learned (backfills, imports), e.g. 2024-05-08T13:56:00; "
                                "UTC unless an offset is given.")
@click.option("--tier", help="L0 observed, L1 remembered (default), L2 every session, L3 durable.")
@click.option("--explicit", is_flag=True,
              help="Stated explicitly (\"remember that...\"): promotes after fewer sessions.")
@click.option("--session", help="The agent session this comes from (default: $VAULTMEM_SESSION).")
@click.option("--redact", is_flag=True, help="Mask secrets and personal data instead of refusing the text.")
@click.option("--no-supersede", is_flag=True, help="Do not supersede or contest memories this one contradicts.")
@click.option("--allow-duplicate", is_flag=True, help="Write a new note even if the same memory exists.")
@common
def add(text, namespace, tags, source, created, tier, explicit, session, redact, no_supersede, allow_duplicate,
        out, vault_path):
    """Remember a fact, preference or decision.

    The same memory again counts as a recurrence (evidence for promotion), a
    clear contradiction of an older memory in the namespace supersedes it, an
    unclear one marks both contested; `vaultmem conflicts TEXT` shows which
    without writing. Secrets are refused unless --redact. TEXT `-` reads the
    text from standard input (a long text, or one another program writes).

    Example: vaultmem add "Deploys go through the staging branch" -n work --tags deploy
    """
    from vaultmem.core.model import check_namespace
    from vaultmem.ops.provenance import current_project, current_session
    from vaultmem.service.writes import added_data, send_write

    if text == "-":
        try:
            text = click.get_binary_stream("stdin").read().decode("utf-8")
        except UnicodeDecodeError:
            raise BadInput("standard input is not UTF-8 text (bytes in another encoding?); give it as UTF-8") from None
    check_namespace(namespace)
    _parse_created(created)
    args = dict(text=text, namespace=namespace, tags=_split_tags(tags), source=source, created=created, tier=tier,
                explicit=explicit, session=current_session(session), project=current_project(None), redact=redact,
                supersede=not no_supersede, merge=not allow_duplicate)
    data = send_write(_vault_root(vault_path), "add", args)  # a watcher writes: this process needs no Vault
    if data is None:
        vault = _vault(vault_path)
        args["created"] = _parse_created(created)
        data = added_data(vault.add(args.pop("text"), args.pop("namespace"), **args), vault.config)
    _emit_added(out, data, "added")




@cli.command()
@click.argument("title")
@click.option("--trigger", default="", help="When to use this procedure.")
@click.option("--steps", default="", help="The steps (required).")
@click.option("--outcome", default="", help="What success looks like.")
@click.option("--lessons", default="", help="What went wrong before and how to avoid it.")
@click.option("-n", "--namespace", help="Where the skill belongs (required).")
@click.option("-t", "--tags", multiple=True, help="Tags, comma-separated or repeated.")
@click.option("-s", "--source", default="", help="Where it came from.")
@click.option("--redact", is_flag=True, help="Mask secrets and personal data instead of refusing the text.")
@common
def learn(title, trigger, steps, outcome, lessons, namespace, tags, source, redact, out, vault_path):
    """Remember a skill: a procedure with trigger, steps, outcome and lessons.

    Example: vaultmem learn "Release the CLI" --trigger "a tag is pushed" --steps "1. bump 2. tag" -n work
    """
    from vaultmem.vault import check_namespace

    check_namespace(namespace)
    vault = _vault(vault_path)
    added = vault.learn(title, trigger, steps, outcome, lessons, namespace, tags=_split_tags(tags), source=source,
                        redact=redact)
    from vaultmem.service.writes import added_data

    _emit_added(out, added_data(added, vault.config), "learned")


@cli.command()
@click.argument("query")
@click.option("-k", "--top-k", type=click.IntRange(1, 1000), default=None,
              help="How many results (default: recall.top_k).")
@click.option("-n", "--namespace", help="Only this namespace (and the ones below it).")
@click.option("--type", "kind", type=click.Choice(TYPES), help="Only memories or only skills.")
@click.option("--all", "include_hidden", is_flag=True, help="Include archived, suspended and superseded notes.")
@click.option("--history", is_flag=True, help="Include superseded memories: what was believed before.")
@click.option("--explain", is_flag=True,
              help="Show each signal per result: BM25, coverage, cosine, relevance, retrievability, strength.")
@click.option("--min-score", type=Number(0, 1), default=None,
              help="The model similarity (0-1, its own scale) a result found by meaning alone needs; one "
                   "holding 40% of the query's words passes anyway, whatever its score (default: "
                   "recall.min_score, else the model's floor; 0: every candidate).")
@common
def recall(query, top_k, namespace, kind, include_hidden, history, explain, min_score, out, vault_path):
    """Find the memories that answer a query. Never writes a note.

    Asks the vault's watcher when one runs (fast), else recalls in-process.
    Nothing relevant (every candidate below the relevance floor): no results.

    Example: vaultmem recall "how do we deploy" -k 3 --json
    """
    from vaultmem.core.model import check_query
    from vaultmem.service.client import ask_watcher

    query = check_query(query)
    scope = recall_scope(include_hidden, history)
    namespace = namespace_filter(namespace) or None
    answer = ask_watcher(vault_path, query, top_k, namespace, kind, scope, min_score)
    if answer is not None:
        hits, problems, model_problem = answer["hits"], answer.get("problems", []), answer.get("model_problem")
        crosslingual_problem, unembedded = answer.get("crosslingual_problem"), answer.get("unembedded", 0)
        coverage, index_writer = answer.get("crosslingual_coverage"), None
    else:
        from vaultmem.cli.output import embedding_progress
        from vaultmem.clock import now as clock_now
        from vaultmem.core.present import hit_dicts
        from vaultmem.search.engine import engine_for
        from vaultmem.search.engine import recall as run_recall

        vault = _vault(vault_path)
        engine = engine_for(vault)
        engine.progress = None if out.quiet else embedding_progress()
        found = run_recall(vault, query, top_k=top_k, namespace=namespace, kind=kind, include_hidden=scope,
                           min_score=min_score)
        hits = hit_dicts(found, clock_now(), vault.config)
        problems = vault.catalog().problems
        model_problem = engine.model_problem
        crosslingual_problem, unembedded = engine.crosslingual_problem_for(query), engine.unembedded
        coverage = engine.crosslingual_coverage_for(query)
        coverage = coverage.as_dict() if coverage else None
        index_writer = engine.index_writer
    from vaultmem.cli.output import print_recall

    print_recall(hits, problems, model_problem, out.as_json, out.quiet, explain, crosslingual_problem, unembedded,
                 coverage, index_writer)


@cli.command()
@click.option("--idle-exit", type=Number(1), default=None,
              help="Exit after this many seconds without a request (the Claude Code hook starts it so).")
@common
def watch(idle_exit, out, vault_path):
    """Keep the indexes current as files change, and serve recall to the CLI.

    Runs until interrupted (Ctrl-C or SIGTERM), or with --idle-exit once no
    one has asked for that long. Edits made in Obsidian or any editor are
    indexed within a second and recorded on the ledger; `vaultmem recall`
    asks this process instead of loading the model itself.

    Example: vaultmem watch --vault ~/vaults/agent
    """
    import signal
    import threading

    from vaultmem.search.engine import RecallEngine, adopt_engine
    from vaultmem.service.backfill import FILL_TURN
    from vaultmem.service.server import prepare_socket, serve
    from vaultmem.service.watch import request_handler, run_watcher

    vault = _vault(vault_path)
    prepare_socket(str(vault.root))  # an unsafe socket folder or a running watcher: refused before the model loads
    # Serving starts after one bounded sync: notes never embedded (a vault's first use) are embedded
    # in the background (service/backfill.py), FILL_TURN at a time, not before the first answer.
    engine = RecallEngine(vault, embed_limit=FILL_TURN)
    adopt_engine(engine)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())

    def report(kind, result):
        if not out.quiet and not out.as_json and kind != "scan":
            click.echo(f"{kind}: {result['indexed']} indexed, {result['embedded']} embedded", err=True)

    watcher = threading.Thread(target=run_watcher, args=(engine, stop, report), daemon=True)

    def ready(path):
        watcher.start()
        if not out.quiet:
            model = engine.embedder.name if engine.embedder else f"none ({engine.model_problem})"
            click.echo(f"watching {vault.root}; serving recall on {path}; model: {model}", err=False)
            sys.stdout.flush()

    handle = request_handler(engine)
    if idle_exit:
        from vaultmem.service.watch import exit_when_idle

        handle = exit_when_idle(handle, idle_exit, stop)
    engine.sync()
    engine.warm_up()
    serve(str(vault.root), handle, ready=ready, stop_event=stop)
    watcher.join(timeout=10)


@cli.command()
@click.argument("note_id")
@common
def show(note_id, out, vault_path):
    """Show one note: its properties and text.

    Example: vaultmem show k3f9x2ab
    """
    from vaultmem.clock import now as clock_now

    vault = _vault(vault_path)
    note = vault.get(note_id)
    data = _note_json(note, clock_now(), vault.config)
    others = _other_properties(vault.root / note.path, note.path)
    if others:
        data["other_properties"] = others  # a person's own (Obsidian's aliases, cssclasses, ...): kept as written
    skip = {"text", "title", "other_properties"}

    def shown(value) -> str:
        return ", ".join(map(str, value)) if isinstance(value, list) else "" if value is None else str(value)

    human = "\n".join(f"{k}: {shown(v)}" for k, v in [*((k, v) for k, v in data.items() if k not in skip),
                                                       *others.items()])
    out.emit(data, f"{human}\n\n{note.text}")


def _other_properties(path, rel: str) -> dict:
    """The properties of a note's file that vaultmem does not model, as text (show lists them)."""
    from vaultmem.core.note import LOOKUP_KEYS, unmodelled_properties
    from vaultmem.errors import NoteError

    try:
        data = unmodelled_properties(path.read_text(encoding="utf-8"), rel)
    except (OSError, UnicodeDecodeError, NoteError):
        return {}
    return {key: value if isinstance(value, (list, str, int, float, bool)) or value is None else str(value)
            for key, value in data.items() if key not in LOOKUP_KEYS}


@cli.command(name="list")
@click.option("-n", "--namespace", help="Only this namespace (and the ones below it).")
@click.option("--type", "kind", type=click.Choice(TYPES))
@click.option("--status", type=click.Choice(STATUSES))
@click.option("--tier", type=click.Choice(TIERS, case_sensitive=False))
@click.option("--tag", help="Only notes with this tag.")
@click.option("--all", "include_hidden", is_flag=True, help="Include archived, suspended and superseded notes.")
@click.option("--limit", type=click.IntRange(1), default=None)
@common
def list_notes(namespace, kind, status, tier, tag, include_hidden, limit, out, vault_path):
    """List notes, newest first, with filters.

    Example: vaultmem list -n work --tier L2
    """
    from vaultmem.clock import now as clock_now

    vault = _vault(vault_path)
    notes = vault.notes(include_hidden=include_hidden or status in HIDDEN_STATUSES)
    _warn_problems(vault, out)
    notes = [n for n in notes
             if in_namespace(n.namespace, namespace)
             and (not kind or n.type == kind) and (not status or n.status == status)
             and (not tier or n.tier == tier) and has_tag(n, tag)]
    notes.sort(key=lambda n: (n.created, n.id), reverse=True)
    notes = notes[:limit] if limit else notes
    now = clock_now()
    out.emit([_note_json(n, now, vault.config) for n in notes],
             _table(_note_rows(notes, now, vault.config), NOTE_HEADERS) or "no notes")


def _grade_summary(note: dict) -> str:
    return (f"{note['id']}: {note['state']}, due {note['due']} UTC, stability {note['stability']}, "
            f"strength {note['strength']:.2f}, lapses {note['lapses']}"
            + (f", {note['status']}" if note["status"] != "active" else ""))


@cli.command()
@click.argument("note_id")
@click.argument("rating")
@click.option("-c", "--comment", help="Why: kept in the review log.")
@common
def grade(note_id, rating, comment, out, vault_path):
    """Grade a memory after using it: again (it was wrong), hard, good or easy.

    Example: vaultmem grade k3f9x2ab good -c "used it to pick the DB driver"
    """
    from vaultmem.clock import now as clock_now
    from vaultmem.ops.provenance import current_project, current_session
    from vaultmem.service.writes import send_write

    args = dict(note_id=note_id, rating=rating, comment=comment, session=current_session(), project=current_project())
    data = send_write(_vault_root(vault_path), "grade", args)  # a watcher writes: this process needs no Vault
    if data is None:
        vault = _vault(vault_path)
        data = _note_json(vault.grade(args.pop("note_id"), args.pop("rating"), **args), clock_now(), vault.config)
    out.emit(data, _grade_summary(data))


@cli.command(name="grade-batch")
@click.argument("pairs", nargs=-1, required=True)
@common
def grade_batch(pairs, out, vault_path):
    """Grade several memories at once: ID:RATING ... (all or nothing on bad input).

    Example: vaultmem grade-batch k3f9x2ab:good m2p8q4zz:again
    """
    from vaultmem.clock import now as clock_now
    from vaultmem.errors import BadInput

    parsed = []
    for pair in pairs:
        note_id, sep, rating = pair.rpartition(":")
        if not sep or not note_id or not rating or ":" in note_id:  # (an id never holds one)
            raise BadInput(f"{pair!r} is not ID:RATING; write e.g. k3f9x2ab:good")
        parsed.append((note_id, rating))
    vault = _vault(vault_path)
    notes = vault.grade_batch(parsed)
    now = clock_now()
    data = [_note_json(n, now, vault.config) for n in notes]
    out.emit(data, "\n".join(_grade_summary(d) for d in data))


@cli.command()
@click.option("--limit", type=click.IntRange(1), default=20, show_default=True)
@common
def review(limit, out, vault_path):
    """What is due for confirmation, most at risk first.

    Example: vaultmem review --limit 5 --json
    """
    from vaultmem.clock import now as clock_now
    from vaultmem.core.lifecycle import due_for_review

    vault = _vault(vault_path)
    now = clock_now()
    due = due_for_review(vault.notes(), now, vault.config)[:limit]
    _warn_problems(vault, out)
    data = [_note_json(n, now, vault.config) for n, _r in due]
    rows = [[n.id, n.namespace, "-" if r is None else f"{r:.2f}", n.state, _short(n.summary, 60)] for n, r in due]
    out.emit(data, _table(rows, ["ID", "NAMESPACE", "RETRIEVABILITY", "STATE", "TEXT"]) or "nothing is due")


@cli.command()
@click.option("--n", "count", type=click.IntRange(1), default=10, show_default=True)
@click.option("-n", "--namespace", help="Only this namespace (and the ones below it).")
@common
def top(count, namespace, out, vault_path):
    """The strongest memories.

    Example: vaultmem top --n 5
    """
    from vaultmem.clock import now as clock_now

    vault = _vault(vault_path)
    notes = [n for n in vault.notes() if in_namespace(n.namespace, namespace)]
    notes = sorted(notes, key=lambda n: (-n.strength, -n.reps, n.created))[:count]
    _warn_problems(vault, out)
    now = clock_now()
    out.emit([_note_json(n, now, vault.config) for n in notes],
             _table(_note_rows(notes, now, vault.config), NOTE_HEADERS) or "no notes")


@cli.command()
@click.option("--max-tokens", type=click.IntRange(50), default=1500, show_default=True, help="Budget for the block.")
@click.option("-n", "--namespace", help="Only this namespace (and the ones below it).")
@click.option("--core-only", is_flag=True, help="Only the core: L3 and L2 memories.")
@common
def prompt(max_tokens, namespace, core_only, out, vault_path):
    """The block an agent hook injects: core memories (L3, L2), then the learning
    queue (new, learning), then the review queue, each line with id, namespace and
    label (new, learning, strong, fading, weak, contested), within --max-tokens.

    Example: vaultmem prompt --max-tokens 800
    """
    from vaultmem.clock import now as clock_now

    vault = _vault(vault_path)
    block = vault.prompt(max_tokens, namespace, core_only=core_only)
    _warn_problems(vault, out)
    out.emit(block.to_dict(clock_now(), vault.config), block.said(max_tokens))


DECAY_ROWS = 40  # notes `decay` lists; --json has them all


@cli.command()
@click.option("--days", type=Number(0), default=None,
              help="Mark stale what was untouched this many days (default: lifecycle.stale_after_days).")
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@click.option("--by", default="cli", hidden=True, help="Who runs it (schedule, session-start): kept with the stamp.")
@common
def decay(days, dry_run, by, out, vault_path):
    """Apply idle decay and the lifecycle: active -> stale -> archived.

    `vaultmem schedule install` runs it daily; the SessionStart hook runs it in
    the background when a day has passed since the last run.

    Example: vaultmem decay --dry-run
    """
    from vaultmem.ops.upkeep import record_run
    from vaultmem.timefmt import format_datetime

    vault = _vault(vault_path)
    steps = vault.decay(stale_after_days=days, dry_run=dry_run)
    _warn_problems(vault, out)  # (a note that does not read is not decayed either)
    if not dry_run:
        record_run(vault, by, len(steps))
    data = [{"id": s.note.id, "path": s.note.path, "archive": s.archive,
             "changes": {k: (format_datetime(v) if isinstance(v, datetime) else v) for k, v in s.changes.items()}}
            for s in steps]
    # Status changes first (what a person acts on), then the notes that only weakened; a weekly
    # decay of a big vault weakens thousands, which filled the terminal: DECAY_ROWS of them, then a count.
    ordered = sorted(steps, key=lambda s: (not s.archive, s.changes.get("status") != "stale", s.note.path))
    rows = [[s.note.id, f"{s.note.strength:.2f} -> {s.changes.get('strength', s.note.strength):.2f}",
             s.note.status + " -> " + s.changes.get("status", s.note.status), _short(s.note.title, 50)]
            for s in ordered[:DECAY_ROWS]]
    verb = "would change" if dry_run else "changed"
    archived = sum(s.archive for s in steps)
    stale = sum(s.changes.get("status") == "stale" for s in steps)
    human = f"{verb} {len(steps)} notes" + (f" ({archived} archived, {stale} stale, {len(steps) - archived - stale} "
                                            "weaker only)" if steps else "")
    human += ("\n" + _table(rows, ["ID", "STRENGTH", "STATUS", "TITLE"]) if rows else "")
    if len(steps) > DECAY_ROWS:
        human += f"\n... and {len(steps) - DECAY_ROWS} more (--json lists every change)"
    out.emit({"dry_run": dry_run, "changes": data}, human)


@cli.command()
@click.argument("note_id")
@common
def archive(note_id, out, vault_path):
    """Move a note to archive/ by hand (nothing is deleted; `restore` brings it back).

    Example: vaultmem archive k3f9x2ab
    """
    from vaultmem.clock import now as clock_now

    vault = _vault(vault_path)
    note = vault.archive(note_id)
    out.emit(_note_json(note, clock_now(), vault.config), f"archived {note.id} -> {note.path}")


@cli.command()
@click.argument("note_id")
@common
def restore(note_id, out, vault_path):
    """Bring back an archived note, or reactivate a suspended one.

    Example: vaultmem restore k3f9x2ab
    """
    from vaultmem.clock import now as clock_now

    vault = _vault(vault_path)
    note = vault.restore(note_id)
    out.emit(_note_json(note, clock_now(), vault.config), f"restored {note.id} -> {note.path} ({note.status})")


@cli.command()
@common
def health(out, vault_path):
    """Counts by status and tier, due and overdue, leeches, contested pairs, stale notes,
    changes not on the ledger, index freshness, the model, and the first thing to fix.
    Writes nothing (`doctor` is the same command).

    Example: vaultmem health --json
    """
    from vaultmem.clock import now as clock_now
    from vaultmem.core.health import health_report
    from vaultmem.search.engine import RecallEngine
    from vaultmem.service.client import watcher_status
    from vaultmem.store.catalog import NOTE_FOLDERS
    from vaultmem.store.files import kept_aside, leftover_temps, links_in, markdown_elsewhere

    vault = _vault(vault_path)
    status = RecallEngine(vault).status()
    catalog = vault.catalog()
    ledger_check = vault.verify(record=False)  # reads without the write lock if a stuck process holds it
    aside = [(note, f"a save made while vaultmem wrote it is kept beside it in {name}: copy what you need "
                    "from it into the note, then delete that file") for note, name in kept_aside(vault.root)]
    linked = [(path, "is a link to another folder, which vaultmem does not follow: the notes in it are not "
                     "seen; move them into a real folder of the vault" if is_folder else
               "is a link to a file, which vaultmem does not follow: the note is not seen; put the file itself "
               "here instead of a link") for path, is_folder in links_in(vault.root, NOTE_FOLDERS)]
    report = health_report(catalog.notes, [*catalog.problems, *aside, *linked], clock_now(), vault.config,
                           ledger_check, status)
    report["recall"] = status
    elsewhere = markdown_elsewhere(vault.root, NOTE_FOLDERS)
    if elsewhere:
        report["warnings"].append({"path": elsewhere[0], "warning": (
            f"{len(elsewhere)} markdown files outside memories/, skills/ and archive/ are no memories vaultmem "
            "sees (a person's notes of this Obsidian vault?); `vaultmem import FOLDER -n NAMESPACE` makes "
            "memories of those you want recalled")})
    report["indexes"] = status
    report["write_lock"] = ledger_check.get("write_lock")
    report["watcher"] = watcher = watcher_status(str(vault.root))
    report["leftover_temps"] = temps = [path.relative_to(vault.root).as_posix() for path in leftover_temps(vault.root)]
    lines = [f"vault: {vault.root}", f"notes: {report['notes']}",
             "status: " + ", ".join(f"{k} {v}" for k, v in report["by_status"].items()),
             "tier: " + ", ".join(f"{k} {v}" for k, v in report["by_tier"].items()),
             f"due: {report['due']} (overdue {report['overdue']})",
             f"leeches: {len(report['leeches'])}" + (f" ({', '.join(report['leeches'])})" if report["leeches"] else ""),
             f"contested pairs: {len(report['contested'])}"
             + (" (" + "; ".join(" vs ".join(p) for p in report["contested"][:5])
                + (f"; and {len(report['contested']) - 5} more: --json lists all" if len(report["contested"]) > 5
                   else "") + ")" if report["contested"] else "")]
    ledger = report["ledger"]
    lines.append(f"ledger: {len(ledger['breaks'])} breaks, {len(ledger['unrecorded'])} unrecorded changes, "
                 f"{ledger['untracked']} notes not yet recorded"
                 + (f", {len(ledger['torn'])} torn records (cut short by a crash)" if ledger["torn"] else ""))
    lines += [f"  tampering: {sign}" for sign in ledger["tampering"]]
    lines.append("model: " + (status["model"] or f"unavailable, recall is lexical only ({status['model_problem']})"))
    if status.get("crosslingual") or status.get("crosslingual_problem"):
        lines.append("cross-lingual: " + (f"{status['crosslingual']} answers queries not in English"
                                          if status["crosslingual"] else
                                          f"unavailable, queries not in English go to the English model "
                                          f"({status['crosslingual_problem']})"))
        if status.get("crosslingual_covered") is not None:
            covered, notes = status["crosslingual_covered"], status["crosslingual_notes"]
            lines[-1] += f"; its vectors cover {covered:,} of {notes:,} notes" + (
                "" if covered >= notes else " (`vaultmem watch` or `vaultmem reindex` embeds the rest)")
    stale = [f"{status['index_stale']} note changes not yet in the BM25 index"] if status["index_stale"] else []
    if status["embeddings_stale"]:
        stale.append(f"{status['embeddings_stale']} notes not yet embedded")
    lines.append("indexes: " + ("; ".join(stale) + " (the next recall or `vaultmem reindex` updates them)"
                                if stale else "current"))
    if watcher["problem"]:
        lines.append(f"watcher: ignored, recall runs in-process: {watcher['problem']}")
    else:
        lines.append(f"watcher: serving recall on {watcher['socket']}" if watcher["running"] else
                     "watcher: none (`vaultmem watch` keeps the model loaded for fast recall)")
    busy = report["write_lock"]
    if busy:
        lines.append(f"write lock: {busy['lock']} held by {busy['holder'] or 'another process'}; writes give "
                     f"up after {vault.write_lock().wait:.0f} s with exit {EXIT_LOCKED}; the ledger figures "
                     "were read without it")
    else:
        lines.append("write lock: free")
    if temps:
        lines.append(f"leftover temp files: {len(temps)}, left by writes that never finished (each note holds its "
                     f"old or new text, whole; the next `vaultmem decay` deletes them), e.g. {temps[0]}")
    if report["problems"]:
        lines.append(f"problems: {len(report['problems'])}")
        lines += [f"  {p['path']}: {p['problem']}" for p in report["problems"]]
    else:
        lines.append("problems: none" + (" with the notes (the ledger's are above)"
                                         if ledger["tampering"] or ledger["breaks"] else ""))
    if report["warnings"]:
        lines.append(f"warnings: {len(report['warnings'])}")
        lines += [f"  {w['path']}: {w['warning']}" for w in report["warnings"]]
    lines.append(f"fix first: {report['first'] or 'nothing, all is well'}")
    out.emit(dict(report, vault=str(vault.root)), "\n".join(lines))


cli.add_command(health, name="doctor")


@cli.command()
@common
def reindex(out, vault_path):
    """Rebuild every cache under .vaultmem/ from the notes.

    Example: vaultmem reindex
    """
    from vaultmem.cli.output import embedding_progress
    from vaultmem.search.engine import rebuild_indexes

    vault = _vault(vault_path)
    result = rebuild_indexes(vault, progress=None if out.quiet else embedding_progress())
    problems = vault.catalog().problems
    crosslingual = result["crosslingual_embedded"]
    out.emit(dict(result, problems=[{"path": p, "problem": m} for p, m in problems]),
             f"indexed {result['indexed']} notes, embedded {result['embedded']}"
             + (f", {crosslingual} for queries in other languages" if crosslingual is not None else "")
             + (f"; {len(problems)} files skipped (see `vaultmem health`)" if problems else ""))


from vaultmem.cli import agents, gitcmd, obsidian, schedule, seed, trust  # noqa: E402 - their commands join the group

for _command in (*agents.COMMANDS, *trust.COMMANDS, *seed.COMMANDS, *schedule.COMMANDS, *obsidian.COMMANDS,
                 *gitcmd.COMMANDS):
    cli.add_command(_command)
for _command in seed.aliases(cli):
    cli.add_command(_command)


def main(argv=None):
    """Console entry point."""
    try:
        cli.main(args=argv, prog_name="vaultmem", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_BAD_INPUT)
        sys.exit(code)


if __name__ == "__main__":
    main()
