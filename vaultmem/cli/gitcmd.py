"""The vault in git: `vaultmem git install|status` and `vaultmem sync`. Options -> one call -> output."""

from __future__ import annotations

import click

from vaultmem.cli.common import _vault, common
from vaultmem.errors import EXIT_CONFLICT


@click.group(name="git")
def git_group():
    """Keep the vault in git: merge drivers for notes, review logs and the ledger.

    \b
    Example: vaultmem git install
             vaultmem git status --json
    """


@git_group.command(name="install")
@common
def git_install(out, vault_path):
    """Set up merging in git: `.gitattributes` in the vault (commit it) and the drivers'
    commands in the repository's `.git/config` (each clone runs this once). Running it
    again changes nothing.

    Example: vaultmem git install
    """
    from vaultmem.integrations import gitvault

    vault = _vault(vault_path)
    changed = gitvault.install(vault.root)
    out.emit({"changed": changed, **gitvault.status(vault.root).as_dict()},
             f"set up: {', '.join(changed)}; commit .gitattributes so every clone merges the same way"
             if changed else "already set up; nothing changed")


@git_group.command(name="status")
@common
def git_status(out, vault_path):
    """What is set up for merging this vault in git (exit 1 when something is missing).

    Example: vaultmem git status
    """
    from vaultmem.integrations import gitvault

    vault = _vault(vault_path)
    setup = gitvault.status(vault.root)
    if not setup.repository:
        human = f"{vault.root} is not in a git repository"
    else:
        lines = [f"repository: {setup.repository}",
                 f".gitattributes: {'set' if setup.attributes else 'missing'}",
                 *(f"{name}: {'set' if ok else 'missing'}" for name, ok in setup.drivers.items()),
                 f"in effect: {'yes' if setup.effective else 'no'}"]
        if not setup.installed:
            lines.append("run `vaultmem git install` to set up what is missing")
        human = "\n".join(lines)
    out.emit(setup.as_dict(), human)
    if not setup.installed:
        raise SystemExit(1)


@git_group.command(name="resolve")
@common
def git_resolve(out, vault_path):
    """After a `git merge` or `git pull` that stopped: merge the notes one side archived
    (or restored) and the other changed, which git's rename detection can miss. Other
    conflicts are listed and left for you; `git commit` when none is left.

    Example: git pull --no-rebase || vaultmem git resolve
    """
    from vaultmem.integrations import gitvault

    vault = _vault(vault_path)
    resolved = gitvault.resolve_moves(vault.root)
    left = gitvault.unmerged_paths(vault.root)
    lines = [f"merged {path} into its moved copy" for path in resolved]
    lines += [f"unresolved merge conflict in {path}" for path in left]
    if not left:
        lines.append("no conflict left: `git commit` to finish the merge" if resolved else "nothing to resolve")
    out.emit({"resolved": resolved, "conflicts": left}, "\n".join(lines))
    if left:
        raise SystemExit(EXIT_CONFLICT)


@click.command()
@click.option("-m", "--message", default="vaultmem sync", show_default=True, help="The commit message.")
@common
def sync(message, out, vault_path):
    """Share the vault with other machines through its git remote: commit the vault's
    changes, pull (merging with vaultmem's drivers), push. Refuses while a merge is
    unfinished; a true conflict (the same lines of a note's text changed on both
    sides) is left for you, named, and nothing is pushed (exit 3).

    Example: vaultmem sync -m "laptop"
    """
    from vaultmem.integrations import gitvault

    vault = _vault(vault_path)
    result = gitvault.sync(vault, message)
    ledger = result["ledger"]
    recorded = ledger["recorded"]
    found = [f"recorded {recorded} hand edit{'' if recorded == 1 else 's'} on the ledger"] if recorded else []
    if ledger["tampering"] or ledger["breaks"]:
        found.append("warning: verify found " + ("; ".join(ledger["tampering"]) or f"{ledger['breaks']} breaks in "
                                                 "the ledger's chain") + ": run `vaultmem verify` for what to do")
    found += [f"warning: shared a note vaultmem cannot read: {item['path']}: {item['problem']}"
              for item in result.get("unreadable", ())]
    if found and not out.quiet:
        click.echo("\n".join(found), err=True)
    if result["conflicts"]:
        deleted = set(result.get("deleted_on_one_side") or ())
        lines = [f"unresolved merge conflict in {path}" for path in result["conflicts"] if path not in deleted]
        lines += [f"{path}: deleted on one side, changed on the other; keep it (`git add {path}`) or let it go "
                  f"(`git rm {path}`)" for path in sorted(deleted)]
        out.emit(result, "\n".join(lines) + "\n" + ("edit those files (keep the right lines, remove the markers), "
                                                    "`git add` them, " if len(lines) > len(deleted) else "")
                 + "`git commit`, then `vaultmem sync` again")
        raise SystemExit(EXIT_CONFLICT)
    contested = "".join(f"\nthe same memory was corrected on two machines: {' vs '.join(ids)} are contested; "
                        f"`vaultmem resolve ID` keeps the right one" for ids in result["contested"])
    contested += "".join(f"\nmemories added on two machines contradict each other: {' vs '.join(ids)} are "
                         f"contested; `vaultmem resolve ID` keeps the right one" for ids in result["contested_adds"])
    out.emit(result, ("committed, " if result["committed"] else "") + "pulled and pushed" + contested)


COMMANDS = (git_group, sync)
