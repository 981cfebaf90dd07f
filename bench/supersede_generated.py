"""Supersede precision of `add` on generated memories whose truth is known.

bench/peers.py's generator writes facts from 20 templates (services, people,
travel, home, budgets ...); 7% restate an earlier fact with one value changed (an
update), 5% repeat one. Each template carries the question that asks for its fact
("which port does {svc} listen on in {env}"): the slots of that question are the
fact's subject. Every memory goes through `Vault.add_many` with the checks on,
real model, and each supersede is judged:

- right: the two facts have the same subject (same template, same question
  slots): an update of that fact, or a fact drawn again for a subject the data
  already held (the generator cannot tell those from an update, neither can a reader);
- wrong: another subject ("the flight to Lisbon ..." superseding "the flight to
  Oslo ..."): a true memory hidden from recall.

Recall: of the restatements, how many superseded a note of their fact, and how many
contested one instead (a restatement also says its fact "in other words around it":
another source, another date, so two things differ and `add` is unsure).

    python bench/supersede_generated.py [--memories 3000] [--seed 7] [--errors 10]
"""

from __future__ import annotations

import argparse
import collections
import string
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
if str(ROOT) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))

from peers import TEMPLATES, MemoryGen  # noqa: E402


class TracedGen(MemoryGen):
    """The peers' generator, asked what each memory is about and which fact it goes back to."""

    def subject(self, i: int) -> tuple:
        """The template and the values of its question's slots: what the fact is about (as a
        set: "does the user prefer tabs or spaces" asks about a reversed preference too)."""
        t, values = self.facts[i]
        slots = [name for _lit, name, _spec, _conv in string.Formatter().parse(TEMPLATES[t][2]) if name]
        return (t, *sorted(values[s] for s in slots))

    def root(self, i: int) -> int:
        """The new fact memory `i` goes back to, through restatements and repeats."""
        while self.origins[i] is not None:
            i = self.origins[i]
        return i

    def restates(self, i: int) -> bool:
        """Memory `i` says an earlier fact with a value changed (a repeat says it unchanged)."""
        origin = self.origins[i]
        return origin is not None and self.facts[i][1] is not self.facts[origin][1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--errors", type=int, default=10, help="wrong supersedes to show")
    args = parser.parse_args(argv)

    import vaultmem

    gen = TracedGen(args.seed)
    memories = [gen.next() for _ in range(args.memories)]
    with tempfile.TemporaryDirectory() as work:
        root = Path(work) / "vault"
        vaultmem.init_vault(root)
        start = time.perf_counter()
        results = vaultmem.Vault(root).add_many([{"text": text, "namespace": ns} for text, ns in memories])
        seconds = time.perf_counter() - start
    index = {r.note.id: i for i, r in enumerate(results) if getattr(r, "action", "") == "added"}
    judged: collections.Counter = collections.Counter()
    wrong: list[tuple[str, str]] = []
    restated_found = contested_own = 0
    for i, result in enumerate(results):
        for old_id in getattr(result, "superseded", ()):
            j = index[old_id]
            right = gen.subject(i) == gen.subject(j)
            judged["right" if right else "wrong"] += 1
            if not right:
                wrong.append((memories[i][0], memories[j][0]))
            restated_found += gen.restates(i) and gen.root(i) == gen.root(j)
        contested_own += gen.restates(i) and any(
            gen.root(index[old_id]) == gen.root(i) for old_id in getattr(result, "contested", ()))
    restatements = sum(map(gen.restates, range(len(memories))))
    superseded = judged["right"] + judged["wrong"]
    print(f"{args.memories} generated memories (seed {args.seed}), add_many with checks: {seconds:.0f} s\n")
    print("| restatements | supersedes | same subject | other subject (wrong) | precision "
          "| restatements superseding their fact | ... contesting it |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    caught = restated_found / max(1, restatements)
    print(f"| {restatements} | {superseded} | {judged['right']} | {judged['wrong']} | "
          f"{judged['right'] / max(1, superseded):.3f} | {restated_found} ({caught:.2f}) | {contested_own} |")
    for new, old in wrong[:args.errors]:
        print(f"\n- new: {new}\n  old: {old}")


if __name__ == "__main__":
    main()
