"""The pure merges (core/merge.py) and the ledger as a DAG (store/ledger.py), without git."""

from __future__ import annotations

import json

from vaultmem.core import merge
from vaultmem.store.ledger import GENESIS, check_chain, record_hash
from vaultmem.vault import Vault


def records_of(text: str) -> list[tuple[int, dict | None, str]]:
    out = []
    for number, raw in enumerate(text.splitlines(keepends=True), 1):
        try:
            record = json.loads(raw)
        except ValueError:
            record = None
        out.append((number, record if isinstance(record, dict) else None, raw))
    return out


def chain(records: list[dict], tip: str = GENESIS, seq: int = 0) -> str:
    lines = []
    for record in records:
        seq += 1
        record = dict(record, seq=seq, prev=tip, content=record.get("content"), path="p", time=record["time"])
        record["hash"] = tip = record_hash(record)
        lines.append(json.dumps(record, sort_keys=True) + "\n")
    return "".join(lines)


def test_merge_log_is_a_union_ordered_by_time_whatever_the_order():
    base = '{"id": "a", "review_datetime": "2026-01-01T00:00:00"}\n'
    ours = base + '{"id": "a", "review_datetime": "2026-01-03T00:00:00"}\n'
    theirs = base + '{"id": "b", "review_datetime": "2026-01-02T00:00:00"}\n{"torn": '
    one = merge.merge_log(base, ours, theirs, "review_datetime")
    assert one == merge.merge_log(base, theirs, ours, "review_datetime")
    lines = one.splitlines()
    assert len(lines) == 4 and lines[0] == base.strip() and '"b"' in lines[1] and '"2026-01-03' in lines[3]
    assert '{"torn": ' in lines  # a torn line is kept (next to the line before it), never lost


def test_merge_ledger_keeps_both_tails_and_joins_them():
    base = chain([{"op": "add", "id": "n1", "time": "2026-01-01T00:00:00", "content": "c0"}])
    tip = json.loads(base)["hash"]
    ours = base + chain([{"op": "grade", "id": "n1", "time": "2026-01-02T00:00:00", "content": "c1"}], tip, 1)
    theirs = base + chain([{"op": "grade", "id": "n1", "time": "2026-01-03T00:00:00", "content": "c2"},
                           {"op": "add", "id": "n2", "time": "2026-01-03T00:00:01", "content": "d"}], tip, 1)
    merged = merge.merge_ledger(base, ours, theirs)
    assert merged.startswith(ours) and not check_chain(records_of(merged))
    last = json.loads(merged.splitlines()[-1])
    assert last["op"] == "merge" and last["seq"] == 4 and last["time"] == "2026-01-03T00:00:01"
    assert last["parents"] == [json.loads(ours.splitlines()[-1])["hash"], json.loads(theirs.splitlines()[-1])["hash"]]
    assert last["detail"] == {"notes": {"n1": ["c1", "c2"]}}
    assert merge.ledger_record_hash(last) == record_hash(last)
    # a fast-forward writes no merge record; merging again changes nothing
    assert merge.merge_ledger(base, base, ours) == ours
    assert merge.merge_ledger(ours, merged, ours) == merged
    # the next ordinary record chains from the last line (the contract with the Obsidian plugin)
    after = merged + chain([{"op": "grade", "id": "n2", "time": "2026-01-04T00:00:00"}], last["hash"], last["seq"])
    assert not check_chain(records_of(after))


def test_the_dag_check_catches_an_inserted_removed_or_unjoined_branch():
    base = chain([{"op": "add", "id": "n1", "time": "t1"}, {"op": "grade", "id": "n1", "time": "t2"}])
    lines = base.splitlines(keepends=True)
    first = json.loads(lines[0])
    forged = chain([{"op": "edit", "id": "n1", "time": "t9"}], first["hash"], 1)
    inserted = lines[0] + forged + lines[1]
    assert [p.kind for p in check_chain(records_of(inserted))] == ["break"]
    assert any("branch" in p.detail for p in check_chain(records_of(inserted)))
    assert check_chain(records_of(lines[1]))  # the first line removed
    ours = base + chain([{"op": "grade", "id": "n1", "time": "t3"}], json.loads(lines[1])["hash"], 2)
    theirs = base + chain([{"op": "grade", "id": "n1", "time": "t4"}], json.loads(lines[1])["hash"], 2)
    merged = merge.merge_ledger(base, ours, theirs)
    assert not check_chain(records_of(merged))
    without_merge = "".join(merged.splitlines(keepends=True)[:-1])
    assert any("branch" in p.detail for p in check_chain(records_of(without_merge)))
    edited = merged.replace('"t4"', '"t5"')
    assert any("hash does not match" in p.detail for p in check_chain(records_of(edited)))


def test_catch_up_rereads_a_ledger_whose_earlier_bytes_changed(vault_dir):
    vault = Vault(vault_dir)
    note = vault.add("Staging runs Postgres 16", "work").note
    vault.grade(note.id, "good")
    ledger_path = vault.state_dir / "ledger.jsonl"
    before = ledger_path.read_text()
    assert vault.ledger.state().tip == json.loads(before.splitlines()[-1])["hash"]
    # Another branch checked out: same length, other bytes (another time in the last record).
    other = chain([{"op": "add", "id": note.id, "time": "2026-01-05T09:00:00", "content": "x"},
                   {"op": "grade", "id": note.id, "time": "2026-01-05T09:00:01", "content": "y"}])
    other = other + " " * (len(before) - len(other)) if len(other) < len(before) else other
    ledger_path.write_text(other)
    state = vault.ledger.state()
    assert state.tip == json.loads(other.splitlines()[1])["hash"] and state.last[note.id]["content"] == "y"


def test_a_note_merge_unions_lists_and_keeps_one_sided_changes(vault_dir):
    vault = Vault(vault_dir)
    note = vault.add("Staging runs Postgres 16", "work", tags=["db"]).note
    path = vault_dir / note.path
    base = path.read_text()
    ours = base.replace("  - db\n", "  - db\n  - infra\n").replace("tier: L1", "tier: L2")
    theirs = base.replace("  - db\n", "  - db\n  - postgres\n").replace("status: active", "status: stale")

    def no_text_merge(b, o, t):
        assert o == t == b
        return o, False

    result = merge.merge_note(base, ours, theirs, note.path, vault.defaults_for(note.path, path), vault.config,
                              no_text_merge)
    assert not result.conflict
    merged = vault.read_note(note.path, result.text)
    assert merged.tags == ("db", "infra", "postgres") and merged.tier == "L2" and merged.status == "stale"
    # the file keeps the note format: only the changed lines differ from ours
    assert [line for line in result.text.splitlines() if line not in ours.splitlines()] == ["  - postgres",
                                                                                             "status: stale"]


def test_two_notes_added_under_one_name_merge_only_when_they_say_the_same(vault_dir):
    """An add/add of one file name: the same text on both sides is one note (either order gives
    the same); two different facts whose names collide are left to a person, markers and all."""
    vault = Vault(vault_dir)
    first = vault.add("The standup is at 9:30 every weekday", "team").note
    ours = (vault_dir / first.path).read_text()
    theirs = ours.replace(f"id: {first.id}", "id: 0000000a").replace("projects:\n", "projects:\n  - elsewhere\n")
    defaults = vault.defaults_for(first.path, vault_dir / first.path)

    def text_merge(b, o, t):
        return f"<<<<<<< ours\n{o}=======\n{t}>>>>>>> theirs\n", True

    one = merge.merge_note("", ours, theirs, first.path, defaults, vault.config, text_merge)
    other = merge.merge_note("", theirs, ours, first.path, defaults, vault.config, text_merge)
    assert not one.conflict and one.text == other.text
    merged = vault.read_note(first.path, one.text)
    assert merged.id == "0000000a" and "elsewhere" in merged.projects
    different = theirs.replace("9:30", "10:00")
    assert merge.merge_note("", ours, different, first.path, defaults, vault.config, text_merge).conflict


def test_a_torn_line_on_one_side_stays_torn_after_a_merge():
    base = chain([{"op": "add", "id": "n1", "time": "t1"}])
    tip = json.loads(base)["hash"]
    ours = base + '{"seq": 2, "op": "gr'  # an append cut short by a crash
    theirs = base + chain([{"op": "grade", "id": "n1", "time": "t2"}], tip, 1)
    merged = merge.merge_ledger(base, ours, theirs)
    assert [p.kind for p in check_chain(records_of(merged))] == ["torn"]


def test_a_card_graded_on_both_sides_is_replayed_or_taken_from_the_later_side(vault_dir, monkeypatch):
    from vaultmem.core.schedule import replay

    vault = Vault(vault_dir)
    note = vault.add("Staging runs Postgres 16", "work").note
    path = vault_dir / note.path
    vault.grade(note.id, "good")
    base = path.read_text()
    sides = []
    plan = ((("2026-01-07T09:00:00", "2026-01-09T09:00:00"), "good"), (("2026-01-08T09:00:00",), "again"))
    for times, rating in plan:
        path.write_text(base)
        vault.verify()
        for when in times:
            monkeypatch.setenv("VAULTMEM_NOW", when)
            vault.grade(note.id, rating)
        lines = [json.loads(line) for line in (vault.state_dir / "reviews.jsonl").read_text().splitlines()]
        sides.append((path.read_text(), lines[-len(times):]))
    (ours, our_reviews), (theirs, their_reviews) = sides

    def text_merge(b, o, t):
        return o, False

    defaults = vault.defaults_for(note.path, path)
    b = vault.read_note(note.path, base)
    later = merge.merge_note(base, ours, theirs, note.path, defaults, vault.config, text_merge)
    merged = vault.read_note(note.path, later.text)
    assert later.card == "later side"
    assert merged.reps == b.reps + 3 and merged.last_review == vault.read_note(note.path, ours).last_review
    replayed = merge.merge_note(base, ours, theirs, note.path, defaults, vault.config, text_merge,
                                (our_reviews, their_reviews))
    assert replayed.card == "replayed"
    merged = vault.read_note(note.path, replayed.text)
    grades = sorted(our_reviews + their_reviews, key=lambda r: r["review_datetime"])
    expected = replay(b, grades, vault.config)
    assert [r["rating"] for r in grades] == ["good", "again", "good"]
    for key in ("state", "step", "stability", "difficulty", "due", "reps", "lapses", "strength"):
        assert getattr(merged, key) == expected[key], key
    # a log that does not account for every grade the cards count is not replayed
    short = merge.merge_note(base, ours, theirs, note.path, defaults, vault.config, text_merge,
                             (our_reviews[:1], their_reviews))
    assert short.card == "later side"
