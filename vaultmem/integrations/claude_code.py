"""Claude Code hooks: the runner Claude Code calls, and what each event does.

`vaultmem hook EVENT` runs one of these (claude_settings.py puts them in a
settings file, each as `<this python> -m vaultmem hook EVENT`):

    SessionStart       review + prompt block as additional context
    UserPromptSubmit   recall on the prompt: the few relevant memories, with ids
    PreToolUse (Bash)  deny invented vaultmem flags, namespace-less adds and "[tag] text" adds, with
                       the right syntax (the check is cli/command_check.py, handed in by the CLI as `check`)
    PreToolUse (Write, Edit, MultiEdit)  deny writes to Claude Code's own MEMORY.md, pointing at `vaultmem add`
    Stop, SessionEnd   capture what the user asked to remember, corrections, preferences
                       and lessons from the transcript (capture.py) as L0/L1 memories
                       (how far each transcript was read: `.vaultmem/hooks/capture/`)

Every hook fails open: an exception, a broken vault, a missing model or a
hook over its time budget prints nothing and exits 0 (one line goes to
`.vaultmem/hooks/hooks.log` in the vault when there is one). The only
deliberate refusal is PreToolUse's deny, sent as JSON with exit 0.
`VAULTMEM_HOOKS=off` disables every hook; `VAULTMEM_HOOK_SESSION_START`,
`VAULTMEM_HOOK_USER_PROMPT`, `VAULTMEM_HOOK_STOP` (Stop and SessionEnd) and
`VAULTMEM_HOOK_PRE_TOOL` set to `off` disable one.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from vaultmem.ops.provenance import default_namespace

HOOK_THREAD = "vaultmem-hook"
MAX_CONTEXT_CHARS = 8000  # Claude Code cuts additionalContext at ~10,000 characters
PROMPT_TOKENS = 1400
REVIEW_LIMIT = 8
RECALL_K = 4
# A hit injected beside a better one scores at least this share of the best: the rest are
# the trailing near-misses of a prompt that found its answer ("kubernetes" brought "Our
# deploys happen on Tuesdays" at 0.11). On LoCoMo's six conversations no answer ranked 2nd to
# 5th scored under 0.3 of the first (386 of them; 2.3% under 0.4), 2.5% of the other hits did.
RECALL_SHARE_OF_BEST = 0.3
RECALL_LINE_CHARS = 300
# Texts a prompt's in-process recall (no watcher) may embed: a vault with thousands of notes not
# embedded yet (its first use) is then answered within the hook's budget, those notes by their
# words, and each prompt embeds a few more (a hook over its budget keeps what it wrote).
HOOK_EMBED_TEXTS = 32
HOOK_COMMIT_EVERY = 1000  # notes per BM25 commit: a vault's first index is kept chunk by chunk
WATCH_IDLE_EXIT = 2 * 3600  # seconds without a request before an auto-started watcher exits
OFF_VALUES = {"off", "0", "false", "no", "disable", "disabled"}

# PreToolUse's judge: (Bash command, working folder) -> a reason to deny, or None to allow.
# The CLI passes its own (cli/command_check.py, via cli.entry.check_bash); this module never imports the CLI.
CommandCheck = Callable[..., str | None]  # (command, cwd, prefix=how the agent calls vaultmem)


@dataclass(frozen=True)
class HookSpec:
    event: str  # Claude Code's event name
    name: str  # the argument of `vaultmem hook`
    matcher: str | None  # tool-name matcher (PreToolUse only)
    timeout: int  # seconds Claude Code waits before killing the command
    budget: float  # seconds vaultmem allows itself; past it, output nothing
    switch: str  # environment variable that turns this hook off


HOOKS = (
    HookSpec("SessionStart", "session-start", None, 15, 5.0, "VAULTMEM_HOOK_SESSION_START"),
    HookSpec("UserPromptSubmit", "user-prompt-submit", None, 10, 3.0, "VAULTMEM_HOOK_USER_PROMPT"),
    HookSpec("PreToolUse", "pre-tool-use", "Bash|Write|Edit|MultiEdit", 10, 2.0, "VAULTMEM_HOOK_PRE_TOOL"),
    HookSpec("Stop", "stop", None, 30, 15.0, "VAULTMEM_HOOK_STOP"),
    HookSpec("SessionEnd", "session-end", None, 30, 15.0, "VAULTMEM_HOOK_STOP"),
)
HOOK_NAMES = tuple(spec.name for spec in HOOKS)
# Flags `vaultmem hook EVENT` takes (written by `hooks install`): `--core-only` makes SessionStart
# inject only the core memories (L2, L3), not the learning and review queues of L0/L1 notes.
CORE_ONLY = "--core-only"
HOOK_OPTIONS = (CORE_ONLY,)


def spec_for(event: str) -> HookSpec | None:
    """The hook for `session-start`, `SessionStart`, `session_start`... or None."""
    key = re.sub(r"[^a-z]", "", (event or "").lower())
    for spec in HOOKS:
        if key in (spec.name.replace("-", ""), spec.event.lower()):
            return spec
    return None


# ---------------------------------------------------------------- the runner

class _Run:
    """What one hook invocation knows: its input, environment, and the vault once opened."""

    def __init__(self, spec: HookSpec, payload: dict, env: Mapping[str, str], vault_path: str | None,
                 check: CommandCheck | None = None, options: frozenset[str] = frozenset()):
        self.spec = spec
        self.options = options  # flags of the hook's command line (HOOK_OPTIONS)
        self.payload = payload
        self.env = env
        self.vault_path = vault_path
        self.check = check
        self.root: Path | None = None

    @property
    def cwd(self) -> str | None:
        cwd = self.payload.get("cwd")
        return cwd if isinstance(cwd, str) and os.path.isdir(cwd) else None

    def vault(self):
        """The vault: --vault, $VAULTMEM_VAULT, the session folder's, or the default one (made on first use)."""
        from vaultmem.store.discovery import default_vault_path, discover_root
        from vaultmem.vault import Vault

        root = discover_root(self.vault_path, cwd=self.cwd)
        is_default = not self.vault_path and not os.environ.get("VAULTMEM_VAULT") and root == str(default_vault_path())
        vault = Vault.open(root, create=is_default)
        self.root = vault.root
        return vault

    def log(self, message: str) -> None:
        """One line in `.vaultmem/hooks/hooks.log` of the vault, when there is one. Never raises."""
        try:
            root = self.root
            if root is None:
                from vaultmem.store.discovery import STATE_DIR, discover_root

                found = discover_root(self.vault_path, cwd=self.cwd)
                if not os.path.isdir(os.path.join(found, STATE_DIR)):
                    return
                root = Path(found)
            folder = hooks_dir(root)
            path = folder / "hooks.log"
            if path.exists() and path.stat().st_size > 1_000_000:
                os.replace(path, folder / "hooks.log.1")
            from vaultmem import clock

            stamp = clock.format_datetime(clock.now())
            line = " ".join(message.split())[:2000]
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(f"{stamp} {self.spec.name}: {line}\n")
        except Exception:  # noqa: BLE001,S110 - logging must never cost the session
            pass


def hooks_dir(root: Path) -> Path:
    """`.vaultmem/hooks/` of a vault: the hooks' log and capture state, ignored by git."""
    from vaultmem.store.discovery import STATE_DIR

    folder = Path(root) / STATE_DIR / "hooks"
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# vaultmem hooks: log and capture state, local to this machine\n*\n", encoding="utf-8")
    return folder


def is_disabled(spec: HookSpec, env: Mapping[str, str]) -> bool:
    return any((env.get(name) or "").strip().lower() in OFF_VALUES for name in ("VAULTMEM_HOOKS", spec.switch))


def _budget(spec: HookSpec, env: Mapping[str, str]) -> float:
    try:
        value = float(env.get("VAULTMEM_HOOK_BUDGET") or spec.budget)
    except ValueError:
        return spec.budget
    return value if value > 0 else spec.budget


def run_hook(event: str, stdin_text: str, env: Mapping[str, str] | None = None,
             vault_path: str | None = None, check: CommandCheck | None = None,
             options: frozenset[str] = frozenset()) -> tuple[str, int]:
    """Run one hook on the JSON Claude Code sent; returns (stdout text, exit code).

    `event` is `session-start`, `SessionStart`...; empty: the input's `hook_event_name`.
    `check` judges PreToolUse's Bash commands (without one, PreToolUse allows everything).

    Never raises and always exits 0: a failure, or running past the time
    budget, gives ('', 0) and a line in the vault's hooks log. The work runs
    in a daemon thread named `vaultmem-hook`; on a timeout it is abandoned, so
    a process running this should exit promptly (`os._exit`) afterwards.
    """
    env = os.environ if env is None else env
    try:
        try:
            payload = json.loads(stdin_text) if stdin_text and stdin_text.strip() else {}
        except ValueError:
            payload = {}
        payload = payload if isinstance(payload, dict) else {}
        spec = spec_for(event or str(payload.get("hook_event_name") or ""))
        if spec is None or is_disabled(spec, env):
            return "", 0
        run = _Run(spec, payload, env, vault_path, check, frozenset(options))
        budget = _budget(spec, env)
        box: dict = {}

        def work():
            sink = io.StringIO()
            try:
                with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                    box["result"] = HANDLERS[spec.name](run)
            except BaseException as exc:  # noqa: BLE001 - fail open, whatever it was
                box["error"] = f"{type(exc).__name__}: {exc}"
                box["trace"] = traceback.format_exc()
            if sink.getvalue().strip():
                run.log("output: " + sink.getvalue().strip()[:500])

        worker = threading.Thread(target=work, name=HOOK_THREAD, daemon=True)
        started = time.monotonic()
        worker.start()
        worker.join(budget)
        if worker.is_alive():
            run.log(f"gave up after {budget:g} s (over budget); nothing was sent to Claude Code")
            return "", 0
        if "error" in box:
            run.log(f"failed after {time.monotonic() - started:.2f} s: {box['error']}")
            if env.get("VAULTMEM_DEBUG"):
                sys.stderr.write(box["trace"])
            return "", 0
        result = box.get("result")
        if not result:
            return "", 0
        return (json.dumps(result, ensure_ascii=False) if isinstance(result, dict) else str(result)), 0
    except BaseException:  # noqa: BLE001 - the promise is: never cost the session
        return "", 0


def main(event: str, vault_path: str | None = None, check: CommandCheck | None = None,
         options: frozenset[str] = frozenset()) -> None:
    """A hook process: the JSON on stdin, `run_hook`, what Claude Code reads on stdout, exit.

    Called by `vaultmem hook` (and by the console script's fast path, which
    skips click: a hook runs on every prompt and every Bash call). A PreToolUse
    call that does not mention vaultmem is answered before anything else loads.
    """
    try:
        data = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.buffer.read().decode("utf-8", "replace")
    except (OSError, ValueError, AttributeError):
        data = ""
    if _is_pre_tool_use(event, data) and "vaultmem" not in data and "memory.md" not in data.lower():
        sys.exit(0)
    text, code = run_hook(event, data, vault_path=vault_path, check=check, options=options)
    if text:
        sys.stdout.write(text + "\n")
    sys.stdout.flush()
    if abandoned_worker():
        os._exit(code)  # the work outlived its budget: do not wait for it
    sys.exit(code)


def _is_pre_tool_use(event: str, data: str) -> bool:
    if event:
        return event.replace("_", "-").lower() in ("pre-tool-use", "pretooluse")
    return '"PreToolUse"' in data


def abandoned_worker() -> bool:
    """True when a hook's work outlived its budget and is still running in this process."""
    return any(t.name == HOOK_THREAD and t.is_alive() for t in threading.enumerate())


def context_output(event: str, text: str) -> dict:
    """The JSON Claude Code reads as additional context (a bare additionalContext is ignored)."""
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}


def _clip(text: str, limit: int = MAX_CONTEXT_CHARS) -> str:
    """At most `limit` characters, cut at a line end."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    return text[: cut if cut > 0 else limit].rstrip() + "\n"


def _one_line(text: str, limit: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------- SessionStart

USAGE_HINT = ('vaultmem: look things up with `vaultmem recall "QUERY" -k 5`; save a durable fact with '
              '`vaultmem add "TEXT" -n NAMESPACE`; after using a memory, `vaultmem grade ID good` '
              '(it helped) or `vaultmem grade ID again` (it was wrong).')


def agent_command(run: _Run) -> str:
    """How the agent should call vaultmem from its shell to reach this session's vault: `vaultmem`
    when its PATH has it (else this Python's `-m vaultmem`, as the hooks themselves are run), with
    `--vault` when the hooks name a vault (without it, the agent's commands would write to
    $VAULTMEM_VAULT, the folder's vault or the default one, where nothing reads them back)."""
    import shlex
    import shutil

    command = "vaultmem" if shutil.which("vaultmem", path=run.env.get("PATH")) else \
        f"{shlex.quote(sys.executable)} -m vaultmem"
    if run.vault_path:
        command += f" --vault {shlex.quote(str(run.root or Path(run.vault_path).expanduser()))}"
    return command


def for_agent(run: _Run, text: str) -> str:
    """`text` with its `vaultmem` commands written as the agent must type them (agent_command)."""
    command = agent_command(run)
    return text if command == "vaultmem" else _COMMAND_WORD.sub(command + " ", text)


_COMMAND_WORD = re.compile(r"(?<![\w/-])vaultmem (?=(?:add|recall|grade|correct|learn|show)\b)")


DUE_HEADING = "## Due for review (when one comes up, check it: grade good if it holds, again if it is wrong)"


def session_start(run: _Run) -> dict:
    """The prompt block and the memories due for review, framed together as one block of data.
    With --core-only, only L2 and L3 memories (both in the block and among those due).
    Also starts, in the background, the watcher and a daily decay that is due."""
    from vaultmem.core.prompt import HEADER

    vault = run.vault()
    core_only = CORE_ONLY in run.options
    block = vault.prompt(max_tokens=PROMPT_TOKENS, core_only=core_only)
    shown = {line.note.id for line in block.lines}
    due = [n for n in vault.review(limit=REVIEW_LIMIT + len(shown) + (50 if core_only else 0))
           if n.id not in shown and (not core_only or n.tier in ("L2", "L3"))][:REVIEW_LIMIT]
    inside = []
    if due:
        inside += [DUE_HEADING] + [f"- [{n.id}] ({n.namespace}, {n.tier}) {_one_line(n.summary, 200)}" for n in due]
    if block.body:
        inside.append(block.body)
    start_watcher(vault.root, run.env)
    start_decay(vault, run.env)
    hint = for_agent(run, USAGE_HINT)
    if not inside:
        return context_output("SessionStart", f"vaultmem: no memories yet in this vault.\n\n{hint}\n")
    return context_output("SessionStart", _framed(for_agent(run, HEADER), "\n".join(inside), hint))


def _framed(before: str, inside: str, after: str) -> str:
    """`before`, the memory lines as one block of data (fence.py), `after`: within MAX_CONTEXT_CHARS,
    cut inside the block (at a line end) so the closing marker always survives."""
    from vaultmem.core.fence import OVERHEAD, fence, neutralize

    room = MAX_CONTEXT_CHARS - len(before) - len(after) - OVERHEAD - 4
    return f"{before}\n{fence(_clip(neutralize(inside), room))}{after}\n"


def start_watcher(root: Path, env: Mapping[str, str]) -> bool:
    """Start `vaultmem watch` for this vault in the background if none serves it.

    Recall on every prompt then costs a socket round trip instead of loading
    the model (about 0.15 s instead of 1-1.5 s at 10k notes). The watcher
    exits after WATCH_IDLE_EXIT seconds without a request, so sessions that
    ended leave nothing running. `VAULTMEM_AUTOWATCH=off` (or
    `VAULTMEM_NO_SERVER`) keeps it from starting.
    """
    import subprocess

    from vaultmem.service.client import ask

    if str(env.get("VAULTMEM_AUTOWATCH", "")).strip().lower() in OFF_VALUES or env.get("VAULTMEM_NO_SERVER"):
        return False
    if ask(str(root), {"op": "ping"}, timeout=0.5) is not None:
        return False
    with open(hooks_dir(root) / "watch.log", "ab") as log:
        subprocess.Popen([sys.executable, "-m", "vaultmem", "--vault", str(root), "watch", "--idle-exit",
                          str(WATCH_IDLE_EXIT)], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                         start_new_session=True, env=dict(env), close_fds=True)
    return True


def start_decay(vault, env: Mapping[str, str]) -> bool:
    """Start `vaultmem decay` in the background when a day has passed since the last one
    (ops/upkeep.py), so a vault with no scheduler still fades, stales and archives as it is
    used. The hook only claims the day and spawns the process: the decay itself is not in
    the hook's time budget. `VAULTMEM_AUTODECAY=off` keeps it from starting."""
    import subprocess

    from vaultmem.ops.upkeep import claim_if_due

    if str(env.get("VAULTMEM_AUTODECAY", "")).strip().lower() in OFF_VALUES or not claim_if_due(vault):
        return False
    with open(hooks_dir(vault.root) / "decay.log", "ab") as log:
        subprocess.Popen([sys.executable, "-m", "vaultmem", "--vault", str(vault.root), "decay", "-q",
                          "--by", "session-start"], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                         start_new_session=True, env=dict(env), close_fds=True)
    return True


# ---------------------------------------------------------------- UserPromptSubmit

def user_prompt_submit(run: _Run) -> dict | None:
    prompt = run.payload.get("prompt")
    if not isinstance(prompt, str) or len(prompt.strip()) < 3 or prompt.lstrip().startswith("/"):
        return None
    lines = []
    for query in prompt_queries(prompt):
        lines += [line for line in _recall_lines(run, query) if line not in lines]
    lines = lines[:RECALL_K]
    if not lines:
        return None
    return context_output("UserPromptSubmit", _framed(
        "Memories from vaultmem that may bear on this prompt (id, namespace, label):", "\n".join(lines),
        for_agent(run, "If you use one, grade it: vaultmem grade ID good (it helped) or vaultmem grade ID again "
                       "(it was wrong).")))


PROMPT_CHARS = 1000  # a prompt this long is read whole
PROMPT_PART_CHARS = 500  # of a longer one: its first and last paragraphs (or lines), each cut to this


def prompt_queries(prompt: str) -> list[str]:
    """What recall reads of a prompt: all of it; of a long one, its last and its first paragraph
    (or line, when it has no blank line; of a long paragraph, a paste, its last or first line),
    each on its own: a question typed after a pasted log is at the end, one typed before it at
    the start. The first 1,000 characters alone missed the question after a paste, and a
    question read together with the log around it found nothing relevant."""
    text = prompt.strip()
    if len(text) <= PROMPT_CHARS:
        return [text]
    parts = [part.strip() for part in re.split(r"\n\s*\n", text) if part.strip()]
    if len(parts) < 2:
        parts = [line.strip() for line in text.splitlines() if line.strip()]
    if len(parts) < 2:
        return [text[:PROMPT_CHARS]]
    first, last = parts[0], parts[-1]
    if len(first) > PROMPT_PART_CHARS:
        first = first.splitlines()[0][:PROMPT_PART_CHARS]
    if len(last) > PROMPT_PART_CHARS:
        last = last.splitlines()[-1][-PROMPT_PART_CHARS:]
    return [last, first] if first != last else [last]


def _recall_lines(run: _Run, query: str) -> list[str]:
    """Recall through the vault's watcher when one runs (no model load), else in-process."""
    from vaultmem.service.client import ask_watcher
    from vaultmem.store.discovery import discover_root

    answer = ask_watcher(discover_root(run.vault_path, cwd=run.cwd), query, RECALL_K)
    if answer is not None:
        hits = answer.get("hits", [])
        return [f"- [{h['id']}] ({h['namespace']}, {h.get('label', '')}) "
                f"{_one_line(h.get('summary') or h.get('text', ''), RECALL_LINE_CHARS)}"
                for h in _near_the_best(hits, [h.get("score", 0.0) for h in hits])]
    from vaultmem.search.engine import RecallEngine

    # This prompt's engine, not the process's shared one: bounded, and kept chunk by chunk.
    engine = RecallEngine(run.vault(), embed_limit=HOOK_EMBED_TEXTS, commit_every=HOOK_COMMIT_EVERY)
    hits = engine.recall(query, RECALL_K)
    return [f"- [{h.note.id}] ({h.note.namespace}, {h.label}) {_one_line(h.note.summary, RECALL_LINE_CHARS)}"
            for h in _near_the_best(hits, [h.score for h in hits])]


def _near_the_best(hits: list, scores: list[float]) -> list:
    """The hits (best first) scoring at least RECALL_SHARE_OF_BEST of the best one."""
    if not hits:
        return []
    return [hit for hit, score in zip(hits, scores) if score >= RECALL_SHARE_OF_BEST * scores[0]]


# ---------------------------------------------------------------- PreToolUse

FILE_TOOLS = ("Write", "Edit", "MultiEdit")
MEMORY_FILE_REASON = (
    "Memories here are kept in vaultmem, not in Claude Code's MEMORY.md (a note written there is never "
    "recalled, graded or pruned). Save each fact with: vaultmem add \"TEXT\" -n {namespace} [--tags a,b] "
    "(one fact per call; --explicit when the user asked to remember it). Find them with: vaultmem recall \"QUERY\".")


def is_claude_memory_file(file_path: str, env: Mapping[str, str]) -> bool:
    """Claude Code's own memory file: a MEMORY.md under a `.claude` folder or `$CLAUDE_CONFIG_DIR`
    (its auto memory, `~/.claude/projects/<project>/memory/MEMORY.md`)."""
    path = Path(os.path.expanduser(file_path))
    if path.name.lower() != "memory.md":
        return False
    if ".claude" in path.parts:
        return True
    config = env.get("CLAUDE_CONFIG_DIR")
    return bool(config) and Path(os.path.expanduser(config)) in path.parents


def pre_tool_use(run: _Run) -> dict | None:
    tool = run.payload.get("tool_name")
    tool_input = run.payload.get("tool_input")
    if tool in FILE_TOOLS:
        file_path = tool_input.get("file_path") if isinstance(tool_input, dict) else None
        if not isinstance(file_path, str) or not is_claude_memory_file(file_path, run.env):
            return None
        return _deny(for_agent(run, MEMORY_FILE_REASON.format(namespace=default_namespace(cwd=run.cwd, env=run.env))))
    if tool != "Bash":
        return None
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str) or "vaultmem" not in command or run.check is None:
        return None
    reason = run.check(command, run.cwd, prefix=agent_command(run))
    if reason is None:
        return None
    return _deny(reason)


def _deny(reason: str) -> dict:
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": reason}}


# ---------------------------------------------------------------- Stop / SessionEnd

def capture(run: _Run) -> None:
    """Add what the new part of the transcript holds worth remembering; nothing is printed."""
    from filelock import FileLock

    from vaultmem.core.capture import CAPTURED_TAG, observations
    from vaultmem.errors import VaultmemError
    from vaultmem.ops.provenance import current_project, portable_path

    transcript = run.payload.get("transcript_path")
    if not isinstance(transcript, str) or not transcript.strip():
        return
    transcript_path = Path(transcript).expanduser()
    if not transcript_path.is_file():
        return
    vault = run.vault()
    session = str(run.payload.get("session_id") or "").strip()
    state_path = hooks_dir(vault.root) / "capture" / f"{_safe_name(session or str(transcript_path))}.json"
    state_path.parent.mkdir(parents=True, exist_ok=True)
    namespace = default_namespace(cwd=run.cwd, env=run.env)
    project = current_project(cwd=run.cwd)
    where = portable_path(transcript_path, cwd=run.cwd, home=run.env.get("HOME"))  # no user name in the vault
    seen_path = state_path.parent / "seen-messages.txt"
    with FileLock(str(state_path) + ".lock", timeout=_budget(run.spec, run.env)):
        start = _read_state(state_path, transcript_path)
        entries, end = _read_new_lines(transcript_path, start)
        found = observations([entry for _line, entry, _end in entries])
        by_index: dict[int, list] = {}
        for item in found:
            by_index.setdefault(item.message_index, []).append(item)
        seen = _seen_messages(seen_path) if by_index else set()
        for index, (line_no, entry, after) in enumerate(entries):
            if index not in by_index:
                continue
            uuid = entry.get("uuid") if isinstance(entry.get("uuid"), str) else None
            if uuid in seen:
                continue  # the same message in a resumed or forked session's transcript
            for item in by_index[index]:
                try:
                    vault.add(item.text, namespace, tags=(CAPTURED_TAG, item.kind),
                              source=f"{where}#L{line_no}", tier=item.tier, session=session or None,
                              project=project or None, explicit=item.kind == "explicit", redact=True)
                except VaultmemError as exc:
                    run.log(f"not captured (line {line_no}): {exc}")
            if uuid:
                with open(seen_path, "a", encoding="utf-8") as handle:
                    handle.write(uuid + "\n")
            _write_state(state_path, transcript_path, after)  # a timeout after this line keeps it captured once
        if end != start:
            _write_state(state_path, transcript_path, end)


def _seen_messages(path: Path) -> set[str]:
    """Ids (`uuid`) of transcript messages already captured, in any session."""
    try:
        return set(path.read_text(encoding="utf-8").split())
    except OSError:
        return set()


def _safe_name(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.")
    if len(name) > 100 or not name:
        import hashlib

        name = hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
    return name


def _read_state(path: Path, transcript: Path) -> tuple[int, int]:
    """(byte offset, line number) already read of this transcript; (0, 0) when new or it shrank."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        offset, line = int(data["offset"]), int(data["line"])
        if data.get("transcript") != str(transcript) or offset > transcript.stat().st_size:
            return 0, 0
        return offset, line
    except (OSError, ValueError, KeyError, TypeError):
        return 0, 0


def _write_state(path: Path, transcript: Path, position: tuple[int, int]) -> None:
    from vaultmem.store.files import atomic_write

    offset, line = position
    atomic_write(path, json.dumps({"transcript": str(transcript), "offset": offset, "line": line}) + "\n")


def _read_new_lines(transcript: Path, start: tuple[int, int]) -> tuple[list[tuple[int, dict, tuple[int, int]]],
                                                                      tuple[int, int]]:
    """The complete JSONL lines after `start`: [(line number, entry, position after it)], and the
    position after the last complete line. A last line without its newline is still being
    written: it is left for the next run."""
    offset, line_no = start
    with open(transcript, "rb") as handle:
        handle.seek(offset)
        data = handle.read()
    entries = []
    for raw in data.splitlines(keepends=True):
        if not raw.endswith(b"\n"):
            break
        offset += len(raw)
        line_no += 1
        try:
            entry = json.loads(raw.decode("utf-8", errors="replace"))
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append((line_no, entry, (offset, line_no)))
    return entries, (offset, line_no)


HANDLERS: dict[str, Callable[[_Run], object]] = {
    "session-start": session_start,
    "user-prompt-submit": user_prompt_submit,
    "pre-tool-use": pre_tool_use,
    "stop": capture,
    "session-end": capture,
}
