"""Printing results: JSON for agents, small tables for people. Light to import
(no click): the recall fast path prints through it on every agent prompt."""

from __future__ import annotations

import json
import sys


def table(rows: list[list[str]], headers: list[str]) -> str:
    if not rows:
        return ""
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines)


def short(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def to_json(data) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2, default=str)


def warn_skipped(problems: list) -> None:
    """Say on stderr which notes were skipped, so a broken file is never silently ignored.
    `problems`: paths, or (path, problem) pairs; a merge conflict is named for each file."""
    pairs = [(item, "") if isinstance(item, str) else (item[0], item[1]) for item in problems]
    for path, problem in pairs:
        if problem.startswith("unresolved merge conflict"):
            print(f"vaultmem: warning: unresolved merge conflict in {path}; skipped until it is resolved "
                  "(`vaultmem health` says how)", file=sys.stderr)
    paths = [path for path, problem in pairs if not problem.startswith("unresolved merge conflict")]
    if paths:
        more = f" and {len(paths) - 1} more" if len(paths) > 1 else ""
        print(f"vaultmem: warning: skipped {paths[0]}{more} (unreadable); `vaultmem health` says how to fix",
              file=sys.stderr)


def coverage_line(coverage: dict) -> str:
    """One line on how many notes a query in another language could find by meaning."""
    rest = ("the watcher is embedding the rest" if coverage.get("filling") else
            "each such query embeds more; `vaultmem watch` embeds the rest in the background, "
            "`vaultmem reindex` all at once")
    return (f"vaultmem: cross-lingual vectors cover {coverage['covered']:,} of {coverage['notes']:,} notes so far "
            f"(the others were matched by their words only); {rest}")


def print_recall(hits: list[dict], problems: list[str], model_problem: str | None,
                 as_json: bool, quiet: bool, explain: bool, crosslingual_problem: str | None = None,
                 unembedded: int = 0, crosslingual_coverage: dict | None = None,
                 index_writer: str | None = None) -> None:
    """What `vaultmem recall` prints, whoever computed the hits (watcher or in-process).
    `crosslingual_problem`: why a query in another language was answered by the English model;
    `unembedded`: notes not embedded yet (a vault's first use, or `index_writer`, the process
    that held the index lock, kept them from being embedded now);
    `crosslingual_coverage`: how many notes a query in another language could find by meaning,
    when not all."""
    if quiet:
        return
    warn_skipped(problems)
    if model_problem:
        print(f"vaultmem: warning: recall is lexical only: {model_problem}", file=sys.stderr)
    elif unembedded:
        why = f"{index_writer} is writing the indexes" if index_writer else "the watcher is embedding them"
        print(f"vaultmem: {unembedded:,} notes are not embedded yet ({why}): "
              "until then they are found by their words only", file=sys.stderr)
    elif crosslingual_problem:
        print(f"vaultmem: warning: answered by the English model, cross-lingual recall is unavailable: "
              f"{crosslingual_problem}", file=sys.stderr)
    elif crosslingual_coverage:
        print(coverage_line(crosslingual_coverage), file=sys.stderr)
    if as_json:
        print(to_json(hits))
        return
    rows = [[h["id"], f"{h['score']:.4f}", h["namespace"], h["label"], short(h["summary"], 70)] for h in hits]
    text = table(rows, ["ID", "SCORE", "NAMESPACE", "LABEL", "TEXT"]) or "no matching memories"
    if explain and hits:
        text += "\n\n" + "\n".join(f"{h['id']}: " + ", ".join(f"{k}={v}" for k, v in h["signals"].items())
                                   for h in hits)
    if hits and not sys.stdout.isatty():
        # Read by an agent (a hook, a Bash tool) more often than by a person: memory
        # text framed as data, as in `prompt` and the hooks (core/fence.py).
        from vaultmem.core.fence import fence

        text = fence(text).rstrip("\n")
    print(text)


PROGRESS_FROM = 500  # texts through the model: fewer take seconds, not worth a line


def embedding_progress(stream=None):
    """A `progress(done, total)` for a sync's run of the model (RecallEngine.progress): a
    vault's first embedding takes minutes without a watcher (10k notes: about 3 on 2 cores),
    and a command silent that long looks hung. On a terminal, a counter updated in place;
    elsewhere (a log), one line when it starts. Nothing under PROGRESS_FROM texts."""
    stream = stream or sys.stderr
    live = stream.isatty()

    def progress(done: int, total: int) -> None:
        if total < PROGRESS_FROM:
            return
        if done == 0:
            stream.write(f"vaultmem: embedding {total:,} notes once (kept for later; `vaultmem watch` "
                         "does this in the background)" + ("" if live else "\n"))
        elif live:
            stream.write(f"\rvaultmem: embedding notes: {done:,} of {total:,}" + ("\n" if done >= total else ""))
        stream.flush()

    return progress
