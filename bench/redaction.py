"""How well the secret screener (`vaultmem.core.redact.scan`) tells secrets from look-alikes.

    python bench/redaction.py             # both sets in bench/data (see below)
    python bench/redaction.py --errors    # also list every miss and every false alarm

Two sets, each a file of texts that hold a secret (prose such as "the
password for db1 is ...", key-value lines, provider tokens, AWS key pairs,
credentials in commands and URLs) and a file of texts that only look like
they might (password policies, rotation schedules, token lifetimes, commit
hashes, UUIDs, references such as $DB_PASSWORD):

    dev        secrets.txt, secret_lookalikes.txt: written with the prose rules,
               the gate in tests/test_secrets.py (every one must be right)
    held out   secrets_heldout.txt, secret_lookalikes_heldout.txt: written after
               the rules were final, never used to tune them: the honest figure

(Named redaction.py, not secrets.py: bench/ goes on sys.path and would shadow the
stdlib module.) One text a line; "{+}" is removed on reading (it splits provider-shaped fakes
so no literal key sits in the repository). Prints one markdown table: per set
the counts, then precision, recall and F1 of "flagged" as the prediction of
"holds a secret", and the scan time per text. Always exits 0.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))

from vaultmem.core.redact import scan  # noqa: E402  (after the sys.path insert above)

DATA = ROOT / "bench" / "data"


def load(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.replace("{+}", "") for line in lines if line.strip() and not line.lstrip().startswith("#")]


SETS = (("dev", "secrets.txt", "secret_lookalikes.txt"),
        ("held out", "secrets_heldout.txt", "secret_lookalikes_heldout.txt"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--errors", action="store_true", help="list every miss and every false alarm")
    args = ap.parse_args(argv)

    print("| set | secrets | caught | look-alikes | false alarms | precision | recall | F1 | scan per text |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    errors = []
    for name, secrets_file, lookalikes_file in SETS:
        secrets, lookalikes = load(DATA / secrets_file), load(DATA / lookalikes_file)
        started = time.perf_counter()
        caught = [text for text in secrets if scan(text)]
        alarms = [text for text in lookalikes if scan(text)]
        per_text_us = (time.perf_counter() - started) / max(1, len(secrets) + len(lookalikes)) * 1e6
        tp, fn, fp = len(caught), len(secrets) - len(caught), len(alarms)
        precision = tp / (tp + fp) if tp + fp else 1.0
        recall = tp / (tp + fn) if tp + fn else 1.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        print(f"| {name} | {len(secrets)} | {tp} | {len(lookalikes)} | {fp} | {precision:.3f} | {recall:.3f} "
              f"| {f1:.3f} | {per_text_us:.0f} µs |")
        errors += [f"{name}, missed: {text}" for text in secrets if text not in caught]
        errors += [f"{name}, false alarm ({', '.join(f.kind for f in scan(text))}): {text}" for text in alarms]
    if args.errors:
        print()
        print("\n".join(f"- {line}" for line in errors) or "no errors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
