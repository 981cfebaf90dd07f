"""A vault kept in git: the merge drivers, their set-up, and `sync`.

`vaultmem git install` writes `.gitattributes` in the vault (which files take which
driver: committed, so every clone agrees) and the drivers' commands in the
repository's `.git/config` (local to each machine, as git requires). git then runs

    python -m vaultmem.integrations.gitvault note|log|ledger %O %A %B %P

for each file both sides changed: %O the ancestor, %A ours (the result goes there),
%B theirs, %P its path. A driver reads three files and writes one: no catalog, no
model, no watcher, no lock (git holds the repository). It exits 0 when it merged,
1 when it left conflict markers (a true body conflict), so git reports the file.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from vaultmem.errors import BadInput, VaultmemError

DRIVERS = {
    "vaultmem-note": ("note", "vaultmem: notes, property by property"),
    "vaultmem-log": ("log", "vaultmem: review and archive logs, union by time"),
    "vaultmem-ledger": ("ledger", "vaultmem: the ledger, both branches then a merge record"),
}
ATTRIBUTES = (
    ("memories/**/*.md", "vaultmem-note"),
    ("skills/**/*.md", "vaultmem-note"),
    ("archive/**/*.md", "vaultmem-note"),
    (".vaultmem/reviews.jsonl", "vaultmem-log"),
    (".vaultmem/archive.jsonl", "vaultmem-log"),
    (".vaultmem/ledger.jsonl", "vaultmem-ledger"),
)
_BEGIN, _END = "# vaultmem merge drivers (vaultmem git install)", "# end vaultmem"
LOG_TIME_KEYS = {"reviews.jsonl": "review_datetime", "archive.jsonl": "time"}


class GitError(VaultmemError):
    """git is missing, the vault is not in a repository, or a git command failed."""


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    except FileNotFoundError:
        raise GitError("git is not installed (or not on PATH); install it to keep the vault in git") from None
    if check and done.returncode != 0:
        message = (done.stderr or done.stdout).strip().splitlines()
        raise GitError(f"git {' '.join(args)} failed: {message[-1] if message else f'exit {done.returncode}'}")
    return done


def repository_of(root: Path) -> Path | None:
    """The top of the git work tree holding `root`, or None."""
    try:
        done = git(root, "rev-parse", "--show-toplevel", check=False)
    except GitError:
        return None
    return Path(done.stdout.strip()).resolve() if done.returncode == 0 else None


def driver_command(kind: str) -> str:
    """The command git runs for a driver: this Python, so it works without vaultmem on PATH."""
    return f"'{sys.executable}' -m vaultmem.integrations.gitvault {kind} %O %A %B %P"


# ---------------------------------------------------------------- set-up

@dataclass(frozen=True)
class Setup:
    repository: str | None
    attributes: bool  # .gitattributes in the vault names every driver
    drivers: dict[str, bool]  # driver name -> configured with this vaultmem's command
    effective: bool  # git reports the ledger's merge attribute as vaultmem's, and the drivers are defined

    @property
    def installed(self) -> bool:
        return bool(self.repository) and self.attributes and all(self.drivers.values()) and self.effective

    def as_dict(self) -> dict:
        return {"repository": self.repository, "attributes": self.attributes, "drivers": self.drivers,
                "effective": self.effective, "installed": self.installed}


def status(root: Path) -> Setup:
    """What is set up for merging this vault in git."""
    repo = repository_of(root)
    if repo is None:
        return Setup(None, False, {name: False for name in DRIVERS}, False)
    attributes = _attribute_lines() in _read(root / ".gitattributes")
    drivers = {}
    for name, (kind, _label) in DRIVERS.items():
        done = git(root, "config", "--get", f"merge.{name}.driver", check=False)
        drivers[name] = done.returncode == 0 and done.stdout.strip() == driver_command(kind)
    check = git(root, "check-attr", "merge", "--", ".vaultmem/ledger.jsonl", check=False)
    # Without a driver defined git falls back to its plain text merge: the attribute alone is not in effect.
    effective = check.stdout.strip().endswith(": vaultmem-ledger") and all(drivers.values())
    return Setup(str(repo), attributes, drivers, effective)


def install(root: Path) -> list[str]:
    """Write the vault's `.gitattributes` block and the drivers' config; returns what changed
    (nothing the second time)."""
    if repository_of(root) is None:
        raise GitError(f"{root} is not inside a git repository; run `git init` there first")
    changed = []
    path = root / ".gitattributes"
    text = _read(path)
    block = _attribute_lines()
    if block not in text:
        if _BEGIN in text and _END in text:  # an older block: replaced, the person's lines around it kept
            start, end = text.index(_BEGIN), text.index(_END) + len(_END) + 1
            text = text[:start] + text[end:]
        sep = "" if not text or text.endswith("\n") else "\n"
        from vaultmem.store.files import atomic_write

        atomic_write(path, text + sep + block)
        changed.append(".gitattributes")
    for name, (kind, label) in DRIVERS.items():
        for key, value in (("name", label), ("driver", driver_command(kind))):
            current = git(root, "config", "--get", f"merge.{name}.{key}", check=False).stdout.strip()
            if current != value:
                git(root, "config", f"merge.{name}.{key}", value)
                changed.append(f"merge.{name}.{key}")
    return changed


def _attribute_lines() -> str:
    body = "".join(f"{pattern} merge={driver}\n" for pattern, driver in ATTRIBUTES)
    return f"{_BEGIN}\n{body}{_END}\n"


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


# ---------------------------------------------------------------- sync

def unmerged_paths(root: Path) -> list[str]:
    return [line for line in git(root, "diff", "--name-only", "--diff-filter=U").stdout.splitlines() if line]


def sync(vault, message: str) -> dict:
    """Record hand edits (`verify`), commit the vault's changes, pull (a merge, with the
    drivers), push.

    Refuses with unmerged paths (a merge a person has not finished), once it has settled
    those it can (a note moved on one side, two notes given one name): after a plain `git
    pull` that stopped on those alone, sync finishes the merge. A pull that stops on a true
    conflict leaves it for the person, named, and pushes nothing.
    """
    root = vault.root
    setup = status(root)
    if not setup.repository:
        raise GitError(f"{root} is not inside a git repository; `git init` it and add a remote first")
    unmerged = unmerged_paths(root)
    if unmerged and (resolve_moves(root) + split_name_collisions(root)):  # a plain `git pull` stopped on them
        unmerged = unmerged_paths(root)
        if not unmerged:
            git(root, "commit", "-q", "--no-edit")
    if unmerged:
        raise BadInput(f"unmerged paths: {', '.join(unmerged)}; resolve them (edit, then `git add`), "
                       "`git commit`, then sync again")
    upstream = git(root, "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}", check=False)
    if upstream.returncode != 0:  # before anything is recorded or committed: a sync that cannot share changes nothing
        raise GitError("the current branch has no upstream; set one with "
                       "`git push -u REMOTE BRANCH` once, then sync again")
    if not setup.installed:
        install(root)
    checked = vault.verify()  # hand edits go on the ledger before they are shared
    ledger = {"recorded": checked["recorded"], "tampering": checked["tampering"],
              "breaks": len(checked["breaks"])}  # what sync says it found, not only what it shared
    unreadable = vault.catalog().problems
    markers = [path for path, problem in unreadable if problem.startswith("unresolved merge conflict")]
    if markers:  # a merge a person committed with its markers: every clone would get a note it cannot read
        raise BadInput(f"{', '.join(markers)}: unresolved merge conflict markers; keep the right lines and delete "
                       "the <<<<<<< ======= >>>>>>> markers, then sync again (nothing was committed or pushed)")
    git(root, "add", "-A", "--", ".")
    committed = git(root, "diff", "--cached", "--quiet", check=False).returncode != 0
    if committed:
        git(root, "commit", "-q", "-m", message)
    before = git(root, "rev-parse", "HEAD", check=False).stdout.strip()
    # Exact renames only: notes share most of their lines (the same properties), so git's
    # similarity paired a note deleted on one side with another note added there and merged the
    # other side's grade into it. A note moved and changed is paired by its id (resolve_moves).
    # (Not -X no-renames: git 2.39's default strategy, ort, still paired them with it.)
    pulled = git(root, "pull", "--no-rebase", "--no-edit", "-q", "-X", "find-renames=100%", check=False)
    resolved = resolve_moves(root) + split_name_collisions(root)
    conflicts = unmerged_paths(root)
    if conflicts:
        return {"committed": committed, "pulled": False, "pushed": False, "conflicts": conflicts, "ledger": ledger,
                "contested": [], "deleted_on_one_side": _deleted_on_one_side(root)}
    if resolved:
        git(root, "commit", "-q", "--no-edit")
    elif pulled.returncode != 0:
        raise GitError(f"git pull failed: {(pulled.stderr or pulled.stdout).strip().splitlines()[-1:]}")
    contested = _contest_forks(vault, root, before)
    crossed = _contest_crossed_adds(vault, root, before)
    git(root, "push", "-q")
    return {"committed": committed, "pulled": True, "pushed": True, "conflicts": [], "ledger": ledger,
            "contested": contested, "contested_adds": crossed,
            "unreadable": [{"path": path, "problem": problem} for path, problem in unreadable]}


def _deleted_on_one_side(root: Path) -> list[str]:
    """Unmerged paths one side deleted and the other changed (no markers: a person keeps the
    changed note or lets it go)."""
    entries = git(root, "status", "--porcelain", "-z").stdout.split("\0")
    return [line[3:] for line in entries if line[:2] in ("UD", "DU")]  # from the top, as unmerged_paths


def _contest_forks(vault, root: Path, before: str) -> list[list[str]]:
    """A memory corrected on two machines is superseded by both corrections once merged, each
    in force: contest them (ops/corrections.contest_forks) and commit that, so every clone
    shows the pair as contested until a person resolves it."""
    from vaultmem.ops.corrections import contest_forks

    if not before:
        return []  # nothing was committed before the pull: no merge to look at
    changed = git(root, "diff", "--name-only", "--relative", before, "HEAD", "--", ".", check=False)
    return _committed(root, contest_forks(vault, set(changed.stdout.splitlines())),
                      "memories corrected on two machines")


def _contest_crossed_adds(vault, root: Path, before: str) -> list[list[str]]:
    """After a merge: the memories it brought in that contradict memories added here since the
    two sides parted are contested (ops/corrections.contest_crossed_adds), and that is committed,
    so every clone shows the pair as contested until a person resolves it."""
    from vaultmem.ops.corrections import contest_crossed_adds

    parents = git(root, "rev-list", "--parents", "-n", "1", "HEAD", check=False).stdout.split()
    if not before or len(parents) != 3 or parents[1] != before:
        return []  # no merge made here (a fast-forward, or nothing pulled): nothing crossed
    base = git(root, "merge-base", parents[1], parents[2], check=False).stdout.strip()
    if not base:
        return []

    def added(old: str, new: str) -> set[str]:
        done = git(root, "diff", "--name-only", "--relative", "--diff-filter=A", old, new, "--", ".", check=False)
        return {line for line in done.stdout.splitlines() if line.endswith(".md")}

    return _committed(root, contest_crossed_adds(vault, added(before, "HEAD"), added(base, before)),
                      "memories added on two machines")


def _committed(root: Path, contested: list[list[str]], what: str) -> list[list[str]]:
    """Commit the contests a sync wrote after its merge, so every clone gets them."""
    if contested:
        git(root, "add", "-A", "--", ".")
        git(root, "commit", "-q", "-m", f"vaultmem: contest {len(contested)} {what}")
    return contested


# ---------------------------------------------------------------- moved on one side, changed on the other

def resolve_moves(root: Path) -> list[str]:
    """Finish what git's rename detection missed: a note archived (or restored) on one side
    and changed, or archived too, on the other. A grade rewrites a third of a short note's
    lines, so git may not see the move as a rename and stops on "modified here, deleted
    there", or on two adds of the archived file (the driver merged their text, but git
    stops on the names). The note moved to `archive/<same path>` (or back), so its other
    half is known: merge both versions (the note driver) into the moved file and drop the
    old path. Returns the paths resolved; other conflicts are left as they are."""
    from vaultmem.core.note import has_conflict_markers

    top = repository_of(root)
    if top is None:
        return []
    entries = [(line[:2], line[3:]) for line in git(top, "status", "--porcelain", "-z").stdout.split("\0")
               if len(line) > 3 and line[3:].endswith(".md")]
    done = []
    for code, rel in entries:  # first the names: both added (the text merged), both deleted
        if code in ("AA", "AU", "UA") and (top / rel).is_file() and not has_conflict_markers(_read_text(top / rel)):
            git(top, "add", "--", rel)
            done.append(rel)
        elif code == "DD":
            git(top, "rm", "-q", "--cached", "--", rel)
            done.append(rel)
    merge_head = git(top, "rev-parse", "-q", "--verify", "MERGE_HEAD", check=False).stdout.strip() or None
    for code, rel in entries:  # then the changes made where the other side moved the note away
        if code not in ("UD", "DU"):
            continue
        vault_rel, note_rel = _split_vault_path(rel)
        partner_rel = note_rel[len("archive/"):] if note_rel.startswith("archive/") else f"archive/{note_rel}"
        partner = top / vault_rel / partner_rel if vault_rel else top / partner_rel
        if not partner.is_file():  # moved elsewhere (renamed by hand): the file that holds its id
            partner = _holding_id(top, vault_rel, _stated_note_id(_stage(top, 1, rel)), rel)
        if partner is None or not partner.is_file() or partner.relative_to(top).as_posix() in unmerged_paths(top):
            continue
        base = _stage(top, 1, rel)
        changed = _stage(top, 2 if code == "UD" else 3, rel)
        moved = _read_text(partner)
        ours, theirs = (changed, moved) if code == "UD" else (moved, changed)
        moved_rel = partner.relative_to(top).as_posix()
        merged = _merge_note(base, ours, theirs, moved_rel, top, merge_head)
        partner.write_bytes(merged.text.encode("utf-8"))
        git(top, "rm", "-q", "--cached", "--ignore-unmatch", "--", rel)
        (top / rel).unlink(missing_ok=True)
        if merged.conflict:  # a true body conflict, now at the moved path: left for a person, as git would
            _mark_unmerged(top, moved_rel, base, ours, theirs)
        else:
            git(top, "add", "--", moved_rel)
            done.append(rel)
    return done


def split_name_collisions(root: Path) -> list[str]:
    """Two different notes (two ids) that got the same file name on two machines (names come
    from the text: two memories that open with the same words) and were added on both sides:
    git stops on them as one file with markers, and keeping "the right lines" deleted one
    teammate's memory. Ours stays at its name, theirs goes beside it under the next free one
    (`name-2.md`), as an add names a note whose name is taken; the ledger follows the move at
    the next `verify`. Returns the paths split."""
    top = repository_of(root)
    if top is None:
        return []
    split = []
    for line in git(top, "status", "--porcelain", "-z").stdout.split("\0"):
        code, rel = line[:2], line[3:]
        if code != "AA" or not rel.endswith(".md"):
            continue
        ours, theirs = _stage(top, 2, rel), _stage(top, 3, rel)
        our_id, their_id = _stated_note_id(ours), _stated_note_id(theirs)
        if not our_id or not their_id or our_id == their_id:
            continue  # the same note added on both sides: the driver merged it, or a person must
        target = _free_name(top, rel)
        (top / rel).write_bytes(ours.encode("utf-8"))
        target.write_bytes(theirs.encode("utf-8"))
        git(top, "add", "--", rel, target.relative_to(top).as_posix())
        split.append(rel)
    return split


def _free_name(top: Path, rel: str) -> Path:
    """`name-N.md` beside `rel`, the first N that neither the work tree nor the index holds."""
    path = top / rel
    stem = path.name[:-len(".md")]
    number = 2
    while True:
        candidate = path.with_name(f"{stem}-{number}.md")
        tracked = git(top, "ls-files", "--", candidate.relative_to(top).as_posix()).stdout.strip()
        if not candidate.exists() and not tracked:
            return candidate
        number += 1


def _stated_note_id(text: str) -> str | None:
    from vaultmem.store.catalog import stated_id

    return stated_id(text.encode("utf-8"))


def _holding_id(top: Path, vault_rel: str, note_id: str | None, other_than: str,
                tree: str | None = None) -> Path | None:
    """The one note file of the vault (in the work tree, or in commit `tree`) whose `id:` line
    is `note_id`, other than `other_than`; None when there is none or more than one."""
    if not note_id:
        return None
    pattern = rf"^id:[ \t]*[\"']?{re.escape(note_id)}[\"']?[ \t]*$"
    found = git(top, "grep", "-l", "-E", pattern, *([tree] if tree else []), "--", vault_rel or ".", check=False)
    paths = {line.split(":", 1)[1] if tree else line for line in found.stdout.splitlines()}
    paths = [path for path in paths if path.endswith(".md") and path != other_than]
    return top / paths[0] if len(paths) == 1 else None


def _mark_unmerged(top: Path, rel: str, base: str, ours: str, theirs: str) -> None:
    """Put `rel` in the index as git leaves a conflicted file (stages 1-3), so `git status`
    names it and nothing commits it with its markers."""
    blobs = [subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=top, input=text.encode("utf-8"),
                            capture_output=True, check=True).stdout.decode().strip() for text in (base, ours, theirs)]
    entries = [f"0 {'0' * len(blobs[0])}\t{rel}"]  # drop stage 0 (40 zeros, or 64 in a SHA-256 repository)
    entries += [f"100644 {blob} {stage}\t{rel}" for stage, blob in enumerate(blobs, 1)]
    subprocess.run(["git", "update-index", "--index-info"], cwd=top, input=("\n".join(entries) + "\n").encode(),
                   capture_output=True, check=True)


def _stage(top: Path, number: int, rel: str) -> str:
    return _show(top, f":{number}:{rel}")


# ---------------------------------------------------------------- the drivers

def merge_text(base: str, ours: str, theirs: str) -> tuple[str, bool]:
    """git's own three-way text merge (`git merge-file`): (text, True if it left markers)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="vaultmem-merge-") as folder:
        paths = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(folder) / name
            path.write_bytes(text.encode("utf-8"))
            paths.append(str(path))
        done = subprocess.run(["git", "merge-file", "-p", "-L", "ours", "-L", "base", "-L", "theirs", *paths],
                              capture_output=True)
    if done.returncode < 0 or done.returncode > 127:
        raise GitError(f"git merge-file failed: {done.stderr.decode('utf-8', 'replace').strip()}")
    return done.stdout.decode("utf-8"), done.returncode != 0


def run_driver(kind: str, base_file: str, ours_file: str, theirs_file: str, path: str) -> int:
    """Merge one file for git; the result replaces `ours_file`. 0 merged, 1 conflict."""
    from vaultmem.core import merge

    base, ours, theirs = (_read_text(Path(p)) for p in (base_file, ours_file, theirs_file))
    name = Path(path).name
    conflict = False
    if kind == "log":
        result = merge.merge_log(base, ours, theirs, LOG_TIME_KEYS.get(name, "time"))
    elif kind == "ledger":
        result = merge.merge_ledger(base, ours, theirs)
    elif kind == "note":
        merged = _merge_note(base, ours, theirs, path)
        result, conflict = merged.text, merged.conflict
    else:
        raise BadInput(f"unknown merge driver {kind!r}; use note, log or ledger")
    Path(ours_file).write_bytes(result.encode("utf-8"))
    return 1 if conflict else 0


def _merge_note(base: str, ours: str, theirs: str, path: str, top: Path | None = None,
                their_commit: str | None = None):
    from vaultmem.config import load_config
    from vaultmem.core.merge import merge_note
    from vaultmem.vault import Vault

    top = top or Path.cwd()  # git runs drivers at the top of the work tree
    vault_rel, rel = _split_vault_path(path)
    root = top / vault_rel
    vault = Vault(root, load_config(root / ".vaultmem" / "config.yaml"))
    defaults = vault.defaults_for(rel, root / rel)
    their_commit = their_commit or _their_commit()
    if not base.strip() and their_commit:
        base = _moved_from_base(top, vault_rel, rel, their_commit, ours)
    reviews = _reviews_of_both_sides(top, vault_rel, ours, theirs, rel, defaults, their_commit)
    return merge_note(base, ours, theirs, rel, defaults, vault.config, merge_text, reviews)


def _their_commit() -> str | None:
    """The commit being merged: `git merge` names it in GITHEAD_<sha> while drivers run."""
    heads = [key[len("GITHEAD_"):] for key in os.environ if key.startswith("GITHEAD_")]
    return heads[0] if len(heads) == 1 else None


def _moved_from_base(top: Path, vault_rel: str, rel: str, their_commit: str, ours: str = "") -> str:
    """For a note both sides moved (archived, restored, renamed the same way) without git
    pairing the move, git gives no ancestor (an add/add): it is the note at its old path in
    the merge base, or the one file there holding its id."""
    old = rel[len("archive/"):] if rel.startswith("archive/") else f"archive/{rel}"
    base = git(top, "merge-base", "HEAD", their_commit, check=False).stdout.strip()
    if not base:
        return ""
    text = _show(top, f"{base}:{vault_rel}/{old}" if vault_rel else f"{base}:{old}")
    if not text:
        held = _holding_id(top, vault_rel, _stated_note_id(ours), f"{vault_rel}/{rel}" if vault_rel else rel, base)
        text = _show(top, f"{base}:{held.relative_to(top).as_posix()}") if held else ""
    return text


def _show(top: Path, spec: str) -> str:
    shown = subprocess.run(["git", "show", spec], cwd=top, capture_output=True)
    return shown.stdout.decode("utf-8", "replace") if shown.returncode == 0 else ""


def _split_vault_path(path: str) -> tuple[str, str]:
    """(the vault's folder in the repository, the note's path in the vault) of a repository path."""
    parts = Path(path).as_posix().split("/")
    for index in range(len(parts) - 1):
        if parts[index] in ("memories", "skills", "archive"):
            return "/".join(parts[:index]), "/".join(parts[index:])
    return "", Path(path).as_posix()


def _reviews_of_both_sides(top: Path, vault_rel: str, ours: str, theirs: str, rel: str, defaults: dict,
                           their_commit: str | None = None):
    """This note's review-log lines on our side (HEAD's log) and on theirs (the log of the
    commit being merged, which `git merge` names in GITHEAD_<sha> while drivers run).
    None when their commit is unknown (a rebase, a cherry-pick)."""
    from vaultmem.core.note import parse
    from vaultmem.errors import NoteError

    if not their_commit:
        return None
    heads = [their_commit]
    try:
        note_id = parse(ours, rel, defaults).id
        if parse(theirs, rel, defaults).id != note_id:
            return None
    except NoteError:
        return None
    log = f"{vault_rel}/.vaultmem/reviews.jsonl" if vault_rel else ".vaultmem/reviews.jsonl"
    sides = [_lines_of(_show(top, f"{commit}:{log}"), note_id) for commit in ("HEAD", heads[0])]
    return sides[0], sides[1]


def _lines_of(text: str, note_id: str) -> list[dict]:
    found = []
    for raw in text.split("\n"):
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("id") == note_id and record.get("rating"):
            found.append(record)
    return found


def _read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return ""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 5:
        print("usage: python -m vaultmem.integrations.gitvault note|log|ledger %O %A %B %P", file=sys.stderr)
        return 2
    try:
        return run_driver(*args)
    except Exception as exc:  # noqa: BLE001 - git must see a failure, never a traceback
        print(f"vaultmem merge driver ({args[0]}) failed on {args[4]}: {exc}; the file is left for git "
              "to report as a conflict", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
