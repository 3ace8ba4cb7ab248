"""Calendar traps: a URL that names a date too far ahead or too far back, and a
dated page's link that walks a month farther from today.

A calendar page links the next month, and that one the month after, for ever; a
crawl that follows them fetches empty pages until its depth limit. A URL names a
date when its path or query holds a year (four digits, 1000-2999) with a month, or
with a month and a day, in one of the forms sites use:

- path segments ``/2031/05/`` or ``/2031/05/12/`` (the month right after the year);
- a dash within a segment or a query value: ``/2031-05-12``, ``/events-2031-05``,
  ``?date=2031-05-12``, ``?month=2031-05`` (two-digit month and day, so that
  ``1024-1`` in an image name is no date);
- the year and the month as query parameters: ``?year=2031&month=5``;
- the compact ``YYYYMM`` or ``YYYYMMDD``, only where a calendar word names it: the
  query key (``?d=20310512``) or the segment before it (``/calendar/203105``), since
  elsewhere six or eight digits are more often an identifier.

A four-digit number alone (``/2031/``, ``/docs/3000/``) names no date, and a version
(``/3.11/``, ``/v2.7.18/``) never does: a dot never separates a date here. Pure: no
I/O, and today is an argument, never read from the clock.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

_YEAR = re.compile(r"[12][0-9]{3}")
_SHORT_NUMBER = re.compile(r"[0-9]{1,2}")
# A dash-separated date inside a segment or value; not glued to other digits or
# letters before it ("rfc2616-10" is no date).
_DASHED = re.compile(
    r"(?<![0-9A-Za-z])([12][0-9]{3})-([0-9]{2})(?:-([0-9]{2}))?(?![0-9])"
)
# The compact form, a whole segment (an extension allowed) or a whole value.
_COMPACT = re.compile(r"([12][0-9]{3})([0-9]{2})([0-9]{2})?(?:\.[A-Za-z]+)?")
# Keys and segments that say the number after them is a date.
CALENDAR_WORDS = frozenset(
    {"cal", "calendar", "d", "date", "day", "dt", "month", "ym", "ymd"}
)
YEAR_KEYS = frozenset({"year", "y", "yr", "yyyy"})
MONTH_KEYS = frozenset({"month", "m", "mo", "mon", "mm"})
DAY_KEYS = frozenset({"day", "d", "dd"})
# A month's days when a chain of days is held to TRAPS_CALENDAR_NEAR_MONTHS.
DAYS_A_MONTH = 30
# A date a URL names, and whether it names the day (not a month alone).
Named = tuple[date, bool]


def names_date_outside(
    path: str, query: str, *, today: date, horizon_days: int, earliest_year: int
) -> bool:
    """Whether *path* or *query* names a date later than *today* + *horizon_days*
    or in a year before *earliest_year*. A month stands for its first day."""
    latest = _latest(today, horizon_days)
    return any(
        found > latest or found.year < earliest_year
        for found in dates_named(path, query)
    )


def walks_away(
    page: tuple[str, str],
    link: tuple[str, str],
    *,
    today: date,
    near_months: int,
) -> bool:
    """Whether a link from a dated page leads farther from *today* than the page's
    own date and more than *near_months* from it: a step of a calendar's
    "previous" or "next" chain, which walks away from today one month (or one day)
    a link. *page* and *link* are (path, query). Distances are in months, or in
    days (``DAYS_A_MONTH`` a month) when the page and the link both name days, so
    a day calendar's "next day" link walks too. An undated page (an archive's
    index, a home page) may link any date, and a month page's link within its
    month (its days, its posts) never walks away."""
    page_dates = list(_named(*page))
    link_dates = list(_named(*link))
    if not page_dates or not link_dates:
        return False
    if all(has_day for _, has_day in page_dates + link_dates):
        page_far = [abs((found - today).days) for found, _ in page_dates]
        link_far = [abs((found - today).days) for found, _ in link_dates]
        near = near_months * DAYS_A_MONTH
    else:
        page_far = [_months_from(today, found) for found, _ in page_dates]
        link_far = [_months_from(today, found) for found, _ in link_dates]
        near = near_months
    farthest = max(link_far)
    return farthest > near and farthest > min(page_far)


def _months_from(today: date, found: date) -> int:
    return abs((found.year - today.year) * 12 + found.month - today.month)


def dates_named(path: str, query: str) -> Iterator[date]:
    """Every date *path* and *query* name (see the module's forms); an impossible
    one (2031-02-30, month 13) names none."""
    return (found for found, _ in _named(path, query))


def _named(path: str, query: str) -> Iterator[Named]:
    """Every date named, and whether it names a day (a month alone stands for its
    first day)."""
    segments = [segment for segment in path.split("/") if segment]
    yield from _path_dates(segments)
    pairs = [
        (key.lower(), value) for key, value in parse_qsl(query, keep_blank_values=True)
    ]
    yield from _query_dates(pairs)


def _latest(today: date, horizon_days: int) -> date:
    """*today* + *horizon_days*, or the last day a date can be."""
    try:
        return today + timedelta(days=horizon_days)
    except OverflowError:
        return date.max


def _path_dates(segments: Sequence[str]) -> Iterator[Named]:
    for index, segment in enumerate(segments):
        yield from _dashed_dates(segment)
        if _YEAR.fullmatch(segment):
            yield from _slashed_date(segment, segments[index + 1 : index + 3])
        if index and segments[index - 1].lower() in CALENDAR_WORDS:
            yield from _compact_date(segment)


def _query_dates(pairs: Sequence[tuple[str, str]]) -> Iterator[Named]:
    for key, value in pairs:
        yield from _dashed_dates(value)
        if key in CALENDAR_WORDS:
            yield from _compact_date(value)
    values = dict(pairs)
    year = next((values[key] for key in YEAR_KEYS if key in values), "")
    month = next((values[key] for key in MONTH_KEYS if key in values), "")
    day = next((values[key] for key in DAY_KEYS if key in values), "")
    if _YEAR.fullmatch(year) and _SHORT_NUMBER.fullmatch(month):
        day = day if _SHORT_NUMBER.fullmatch(day) else ""
        yield from _date_of(year, month, day)


def _slashed_date(year: str, after: Sequence[str]) -> Iterator[Named]:
    """``/YYYY/MM/`` or ``/YYYY/MM/DD/``: the year segment, then *after* it."""
    if not after or not _SHORT_NUMBER.fullmatch(after[0]):
        return
    day = after[1] if len(after) > 1 and _SHORT_NUMBER.fullmatch(after[1]) else ""
    with_day = _date_of(year, after[0], day)
    # A day segment that is no day of that month (/2031/02/30/) leaves the month.
    yield from with_day if with_day else _date_of(year, after[0], "")


def _dashed_dates(text: str) -> Iterator[Named]:
    for match in _DASHED.finditer(text):
        yield from _date_of(match[1], match[2], match[3] or "")


def _compact_date(text: str) -> Iterator[Named]:
    match = _COMPACT.fullmatch(text)
    if match:
        yield from _date_of(match[1], match[2], match[3] or "")


def _date_of(year: str, month: str, day: str) -> list[Named]:
    """The date, or none when it cannot be (a day is the month's first if absent)."""
    try:
        return [(date(int(year), int(month), int(day or 1)), bool(day))]
    except ValueError:
        return []
