"""Spider traps: URLs that would keep a crawl busy on pages of no worth.

Each rule has a setting that turns it off (``TRAPS_*``, and the host budget
``FRONTIER_HOST_MAX_PAGES``):

- canonical URLs (``canonical_url``): one page reached through many spellings,
  session parameters above all, is queued once;
- repeated path segments (``repeated_path``): a relative link that climbs into
  itself, ``/a/b/a/b/a/b/``;
- calendars (``calendar``, crawler.policy.trapcalendar): next month, for ever;
- query-parameter explosion: the same path under ever more query strings (the
  caller counts them under ``query_variant_key``);
- a page budget per host;
- soft 404s: a host that answers 200 for pages that do not exist; a probe of a path
  that cannot exist gives the host's "not found" page, whose signature later pages
  are compared with.

``trap_of`` applies the rules a URL alone decides; its names are the stats'
(``traps/<rule>``). Pure: no I/O, no clock, no randomness (the probe's token and
today's date are arguments). Nothing here raises on a hostile URL or body.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote_plus, urlsplit

from w3lib.url import canonicalize_url

from crawler.policy.trapcalendar import names_date_outside, walks_away
from crawler.policy.typedsettings import (
    get_bool,
    get_int,
    get_names,
    get_optional_int,
)

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import date

    from scrapy.settings import BaseSettings

# Query keys (compared decoded and lowercased) that name a session, not a page;
# "s" is left out: too many sites mean a search by it.
SESSION_PARAMS = frozenset(
    {"jsessionid", "phpsessid", "sid", "sessionid", "session_id", "cfid",
     "cftoken", "zenid", "oscsid"}
)  # fmt: skip
# ASP's cookieless session keys carry a suffix: ASPSESSIONIDQADCTQRA.
SESSION_PARAM_PREFIXES = ("aspsessionid",)
# ";jsessionid=..." as a path parameter, and PHP's, ASP's and plain "sid" likewise;
# ASP.NET's cookieless session, a segment of its own: "/(S(lit3py55t21z5v55vlm25s55))".
_PATH_SESSION = re.compile(
    r";(?:jsessionid|phpsessid|sid|sessionid|session_id|aspsessionid[a-z]*)=[^/;?#]*"
    r"|/\((?:[A-Z]\([A-Za-z0-9_-]{1,64}\))*S\([A-Za-z0-9]{20,32}\)"
    r"(?:[A-Z]\([A-Za-z0-9_-]{1,64}\))*\)(?=/)",
    re.IGNORECASE,
)
# The longest run of segments the repeated-path rule looks for.
LONGEST_REPEATED_RUN = 3
# Enough of a body to tell one page from another; a hostile body costs no more.
SOFT_404_READ = 256 * 1024
_DIGIT = re.compile(r"[0-9]")
_PUNCTUATION = "\"'.,;:!?()[]<>"
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class TrapsConfig:
    """The trap settings, checked once at start-up (0 or None turns a rule off)."""

    canonicalize: bool = True
    session_params: tuple[str, ...] = ()
    detect_sessions: bool = True
    max_path_repeats: int = 2
    calendar_horizon_days: int = 366
    calendar_earliest_year: int = 1990
    calendar_near_months: int | None = 0
    max_query_variants: int = 50
    host_max_pages: int | None = None
    soft_404: bool = True
    dead_directory_pages: int = 3

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> TrapsConfig:
        """The settings; a one-line ``ValueError`` naming the first bad one."""
        return cls(
            canonicalize=get_bool(settings, "TRAPS_CANONICALIZE"),
            session_params=get_names(settings, "TRAPS_SESSION_PARAMS"),
            detect_sessions=get_bool(settings, "TRAPS_SESSION_DETECT"),
            max_path_repeats=get_int(settings, "TRAPS_MAX_PATH_REPEATS", at_least=0),
            calendar_horizon_days=get_int(
                settings, "TRAPS_CALENDAR_HORIZON_DAYS", at_least=0, note="days"
            ),
            calendar_earliest_year=get_int(
                settings, "TRAPS_CALENDAR_EARLIEST_YEAR", at_least=0
            ),
            calendar_near_months=get_optional_int(
                settings, "TRAPS_CALENDAR_NEAR_MONTHS", at_least=0, note="months"
            ),
            max_query_variants=get_int(
                settings, "TRAPS_MAX_QUERY_VARIANTS", at_least=0
            ),
            host_max_pages=get_optional_int(
                settings, "FRONTIER_HOST_MAX_PAGES", at_least=1
            ),
            soft_404=get_bool(settings, "TRAPS_SOFT_404"),
            dead_directory_pages=get_int(
                settings, "TRAPS_DEAD_DIRECTORY_PAGES", at_least=0
            ),
        )


def trap_of(url: str, config: TrapsConfig, today: date) -> str | None:
    """The name of the first rule a URL alone is cut by (``repeated_path``,
    ``calendar``), or None. Give it the canonical URL: ``/a/./a/../a`` is read as
    written. An unparseable URL is no trap (scope refuses it)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if has_repeated_path(parts.path, config.max_path_repeats):
        return "repeated_path"
    if config.calendar_horizon_days and names_date_outside(
        parts.path,
        parts.query,
        today=today,
        horizon_days=config.calendar_horizon_days,
        earliest_year=config.calendar_earliest_year,
    ):
        return "calendar"
    return None


def calendar_walk(
    page_url: str, url: str, config: TrapsConfig, today: date
) -> str | None:
    """``calendar`` if *url*, linked from *page_url*, is a step of a calendar's
    chain away from today (``trapcalendar.walks_away``), else None. Past dates
    need this rule: an archive's old months are real pages when its index links
    them, but a "previous month" chain goes back to the earliest year."""
    if config.calendar_near_months is None:
        return None
    try:
        page, link = urlsplit(page_url), urlsplit(url)
    except ValueError:
        return None
    walks = walks_away(
        (page.path, page.query),
        (link.path, link.query),
        today=today,
        near_months=config.calendar_near_months,
    )
    return "calendar" if walks else None


# --- Canonical URLs -------------------------------------------------------------------


def canonical_url(
    url: str, config: TrapsConfig, sessions: frozenset[str] = frozenset()
) -> str:
    """*url* as the frontier should know it: session parameters dropped (query
    keys, any case, and ``;jsessionid=`` path parameters; *sessions* names more
    keys, decoded and lowercased: ``sessionids.session_keys``), query parameters
    sorted by key (a repeated key keeps its values' order), no fragment.

    The query's pairs get w3lib's escapes (``canonicalize_url``: unreserved
    characters decoded, the rest percent-encoded in upper case, spaces as
    ``+``). The scheme, host and path stay as written: an escaped dot
    (``%2E%2E``) or ``%7E`` may mean something else to the server than its
    decoded form, and the page store keeps such paths apart (hostile URLs
    included). A URL that cannot be parsed, or one without a scheme and a host, is
    returned unchanged; with ``TRAPS_CANONICALIZE`` off, every URL.
    """
    if not config.canonicalize:
        return url
    try:
        return _canonical(url, config, sessions)
    except ValueError:  # UnicodeError too: an unparseable netloc or IPv6 address
        return url


def _canonical(url: str, config: TrapsConfig, sessions: frozenset[str]) -> str:
    parts = urlsplit(url)
    if not (parts.scheme and parts.netloc):
        return url  # not an absolute URL: nothing the frontier queues
    base, _, _fragment = url.partition("#")
    base, _, query = base.partition("?")
    base = _PATH_SESSION.sub("", base)
    pairs = [
        normalised
        for pair in query.split("&")
        if not is_session_param(pair.partition("=")[0], config, sessions)
        and (normalised := _normalised_pair(pair))
    ]
    pairs.sort(key=lambda pair: pair.partition("=")[0])
    return f"{base}?{'&'.join(pairs)}" if pairs else base


def _normalised_pair(pair: str) -> str:
    """One ``key=value`` with w3lib's escapes (no sorting: it is alone)."""
    return urlsplit(canonicalize_url(f"http://h/?{pair}")).query


def is_session_param(
    key: str, config: TrapsConfig, sessions: frozenset[str] = frozenset()
) -> bool:
    """Whether the query key *key* (as written, escapes and all) names a session:
    a built-in name, one of ``TRAPS_SESSION_PARAMS`` or of *sessions*."""
    name = unquote_plus(key).strip().lower()
    return (
        name in SESSION_PARAMS
        or name in sessions
        or name in config.session_params
        or name.startswith(SESSION_PARAM_PREFIXES)
    )


# --- Repeated path segments -----------------------------------------------------------
# Heritrix's PathologicalPathDecideRule rejects ``.*?/(.*?/)\1{n,}.*`` over the whole
# URI: any run of segments (of any length, each closed by "/") repeated n more times
# in a row. Nutch's regex-urlfilter drops ``.*(/[^/]+)/[^/]+\1/[^/]+\1/``: one segment
# seen three times with one segment between. Here only the path counts (a query or a
# host never does), runs are 1 to 3 segments long and need no closing "/", empty
# segments ("//") are skipped, and a segment repeated apart from its copies is cut
# only on its fourth time (n + 2): /docs/en/docs/en/... manuals repeat a name twice.


def has_repeated_path(path: str, max_repeats: int) -> bool:
    """Whether *path* repeats a run of 1 to 3 segments more than *max_repeats*
    times in a row, or any one segment more than *max_repeats* + 1 times; never
    with *max_repeats* 0 (the rule is off)."""
    if not max_repeats:
        return False
    segments = [segment for segment in path.split("/") if segment]
    if any(count > max_repeats + 1 for count in Counter(segments).values()):
        return True
    return any(
        _repeats_in_a_row(segments, length) > max_repeats
        for length in range(1, LONGEST_REPEATED_RUN + 1)
    )


def _repeats_in_a_row(segments: Sequence[str], length: int) -> int:
    """The most times a run of *length* segments follows itself: a streak of
    segments each equal to the one *length* further on, in one linear pass."""
    longest = streak = 0
    for index in range(len(segments) - length):
        streak = streak + 1 if segments[index] == segments[index + length] else 0
        longest = max(longest, streak)
    return 1 + longest // length


# --- Query variants, host budget ------------------------------------------------------


def query_variant_key(url: str) -> str:
    """The host (lowercased, port kept) and path of *url*: the key its distinct
    query strings are counted under. *url* itself when it cannot be parsed."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    return f"{parts.netloc.lower()}{parts.path or '/'}"


def too_many_variants(seen: int, config: TrapsConfig) -> bool:
    """Whether a new query string of a path whose *seen* distinct ones are already
    queued is one too many (``TRAPS_MAX_QUERY_VARIANTS``; 0: never)."""
    return bool(config.max_query_variants) and seen >= config.max_query_variants


def over_budget(pages: int, config: TrapsConfig) -> bool:
    """Whether a host that already has *pages* pages may have no more
    (``FRONTIER_HOST_MAX_PAGES``; unset: never)."""
    return config.host_max_pages is not None and pages >= config.host_max_pages


# --- Soft 404s ------------------------------------------------------------------------


def soft_404_probe_url(origin: str, token: str) -> str:
    """A URL of *origin* (``scheme://host[:port]``) that no site has: a path built
    from *token* (the caller's random text, escaped as a path needs)."""
    safe = quote(token, safe="")
    return f"{origin.rstrip('/')}/{safe}-no-such-page-{safe}.html"


def soft_404_signature(status: int, body: bytes, *, url: str = "") -> str | None:
    """What "not found" pages of one host share: a hash of the body's words, case
    folded, without those that hold a digit (counters, dates, times), a "/" (the
    echoed URL, closing tags) or, when *url* is given, its file name (an echoed
    name). None unless *status* is 200."""
    if status != 200:
        return None
    text = body[:SOFT_404_READ].decode("utf-8", errors="replace").lower()
    names = _file_names(url)
    kept = [
        word
        for word in _WHITESPACE.split(text)
        if "/" not in word and not _DIGIT.search(word) and not _names(word, names)
    ]
    return hashlib.blake2b(" ".join(kept).encode(), digest_size=16).hexdigest()


def _file_names(url: str) -> frozenset[str]:
    """The last segment of *url*'s path, as written and decoded, lowercased."""
    try:
        path = urlsplit(url).path
    except ValueError:
        return frozenset()
    name = path.rstrip("/").rpartition("/")[2].lower()
    return frozenset(found for found in (name, unquote_plus(name)) if found)


def _names(word: str, names: frozenset[str]) -> bool:
    """Whether *word* is one of *names*, punctuation around it aside, or holds one
    long enough (4 characters) not to be found in words by chance."""
    bare = word.strip(_PUNCTUATION)
    return bare in names or any(len(name) >= 4 and name in word for name in names)


def matches_soft_404(signature: str | None, page_signature: str | None) -> bool:
    """Whether a page whose signature is *page_signature* is the host's "not
    found" page (*signature*, from its probe); never when either is None."""
    return signature is not None and signature == page_signature
