"""Does a new memory repeat, contradict or sit beside an existing one?

`classify(new, old, similarity)` compares two short memory texts that the search layer
already found on a similar subject (it passes the cosine similarity of their embeddings):

- "duplicate": the same statement again; the caller records a recurrence.
- "conflict": the same subject with one different value (number, version, time, date,
  weekday, month, a name in the same slot), a negation or antonym of the same statement,
  another choice after "prefers"/"favourite". The caller supersedes the older memory, so
  this is said only for clean cases; when in doubt the answer is "unclear".
- "unclear": same subject, something differs but not cleanly; both get contested.
- "compatible": different facts that can both hold.

Rules, not a model: it runs on every write, explains itself in one line ("numbers differ:
14 vs 16") and must not supersede on a guess. Pure and stdlib only: no I/O, no click, no
numpy, nothing else from vaultmem (the caller does retrieval and embeddings).

1. Tokens: Unicode words, lower case, light suffix stripping (deploys/deployed -> deploy),
   a few synonyms (db -> database); a part of a hyphenated word is never a stopword
   ("logs-us", "site-a"). Values keep their shape: number/version (3.11), time
   (9:30, 3pm), date (2024-06-14, "12 March", a month, a year), weekday, name (capitalised
   not at sentence start, ALLCAPS, GitHub; runs merged: "VS Code"), weak name (capitalised
   at sentence start: "Alice" but also "Staging"), code (eu-west-1), quoted string.
   Stopwords, chat filler ("btw", "remember that") and "user" (the default subject) go.
   Negation cues (not, n't, no, never, no longer, without, stopped, "used to"; не, нет,
   без, никогда) and antonyms (dislikes = not likes) set a polarity; the value after
   "instead of", "rather than", "switched from" is not asserted.
   A replacement giving up the value the old text asserts and naming one in its place
   ("moved CI from Jenkins to GitHub Actions", "switched from npm to pnpm"): conflict when
   little else differs, unclear when the old text says more (checked before 2).
2. Under half of the smaller side's content words, or under a third of the larger
   side's, shared and similarity < 0.8: compatible.
3. Same words swapped around over/than/from/to: unclear.
4. Polarity differs: conflict if nothing else differs, else unclear (compatible when
   ordinary words differ as in 7).
5. Nothing differs: duplicate, unless the negation moved to another word ("use pnpm,
   never npm" / "use npm, never pnpm") or two words traded places around a third (not
   when one side is passive): unclear. Only one side adds words: a qualifier (except, only,
   sometimes) -> unclear; one word at similarity >= 0.85 -> duplicate; else compatible.
6. The slot: one value differs on each side, same kind, same neighbour left or right:
   conflict; but a name after an additive verb (likes, speaks, visited) is compatible, a
   number there unclear, a weak name without a role word (owns, leads, on call) unclear.
   Values of different kinds: compatible ("on Fridays" vs "with ArgoCD"). A name or code
   the sentence is about (followed by its verb: "the ferry to Tangier departs", or a code
   before a value both share: "never reboot web-12 ... on channel ops-3"): another
   subject, compatible, unless a role word makes a name the slot's holder ("Dana leads").
   One plain word each side: conflict after an exclusive word (prefers, favourite,
   default, main) unless the choice itself is the same ("tea over coffee in winter" /
   "... in summer": compatible), compatible after an additive or role word, else unclear.
7. Otherwise compatible if an additive verb is shared, or if, below similarity 0.8,
   ordinary words differ beyond one on a side, or at any similarity three or more on
   each side (different statements on one topic, negated or not: chat lines of the
   same two people sit close for a sentence model), or if each side's first differing value is a name or code its
   sentence is about, followed by its verb ("Orion is ...", "kappa-44 runs ..."):
   two subjects; else unclear.
A hedge (probably, maybe, I think, might) turns a conflict into unclear.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Verdict:
    relation: str  # "duplicate" | "conflict" | "unclear" | "compatible"
    reason: str
    slot: bool = False  # a conflict in one value, every other content word the same (see agreed)


# How close (0..1 on the model's scale: 0 at its min_similarity) two memories must be
# before a difference between them counts as a contradiction: words alone overrate chat
# lines that share names and filler. A clean one-value difference needs less, because
# a sentence embedding moves a lot when only a name changes ("We use Jenkins for CI" /
# "... GitHub Actions for CI": MiniLM 0.40 on that scale).
SAME_SUBJECT_SIMILARITY = 0.5
SAME_SLOT_SIMILARITY = 0.2


def agreed(verdict: Verdict, similarity: float) -> Verdict:
    """The verdict once the model's similarity of the pair has been heard: a conflict or
    an unclear pair the model does not see as one subject is compatible."""
    if verdict.relation not in ("conflict", "unclear"):
        return verdict
    needed = SAME_SLOT_SIMILARITY if verdict.slot else SAME_SUBJECT_SIMILARITY
    if similarity >= needed:
        return verdict
    return Verdict("compatible", f"{verdict.reason}, but the model sees different subjects ({similarity:.2f})")


def _ws(s: str) -> list[str]:
    return s.split()


STOP = set(_ws("""a an the and or but if then so as of to in on at for by with from into onto over under about after
 before between than vs versus via per is are was were be been being am do does did done doing have has had having will
 would shall should can could may might must i me my mine myself we us our ours you your yours he him his she her hers
 they them their it its this that these those there here who whom whose which what when where why how all any each every
 both either some such also just really actually basically finally anyway hey hi please ok okay so up out let instead
 rather longer anymore user users go goes going gone get gets happen happens located based currently now still even very
 too whoever whatever и в во на с со по для мы я ты вы он она оно они это что как у к о об из за от до же бы ли но а то
 больше"""))
HEDGES = set(_ws("probably maybe perhaps might possibly think guess unsure roughly approximately around believe seems"))
STOP |= HEDGES
NEG = set(_ws("not no never without none nobody nothing cannot stopped quit ceased не нет никогда без"))
AUX = set(_ws("do does did is are was were am will would can could should have has had больше"))
BE = set(_ws("is are was were be been being get gets got"))
VERB_STOPS = BE | AUX | set(_ws("go goes going gone happen happens"))  # stopwords that can be a sentence's verb
DIRECTION = set(_ws("over than vs versus from to before after instead rather"))
SYN = {"db": "database", "led": "lead", "ran": "run", "began": "start", "begun": "start", "met": "meet", "went": "go",
       "using": "use", "used": "use", "favourite": "favorite", "colour": "color", "grew": "grow", "took": "take"}
NUMBER_WORDS = {w: str(i) for i, w in enumerate(_ws("zero one two three four five six seven eight nine ten eleven "
                                                    "twelve"))} | {"once": "1", "twice": "2", "thrice": "3"}
MONTHS = {m: i + 1 for i, m in enumerate(_ws("january february march april may june july august september october "
                                             "november december"))}
MONTHS |= {m[:3]: i for m, i in list(MONTHS.items()) if m not in ("march", "may")} | {"sept": 9}
WEEKDAYS = _ws("monday tuesday wednesday thursday friday saturday sunday")
RU_DAYS = dict(zip(_ws("понедельник вторник сред четверг пятниц суббот воскресень"), WEEKDAYS))
# Weekdays in the other languages vaultmem's users write in most ("los jueves" / "los miércoles" was
# "unclear": two words, not two days): Spanish, French, German, Italian.
OTHER_DAYS = {word: day for words in (
    "lunes martes miércoles jueves viernes sábado domingo", "lundi mardi mercredi jeudi vendredi samedi dimanche",
    "montag dienstag mittwoch donnerstag freitag samstag sonntag",
    "lunedì martedì mercoledì giovedì venerdì sabato domenica") for word, day in zip(_ws(words), WEEKDAYS)}
_MONTH_RE = (r"(?:(?i:january|february|april|june|july|august|september|october|november|december|jan|feb|apr|jun|jul"
             r"|aug|sept?|oct|nov|dec)|May|March|MAY|MARCH)")
_TOKEN = re.compile(
    r"(?P<quote>[\"“«`][^\"”»`\n]{1,80}[\"”»`])|(?P<iso>\d{4}-\d\d-\d\d)"
    rf"|(?P<date>\b(?:\d{{1,2}}(?:st|nd|rd|th)?(?:\s+of)?\s+{_MONTH_RE}|{_MONTH_RE}\s+\d{{1,2}}(?:st|nd|rd|th)?\b"
    rf"|{_MONTH_RE}(?=,?\s+\d{{4}}))(?:,?\s+\d{{4}})?\b)"
    r"|(?P<time>\b\d{1,2}(?::\d\d)?\s?[ap]\.?m\b\.?)|(?P<word>\w+(?:(?:[.:/'’-]|(?<=\d),(?=\d))\w+)*)|(?P<punct>[.!?;:\n,])")
_FILLER = re.compile(r"\b(?:just so you (?:know|remember)|you know|heads up|fyi|btw|by the way|quick update|"
                     r"(?:can you |please )?remember(?: that)?|note that)\b"
                     # A label a note opens with ("Note: ...", "Reminder - ...", "Update: ..."): not what it says.
                     r"|^\W*(?:note|reminder|update|fyi|important|nb|ps)\s*[:\-–—]\s", re.IGNORECASE)
_NUM = re.compile(r"v?(\d+(?:[.,]\d+)*)(st|nd|rd|th|k|m|mb|gb|kb|tb|ms|s|h|min|x)?")
_RU_END = re.compile(r"(?:ами|ями|ого|его|ому|ему|ыми|ими|ая|яя|ое|ее|ые|ие|ый|ий|ой|ую|юю|ем|им|ом|ам|ям|ах|ях|ют|ут"
                     r"|ет|ит|ат|ят|а|я|о|е|ы|и|у|ю|ь|й)$")


def _stem(w: str) -> str:
    if not w.isascii():
        return _RU_END.sub("", w) if len(w) > 4 and w.isalpha() else w
    if not w.isalpha() or len(w) < 4:
        return w
    for suf, keep in (("ies", 3), ("ing", 3), ("ed", 3), ("ly", 4), ("es", 3), ("s", 3)):
        if w.endswith(suf) and not (suf == "s" and w[-2] in "sui"):
            stem = w[: -len(suf)] + ("y" if suf == "ies" else "")
            if len(stem) < keep:
                continue
            if suf in ("ing", "ed") and stem[-1] == stem[-2] and stem[-1] in "bgmnprt":
                stem = stem[:-1]
            w = stem
            break
    return w[:-1] if len(w) > 3 and w.endswith("e") else w


def _stems(s: str) -> set[str]:
    return {_stem(w) for w in _ws(s)}


LIGHT = _stems("use run make keep set stay remain move switch change migrate upgrade downgrade update become start new "
               "latest again since grow raise reach take rename replace increase decrease bump lower reduce")
CHANGE = _stems("switch move migrate change upgrade downgrade replace rename take")
REPLACE = _stems("replace")  # "replaced Webpack with Vite": what follows is the value given up
ADDITIVE = _stems("like love enjoy speak visit know play collect read watch eat drink cook learn study attend support "
                  "allergic")
ROLE = _stems("own owner lead manage manager maintain maintainer responsible charge head call assign assignee")
EXCLUSIVE = _stems("prefer favorite default main primary usual current best")
QUALIFIERS = _stems("except only sometimes rarely mostly usually unless partly occasionally")
POLAR = {_stem(k): _stem(v) for k, v in (("dislike", "like"), ("hate", "like"), ("detest", "like"),
         ("disable", "enable"), ("disallow", "allow"), ("forbid", "allow"), ("exclude", "include"),
         ("unavailable", "available"), ("inactive", "active"), ("private", "public"), ("avoid", "prefer"),
         ("disagree", "agree"), ("reject", "accept"), ("false", "true"))}
SAME = {_stem(k): _stem(v) for k, v in (("love", "like"), ("enjoy", "like"), ("begin", "start"))}
FAMILY = {"weak": "name", "time": "num"}
LABEL = {"num": "numbers", "date": "dates", "day": "days", "name": "names", "code": "values", "quote": "quoted values"}


@dataclass(eq=False, slots=True)  # slots: the parses kept (_parse_once) hold ~17 a text
class _Tok:
    key: str
    kind: str  # word stop neg punct | values: num time date day name weak code quote
    raw: str
    flip: bool = False
    out: bool = False  # retracted: "instead of X"

    def copy(self) -> _Tok:
        """A shallow copy, without dataclasses.replace's re-validation (classify copies thousands)."""
        return _Tok(self.key, self.kind, self.raw, self.flip, self.out)


@dataclass
class _Parsed:
    toks: list[_Tok]
    content: list[_Tok]  # what the text asserts: no stopwords, negation cues or retracted values
    neg: int  # negation cues + antonyms; odd = negated
    hedged: bool
    # The cached parse these lists copy while no token was retyped (`_pairs` is then kept on it).
    source: _Parsed | None = None
    pairs: set[tuple[str, str]] | None = None


def _value(lw: str, raw: str) -> _Tok | None:
    if m := re.fullmatch(r"(\d{1,2}):(\d\d)", lw):
        return _Tok(f"{int(m[1]):02d}:{m[2]}", "time", raw)
    if re.fullmatch(r"(?:19|20)\d\d", lw):
        return _Tok(f"{lw}-??-??", "date", raw)
    if m := _NUM.fullmatch(lw):
        unit = m[2] if m[2] and m[2] not in ("st", "nd", "rd", "th") else ""
        return _Tok((m[1] + unit).replace(",", ""), "num", raw)
    if lw in NUMBER_WORDS:
        return _Tok(NUMBER_WORDS[lw], "num", raw)
    if lw in MONTHS and (raw[0].isupper() or lw not in ("may", "march")):
        return _Tok(f"????-{MONTHS[lw]:02d}-??", "date", raw)
    day = (lw.rstrip("s") if lw.rstrip("s") in WEEKDAYS
           else OTHER_DAYS.get(lw) or OTHER_DAYS.get(lw.removesuffix("s"))
           or next((v for k, v in RU_DAYS.items() if lw.startswith(k)), ""))
    if day:
        return _Tok(day, "day", raw)
    return _Tok(lw, "code", raw) if any(c.isdigit() for c in lw) else None


def _word(raw: str, start: bool) -> _Tok:
    """One word's token: a fresh one (parsing changes tokens in place), read once per word."""
    return _Tok(*_word_read(raw, start))


@lru_cache(maxsize=16384)
def _word_read(raw: str, start: bool) -> tuple[str, str, str, bool]:
    """(key, kind, raw, flip) of a word: texts share most of their words, and reading one
    takes a dozen lookups and patterns (~40% of a parse). Kept as a tuple: a token built
    from it is cheaper than `_Tok.copy` of a cached one (a parse 0.075 against 0.097 ms)."""
    tok = _read_word(raw, start)
    return tok.key, tok.kind, tok.raw, tok.flip


def _read_word(raw: str, start: bool) -> _Tok:
    lw = raw.lower().replace("’", "'")
    if lw.endswith("n't") or lw in NEG:
        return _Tok(lw, "neg", raw)
    if "'" in lw:
        lw, _, suffix = lw.partition("'")
        raw = raw[: len(lw)]
        if suffix != "s":  # I've, we're, I'm
            return _Tok(lw, "stop", raw)
    if tok := _value(lw, raw):
        return tok
    if raw.isupper() and len(raw) > 1 and lw not in SYN:
        return _Tok(lw, "name", raw)
    if lw in SYN:  # a known common word, even as "DB"
        raw, lw = raw.lower(), SYN[lw]
    if lw in STOP:
        return _Tok(lw, "stop", raw)
    if raw[0].isupper():
        return _Tok(lw, "weak" if start and raw[1:].islower() else "name", raw)
    if any(c in lw for c in "._/"):
        return _Tok(lw, "code", raw)
    key = _stem(lw)
    return _Tok(SAME.get(POLAR.get(key, key), POLAR.get(key, key)), "word", raw, flip=key in POLAR)


def _date_key(s: str) -> str:
    nums = re.findall(r"\d+", s)
    month = MONTHS[re.search(_MONTH_RE, s)[0].lower()]
    day = next((f"{int(n):02d}" for n in nums if len(n) <= 2), "??")
    return f"{next((n for n in nums if len(n) == 4), '????')}-{month:02d}-{day}"


def _content(t: _Tok) -> bool:
    return t.kind not in ("stop", "neg", "punct") and not t.out


def _parse(text: str) -> _Parsed:
    """The text's tokens, parsed once per text (an add compares its text with up to 8
    candidates, and a bulk add meets the same old texts again and again): fresh lists of
    the cached tokens, which are shared and never changed (`_retyped` copies one)."""
    cached = _parse_once(text)
    return _Parsed(list(cached.toks), list(cached.content), cached.neg, cached.hedged, source=cached)


def _retyped(p: _Parsed, t: _Tok, kind: str, key: str) -> None:
    """Token `t` of `p` read again as another kind of token: a copy takes its place in
    `p`'s lists (the parsed tokens are cached for every later comparison of the text)."""
    twin = t.copy()
    twin.kind, twin.key = kind, key
    p.toks = [twin if u is t else u for u in p.toks]
    p.content = [twin if u is t else u for u in p.content]
    p.source = None  # its tokens are no longer the cached parse's


# An import's add meets 8 candidates, older notes of its namespace: of bench/peers.py's 10k,
# 9,325 texts in 79,287 pairs were parsed 19,900 times with 4,096 kept, 9,437 with 8,192
# (~2.3 KB each).
@lru_cache(maxsize=8192)
def _parse_once(text: str) -> _Parsed:
    text = _FILLER.sub(" ", unicodedata.normalize("NFKC", text))
    toks: list[_Tok] = []
    start, prev_end = True, 0
    for m in _TOKEN.finditer(text):
        kind, s = m.lastgroup, m[0]
        if kind == "punct":
            toks.append(_Tok(s, "punct", s))
            start = start or s != ","
            continue
        if kind == "quote":
            new = [_Tok(" ".join(s[1:-1].lower().split()), "quote", s)]
        elif kind in ("iso", "date"):
            new = [_Tok(s if kind == "iso" else _date_key(s), "date", s)]
        elif kind == "time":
            h, mm, ap = re.fullmatch(r"(\d+)(?::(\d\d))?\s?([ap])\.?m\.?", s.lower()).groups()
            new = [_Tok(f"{int(h) % 12 + (12 if ap == 'p' else 0):02d}:{mm or '00'}", "time", s)]
        else:
            parts = s.split("-") if "-" in s and not any(c.isdigit() for c in s) else [s]
            new = [_word(p, start and i == 0) for i, p in enumerate(parts) if p]
            for t in new if len(new) > 1 else ():  # "logs-us", "site-a": a part of a name, not a stopword
                if t.kind == "stop":
                    t.kind = "word"
        for t in new:  # runs of capitalised words are one name: "VS Code", "GitHub Actions"
            last = toks[-1] if toks else None
            if last and {t.kind, last.kind} <= {"name", "weak"} and not text[prev_end:m.start()].strip(" -"):
                last.key, last.raw, last.kind = f"{last.key} {t.key}", f"{last.raw} {t.raw}", "name"
            else:
                toks.append(t)
            prev_end = m.end()
        start = False
    for i, t in enumerate(toks):
        nxt = toks[i + 1].key if i + 1 < len(toks) else ""
        if t.raw.lower() == "used" and nxt == "to" and (i == 0 or toks[i - 1].key not in BE):
            t.kind = "neg"  # "Priya used to own X" = no longer
        retract = (t.key, nxt) in (("instead", "of"), ("rather", "than")) or (
            t.key == "from" and any(u.kind == "word" and u.key in CHANGE for u in toks[:i])) or (
            t.kind == "word" and t.key in REPLACE)
        if retract and (target := next((u for u in toks[i + 1:] if _content(u)), None)):
            target.out = True
    return _Parsed(toks, [t for t in toks if _content(t)], sum(t.kind == "neg" or t.flip for t in toks),
                   any(t.key in HEDGES for t in toks))


def _same_date(x: str, y: str) -> bool:
    pairs = [(p, q) for p, q in zip(x.split("-"), y.split("-")) if "?" not in p + q]
    return bool(pairs) and all(p == q for p, q in pairs)


def _same_hour(t: _Tok, other: _Tok) -> bool:
    """A whole hour as a number ("ten", "10") beside the same hour as a time ("10:00")."""
    return t.kind == "num" and other.kind == "time" and t.key.isdigit() and other.key == f"{int(t.key):02d}:00"


def _family(t: _Tok, other: _Tok) -> str:
    """What kind of value `t` is, beside the value `other` in its place: a bare number from 1900
    to 2099 reads as a year, but beside a plain number it is one too ("about 2000 requests"
    after "about 1200 requests": a figure that grew, not a date beside a number)."""
    if t.kind == "date" and other.kind == "num" and t.raw.isdigit():
        return "num"
    return FAMILY.get(t.kind, t.kind)


def _around(t: _Tok, p: _Parsed) -> tuple[str | None, str | None]:
    seq = [u for u in p.content if u is t or u.kind != "word" or u.key not in LIGHT]
    i = seq.index(t)
    return (seq[i - 1].key if i else None), (seq[i + 1].key if i + 1 < len(seq) else None)


def _pairs(p: _Parsed) -> set[tuple[str, str]]:
    """(content word before, content word after) each direction word ("over", "from", "to" ...)
    stands between; of a text as parsed, found once per text (an add meets 8 candidates)."""
    if p.source is not None:
        if p.source.pairs is None:
            p.source.pairs = _pairs_of(p.source)
        return p.source.pairs
    return _pairs_of(p)


def _pairs_of(p: _Parsed) -> set[tuple[str, str]]:
    out = set()
    for i, t in enumerate(p.toks):
        if t.kind == "stop" and t.key in DIRECTION:
            before = next((u.key for u in reversed(p.toks[:i]) if _content(u)), None)
            after = next((u.key for u in p.toks[i + 1:] if _content(u)), None)
            if before and after:
                out.add((before, after))
    return out


def _neg_phrase(p: _Parsed, other: _Parsed) -> tuple[str, str]:
    for i, t in enumerate(p.toks):
        if t.flip:
            return t.raw, next((u.raw for u in other.content if u.key == t.key), t.key)
        if t.kind == "neg":
            j = i - 1 if i and p.toks[i - 1].key in AUX else i
            k = next((k for k in range(i + 1, len(p.toks)) if _content(p.toks[k])), i)
            word = next((u.raw for u in other.content if u.key == p.toks[k].key), "") if k > i else ""
            return " ".join(u.raw for u in p.toks[j:k + 1]), word or "(affirmative)"
    return "", ""


def _show(toks: list[_Tok]) -> str:
    return ", ".join(t.raw for t in toks[:4]) or "nothing"


def _replaces(a: _Parsed, b: _Parsed, only_a: list[_Tok], only_b: list[_Tok], shared: list[_Tok]) -> Verdict | None:
    """"We moved CI from Jenkins to GitHub Actions" against "Our CI runs on Jenkins": the new
    text gives up exactly the value the old one asserts and names one in its place, on
    shared context, with at most one other word differing on a side: a clean update."""
    given_up = {t.key: t for t in a.toks if t.out and t.kind != "stop"}
    old = [t for t in only_b if t.key not in given_up]
    dropped = [t for t in b.content if t.key in given_up]
    taken = [t for t in only_a if t.kind != "word"] or _named_in_place(a, only_a)
    if not dropped or len(taken) != 1 or a.neg % 2 != b.neg % 2 or a.hedged or b.hedged:
        return None
    family = FAMILY.get(dropped[0].kind, dropped[0].kind)
    if family != FAMILY.get(taken[0].kind, taken[0].kind) and not (
            taken[0].kind == "word" and dropped[0].kind in ("word", "name", "weak")):  # "from npm to pnpm"
        return None
    if dropped[0].kind == "word":
        family = "code"  # (its label: "values")
    context = [t for t in shared if t.kind in ("word", "name") and t.key not in LIGHT]  # ("CI" is a name)
    heavy_a = [t for t in only_a if t.kind == "word" and t.key not in LIGHT and t is not taken[0]]
    more = [t for t in old if t.kind != "word" or t.key not in LIGHT]
    reason = f"{LABEL[family]} replaced: {dropped[0].raw} -> {taken[0].raw}"
    if len(heavy_a) > 1:
        return None
    if not context or len(more) > 1 or any(t.kind != "word" for t in more):
        # The new one names what the old one asserts as given up, but the old one says more
        # ("CI runs on Jenkins at ci.internal", "built with React 18 and bundled with Webpack"),
        # or nothing else is shared: contested (flagged, the newer first), never superseded on a guess.
        said = f"; the older one says more: {_show(more)}" if more else "; nothing else shared"
        return Verdict("unclear", reason + said, slot=True)
    return Verdict("conflict", reason, slot=True)


def _named_in_place(p: _Parsed, only: list[_Tok]) -> list[_Tok]:
    """The word a replacement names in place of what it gives up, when it is an ordinary word
    ("switched from npm to pnpm", "moved from weekly to daily"): the first content word after
    "to", "with" or "by" that follows the word given up, if the other text lacks it."""
    toks = p.toks
    start = next((i for i, t in enumerate(toks) if t.out), None)
    if start is None:
        return []
    for i in range(start + 1, len(toks) - 1):
        if toks[i].kind == "stop" and toks[i].key in ("to", "with", "by"):
            nxt = next((u for u in toks[i + 1:] if _content(u)), None)
            return [nxt] if nxt is not None and nxt in only else []
    return []


def _numbered_subject(t: _Tok, p: _Parsed) -> bool:
    """A number that may name the thing a sentence opens with ("Room 12 has a projector",
    "Incident 4521 was caused by ...", "PR 311 fixed ..."): right after the sentence's first
    word and followed by its verb. It may as well be a version ("Postgres 16 runs ..."), which
    words cannot tell: such a pair is contested, never superseded."""
    content = [u for u in p.toks if u.kind not in ("stop", "punct")]
    i = p.toks.index(t)
    if len(content) < 3 or content[1] is not t or i == 0 or p.toks[i - 1] is not content[0]:
        return False
    if content[0].kind not in ("weak", "name"):
        return False
    nxt = p.toks[i + 1] if i + 1 < len(p.toks) else None
    return nxt is not None and (nxt.key in VERB_STOPS or nxt.key in AUX or nxt.kind == "word")


ORDER_WORDS = frozenset(_ws("before after"))


def _swapped(a: _Parsed, b: _Parsed) -> tuple[str, str, str] | None:
    """Two content words that trade places around a third the texts share ("db1 is the primary
    and db2 the replica" / "db2 is the primary and db1 the replica"): (x, y, the one between).
    The same words do not say the same then; a reworded sentence ("Postgres 16 runs on staging" /
    "staging runs Postgres 16") matches too, and is contested rather than taken for a repeat:
    a wrong repeat would drop the new fact and reinforce the old one."""
    def positions(p: _Parsed) -> dict[str, int]:
        seen: dict[str, int] = {}
        for i, t in enumerate(t for t in p.content if t.key not in LIGHT):
            seen.setdefault(t.key, i)
        return seen

    pos_a, pos_b = positions(a), positions(b)
    keys = [k for k in pos_a if k in pos_b]
    for x in keys:
        for y in keys:
            if pos_a[x] >= pos_a[y] or pos_b[y] >= pos_b[x]:
                continue
            for z in keys:
                if pos_a[x] < pos_a[z] < pos_a[y] and pos_b[y] < pos_b[z] < pos_b[x]:
                    return x, y, z
    return None


PARTICIPLES = set(_ws("led held kept run made built owned paid sent set put taught bought sold told found given known"
                       " written done seen taken chosen driven"))


def _denied(p: _Parsed) -> list[str]:
    """The content word each negation cue ("never", "not", "no") applies to: the next one."""
    out = []
    for i, t in enumerate(p.toks):
        if t.kind == "neg":
            out.append(next((u.key for u in p.toks[i + 1:] if _content(u) and u.key not in LIGHT), ""))
    return sorted(out)


def _passive(p: _Parsed) -> bool:
    """A passive verb ("is led by", "are needed for"): the sentence names its roles in the other
    order, so words that trade places with an active sentence's say the same."""
    toks = p.toks
    for i, t in enumerate(toks[:-1]):
        if t.key in BE:
            following = next((u.raw.lower() for u in toks[i + 1:i + 3] if u.kind != "neg"), "")
            if following.endswith("ed") or following in PARTICIPLES:
                return True
    return False


def _order_words(p: _Parsed) -> list[str]:
    """The before/after of a text, in order (stopwords to the rest of the parse)."""
    return [t.key for t in p.toks if t.key in ORDER_WORDS]


def _subject_word_differs(a: _Parsed, b: _Parsed, heavy_a: list[_Tok], heavy_b: list[_Tok],
                          vals_a: list[_Tok], vals_b: list[_Tok]) -> bool:
    """One ordinary word and one value differ on each side, the values of one kind, and each
    side's word opens its sentence's content, between the same neighbours ("the X service"),
    well before its value: the word says which thing, the value is that thing's own."""
    if not (len(heavy_a) == len(heavy_b) == 1 and len(vals_a) == len(vals_b) == 1):
        return False
    if FAMILY.get(vals_a[0].kind, vals_a[0].kind) != FAMILY.get(vals_b[0].kind, vals_b[0].kind):
        return False
    if _around(heavy_a[0], a) != _around(heavy_b[0], b):
        return False
    position = [p.content.index(t) for p, t in ((a, heavy_a[0]), (b, heavy_b[0]), (a, vals_a[0]), (b, vals_b[0]))]
    return position[0] <= 1 and position[1] <= 1 and position[2] - position[0] >= 2 and position[3] - position[1] >= 2


def _names_subject(t: _Tok, p: _Parsed) -> bool:
    """Is `t` a name the sentence is about: a name or code followed by its verb ("Orion is",
    "beta-3 listens"), not one in the predicate ("runs in Berlin on ...")?"""
    if t.kind not in ("name", "code"):
        return False
    i = p.toks.index(t)
    nxt = p.toks[i + 1] if i + 1 < len(p.toks) else None
    return nxt is not None and (nxt.key in VERB_STOPS or nxt.kind == "word")


INDEFINITE = frozenset("a an another some several many any".split())
DEFINITE = frozenset("the our my your his her their its this that".split())


def _role_slot(p: _Parsed) -> bool:
    """A role word whose object is one thing ("owns the billing service", "leads the team",
    "is on call"): the name that fills it is the slot's holder. Not before an indefinite
    object or a count ("owns a red bicycle", "maintains two repos"): many may."""
    for i, t in enumerate(p.toks):
        if t.kind == "word" and t.key in ROLE:
            nxt = next((u for u in p.toks[i + 1:] if u.kind != "punct"), None)
            if nxt is None or not (nxt.raw.lower() in INDEFINITE or nxt.kind == "num"):
                return True
    return False


def _topic(t: _Tok, p: _Parsed, shared_values: set[str], weak: bool = False) -> bool:
    """Is `t` the thing the sentence is about rather than a value it states of it? A name or
    code followed by its own verb ("the flight to Lisbon leaves ...", "table sessions in
    ClickHouse holds ...") or a code (an instance: eta-9, PROJ-12) named before a value both
    texts share ("never restart eta-9 ... on host mq29"): the facts sit on it, so another one
    there is another thing, not a new value. Not before "is" and a description: "GitHub
    Actions is our CI" names what fills a role; nor a capitalised name before a shared one
    ("we use Jenkins for CI"). With `weak` (both sides' values open their sentence), a word
    at sentence start too, before its verb and an object many may have ("Bob keeps bees",
    "Staging uses Redis 7"), not one thing a single holder fills ("Jenkins runs our CI",
    "Maria handles the payroll": maybe an update)."""
    if t.kind not in ("name", "code") and not (weak and t.kind == "weak"):
        return False
    i = p.toks.index(t)
    nxt = p.toks[i + 1] if i + 1 < len(p.toks) else None
    verb = nxt is not None and nxt.kind == "word" and nxt.raw.lower().endswith("s") and not nxt.raw.endswith("ss")
    if t.kind == "weak":
        obj = next((u for u in p.toks[i + 2:] if u.kind != "punct"), None)
        return verb and obj is not None and obj.raw.lower() not in DEFINITE
    if verb:
        return True
    after = p.toks[i + 2] if i + 2 < len(p.toks) else None
    if nxt is not None and nxt.key in BE and after is not None and after.kind == "word":
        return True  # "invoices for Globex are sent ...", but not "GitHub Actions is our CI"
    return t.kind == "code" and any(u.key in shared_values for u in p.toks[i + 1:] if _content(u))


@lru_cache(maxsize=4096)
def _words_only(text: str) -> str:
    """The text lowered, with its punctuation and spacing gone (an add's text meets up to 8
    candidates, each met again by later adds: done once per text)."""
    return re.sub(r"[\W_]+", " ", text.lower()).strip()


def classify(new: str, old: str, similarity: float) -> Verdict:
    """How `new` relates to `old`: duplicate, conflict, unclear or compatible (see the module docstring)."""
    if (norm := _words_only(new)) == _words_only(old) and norm:
        return Verdict("duplicate", "same statement")
    a, b = _parse(new), _parse(old)
    if not a.content or not b.content:
        return Verdict("compatible", "nothing to compare")
    for p, q in ((a, b), (b, a)):  # "Deploys happen..." at sentence start is the word "deploy", not a name
        if weak := [t for t in p.content if t.kind == "weak"]:
            words = {t.key for t in p.content + q.content if t.kind == "word"}
            for t in [t for t in weak if _stem(t.key) in words]:
                _retyped(p, t, "word", _stem(t.key))
    keys_a, keys_b = {t.key for t in a.content}, {t.key for t in b.content}
    only_a = list({t.key: t for t in a.content if t.key not in keys_b}.values())
    only_b = list({t.key: t for t in b.content if t.key not in keys_a}.values())
    for x in [t for t in only_a if t.kind == "date"]:  # "2024-06-14" and "June 14" are the same date
        if y := next((y for y in only_b if y.kind == "date" and _same_date(x.key, y.key)), None):
            only_a.remove(x)
            only_b.remove(y)
    shared = [t for t in {t.key: t for t in a.content}.values() if t not in only_a]
    if replaced := _replaces(a, b, only_a, only_b, shared):
        return replaced
    # Same subject: most of the shorter text, and a third of the longer one, is shared
    # (a short greeting is "contained" in any chat line that names the same person).
    # Light verbs (use, run, move) say little about the subject and are not counted.
    smaller, larger = sorted((len(keys_a - LIGHT), len(keys_b - LIGHT)))
    if (len(shared) / max(1, smaller) < 0.5 or len(shared) / max(1, larger) < 0.34) and similarity < 0.8:
        return Verdict("compatible", f"different subjects (shared: {_show(shared)})")
    hedge = " (hedged)" if a.hedged or b.hedged else ""

    def conflict(reason: str, slot: bool = False) -> Verdict:  # a slot needs shared context: "Kim" vs "Ana"
        if not shared:
            return Verdict("unclear", reason + " (nothing else shared)")
        return Verdict("unclear", reason + hedge) if hedge else Verdict("conflict", reason, slot)

    pa, pb = _pairs(a), _pairs(b)
    values_a, values_b = [t.key for t in a.content if t.kind != "word"], [t.key for t in b.content if t.kind != "word"]
    if any((y, x) in pb for x, y in pa if x != y) or (
            pa and pb and sorted(values_a) == sorted(values_b) and values_a != values_b):
        return Verdict("unclear", "same words in a different order")
    vals_a, vals_b = [t for t in only_a if t.kind != "word"], [t for t in only_b if t.kind != "word"]
    heavy_a = [t for t in only_a if t.kind == "word" and t.key not in LIGHT]
    heavy_b = [t for t in only_b if t.kind == "word" and t.key not in LIGHT]
    cues = {t.key for t in shared if t.kind == "word"}
    if a.neg % 2 != b.neg % 2:
        if similarity < 0.8 and (len(heavy_a) > 1 or len(heavy_b) > 1) or len(heavy_a) > 2 and len(heavy_b) > 2:
            return Verdict("compatible", f"different statements: {_show(only_a)} / {_show(only_b)}")
        if vals_a or vals_b or heavy_a or heavy_b:
            return Verdict("unclear", f"negation and other differences: {_show(only_a)} vs {_show(only_b)}")
        x, y = _neg_phrase(a, b) if a.neg % 2 else _neg_phrase(b, a)[::-1]
        return conflict(f"{'opposites' if any(t.flip for t in a.toks + b.toks) else 'negation'}: '{x}' vs '{y}'")
    diff_a, diff_b = vals_a + heavy_a, vals_b + heavy_b
    if not diff_a and not diff_b:
        order_a, order_b = _order_words(a), _order_words(b)
        if order_a != order_b:  # "run migrations before deploying" / "... after deploying": the opposite
            return Verdict("unclear", f"order differs: {' '.join(order_a) or '-'} vs {' '.join(order_b) or '-'}")
        denied_a, denied_b = _denied(a), _denied(b)
        if denied_a != denied_b:  # "use pnpm, never npm" / "use npm, never pnpm"
            return Verdict("unclear", f"the negation moved: {' '.join(denied_a) or '-'} vs {' '.join(denied_b) or '-'}")
        swapped = None if _passive(a) != _passive(b) else _swapped(a, b)
        if swapped:  # "db1 is the primary and db2 the replica" / "db2 ... and db1 ...": roles exchanged
            return Verdict("unclear", f"same words, {swapped[0]} and {swapped[1]} exchanged around {swapped[2]}")
        return Verdict("duplicate", "same content words")
    if not diff_a or not diff_b:
        extra = diff_a or diff_b
        if any(t.key in QUALIFIERS for t in extra):
            return Verdict("unclear", f"one side is qualified: {_show(extra)}")
        if len(extra) == 1 and extra[0].kind == "word" and similarity >= 0.85:
            return Verdict("duplicate", f"same statement with one more word: {extra[0].raw}")
        return Verdict("compatible", f"adds detail: {_show(extra)}")
    if len(vals_a) == len(vals_b) == 1 and not heavy_a and not heavy_b:
        x, y = vals_a[0], vals_b[0]
        if _same_hour(x, y) or _same_hour(y, x):  # "at ten" / "at 10:00": one time written two ways
            return Verdict("duplicate", f"the same time: {x.raw} / {y.raw}")
        fam_x, fam_y = _family(x, y), _family(y, x)
        if fam_x != fam_y:
            return Verdict("compatible", f"different details: {x.raw} / {y.raw}")
        (la, ra), (lb, rb) = _around(x, a), _around(y, b)
        if la != lb and ra != rb:
            return Verdict("unclear", f"values differ in different places: {x.raw} vs {y.raw}")
        reason = f"{LABEL[fam_x]} differ: {x.raw} vs {y.raw}"
        shared_values = {t.key for t in shared if t.kind not in ("word", "name", "weak")}
        if x.kind == y.kind == "num" and _numbered_subject(x, a) and _numbered_subject(y, b):
            return Verdict("unclear", reason + " (the number may say which one)")
        role = bool(cues & ROLE) and _role_slot(a) and _role_slot(b)
        # Two names at sentence start, each followed by its verb ("Bob keeps bees ..." / "Dan
        # keeps bees ..."): the sentences are about them, as for names elsewhere in a sentence.
        weak = x.kind == y.kind == "weak"
        if not (role and fam_x == "name") and _topic(x, a, shared_values, weak) and _topic(y, b, shared_values, weak):
            return Verdict("compatible", f"other subjects: {x.raw} / {y.raw}")
        if fam_x == "name" and not role:
            if cues & ADDITIVE:
                return Verdict("compatible", f"both can hold: {x.raw} / {y.raw}")
            if "weak" in (x.kind, y.kind):
                return Verdict("unclear", reason + " (may not be names)")
        elif cues & ADDITIVE and not role:
            return Verdict("unclear", reason + " (both may hold)")
        return conflict(reason, slot=True)
    if not vals_a and not vals_b and len(heavy_a) == len(heavy_b) == 1:
        x, y = heavy_a[0], heavy_b[0]
        (la, ra), (lb, rb) = _around(x, a), _around(y, b)
        if pa and pa == pb and cues & EXCLUSIVE:  # "prefers tea over coffee in the morning" / "... evening"
            return Verdict("compatible", f"same choice, other context: {x.raw} / {y.raw}")
        if (la == lb or ra == rb) and cues & EXCLUSIVE:
            return conflict(f"choice differs: '{x.raw}' vs '{y.raw}'")
        if cues & (ADDITIVE | ROLE):
            return Verdict("compatible", f"both can hold: {x.raw} / {y.raw}")
        return Verdict("unclear", f"wording differs: '{x.raw}' vs '{y.raw}'")
    if (vals_a and vals_b
            and not {FAMILY.get(t.kind, t.kind) for t in vals_a} & {FAMILY.get(t.kind, t.kind) for t in vals_b}):
        return Verdict("compatible", f"different details: {_show(vals_a)} / {_show(vals_b)}")
    if cues & ADDITIVE:
        return Verdict("compatible", f"both can hold: {_show(diff_a)} / {_show(diff_b)}")
    if (similarity < 0.8 and (not (vals_a and vals_b) or len(heavy_a) > 1 or len(heavy_b) > 1)
            or len(heavy_a) > 2 and len(heavy_b) > 2):
        # Ordinary words differ (beyond one each): two statements about one topic, not
        # two values for one slot ("Thanks, Gina! ..." vs "Thanks, Jon! ...").
        return Verdict("compatible", f"different statements: {_show(diff_a)} / {_show(diff_b)}")
    if _subject_word_differs(a, b, heavy_a, heavy_b, vals_a, vals_b):
        # "The orders service listens on port 8081" / "The payments service ... 8082": a word
        # naming which thing, in the same place before the value, changed with the value.
        return Verdict("compatible", f"other subjects: {heavy_a[0].raw} / {heavy_b[0].raw}")
    if vals_a and vals_b and _names_subject(vals_a[0], a) and _names_subject(vals_b[0], b):
        # Other subjects: "the budget for Orion is 319 ... by Mei in May" and "... for Aurora
        # is 54 ... by Omar in June" are two projects, "the invoice job of kappa-44 runs ..." and
        # "... of kappa-53 runs ..." two jobs (but "billing runs in Berlin on 3 servers" / "in
        # Paris on 5" is one service, and "Postgres 14 runs on db-1" / "Postgres 16 runs on
        # db-2" may be one upgrade).
        return Verdict("compatible", f"other subjects: {_show(vals_a)} / {_show(vals_b)}")
    return Verdict("unclear", f"several things differ: {_show(diff_a)} vs {_show(diff_b)}")
