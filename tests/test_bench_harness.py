"""The retrieval benchmarks' harness (bench/locomo.py, bench/longmemeval.py) on tiny inputs.

The metric tests replace `recall` with a scripted ranking, so the expected
figures can be checked by hand and do not depend on the model; the smoke
tests run the real `vaultmem.search.engine.recall` end to end and check only shape.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "longmemeval_tiny.json"
sys.path.insert(0, str(BENCH))

harness = importlib.import_module("_harness")
locomo = importlib.import_module("locomo")
longmemeval = importlib.import_module("longmemeval")


def _turn(dia_id, speaker, text, caption=None):
    t = {"speaker": speaker, "dia_id": dia_id, "text": text}
    if caption:
        t["blip_caption"] = caption
        t["img_url"] = ["https://example.invalid/x.jpg"]
    return t


def locomo_conversation() -> dict:
    """Two sessions of four turns, and questions whose evidence ids exercise the normalisation."""
    return {
        "speaker_a": "Ann",
        "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            _turn("D1:1", "Ann", "I adopted a cat called Miso last week."),
            _turn("D1:2", "Bo", "Lovely! I started pottery classes on Tuesdays."),
            _turn("D1:3", "Ann", "Here is Miso on the sofa.", caption="a photo of a grey cat on a couch"),
            _turn("D1:4", "Bo", "So cute. My bowl cracked in the kiln though."),
        ],
        "session_2_date_time": "9:05 am on 21 June, 2023",
        "session_2": [
            _turn("D2:1", "Ann", "I ran my first half marathon in Porto on Sunday."),
            _turn("D2:2", "Bo", "Amazing. I sold three mugs at the craft fair."),
            _turn("D2:3", "Ann", "My knees hurt a bit now."),
            _turn("D2:4", "Bo", "Rest and ice them, then stretch."),
        ],
        "events_session_1": {"Ann": ["adopts a cat"]},
        "qa": [
            {"question": "What is the name of Ann's cat?", "answer": "Miso", "evidence": ["D1:1"], "category": 4},
            {"question": "What crafts does Bo do and sell?", "answer": "pottery, mugs",
             "evidence": ["D1:2; D2:2"], "category": 1},
            {"question": "When did Ann run a half marathon?", "answer": "June 2023", "evidence": ["D:2:1"],
             "category": 2},
            {"question": "What did Bo's cat eat?", "adversarial_answer": "nothing said", "evidence": ["D1:3"],
             "category": 5},
            {"question": "What is Ann's job?", "answer": "unknown", "evidence": [], "category": 3},
            {"question": "Where does Bo live?", "answer": "?", "evidence": ["D9:9", "D"], "category": 4},
            {"question": "Did Ann get a pet?", "answer": "yes", "evidence": ["D1:1", "D7:1"], "category": 4},
        ],
    }


# What the scripted recall returns for each question (dia ids, best first).
SCRIPT = {
    "What is the name of Ann's cat?": ["D1:2", "D1:3", "D1:1"],               # rank 3
    "What crafts does Bo do and sell?": ["D2:2", "D1:1"],                      # rank 1, D1:2 missing
    "When did Ann run a half marathon?": ["D1:1", "D1:2", "D1:3", "D1:4", "D2:2", "D2:3", "D2:1"],  # rank 7
    "What did Bo's cat eat?": ["D2:4", "D2:3"],                                 # not found
    "Did Ann get a pet?": ["D1:1"],                                             # rank 1
}


@pytest.fixture
def locomo_dir(tmp_path) -> Path:
    d = tmp_path / "locomo"
    d.mkdir()
    (d / "7.json").write_text(json.dumps(locomo_conversation()), encoding="utf-8")
    return d


def scripted_recall(script: dict, seen_now: list | None = None):
    """A stand-in for vaultmem.search.engine.recall returning notes in a scripted order of sources."""

    def fake(vault, query, top_k=None, **_kw):
        if seen_now is not None:
            seen_now.append(os.environ.get("VAULTMEM_NOW"))
        by_source = {n.source: n for n in vault.catalog(fresh=True).notes}
        order = script(query, sorted(by_source)) if callable(script) else script.get(query, [])
        return [SimpleNamespace(note=by_source[s]) for s in order if s in by_source][:top_k]

    return fake


def test_locomo_metrics_by_hand(locomo_dir, tmp_path, monkeypatch, capsys):
    seen_now: list = []
    monkeypatch.setattr(harness, "recall", scripted_recall(SCRIPT, seen_now))
    out = tmp_path / "out.json"
    summary = locomo.main(["--data", str(locomo_dir), "--json", str(out)])

    overall = summary["rows"]["overall"]
    assert overall["n"] == 5
    assert overall["hit@1"] == pytest.approx(2 / 5)
    assert overall["hit@5"] == pytest.approx(3 / 5)
    assert overall["hit@10"] == pytest.approx(4 / 5)
    assert overall["recall_all@10"] == pytest.approx(3 / 5)
    assert overall["MRR@10"] == pytest.approx((1 / 3 + 1 + 1 / 7 + 0 + 1) / 5)
    multi = summary["rows"]["1 multi-hop"]
    assert (multi["n"], multi["hit@1"], multi["recall_all@10"]) == (1, 1.0, 0.0)
    assert summary["rows"]["2 temporal"]["hit@5"] == 0.0 and summary["rows"]["2 temporal"]["hit@10"] == 1.0
    assert summary["rows"]["3 open-domain"]["n"] == 0
    assert summary["rows"]["4 single-hop"]["n"] == 2

    # Skips: one without evidence, one with only unresolvable ids ("D9:9", "D"), "D7:1" dropped.
    assert summary["skipped"] == {"no_evidence": 1, "unresolvable": 1, "bad_ids": 3}
    # The clock is pinned to one day after the last session for the whole run.
    assert set(seen_now) == {"2023-06-22T09:05:00"}

    saved = json.loads(out.read_text(encoding="utf-8"))
    by_q = {q["question"]: q for q in saved["questions"]}
    assert by_q["What crafts does Bo do and sell?"]["evidence"] == ["D1:2", "D2:2"]
    assert by_q["What crafts does Bo do and sell?"]["ranks"] == {"D1:2": None, "D2:2": 1}
    assert by_q["When did Ann run a half marathon?"]["evidence"] == ["D2:1"]
    assert by_q["When did Ann run a half marathon?"]["first_rank"] == 7
    assert by_q["Did Ann get a pet?"]["evidence"] == ["D1:1"]

    table = capsys.readouterr().out
    assert "| overall | 5 | 0.400 | 0.600 | 0.800 | 0.600 |" in table


def test_locomo_top_k_and_limit(locomo_dir, monkeypatch):
    monkeypatch.setattr(harness, "recall", scripted_recall(SCRIPT))
    summary = locomo.main(["--data", str(locomo_dir), "--top-k", "5", "--limit-questions", "3"])
    overall = summary["rows"]["overall"]
    assert overall["n"] == 3
    # With top_k 5 the rank-7 evidence is never seen.
    assert overall["hit@10"] == pytest.approx(2 / 3)


def test_locomo_memories_through_the_api(locomo_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "recall", scripted_recall(SCRIPT))
    vaults = tmp_path / "vaults"
    locomo.main(["--data", str(locomo_dir), "--vault-dir", str(vaults), "--limit-questions", "1"])
    from vaultmem import Vault

    notes = {n.source: n for n in Vault(vaults / "conv-7").notes()}
    assert len(notes) == 8
    assert notes["D1:3"].text.strip() == "Ann: Here is Miso on the sofa. [image: a photo of a grey cat on a couch]"
    assert notes["D1:1"].namespace == "locomo"
    # As an agent's capture: the turn's session, and the session's time plus one second per turn before it.
    assert notes["D2:4"].created == datetime(2023, 6, 21, 9, 5, 3, tzinfo=timezone.utc)
    assert notes["D2:4"].sessions == ("locomo-7-session-2",) and notes["D1:1"].sessions == ("locomo-7-session-1",)
    # A second run reuses the vault instead of adding again.
    again = locomo.main(["--data", str(locomo_dir), "--vault-dir", str(vaults), "--limit-questions", "1"])
    assert again["rows"]["overall"]["n"] == 1
    assert len(Vault(vaults / "conv-7").notes()) == 8


def test_locomo_same_time_is_the_protocol_before_turns_had_an_order(locomo_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "recall", scripted_recall(SCRIPT))
    vaults = tmp_path / "vaults"
    locomo.main(["--data", str(locomo_dir), "--vault-dir", str(vaults), "--limit-questions", "1", "--same-time"])
    from vaultmem import Vault

    notes = {n.source: n for n in Vault(vaults / "conv-7").notes()}
    session_2 = {n.created for k, n in notes.items() if k.startswith("D2:")}
    assert session_2 == {datetime(2023, 6, 21, 9, 5, tzinfo=timezone.utc)}
    assert not any(n.sessions[0].startswith("locomo-") for n in notes.values())


def test_locomo_neighbour_weight_sets_the_share_for_the_run(locomo_dir, monkeypatch):
    from vaultmem.search import engine, neighbours

    monkeypatch.setattr(neighbours, "NEIGHBOUR_WEIGHT", neighbours.NEIGHBOUR_WEIGHT)  # restored after the test
    monkeypatch.setattr(engine, "NEIGHBOUR_EXPANSION", engine.NEIGHBOUR_EXPANSION)
    monkeypatch.setattr(harness, "recall", scripted_recall(SCRIPT))
    locomo.main(["--data", str(locomo_dir), "--limit-questions", "1", "--neighbour-weight", "0"])
    assert (neighbours.NEIGHBOUR_WEIGHT, engine.NEIGHBOUR_EXPANSION) == (0, 0)


def test_locomo_parsing():
    assert locomo.parse_datetime("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    assert locomo.parse_datetime("12:19 am on 4 January, 2024") == datetime(2024, 1, 4, 0, 19, tzinfo=timezone.utc)
    known = {"D1:3", "D11:26", "D8:6", "D9:17"}
    assert locomo.normalise_evidence(["D:11:26"], known) == (["D11:26"], [])
    assert locomo.normalise_evidence(["D8:6; D9:17"], known) == (["D8:6", "D9:17"], [])
    assert locomo.normalise_evidence(["D1:03", "D1:3"], known) == (["D1:3"], [])
    assert locomo.normalise_evidence(["D", "D10:19"], known) == ([], ["D", "D10:19"])


def test_metric_helpers():
    r = harness.QueryResult("g", "q", "1", "?", ["a", "b"], harness.ranks_of(["a", "b"], ["x", "b", "y", "a"]),
                            ["x", "b", "y", "a"], 1.0)
    assert r.first_rank == 2
    assert harness.hit_at(r, 1) == 0 and harness.hit_at(r, 2) == 1
    assert harness.recall_all_at(r, 3) == 0 and harness.recall_all_at(r, 4) == 1
    assert harness.mrr_at(r, 10) == 0.5 and harness.mrr_at(r, 1) == 0
    assert harness.percentile([5, 1, 3, 2, 4], 50) == 3 and harness.percentile([5, 1, 3, 2, 4], 95) == 5


def test_longmemeval_metrics_by_hand(monkeypatch, capsys, tmp_path):
    # Every note in key order: s0:t0, s0:t1, s1:t0, ... so each rank is known.
    monkeypatch.setattr(harness, "recall", scripted_recall(lambda _q, keys: keys))
    out = tmp_path / "lme.json"
    summary = longmemeval.main([str(FIXTURE), "--json", str(out)])
    overall = summary["rows"]["overall"]
    assert overall["n"] == 3                      # the _abs question has no evidence
    assert summary["skipped"] == {"abstention": 1}
    assert overall["hit@1"] == pytest.approx(1 / 3)   # multi-session: s0:t0 is evidence
    assert overall["hit@5"] == 1.0
    assert overall["MRR@5"] == pytest.approx((1 / 3 + 1 / 4 + 1) / 3)
    assert summary["rows"]["single-session-user"]["MRR@5"] == pytest.approx(1 / 3)
    assert summary["sha256_ok"] is False
    assert "warning" in capsys.readouterr().err
    saved = {q["qid"]: q for q in json.loads(out.read_text(encoding="utf-8"))["questions"]}
    assert saved["tiny_ms_1"]["evidence"] == ["s0:t0", "s1:t0"]


def test_longmemeval_clock_and_dates():
    item = json.loads(FIXTURE.read_text(encoding="utf-8"))[1]
    mems, evidence = longmemeval.memories_and_evidence(item)
    assert [m.key for m in mems][:2] == ["s0:t0", "s0:t1"] and evidence == ["s1:t1"]
    assert mems[2].created == datetime(2023, 7, 3, 20, 5, tzinfo=timezone.utc)
    assert mems[3].text.startswith("assistant: Preheat the oven")
    assert longmemeval.parse_date("2023/05/20 (Sat) 02:21") == datetime(2023, 5, 20, 2, 21, tzinfo=timezone.utc)
    assert longmemeval.parse_date("nonsense") is None


def test_both_benchmarks_with_the_real_recall(locomo_dir, capsys):
    """End to end through vaultmem.search.engine.recall: shape only, not quality."""
    lme = longmemeval.main([str(FIXTURE), "--limit", "2"])
    assert lme["rows"]["overall"]["n"] == 2
    lo = locomo.main(["--data", str(locomo_dir)])
    assert lo["rows"]["overall"]["n"] == 5
    for summary in (lme, lo):
        for row in summary["rows"].values():
            for key, value in row.items():
                if key != "n" and value is not None:
                    assert 0.0 <= value <= 1.0
        for r in summary["results"]:
            assert r.ms > 0 and len(r.retrieved) <= 10
    assert "time per query" in capsys.readouterr().out
