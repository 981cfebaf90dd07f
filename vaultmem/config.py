"""Vault settings: `.vaultmem/config.yaml`, every key optional, defaults below.

The file `vaultmem init` writes lists every setting with its default and what
it does, so a person can tune a vault without reading code. Unknown keys are
reported (a typo must not silently do nothing).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path

import yaml

from vaultmem.errors import BadInput

# libyaml's parser when PyYAML has it: every command reads config.yaml, and the pure-Python
# parser took 2.4 ms of it against 0.2 (same values: the resolver and constructor are shared).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# recall.crosslingual: "auto" (route a query that does not look English to the cross-lingual
# model when the vault uses the default model and the package loads) or "off".
CrossLingual = str
CROSSLINGUAL_VALUES = ("auto", "off")


@dataclass(frozen=True)
class Config:
    # FSRS scheduling (the `fsrs` package, FSRS-6 default parameters).
    desired_retention: float = 0.9
    maximum_interval_days: int = 36500
    leech_lapses: int = 8
    # Strength: how much a memory has earned its place, apart from FSRS.
    strength_initial: float = 0.5
    strength_reward: float = 0.15
    strength_decay: float = 0.85
    strength_idle_days: float = 7.0
    strength_floor: float = 0.05
    # Lifecycle: active -> stale -> archived.
    stale_after_days: float = 30.0
    stale_per_use: float = 1.0
    archive_after_floor_days: float = 90.0
    # What `add` gives a new memory.
    default_tier: str = "L1"
    # Recall.
    recall_top_k: int = 5
    model: str = "default"
    # The relevance a hit needs; None ("auto"): the model's calibrated floor (README, Recall).
    recall_min_score: float | None = None
    # The word-by-word agreement a hit found by meaning needs; None ("auto"): the model's (README, Recall).
    recall_min_agreement: float | None = None
    # Rerank the best candidates by word-by-word alignment (search/rerank.py): better ranking, ~20 ms a query.
    recall_rerank_words: bool = False
    # A query that does not look English goes to the cross-lingual model (search/crosslingual.py):
    # "auto" when the default model answers and the package loads; "off": every query to the vault's model.
    recall_crosslingual: CrossLingual = "auto"
    # Notes larger than this are reported and skipped rather than read.
    max_note_bytes: int = 1_000_000
    # Promotion gates (tiers.py).
    l1_sessions: int = 2
    l2_sessions: int = 3
    l2_sessions_explicit: int = 2
    l2_days: int = 2
    l3_projects: int = 2
    l3_days_held: float = 30.0
    # Corrections: look for conflicting memories on add.
    check_conflicts: bool = True
    # Redaction of personal data (secrets are always refused or masked).
    redact_emails: bool = False
    redact_phones: bool = False


# Section layout of config.yaml: section -> {yaml key: Config field}.
SECTIONS: dict[str, dict[str, str]] = {
    "scheduling": {
        "desired_retention": "desired_retention",
        "maximum_interval_days": "maximum_interval_days",
        "leech_lapses": "leech_lapses",
    },
    "strength": {
        "initial": "strength_initial",
        "reward": "strength_reward",
        "decay": "strength_decay",
        "idle_days": "strength_idle_days",
        "floor": "strength_floor",
    },
    "lifecycle": {
        "stale_after_days": "stale_after_days",
        "stale_per_use": "stale_per_use",
        "archive_after_floor_days": "archive_after_floor_days",
    },
    "notes": {"default_tier": "default_tier", "max_note_bytes": "max_note_bytes"},
    "recall": {"top_k": "recall_top_k", "model": "model", "min_score": "recall_min_score",
               "min_agreement": "recall_min_agreement", "rerank_words": "recall_rerank_words",
               "crosslingual": "recall_crosslingual"},
    "promotion": {
        "l1_sessions": "l1_sessions",
        "l2_sessions": "l2_sessions",
        "l2_sessions_explicit": "l2_sessions_explicit",
        "l2_days": "l2_days",
        "l3_projects": "l3_projects",
        "l3_days_held": "l3_days_held",
    },
    "corrections": {"check_conflicts": "check_conflicts"},
    "redaction": {"emails": "redact_emails", "phones": "redact_phones"},
}

DEFAULT_CONFIG_TEXT = """\
# vaultmem settings for this vault. Every key is optional: delete a line to
# go back to its default. Values shown are the defaults.

scheduling:
  desired_retention: 0.9       # FSRS target probability of recall when a memory comes due
  maximum_interval_days: 36500 # longest interval FSRS may schedule
  leech_lapses: 8              # lapses (grades of `again` after learning) that suspend a memory

strength:
  initial: 0.5     # strength of a new memory
  reward: 0.15     # added for each good/easy grade (capped at 1.0), taken for each again (down to the floor)
  decay: 0.85      # multiplied in for each idle period without a grade
  idle_days: 7     # length of an idle period
  floor: 0.05      # strength never falls below this

lifecycle:
  stale_after_days: 30          # active -> stale after this long without a grade or edit...
  stale_per_use: 1              # ...times (1 + this x uses), uses = grades that were not lapses
  archive_after_floor_days: 90  # stale -> archived after this long at the strength floor

notes:
  default_tier: L1         # tier of a memory added by `add` (L0 observed .. L3 durable)
  max_note_bytes: 1000000  # larger files are reported by `health` and skipped

recall:
  top_k: 5         # results `recall` returns by default
  model: default   # embedding model: `default`, or a folder with model.onnx + tokenizer.json
  min_score: auto  # relevance a hit needs (0..1); auto: the model's calibrated floor; 0: never empty
  min_agreement: auto  # word-by-word agreement a hit found by meaning needs (0..1); auto: the model's; 0: off
  rerank_words: false  # rerank the 10 best by word-by-word alignment: better ranking, one model run a query
  crosslingual: auto   # a query not in English is answered by USE multilingual (with model: default); off: never

promotion:               # tiers are earned: evidence = added again or graded good
  l1_sessions: 2         # L0 observed -> L1 remembered after this many distinct sessions
  l2_sessions: 3         # L1 -> L2 (loaded every session) after this many sessions...
  l2_sessions_explicit: 2  # ...or this many if the memory was stated explicitly
  l2_days: 2             # ...over at least this many distinct days
  l3_projects: 2         # L2 -> L3 (durable) once held in this many projects...
  l3_days_held: 30       # ...and held at L2 this many days, uncontested

corrections:
  check_conflicts: true   # on add, look for memories the new one contradicts or repeats

redaction:        # secrets (keys, tokens, passwords, card numbers) are always caught
  emails: false   # also treat email addresses as personal data
  phones: false   # also treat phone numbers as personal data
"""


def load_config(path: Path) -> Config:
    """Read config.yaml; a missing file means all defaults."""
    if not path.exists():
        return Config()
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: not valid YAML ({_first_line(exc)}); "
                       "fix it or delete it to use the defaults") from None
    if not isinstance(data, dict):
        raise BadInput(f"{path}: expected sections like 'scheduling:'; fix it or delete it to use the defaults")
    changes = {}
    types = {f.name: f.type for f in fields(Config)}
    for section, values in data.items():
        keys = SECTIONS.get(section)
        if keys is None or not isinstance(values, dict):
            raise BadInput(f"{path}: unknown section {section!r}; known sections: {', '.join(SECTIONS)}")
        for key, value in values.items():
            if key not in keys:
                raise BadInput(f"{path}: unknown key {section}.{key}; known: {', '.join(keys)}")
            name = keys[key]
            changes[name] = _coerce(path, f"{section}.{key}", value, types[name], name)
    return replace(Config(), **changes)


# The values a number setting may take (inclusive): outside them a setting would make vaultmem
# silently useless (recall.top_k 0 answers nothing) or write notes out of their documented range.
_RANGES = {
    "desired_retention": (0.01, 0.99), "maximum_interval_days": (1, None), "leech_lapses": (1, None),
    "strength_initial": (0.0, 1.0), "strength_reward": (0.0, 1.0), "strength_decay": (0.0, 1.0),
    "strength_idle_days": (0.01, None), "strength_floor": (0.0, 1.0), "stale_after_days": (0.01, None),
    "stale_per_use": (0.0, None), "archive_after_floor_days": (0.0, None), "recall_top_k": (1, 1000),
    "max_note_bytes": (1024, None), "l1_sessions": (1, None), "l2_sessions": (1, None),
    "l2_sessions_explicit": (1, None), "l2_days": (1, None), "l3_projects": (1, None), "l3_days_held": (0.0, None),
}


# Text settings with a fixed set of values (a tier outside them failed every add, naming no setting).
# (The tiers are core/model.py's TIERS, which this base module cannot import; a test holds them equal.)
_CHOICES = {"default_tier": ("L0", "L1", "L2", "L3")}


def _coerce(path: Path, key: str, value, type_name: str, name: str = ""):
    converters = {"float": float, "int": _whole, "str": str, "bool": _boolean, "float | None": _score_or_auto,
                  "CrossLingual": _crosslingual}
    try:
        coerced = converters[type_name](value)
    except (TypeError, ValueError, OverflowError):
        wanted = {"float | None": "number from 0 to 1, or auto", "float": "number", "int": "whole number",
                  "CrossLingual": "value: " + " or ".join(CROSSLINGUAL_VALUES)}.get(type_name, type_name)
        raise BadInput(f"{path}: {key} should be a {wanted}, got {value!r}") from None
    choices = _CHOICES.get(name)
    if choices is not None and coerced not in choices:
        raise BadInput(f"{path}: {key} should be one of {', '.join(choices)}, got {value!r}")
    low, high = _RANGES.get(name, (None, None))
    if (low is not None and not coerced >= low) or (high is not None and not coerced <= high):
        span = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise BadInput(f"{path}: {key} should be {span}, got {value!r}")
    return coerced


def _whole(value) -> int:
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(value)
    return int(value)


def _score_or_auto(value) -> float | None:
    if value is None or str(value).strip().lower() == "auto":
        return None
    if isinstance(value, bool) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(value)
    return float(value)


def _crosslingual(value) -> str:
    if value is False:  # YAML reads a bare `off` as false
        return "off"
    text = str(value).strip().lower()
    if text not in CROSSLINGUAL_VALUES:
        raise ValueError(value)
    return text


def _boolean(value) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "on", "1"):
        return True
    if text in ("false", "no", "off", "0"):
        return False
    raise ValueError(value)


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
