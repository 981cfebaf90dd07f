"""vaultmem.core.redact: what it flags, what it leaves alone, and how it masks.

Every secret below is fake and assembled by concatenation, so this file holds
no literal that a secret scanner (ours, GitHub's, a pre-commit hook) would flag.
"""

from __future__ import annotations

import time
from itertools import pairwise
from pathlib import Path

import pytest

from vaultmem.core.redact import Finding, Policy, describe, mask, scan

ALL = Policy(emails=True, phones=True)
MIX = "a1B2" * 10  # 40 characters drawing on lower, upper and digits


def fake_card(prefix: str, length: int) -> str:
    """A number of `length` digits starting with `prefix` that passes the Luhn check."""
    body = prefix + "7" * (length - len(prefix) - 1)
    for check in "0123456789":
        digits = body + check
        total = sum(
            (d * 2 - 9 if d * 2 > 9 else d * 2) if i % 2 else d
            for i, d in enumerate(int(c) for c in reversed(digits))
        )
        if total % 10 == 0:
            return digits
    raise AssertionError


def pem(label: str, end: bool = True, newline: str = "\n") -> str:
    """A private key block with a fake body, assembled so that no literal header sits in this file."""
    dashes = "-" * 5
    lines = [f"{dashes}BEGIN {label}{dashes}"] + ["MIIEow" + "IBAAKCAQEA" * 6] * 3
    return newline.join(lines + ([f"{dashes}END {label}{dashes}"] if end else []))


VISA, AMEX = fake_card("4", 16), fake_card("34", 15)
HOOK = "https://hooks.slack.com/" + "services/T0A1B2C3D/B4E5F6G7H/" + MIX[:24]
RSA, OPENSSH, EC = "RSA " + "PRIVATE KEY", "OPENSSH " + "PRIVATE KEY", "EC " + "PRIVATE KEY"

# (text, kind, the exact text the finding must cover)
POSITIVES = [
    ("key AKIA" + "Z7Q2" * 4 + " in use", "AWS access key", "AKIA" + "Z7Q2" * 4),
    ("temp ASIA" + "X9Y8" * 4, "AWS access key", "ASIA" + "X9Y8" * 4),
    ("aws_secret_access_key = " + "wJa/" * 10, "AWS secret key", "wJa/" * 10),
    ("clone with ghp_" + "a1B2" * 9, "GitHub token", "ghp_" + "a1B2" * 9),
    ("gho_" + "Zz09" * 9 + " oauth", "GitHub token", "gho_" + "Zz09" * 9),
    ("fine-grained github_pat_" + "11AB" * 6 + "_" + "x9Y8" * 15, "GitHub token",
     "github_pat_" + "11AB" * 6 + "_" + "x9Y8" * 15),
    ("gitlab glpat-" + "Ab3_" * 5, "GitLab token", "glpat-" + "Ab3_" * 5),
    ("HF_TOKEN is hf_" + "aB3dE5gH7j" * 3 + "K9mN for the model hub", "Hugging Face token",
     "hf_" + "aB3dE5gH7j" * 3 + "K9mN"),
    ("slack xox" + "b-1234567890-" + "AbCd" * 6, "Slack token", "xox" + "b-1234567890-" + "AbCd" * 6),
    ("post to " + HOOK, "Slack webhook URL", HOOK),
    ("stripe sk_live_" + "4eC3" * 6, "Stripe key", "sk_live_" + "4eC3" * 6),
    ("restricted rk_live_" + "9Qw2" * 6, "Stripe key", "rk_live_" + "9Qw2" * 6),
    ("test mode sk_test_" + "4eC3" * 6, "Stripe key", "sk_test_" + "4eC3" * 6),
    ("openai sk-" + MIX + MIX[:8], "OpenAI API key", "sk-" + MIX + MIX[:8]),
    ("openai sk-proj-" + MIX + "_" + MIX, "OpenAI API key", "sk-proj-" + MIX + "_" + MIX),
    ("claude sk-ant-api03-" + MIX * 2 + "-AA", "Anthropic API key", "sk-ant-api03-" + MIX * 2 + "-AA"),
    ("maps AIza" + "Sy" + "D3f4" * 8 + "_", "Google API key", "AIzaSy" + "D3f4" * 8 + "_"),
    ("npm_" + "n7P3" * 9 + " publish", "npm token", "npm_" + "n7P3" * 9),
    ("pypi-AgEI" + "cHlwaS5vcmc" + MIX * 2, "PyPI token", "pypi-AgEIcHlwaS5vcmc" + MIX * 2),
    ("jwt eyJ" + "hbGciOiJIUzI1NiJ9" + ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0" + "." + "SflKxwRJ" * 4,
     "JWT", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + "SflKxwRJ" * 4),
    (pem(RSA) + "\nafter", "private key", pem(RSA)),
    ("deploy key:\n" + pem(OPENSSH), "private key", pem(OPENSSH)),
    ('{"private_key": "' + pem("PRIVATE KEY", newline="\\n") + '\\n"}', "private key",
     pem("PRIVATE KEY", newline="\\n")),
    (pem(EC, end=False) + "\nnext paragraph", "private key", pem(EC, end=False)),  # cut short
    ("curl -H 'Authorization: Bearer " + MIX + "' api", "bearer token", MIX),
    ("password = " + "hunter2x", "password", "hunter2x"),
    ("pwd: " + "S3cr3t!!", "password", "S3cr3t!!"),
    ("export DB_PASSWORD=" + "Tr0ub4dor&3", "password", "Tr0ub4dor&3"),
    ('{"db_passwd": "' + "p4ssw0rd99" + '"}', "password", "p4ssw0rd99"),
    ("MYSQL_ROOT_PASS=" + "Zx81spectrum", "password", "Zx81spectrum"),
    ("discord_token: " + "MTk4NjIy" + "NDgzNDcx.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4", "token",
     "MTk4NjIyNDgzNDcx.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4"),
    ("admin password: " + "sunshine42.", "password", "sunshine42"),
    ('{"api_key": "' + MIX[:20] + '"}', "API key", MIX[:20]),
    ("X-API-Key: " + MIX[:24], "API key", MIX[:24]),
    ("SECRET_KEY = '" + MIX[:30] + "'", "secret", MIX[:30]),
    ("client_secret: " + MIX[:16], "secret", MIX[:16]),
    ("GITHUB_TOKEN=" + "3f2a9c1d" * 4, "token", "3f2a9c1d" * 4),
    ("postgres://app:" + "s3cr3tPw" + "@db.internal:5432/app", "URL password", "s3cr3tPw"),
    ("redis://:" + "Zq9xw2" + "@cache:6379", "URL password", "Zq9xw2"),
    ("card " + VISA, "credit card number", VISA),
    ("card " + " ".join(VISA[i:i + 4] for i in range(0, 16, 4)) + " exp 12/29", "credit card number",
     " ".join(VISA[i:i + 4] for i in range(0, 16, 4))),
    ("amex " + fake_card("37", 15), "credit card number", fake_card("37", 15)),
    ("mc " + "-".join(fake_card("2221", 16)[i:i + 4] for i in range(0, 16, 4)), "credit card number",
     "-".join(fake_card("2221", 16)[i:i + 4] for i in range(0, 16, 4))),
    ("amex " + AMEX[:4] + " " + AMEX[4:10] + " " + AMEX[10:], "credit card number",
     AMEX[:4] + " " + AMEX[4:10] + " " + AMEX[10:]),
    ("visa " + " ".join(fake_card("4", 19)[i:i + 4] for i in range(0, 19, 4)), "credit card number",
     " ".join(fake_card("4", 19)[i:i + 4] for i in range(0, 19, 4))),
    ("discover " + fake_card("6011", 16), "credit card number", fake_card("6011", 16)),
    ("jcb " + fake_card("35", 16), "credit card number", fake_card("35", 16)),
    ("mail ada.lovelace+notes@example.co.uk today", "email address", "ada.lovelace+notes@example.co.uk"),
    ("mailto:bob@example.org", "email address", "bob@example.org"),
    ("call +1 (202) 555-0143", "phone number", "+1 (202) 555-0143"),
    ("call +44 20 7946 0958", "phone number", "+44 20 7946 0958"),
    ("call +33 6 12 34 56 78", "phone number", "+33 6 12 34 56 78"),
    ("call +4915112345678 now", "phone number", "+4915112345678"),
    ("call (202) 555-0143", "phone number", "(202) 555-0143"),
    ("call 202-555-0143", "phone number", "202-555-0143"),
    ("call 202.555.0143", "phone number", "202.555.0143"),
    ("call 020 7946 0958", "phone number", "020 7946 0958"),
    ("call 06 12 34 56 78", "phone number", "06 12 34 56 78"),
    (pem("PGP " + "PRIVATE KEY BLOCK"), "private key", pem("PGP " + "PRIVATE KEY BLOCK")),
    ("key:\n" + pem("ENCRYPTED " + "PRIVATE KEY"), "private key", pem("ENCRYPTED " + "PRIVATE KEY")),
    ('headers = {"Authorization": "Bearer ' + MIX + '"}', "bearer token", MIX),
]


@pytest.mark.parametrize("text, kind, secret", POSITIVES,
                         ids=[f"{i}-{k}" for i, (_, k, _) in enumerate(POSITIVES)])
def test_each_kind_is_found_with_its_exact_span(text, kind, secret):
    findings = scan(text, ALL)
    assert [(f.kind, text[f.start:f.end]) for f in findings] == [(kind, secret)]


NEGATIVES = [
    "the password policy requires 12 characters",
    "set password: see 1Password",
    "password reset link sent",
    "the token budget is 4000",
    "max_tokens: 4096",
    "token: 4000",
    "commit 3f2a9c1d4e5b6a7f8091a2b3c4d5e6f708192a3b",
    "id 123e4567-e89b-12d3-a456-426614174000",
    "we use sk-learn for the baseline",
    "sk-learn-compatible-estimator-wrapper-for-pipelines",
    "card number ends in 4242",
    "due 2026-11-30 at 10:30",
    "on 01.02.2026 10:30 the release",
    "version 1.2.3.4 shipped",
    "server at 192.168.100.200",
    "order 12345678 shipped, ticket 4521",
    "order #202-555-0143",
    "password: <password>",
    "password = ***",
    "password=xxxxxx",
    "password: $PASSWORD",
    "DB_PASSWORD=${DB_PASSWORD}",
    "password: {{ vault_db_password }}",
    "password: {{vault_db_password}}",
    "password: %DB_PASSWORD%",
    "password: !vault |",
    "password: ~/.secrets/db",
    "password: changeme",
    "password: [hidden]",
    "password: aaaaaaaa",
    "password: abc",
    "password: your_password",
    'password: ""',
    "password_min_length: 12",
    "OLDPWD=/home/ada/projects",
    "secret: don't tell",
    "Authorization: Bearer $TOKEN",
    "Authorization: Bearer <token>",
    "postgres://app:${PGPASSWORD}@db/app",
    "postgres://localhost:5432/app",
    "https://example.com:8080/path@v2",
    "card 4111 1111 1111 1112",  # fails Luhn
    "id " + fake_card("9", 16),  # passes Luhn, unknown issuer
    pem("PUBLIC KEY"),
    "the file starts with " + pem(OPENSSH).splitlines()[0] + " and that is all",
    pem(RSA).splitlines()[0] + "\n...\n" + pem(RSA).splitlines()[-1],
    "git@github.com:ada/vaultmem.git",
    "logo@2x.png",
    "ISBN 978-3-16-148410-0",
    "SSN format 123-45-6789",
    "timestamp 1732924800123",
    "snowflake id 1203456789012345678",
    " ".join(fake_card("4", 16)),  # a row of single digits is not a card
    "calendar 23 24 25 26 27 28 29 30",
    "amex " + fake_card("37", 16),  # Amex numbers have 15 digits
    # code quoted in a memory: the value is a call, an attribute, a subscript or another variable
    "password = getpass.getpass()",
    "password = self._get_param('Password')",
    "token = self._input.LA(1)",
    "password: Optional[HiddenText] = None",
    "api_key = os.environ['OPENAI_API_KEY']",
    '"password": validate_password,',
    "password = user_pass",
    "ERRORTOKEN: TokenType = native",
    "self.secret = gen_salt(20)",
    "ERRORTOKEN = PythonTokenTypes.ERRORTOKEN",
    "passphrase=passphrase",
    "First pass: determine the widths",
    "bypass: enabled-by-default",
    '"AWS::SecretsManager::Secret": "c85175a4ebcce361"',
    # the documentation examples AWS itself publishes
    "AKIA" + "IOSFODNN7" + "EXAMPLE",
    "aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY",
    "postgres://user:pass@localhost/db",
    "https://foo:bar@example.com/",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_look_alikes_are_not_flagged(text):
    assert scan(text, ALL) == []


def test_personal_data_is_opt_in():
    text = "ada@example.org, +44 20 7946 0958"
    assert scan(text) == []
    assert [f.kind for f in scan(text, Policy(emails=True))] == ["email address"]
    assert [f.kind for f in scan(text, Policy(phones=True))] == ["phone number"]
    assert [f.kind for f in scan(text, ALL)] == ["email address", "phone number"]


def test_mask_keeps_everything_else_byte_for_byte():
    token = "ghp_" + "a1B2" * 9
    text = "Deploy notes:\n  export DB_PASSWORD=" + "Tr0ub4dor&3\n\tuse " + token + " — ok ✓\r\n"
    masked = mask(text, scan(text))
    assert masked == (
        "Deploy notes:\n  export DB_PASSWORD=[REDACTED:password]\n"
        "\tuse [REDACTED:GitHub token] — ok ✓\r\n"
    )
    assert scan(masked) == []  # masking is a fixed point: the markers themselves do not trigger


def test_mask_of_nothing_is_the_text():
    assert mask("plain text", []) == "plain text"
    assert mask("plain text", scan("plain text")) == "plain text"


def test_url_password_masks_only_the_password():
    text = "DATABASE_URL=postgres://app:" + "s3cr3tPw@db.internal:5432/app"
    masked = mask(text, scan(text))
    assert masked == "DATABASE_URL=postgres://app:[REDACTED:URL password]@db.internal:5432/app"


def test_findings_are_sorted_and_never_overlap():
    jwt = "eyJ" + "hbGciOiJIUzI1NiJ9" + ".eyJ" + "zdWIiOiIxIn0xxxxxx" + "." + "SflKxwRJ" * 4
    text = "token = " + jwt + " and AKIA" + "Z7Q2" * 4 + " and password=" + "hunter22"
    findings = scan(text)
    # The JWT and the generic `token = ...` rule cover the same span: the specific kind wins.
    assert [f.kind for f in findings] == ["JWT", "AWS access key", "password"]
    assert all(a.end <= b.start for a, b in pairwise(findings))


def test_overlap_keeps_the_longer_kind_and_covers_both_spans():
    # An Anthropic key also fits the OpenAI shape: same span, the earlier (more specific) rule wins.
    key = "sk-ant-api03-" + MIX
    assert [f.kind for f in scan(key)] == ["Anthropic API key"]
    # The private key block swallows the AWS key written inside it.
    text = pem("PRIVATE KEY").replace("MIIEow", "AKIA" + "Z7Q2" * 4 + "\n", 1)
    assert scan(text) == [Finding("private key", 0, len(text))]


def test_mask_merges_overlapping_findings_without_leaking_a_tail():
    text = "0123456789abcdef"
    masked = mask(text, [Finding("secret", 2, 8), Finding("token", 5, 12)])
    assert masked == "01[REDACTED:secret][REDACTED:token]cdef"
    assert "8" not in masked and "b" not in masked


@pytest.mark.parametrize("number, ok", [
    (VISA, True),
    (VISA[:-1] + str((int(VISA[-1]) + 1) % 10), False),
    (fake_card("51", 16), True),
    (fake_card("2720", 16), True),
    (fake_card("2721", 16), False),  # past the Mastercard 2-series range
    (fake_card("65", 19), True),
    (fake_card("4", 12), False),  # too short
])
def test_credit_cards_need_luhn_and_a_known_issuer(number, ok):
    assert bool(scan("card " + number)) is ok


@pytest.mark.parametrize("text, phrase", [
    ("AKIA" + "Z7Q2" * 4 + " password=" + "hunter22", "an AWS access key and a password"),
    ("password=" + "hunter22 pwd=" + "hunter33", "2 passwords"),
    ("a@example.org b@example.org ghp_" + "a1B2" * 9 + " npm_" + "n7P3" * 9,
     "2 email addresses, a GitHub token and an npm token"),
    ("nothing here", "nothing sensitive"),
])
def test_describe_is_a_short_phrase(text, phrase):
    assert describe(scan(text, ALL)) == phrase


@pytest.mark.parametrize("text, _kind, secret", POSITIVES)
def test_describe_and_mask_never_contain_the_secret(text, _kind, secret):
    findings = scan(text, ALL)
    assert secret not in describe(findings)
    assert secret not in mask(text, findings)


@pytest.mark.parametrize("unit", [
    pem(RSA).splitlines()[0] + "\n",  # headers with no END once made each one scan to the end of the text
    "a.", "a@", "http://a:", "aws_secret", "x_password: ", "1234-", "+1 ", "0 12 ", "eyJ",
])
def test_adversarial_input_is_scanned_in_linear_time(unit):
    text = unit * (200_000 // len(unit))
    start = time.perf_counter()
    scan(text, ALL)
    assert time.perf_counter() - start < 3


@pytest.mark.parametrize("path", ["vaultmem/core/redact.py", "tests/test_redact.py"])
def test_these_files_hold_no_secret_themselves(path):
    text = (Path(__file__).resolve().parents[1] / path).read_text(encoding="utf-8")
    assert [(f.kind, text[f.start:f.end]) for f in scan(text)] == []


def _bench_texts() -> list[str]:
    data = Path(__file__).resolve().parents[1] / "bench" / "data"
    lines = []
    for name in ("secrets.txt", "secret_lookalikes.txt", "secrets_heldout.txt", "secret_lookalikes_heldout.txt"):
        lines += [line.replace("{+}", "") for line in (data / name).read_text(encoding="utf-8").splitlines()
                  if line.strip() and not line.lstrip().startswith("#")]
    return lines


def test_the_words_a_rule_needs_never_change_what_a_scan_finds(monkeypatch):
    """Each rule is tried only on texts holding one of its words (a fast pre-check): every
    text of this file and of the bench's sets, as written, upper-cased and with the letters a
    case-insensitive pattern reads as ASCII ones (dotted and dotless i, long s, the Kelvin
    sign), gets the findings it gets with every rule tried on every text."""
    from vaultmem.core import redact

    texts = [text for text, _kind, _secret in POSITIVES] + list(NEGATIVES) + _bench_texts()
    odd_letters = str.maketrans({"i": "\u0131", "I": "\u0130", "s": "\u017f", "k": "\u212a", "K": "\u212a"})
    texts += [t.upper() for t in texts] + [t.translate(odd_letters) for t in texts]
    with_words = [(scan(t), scan(t, ALL)) for t in texts]
    monkeypatch.setattr(redact, "_scan_short", lambda text, policy: tuple(redact._scan(text, policy)))
    for name in ("_SECRETS", "_EMAILS", "_PHONES"):  # no words: always tried
        monkeypatch.setattr(redact, name, [(*rule[:-1], ()) for rule in getattr(redact, name)])
    monkeypatch.setattr(redact, "_CONTEXTUAL", [(*rule[:-1], ("",)) for rule in redact._CONTEXTUAL])  # in every text
    every_rule = [(scan(t), scan(t, ALL)) for t in texts]
    assert sum(bool(found) for found, _ in every_rule) > 100  # the sets hold secrets, found as before
    assert with_words == every_rule
