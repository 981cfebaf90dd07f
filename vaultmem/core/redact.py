"""Find secrets (and, if asked, personal data) in text before it is written.

A vault is a git repository of markdown notes, often pushed somewhere, so a
secret that lands in a note is hard to take back: it sits in history forever.
Every write passes through `scan` first and is refused if anything is found;
`mask` rewrites text with each finding replaced by `[REDACTED:<kind>]`, and
`describe` names what was found for an error message without quoting it.

Each rule below is (kind, pattern, validator). A pattern with a group named
`v` reports only that group, so in `password = ...` only what follows the
`=` is masked. Validators turn away look-alikes, because a false alarm on
every "password policy" memory would teach people to switch the filter off:

- an assigned password must be 6+ characters with no spaces and not a
  placeholder or a reference (`<password>`, `***`, `xxx`, `changeme`,
  `$PASSWORD`, `${VAR}`, `{{ var }}`, a path, a URL) or a piece of code
  (`getpass()`, `self.password`, `os.environ[`);
- an assigned token, secret or API key must also look random: letters mixed
  with digits (or 20+ characters mixing upper and lower case);
- a card number must fit an issuer's prefix and length and pass Luhn;
- a phone number needs separators or a +CC, and dates are turned away;
- a secret told in prose ("the password for db1 is hunter2x", "my api key
  is ...") must look like one: letters with digits or symbols, all digits,
  or quoted; never a word or a hyphenated compound ("JWT-based", "md5-hashed"),
  a technical name (base64, sha256, ed25519), a password manager, and it must
  end the clause ("the password is 12 characters long" holds no password);
- a 40-character AWS secret access key has no prefix of its own, so it counts
  only with AWS context nearby: an access key id, or the words aws or secret.

Secrets are always looked for. Emails and phone numbers are personal data a
memory may legitimately hold, so they are looked for only when the policy asks.
Pure: stdlib `re` only, no I/O.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    kind: str  # e.g. "AWS access key", "password", "email address"
    start: int  # span in the scanned text
    end: int


@dataclass(frozen=True)
class Policy:
    emails: bool = False  # personal data is opt-in
    phones: bool = False


# -- validators ---------------------------------------------------------------

# $VAR ${VAR} %VAR% <placeholder> {{ template }} [hidden] !vault-tag /path ~/path ./path, a URL.
_REFERENCE = re.compile(r"^(?:[$<{/\[]|%\w+%$|![a-z]+$|~/|\.\.?/|\[REDACTED)|://")
# Code, not a value: a call or subscript (getpass(, os.environ[), attribute access (self.token),
# or another variable named for what it holds (validate_password, user_pass).
_CODE = re.compile(
    r"^[A-Za-z_][\w.]*[(\[]|^[A-Za-z_]+(?:\.[A-Za-z_]+)+$|^\w*[_.](?i:pass|pwd|secret|token|key)\w*$"
)
_PLACEHOLDER = re.compile(
    r"(?i)^(?:changeme|change[_-]?me|pass|password\d*|passwd|passphrase|pwd?|secret|token|api[_-]?key"
    r"|redacted|hidden|none|null|nil|true|false|empty|undefined|required|optional|example|sample|placeholder"
    r"|dummy|todo|tbd|foo|bar|baz|your[\w-]*|my[_-]?(?:password|secret|token)|x+|\*+|\.+|-+|#+)$"
    r"|EXAMPLE"  # AWS's documentation keys end in EXAMPLE / EXAMPLEKEY
)


def _plausible(value: str) -> bool:
    """Not a placeholder, a reference to somewhere else, code, or one character repeated."""
    return not (_REFERENCE.search(value) or _PLACEHOLDER.search(value) or _CODE.search(value)
                or len(set(value)) == 1)


def _password(value: str) -> bool:
    return len(value) >= 6 and _plausible(value)


def _random(value: str) -> bool:
    """Token-like: 8+ characters mixing letters and digits (or 20+ mixing upper and lower case)."""
    has = [re.search(c, value) is not None for c in ("[a-z]", "[A-Z]", "[0-9]")]
    mixed = (has[0] or has[1]) and has[2] if len(value) < 20 else sum(has) >= 2
    return len(value) >= 8 and mixed and _plausible(value)


# Issuer prefixes with their lengths: Visa, Mastercard (51-55, 2221-2720), Amex, Discover and JCB.
_CARD = re.compile(
    r"4(?:\d{12}|\d{15}|\d{18})|(?:5[1-5]\d\d|222[1-9]|22[3-9]\d|2[3-6]\d\d|27[01]\d|2720)\d{12}"
    r"|3[47]\d{13}|(?:6011|65\d\d|35\d\d)\d{12,15}"
)


# What follows "the password is" in prose without being one.
# JWT-based, md5-hashed, per-project: words joined by hyphens.
_PROSE_WORDISH = re.compile(r"^[A-Za-z0-9]*[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z]{2,})+$")
_PROSE_NAMES = re.compile(
    r"(?i)^(?:base(?:32|58|64)|sha-?\d+|md5|ed25519|x25519|rsa-?\d+|aes-?\d+|[hre]s\d{3}|x\.?509|pbkdf2"
    r"|argon2(?:id|i|d)?|utf-?8|pkcs#?\d+|1password|bitwarden|lastpass|keepass(?:xc)?|dashlane|keychain)$"
)
# A quoted value that is a verdict on the password, not the password.
_PROSE_VERDICTS = re.compile(
    r"(?i)^(?:invalid|incorrect|wrong|expired|required|missing|empty|blank|weak|strong|too short|too long"
    r"|not set|unknown|forgotten|locked)$"
)


def _prose_secret(value: str) -> bool:
    """A value told in prose: letters with digits or symbols, or 6+ digits; never a word."""
    if len(value) < 6 or not _plausible(value) or _PROSE_WORDISH.match(value) or _PROSE_NAMES.match(value):
        return False
    if value.isdigit():
        return True
    letters = re.search(r"[A-Za-z]", value) is not None
    return letters and re.search(r"[^A-Za-z]", value) is not None


def _quoted_secret(value: str) -> bool:
    """A quoted value, spaces allowed ("S3cure Pass 77"); not padded like code (`" + var + "`), not a verdict."""
    return (len(value) >= 6 and value == value.strip() and _plausible(value)
            and not _PROSE_VERDICTS.match(value) and not re.search(r"\s[+,]\s", value))


def _aws_secret(value: str) -> bool:
    """40 base64 characters mixing upper, lower and digits: not a hex hash, a word or a path."""
    has = [re.search(c, value) is not None for c in ("[a-z]", "[A-Z]", "[0-9]")]
    return all(has) and "//" not in value and _plausible(value)


def _card(value: str) -> bool:
    digits = re.sub(r"\D", "", value)
    if not _CARD.fullmatch(digits):
        return False
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch) * (1 + i % 2)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def _pem_body(value: str) -> bool:
    """A key block with a body, not a header quoted in prose or a `...` placeholder."""
    return re.search(r"[A-Za-z0-9+/]{32}", value) is not None


def _digits(lo: int, hi: int) -> Callable[[str], bool]:
    return lambda value: lo <= len(re.sub(r"\D", "", value)) <= hi


def _national(value: str) -> bool:
    """9-12 digits, and not a day-month-year date such as 01.02.2026."""
    return _digits(9, 12)(value) and not re.match(r"\d\d?([./-])\d\d?\1\d{2,4}\b", value)


# -- rules --------------------------------------------------------------------

_B = r"(?<![\w-])"  # token boundaries: not inside a longer identifier
_E = r"(?![\w-])"
# A value after `=` / `:`: no spaces or quotes, not ending in prose punctuation.
_VALUE = r"""(?P<v>[^\s"'`]*[^\s"'`.,;:)\]}>])"""
_PEM = r"(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"  # RSA, EC, OPENSSH, ENCRYPTED, PGP ...
_SEP = r"""["']?[ \t]*(?::=|=>|=|:)[ \t]*["']?"""


def _assignment(keys: str) -> re.Pattern[str]:
    """`<...key> = value` in env files, YAML, JSON, code: the key may carry a prefix (DB_PASSWORD)."""
    return re.compile(rf"(?i)(?<![\w.:-])[\w.-]{{0,40}}?(?:{keys}){_SEP}{_VALUE}")


# (kind, pattern, validator, words): a pattern can match only where one of `words` is in the
# text, lowered (`_folded`); none: always tried. Most texts hold none of them, and a word test
# costs far less than the pattern (a scan of a short memory 69 -> 19 us).
Rule = tuple[str, re.Pattern, Callable[[str], bool] | None, tuple[str, ...]]

# Prose: "<the/my ...> password <for the admin console> is <value>", the value ending the clause.
_PROSE_KEY = (r"(?:pass(?:word|wd|phrase|code)|pwd|pin(?:[ \t]+code)?|api[ \t_-]?key|access[ \t_-]?key"
              r"|secret(?:[ \t_-]?(?:access[ \t_-]?)?key)?|client[ \t_-]?secret|credentials?"
              r"|(?:auth|access|api|bearer|refresh|session|bot|deploy)[ \t_-]?token|token)")
_PROSE_VERB = (r"(?:[ \t]*[:=]|[ \t]+(?:(?:has[ \t]+been[ \t]+|was[ \t]+|is[ \t]+)?(?:set|changed|reset)[ \t]+to"
               r"|is[ \t]+(?:now|still|actually)|will[ \t]+be|became|is|was|are|were))")
_PROSE_NEEDS = ("pass", "pwd", "pin", "api", "access", "secret", "credential", "token")  # each _PROSE_KEY
_PROSE_WORD = r"[^\s.,;:!?\"'`=]{1,30}"
_PROSE_QUALIFIER = rf"(?:[ \t]+(?:for|of|to|on|at|in)[ \t]+{_PROSE_WORD}(?:[ \t]+{_PROSE_WORD}){{0,3}}?)?"
_CLAUSE_END = (r"(?=[.,;:!?)\]]*(?:\s*$|[ \t]+(?:and|for|on|in|at|but|so|if|to|from|until|when|which|while"
               r"|since|because|or|[-—(])\b|[ \t]+[-—(]|[,;:!?)\]]|\.(?:\s|$)))")


def _prose(value_pattern: str) -> re.Pattern[str]:
    return re.compile(rf"(?i)(?<![\w-]){_PROSE_KEY}{_PROSE_QUALIFIER}{_PROSE_VERB}[ \t]+"
                      rf"{value_pattern}", re.MULTILINE)

_SECRETS: list[Rule] = [
    ("private key", re.compile(rf"-----BEGIN {_PEM}(?:[^-]|-(?!----))*-----END {_PEM}"), _pem_body, ("-----begin",)),
    # Cut short (no END line): the header and the base64 lines right after it.
    ("private key", re.compile(
        rf"-----BEGIN {_PEM}(?:[ \t]*(?:\r?\n|\\n)[ \t]*[A-Za-z0-9+/=]{{16,}})*"), _pem_body, ("-----begin",)),
    ("AWS access key", re.compile(rf"{_B}(?:AKIA|ASIA)[A-Z0-9]{{16}}{_E}"), _plausible, ("akia", "asia")),
    ("AWS secret key", re.compile(
        rf"(?i)(?<![\w.:-])[\w.-]{{0,20}}?aws[\w.-]{{0,20}}?secret[\w.-]{{0,20}}?{_SEP}"
        r"(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"), _plausible, ("secret",)),
    ("GitHub token", re.compile(
        rf"{_B}(?:gh[pousr]_[A-Za-z0-9]{{36,251}}|github_pat_\w{{22,}}){_E}"), None, ("gh", "github_pat_")),
    ("GitLab token", re.compile(rf"{_B}glpat-[\w-]{{20,}}(?:\.[\w-]+)*"), None, ("glpat-",)),
    ("Hugging Face token", re.compile(rf"{_B}hf_[A-Za-z0-9]{{34,}}{_E}"), None, ("hf_",)),
    ("Slack token", re.compile(rf"{_B}xox[abprs]-[A-Za-z0-9-]{{10,}}"), None, ("xox",)),
    ("Slack webhook URL", re.compile(
        r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/[\w/-]{20,}"), None, ("hooks.slack.com",)),
    ("Stripe key", re.compile(rf"{_B}(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{{16,}}{_E}"), None, ("sk_", "rk_")),
    ("Anthropic API key", re.compile(rf"{_B}sk-ant-[\w-]{{32,}}"), None, ("sk-ant-",)),
    ("OpenAI API key", re.compile(rf"{_B}sk-(?:proj-|svcacct-|admin-)?[\w-]{{32,}}"), _random, ("sk-",)),
    ("Google API key", re.compile(rf"{_B}AIza[\w-]{{35}}{_E}"), None, ("aiza",)),
    ("npm token", re.compile(rf"{_B}npm_[A-Za-z0-9]{{36}}{_E}"), None, ("npm_",)),
    ("PyPI token", re.compile(rf"{_B}pypi-AgEI[\w-]{{50,}}"), None, ("pypi-",)),
    ("JWT", re.compile(rf"{_B}eyJ[\w-]{{10,}}\.[\w-]{{10,}}\.[\w-]{{10,}}"), None, ("eyj",)),
    ("bearer token", re.compile(
        r"""(?i)\bauthorization["']?\s*[:=]\s*["']?bearer\s+(?P<v>[\w.~+/-]+=*)"""), _random, ("authorization",)),
    ("URL password", re.compile(  # scheme://user:PASSWORD@host
        r"(?i)(?<![\w+.-])[a-z][a-z0-9+.-]{0,30}://[^\s:/@]*:(?P<v>[^\s:/@]+)@[^\s/@]"), _plausible, ("://",)),
    ("password", _assignment(r"password|passwd|passphrase|pwd|(?<=[_.-])pass"), _password, ("pass", "pwd")),
    ("API key", _assignment(r"api[_-]?key"), _random, ("api",)),
    ("secret", _assignment(r"secret(?:[_-]?access)?(?:[_-]?key)?"), _random, ("secret",)),
    ("token", _assignment(r"token"), _random, ("token",)),
    ("password", _prose(rf"""(?P<v>[^\s"'`]*[^\s"'`.,;:!?)\]}}>]){_CLAUSE_END}"""), _prose_secret, _PROSE_NEEDS),
    ("password", _prose(r"""(?P<q>["'`])(?P<v>[^"'`\n]{6,64})(?P=q)"""), _quoted_secret, _PROSE_NEEDS),
    # Passwords on command lines quoted in notes: mysql -pSECRET, curl -u user:SECRET, sshpass -p SECRET.
    ("password", re.compile(rf"\bmysql(?:dump|admin)?\b[^\n]{{0,100}}?[ \t]-p(?=[^\s\"'`-]){_VALUE}"), _password,
     ("mysql",)),
    ("password", re.compile(rf"(?<!\S)(?:-u|--user)[ \t]+[^\s:\"'`]+:{_VALUE}"), _password, ("-u",)),
    ("password", re.compile(rf"\bsshpass[ \t]+-p[ \t]*[\"']?{_VALUE}"), _password, ("sshpass",)),
    # 4-4-4-4, 4-6-5 (Amex), 4-4-4-4-3 or one run of digits; one kind of separator throughout.
    ("credit card number", re.compile(
        r"(?<![\w+.-])\d{4}([ -]?)\d{4,6}\1\d{4,5}(?:\1\d{1,4}){0,2}(?![\w-])"), _card, ()),
]
# Rules that count only with context nearby: (kind, pattern, context, characters either side).
_AWS_CONTEXT = re.compile(r"(?i)(?<![\w-])(?:AKIA|ASIA)[A-Z0-9]{16}(?![\w-])|\baws\b|secret")
_CONTEXTUAL: list[tuple[str, re.Pattern, re.Pattern, int, Callable[[str], bool], tuple[str, ...]]] = [
    ("AWS secret key", re.compile(r"(?<![A-Za-z0-9/+=_-])(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=_-])"),
     _AWS_CONTEXT, 200, _aws_secret, ("akia", "asia", "aws", "secret")),
]
_EMAILS: list[Rule] = [
    ("email address", re.compile(
        r"(?:(?<=mailto:)|(?<![\w.%+:/-]))[A-Za-z0-9._%+-]+@(?!\d+x\.)[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*"
        r"\.[A-Za-z]{2,}\b(?!:[\w/~])"), None, ("@",)),
]
_PHONES: list[Rule] = [
    # +CC, then groups split by space, dot or dash; a group may sit in parentheses.
    ("phone number", re.compile(
        r"(?<![\w+])\+\d{1,3}(?:\d{6,12}|(?:[ .-]?\(\d{1,5}\)\d{0,5}|[ .-]\d{1,5}){1,6})(?![\w:-])"),
        _digits(8, 15), ("+",)),
    # North American: (555) 123-4567, 555-123-4567, 555.123.4567.
    ("phone number", re.compile(
        r"(?<![\w#+.-])(?:\([2-9]\d\d\)[ ]?|[2-9]\d\d[ .-])[2-9]\d\d[ .-]\d{4}(?![\w-])"), None, ()),
    # Trunk-prefixed national: 020 7946 0958, 06 12 34 56 78, 030-1234567.
    ("phone number", re.compile(r"(?<![\w#+.-])0\d{1,4}(?:[ .-]\d{2,8}){1,4}(?![\w:-])"), _national, ()),
]


def scan(text: str, policy: Policy = Policy()) -> list[Finding]:
    """Findings sorted by start and not overlapping (see _scan). Short texts (a
    namespace, a session, a tag: the same few values on every add of a batch) are
    answered from a memo; nothing is found in an empty one."""
    if not text:
        return []
    if len(text) <= _MEMO_CHARS:
        return list(_scan_short(text, policy))
    return _scan(text, policy)


_MEMO_CHARS = 200


@functools.lru_cache(maxsize=4096)
def _scan_short(text: str, policy: Policy) -> tuple[Finding, ...]:
    return tuple(_scan(text, policy))


# The characters a case-insensitive pattern takes for an ASCII letter that lower() does not
# turn into it (dotted and dotless i, long s, the Kelvin sign): a rule's words are looked for
# in the text as its patterns see it.
_ASCII_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def _folded(text: str) -> str:
    return text.translate(_ASCII_FOLD).lower() if not text.isascii() else text.lower()


def _scan(text: str, policy: Policy) -> list[Finding]:
    """Findings sorted by start and not overlapping.

    Where two overlap, the longer one (the earlier rule on a tie) gives the
    kind, and the span grows to cover both, so masking never leaves a tail.
    """
    rules = _SECRETS + (_EMAILS if policy.emails else []) + (_PHONES if policy.phones else [])
    folded = _folded(text)
    found = []
    for order, (kind, pattern, valid, words) in enumerate(rules):
        if words and not any(word in folded for word in words):
            continue
        group = "v" if "v" in pattern.groupindex else 0
        for m in pattern.finditer(text):
            if valid is None or valid(m.group(group)):
                found.append((m.start(group), -(m.end(group) - m.start(group)), order, kind))
    for order, (kind, pattern, context, window, valid, words) in enumerate(_CONTEXTUAL, start=len(rules)):
        if not any(word in folded for word in words):
            continue
        for m in pattern.finditer(text):
            near = text[max(0, m.start() - window):m.start()] + " " + text[m.end():m.end() + window]
            if valid(m.group("v")) and context.search(near):
                found.append((m.start("v"), -(m.end("v") - m.start("v")), order, kind))
    found.sort()
    out: list[Finding] = []
    for start, neg_len, _, kind in found:
        end = start - neg_len
        if out and start < out[-1].end:
            last = out[-1]
            kind = last.kind if last.end - last.start >= end - start else kind
            out[-1] = Finding(kind, last.start, max(last.end, end))
        else:
            out.append(Finding(kind, start, end))
    return out


def mask(text: str, findings: list[Finding]) -> str:
    """`text` with each finding's span replaced by `[REDACTED:<kind>]`, the rest unchanged."""
    parts, pos = [], 0
    for f in sorted(findings, key=lambda f: (f.start, f.end)):
        if f.end <= pos:
            continue
        parts += [text[pos:max(pos, f.start)], f"[REDACTED:{f.kind}]"]
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts)


def describe(findings: Iterable[Finding]) -> str:
    """What was found, as a phrase: "an AWS access key and 2 passwords". Kinds only, never text."""
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.kind] = counts.get(f.kind, 0) + 1
    if not counts:
        return "nothing sensitive"
    phrases = []
    for kind, n in counts.items():
        if n > 1:
            phrases.append(f"{n} {kind}{'es' if kind.endswith('s') else 's'}")
        else:
            phrases.append(f"{'an' if kind[0] in 'aeiouAEIO' or kind.startswith('npm') else 'a'} {kind}")
    return phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " and " + phrases[-1]
