"""Time in queries: "last spring", "in March 2024", "3 weeks ago", "before we switched".

`time_intent(query, now)` reads what a query says about time: a window of
creation dates it names, and whether it asks for the current state of things
(prefer newer memories) or for how things were (prefer older ones). Recall
uses it to boost memories from that window and to decide which of two
memories on the same subject comes first. English and Russian. Pure: `now`
is a parameter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

EN_MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
    "oct": 10, "nov": 11, "dec": 12,
}
# Words that are months only in context ("in May", "March 2024"), not as verbs.
AMBIGUOUS_MONTHS = {"may", "march"}
RU_MONTHS = [(r"январ\w*", 1), (r"феврал\w*", 2), (r"март\w*", 3), (r"апрел\w*", 4), (r"ма[йяе]", 5),
             (r"июн\w*", 6), (r"июл\w*", 7), (r"август\w*", 8), (r"сентябр\w*", 9), (r"октябр\w*", 10),
             (r"ноябр\w*", 11), (r"декабр\w*", 12)]
SEASONS = [(r"spring|весн\w*", 3, 3), (r"summer|лет(?:ом|о|а|ний|него|нем)", 6, 3), (r"autumn|fall|осен\w*", 9, 3),
           (r"winter|зим\w*", 12, 3)]
UNIT_DAYS = [(r"day|дн|день|дня", 1), (r"week|недел", 7), (r"month|месяц", 30), (r"year|год|лет", 365)]
NEWER = re.compile(r"\b(now|current(ly)?|latest|recent(ly)?|these days|nowadays|still|today'?s|at the moment|"
                   r"сейчас|теперь|текущ\w*|последн\w*|нынешн\w*)\b", re.I)
OLDER = re.compile(r"\b(before (we|they|i|you|he|she|it)|before\W*$|used to|previous(ly)?|originally|formerly|at first|"
                   r"initially|in the past|old|earlier|раньше|прежде|до того|изначально|сначала|бывш\w*)\b", re.I)
_EN_MONTH = "|".join(sorted(EN_MONTHS, key=len, reverse=True))
_RU_MONTH = "|".join(f"(?:{pattern})" for pattern, _ in RU_MONTHS)


@dataclass(frozen=True)
class TimeIntent:
    start: datetime | None = None
    end: datetime | None = None
    prefer: str | None = None  # "newer", "older" or None

    @property
    def has_window(self) -> bool:
        return self.start is not None or self.end is not None

    def contains(self, when: datetime) -> bool:
        return (self.start is None or when >= self.start) and (self.end is None or when < self.end)


def time_intent(query: str, now: datetime) -> TimeIntent:
    text = query.lower()
    window = _window(text, now)
    prefer = "older" if OLDER.search(text) else ("newer" if NEWER.search(text) else None)
    start, end = window if window else (None, None)
    return TimeIntent(start, end, prefer)


def _add_months(when: datetime, months: int) -> datetime:
    index = when.year * 12 + when.month - 1 + months
    return when.replace(year=index // 12, month=index % 12 + 1, day=1)


def _window(text: str, now: datetime):
    """The [start, end) window of creation dates a query names, or None."""
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    for finder in (_named_day, _ago, _last_or_this_unit, _season, _month, _year):
        found = finder(text, day)
        if found:
            return found
    return None


def _named_day(text: str, day: datetime):
    if re.search(r"\b(yesterday|вчера)\b", text):
        return day - timedelta(days=1), day
    if re.search(r"\b(today|сегодня)\b", text):
        return day, day + timedelta(days=1)
    return None


def _ago(text: str, day: datetime):
    words = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
    match = re.search(r"\b(\d+|a|an|one|two|three|four|five|six)\s+(days?|weeks?|months?|years?)\s+ago\b", text) or \
        re.search(r"\b(\d+)\s+(дн\w*|день|недел\w*|месяц\w*|год\w*|лет)\s+назад\b", text)
    if not match:
        return None
    count = int(match.group(1)) if match.group(1).isdigit() else words[match.group(1)]
    unit = next(days for pattern, days in UNIT_DAYS if re.match(pattern, match.group(2)))
    center = day - timedelta(days=count * unit)
    slack = timedelta(days=max(1.0, count * unit * 0.25))
    return center - slack, center + slack + timedelta(days=1)


def _last_or_this_unit(text: str, day: datetime):
    match = re.search(r"\b(last|past|this|прошл\w*|эт\w*)\s+(week|month|year|недел\w*|месяц\w*|год\w*)\b", text)
    if not match:
        return None
    this = match.group(1).startswith(("this", "эт"))
    unit = match.group(2)
    if unit.startswith(("week", "недел")):
        start = day - timedelta(days=day.weekday())
        return (start, start + timedelta(days=7)) if this else (start - timedelta(days=7), start)
    if unit.startswith(("month", "месяц")):
        start = day.replace(day=1)
        return (start, _add_months(start, 1)) if this else (_add_months(start, -1), start)
    start = day.replace(month=1, day=1)
    return (start, start.replace(year=start.year + 1)) if this else (start.replace(year=start.year - 1), start)


def _season(text: str, day: datetime):
    names = "|".join(f"(?:{pattern})" for pattern, _, _ in SEASONS)
    match = re.search(rf"\b(last|this|прошл\w*|эт\w*)?\s*({names})\b(?:\s+(?:of\s+)?((?:19|20)\d{{2}}))?", text)
    if not match:
        return None
    first, length = next((m, n) for pattern, m, n in SEASONS if re.fullmatch(pattern, match.group(2)))
    year = int(match.group(3)) if match.group(3) else day.year
    start = day.replace(year=year, month=first, day=1)
    if not match.group(3):
        # The most recent one that has begun; "last" means the one before the current.
        while start > day:
            start = start.replace(year=start.year - 1)
        if (match.group(1) or "").startswith(("last", "прошл")) and start <= day < _add_months(start, length):
            start = start.replace(year=start.year - 1)
    return start, _add_months(start, length)


def _month(text: str, day: datetime):
    match = re.search(rf"\b(in|last|this|of|since|before|after)?\s*\b({_EN_MONTH})\b\.?"
                      rf"(?:\s+((?:19|20)\d{{2}}))?", text)
    month = None
    if match and (match.group(2) not in AMBIGUOUS_MONTHS or match.group(1) or match.group(3)):
        month, year_text = EN_MONTHS[match.group(2)], match.group(3)
    else:
        ru = re.search(rf"\b({_RU_MONTH})\b(?:\s+((?:19|20)\d{{2}}))?", text)
        if ru:
            month = next(m for pattern, m in RU_MONTHS if re.fullmatch(pattern, ru.group(1)))
            year_text = ru.group(2)
    if month is None:
        return None
    start = day.replace(year=int(year_text) if year_text else day.year, month=month, day=1)
    if not year_text and start > day:
        start = start.replace(year=start.year - 1)
    return start, _add_months(start, 1)


def _year(text: str, day: datetime):
    match = re.search(r"\b((?:19|20)\d{2})\b", text)
    if not match:
        return None
    start = day.replace(year=int(match.group(1)), month=1, day=1)
    return start, start.replace(year=start.year + 1)
