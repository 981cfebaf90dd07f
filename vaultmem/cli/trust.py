"""Trust commands: conflicts, correct, resolve, promote, why, verify. Options -> one Vault call -> output."""

from __future__ import annotations

import click

from vaultmem.cli.common import (
    _emit_added,
    _note_json,
    _parse_created,
    _short,
    _table,
    _vault,
    _warn_problems,
    common,
)
from vaultmem.errors import EXIT_LEDGER_BROKEN


@click.command()
@click.argument("text")
@click.option("-n", "--namespace", help="The namespace the memory would go to (required).")
@click.option("--created", help="As `add --created`: a backfill dated before a memory it contradicts contests it.")
@click.option("--tags", default="", help="As `add --tags` (comma-separated): they are part of what the model "
                                         "compares, so the same tags give the same answer as the add.")
@common
def conflicts(text, namespace, created, tags, out, vault_path):
    """Show what adding TEXT would do to existing memories, without writing anything.

    Example: vaultmem conflicts "Staging runs Postgres 16" -n work
    """
    from vaultmem.core.model import check_text, tidy_tags
    from vaultmem.errors import BadInput
    from vaultmem.ops.corrections import decide
    from vaultmem.vault import check_namespace

    namespace = check_namespace(namespace)
    if not check_text(text, "the text").strip():
        raise BadInput("the text is empty; give the text you would add, e.g. vaultmem conflicts \"...\" -n work")
    vault = _vault(vault_path)
    tag_list = tidy_tags(tags.split(","))
    related = vault.related(text, namespace, created=_parse_created(created), tags=tag_list) \
        if vault.config.check_conflicts else []
    duplicate, superseded, _contested = decide(related)
    rows, data = [], []
    for item in related:
        if duplicate is not None:  # the add only records a recurrence of that one
            action = "recurrence (no new note)" if item is duplicate else "nothing (the add is a recurrence)"
        else:
            action = "would supersede" if item in superseded else "would contest"
        data.append({"id": item.note.id, "relation": item.relation, "action": action, "reason": item.reason,
                     "similarity": round(item.similarity, 4), "text": item.note.summary, "path": item.note.path})
        rows.append([item.note.id, item.relation, action, f"{item.similarity:.2f}", _short(item.reason, 40),
                     _short(item.note.summary, 50)])
    out.emit(data, _table(rows, ["ID", "RELATION", "ADD WOULD", "SIMILARITY", "WHY", "TEXT"])
             or "no conflicts: adding it would write a new memory")


@click.command()
@click.argument("note_id")
@click.argument("text")
@click.option("-r", "--reason", help="Why the old memory was wrong (kept in the new note and the review log).")
@click.option("--session", help="The agent session this comes from (default: $VAULTMEM_SESSION).")
@common
def correct(note_id, text, reason, session, out, vault_path):
    """Replace a wrong memory with the right content.

    The wrong one is graded `again` and superseded by a new note that says
    what was wrong, what is right and why.

    Example: vaultmem correct k3x9a2bq "Staging runs Postgres 16" --reason "upgraded in May"
    """
    vault = _vault(vault_path)
    added = vault.correct(note_id, text, reason, session=session)
    from vaultmem.service.writes import added_data

    _emit_added(out, added_data(added, vault.config), "corrected with")


@click.command()
@click.argument("note_id")
@click.argument("others", nargs=-1)
@click.option("--both", is_flag=True, help="Both hold: clear the contest, supersede nothing.")
@common
def resolve(note_id, others, both, out, vault_path):
    """Settle a contested memory: NOTE_ID is right and supersedes the memories it was
    contested with (or, with --both, they can all be true). Name OTHERS to settle the
    contest with those alone, leaving the rest as they are.

    \b
    Examples:
      vaultmem resolve k3x9a2bq
      vaultmem resolve k3x9a2bq m7p2qz4d --both
    """
    vault = _vault(vault_path)
    others = vault.resolve(note_id, both, only=others)
    listed = ", ".join(others)
    human = (f"{note_id} and {listed} all hold; no longer contested" if both
             else f"{note_id} kept; superseded: {listed}")
    out.emit({"id": note_id, "others": others, "both": both}, human)


@click.command()
@click.argument("note_id", required=False)
@click.option("--adopt", is_flag=True, help="Apply the staged proposals whose evidence still holds.")
@click.option("--tier", help="With NOTE_ID: set its tier by hand (L0..L3), evidence or not.")
@common
def promote(note_id, adopt, tier, out, vault_path):
    """Propose promotions earned by evidence (a dry run that stages them), or adopt them.

    `vaultmem promote` lists and stages proposals in .vaultmem/staged/promotions.json
    (delete an entry there to veto it); `vaultmem promote --adopt` applies them.

    Example: vaultmem promote && vaultmem promote --adopt
    """
    from vaultmem.errors import BadInput

    vault = _vault(vault_path)
    if note_id:
        if not tier:
            raise BadInput("give the tier to set: vaultmem promote ID --tier L2")
        from vaultmem.clock import now as clock_now

        note = vault.set_tier(note_id, tier)
        out.emit(_note_json(note, clock_now(), vault.config), f"{note.id} is now {note.tier}")
        return
    if tier:
        raise BadInput("--tier needs a note id: vaultmem promote ID --tier L2")
    done = vault.promote(adopt=adopt)
    rows = [[p["id"], p["from"], p["to"], _short(p["reason"], 70)] for p in done]
    table = _table(rows, ["ID", "FROM", "TO", "EVIDENCE"])
    if adopt:
        human = (table + f"\npromoted {len(done)}") if done else "nothing promoted (nothing staged still holds)"
    else:
        human = (table + f"\nstaged {len(done)} in {vault.staged_promotions}; "
                 "`vaultmem promote --adopt` applies them") if done else "no memory has earned a promotion yet"
    out.emit(done, human)


@click.command()
@click.argument("ref")
@common
def why(ref, out, vault_path):
    """Where a memory came from: its source, the evidence that promoted it,
    what it superseded, and every recorded change and grade.

    Example: vaultmem why k3x9a2bq    or    vaultmem why "staging runs postgres"
    """
    from vaultmem.core.trust import render_why

    vault = _vault(vault_path)
    info = vault.why(ref)
    out.emit(info, render_why(info))


@click.command()
@click.option("--strict", is_flag=True, help="Record nothing; exit 4 on any break, unrecorded edit or missing note.")
@click.option("--re-anchor", "re_anchor", is_flag=True,
              help="The ledger lost records and cannot be restored: say so on the ledger, then record again.")
@common
def verify(strict, re_anchor, out, vault_path):
    """Check the ledger's hash chain and every note against its last record.

    Without --strict, edits made by hand since their last record are
    recorded as external edits (they are legitimate); breaks of the chain
    are reported and exit 4. With --strict nothing is recorded and any
    difference exits 4: for CI on a vault kept in git.

    A ledger that lost records (deleted, emptied, its tail cut) is reported
    as tampering and exits 4 with nothing recorded, since recording would
    hide the gap: restore .vaultmem/ledger.jsonl from git, or pass
    --re-anchor to write one record that says what was lost and go on.

    Example: vaultmem verify --strict
    """
    ctx = click.get_current_context()
    vault = _vault(vault_path)
    result = vault.verify(record=not strict, re_anchor=re_anchor and not strict)
    _warn_problems(vault, out)
    lines = [f"checked {result['notes']} notes against {vault.ledger.path.name}"]
    for sign in result["tampering"]:
        lines.append(f"tampering: {sign}; nothing was recorded. Restore .vaultmem/ledger.jsonl from git, "
                     "or run `vaultmem verify --re-anchor` to put the gap on record and go on")
    if result["re_anchored"]:
        lines.append("re-anchored: the gap is on the ledger as a `re-anchor` record")
    for problem in result["breaks"] + result["torn"] + result["changes"]:
        lines.append(f"{problem['kind']}: {problem['where']}: {problem['detail']}")
    if result["recorded"]:
        lines.append(f"recorded {result['recorded']} changes made outside vaultmem as external edits")
    if not (result["breaks"] or result["changes"] or result["tampering"] or result["torn"]):
        lines.append("ok: the chain is intact and every note matches its record")
    out.emit(result, "\n".join(lines))
    if result["breaks"] or result["tampering"] or (strict and (result["changes"] or result["torn"])):
        ctx.exit(EXIT_LEDGER_BROKEN)


COMMANDS = (conflicts, correct, resolve, promote, why, verify)
