"""What each host of the trap site (tests/trapsite.py) is asked for, and where its
pages link: pure functions of (host, path and query), so a benchmark can split a
crawl's fetches into real pages, traps and dead links without asking the site.

Every host has a tree of real pages: ``/`` and ``<prefix><n>.html``, page k linking to
pages 2k+1 and 2k+2 and back to ``/``. Each host's trap hangs off that tree, and
every trap page links to TRAP_EXITS (``/`` and the root's two children), so the real
part stays reachable through normal links and no trap ever makes a real page
shallower than the real links do (real_pages relies on it; the tests check it). The
sessions host's copies are the exception: a page with a session id links as its page
does, so the canonical pages are as deep as the decorated ones.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from typing import Literal

Kind = Literal["real", "trap", "dead"]
KINDS = ("calendar", "sessions", "paths", "facets", "soft404", "mirrors", "plain")
# The environment variable that makes every host's tree larger (``scale``).
SCALE_VARIABLE = "TRAPSITE_SCALE"
# Each host's real pages besides its root: (path prefix, how many).
TREES = {
    "calendar": ("/events/", 15),
    "sessions": ("/s/", 19),  # 20 real pages with the root
    "paths": ("/guide/", 19),
    "facets": ("/shop/item/", 30),  # the 30 products
    "soft404": ("/article/", 29),  # 30 real pages with the root
    "mirrors": ("/page/", 29),  # 30 real pages with the root
    "plain": ("/p/", 39),  # 40 real pages with the root
}
# Real pages outside the tree, linked from the root: the ways into each trap.
ENTRANCES = {
    "calendar": ("/calendar/",),
    "paths": ("/docs/",),
    "facets": ("/shop/", "/shop/c/1/", "/shop/c/2/", "/shop/c/3/"),
    "mirrors": ("/ticking.html", "/advert.html"),
}
TRAP_EXITS_COUNT = 3  # "/" and the root's two children
SESSION_KEYS = ("PHPSESSID", "sid", "visit")
FACETS = {
    "color": ("red", "green", "blue", "black", "white"),
    "size": ("s", "m", "l", "xl"),
    "brand": ("acme", "globex", "initech", "umbrella", "hooli"),
    "sort": ("price", "name", "new"),
    "page": tuple(str(n) for n in range(1, 51)),
}
FACET_PATHS = ("/shop/", "/shop/c/1/", "/shop/c/2/", "/shop/c/3/")
CALENDAR_DAYS = (3, 14, 25)  # the day pages every month has
_MONTH = re.compile(r"/calendar/(\d{4})/(\d{2})/(?:(\d{2})/)?")
_PRINT = "print=1"


@dataclass(frozen=True)
class Route:
    """How the site answers a URL: its kind, the real page whose text it shows
    (``""`` for none) and the variant of that page it is."""

    kind: Kind
    page: str = ""
    variant: str = "page"


DEAD = Route("dead", variant="dead")


def kind_of(host_index: int) -> str:
    """Host i serves the i-th trap of KINDS."""
    return KINDS[host_index]


def scale() -> int:
    """How many times TREES' real pages each host has: ``TRAPSITE_SCALE`` (1 unless
    set), so that a benchmark can put the same traps beside a larger real site. The
    site's process and whoever classifies its URLs must share it (the site inherits
    its environment)."""
    text = os.environ.get(SCALE_VARIABLE, "1")
    return int(text) if text.isdecimal() and int(text) >= 1 else 1


def tree_size(kind: str) -> tuple[str, int]:
    """The path prefix and the number of a host's tree pages, the root apart."""
    prefix, count = TREES[kind]
    return prefix, count * scale()


def tree(host_index: int) -> tuple[str, ...]:
    """The host's tree of real pages, root first (page k's children: 2k+1, 2k+2)."""
    return _tree(kind_of(host_index), scale())


@functools.cache
def _tree(kind: str, times: int) -> tuple[str, ...]:
    prefix, count = TREES[kind]
    return ("/", *(f"{prefix}{n}.html" for n in range(1, count * times + 1)))


def real_paths(host_index: int) -> frozenset[str]:
    """Every real page of the host: its tree and the trap entrances."""
    return _real_paths(kind_of(host_index), scale())


@functools.cache
def _real_paths(kind: str, times: int) -> frozenset[str]:
    return frozenset(_tree(kind, times) + ENTRANCES.get(kind, ()))


def trap_exits(host_index: int) -> list[str]:
    """The real pages every trap page links to, all one link from the root."""
    return list(tree(host_index)[:TRAP_EXITS_COUNT])


def classify(host_index: int, path_and_query: str) -> Kind:
    """Whether *path_and_query* on host *host_index* is a real page, a trap page (a
    copy, a variant or an endless generated page) or dead (nothing there)."""
    return route(host_index, path_and_query).kind


def route(host_index: int, path_and_query: str) -> Route:
    """How host *host_index* answers *path_and_query* (a fragment is ignored)."""
    target = path_and_query.partition("#")[0]
    path, has_query, query = target.partition("?")
    kind = kind_of(host_index)
    if not has_query and path in real_paths(host_index):
        return Route("real", path)
    special = _SPECIAL.get(kind)
    found = special(host_index, path, query if has_query else None) if special else None
    if found is not None:
        return found
    return Route("dead", variant="soft404") if kind == "soft404" else DEAD


def _calendar(host_index: int, path: str, query: str | None) -> Route | None:
    """/calendar/YYYY/MM/ for any month of years 1-9999, and its CALENDAR_DAYS."""
    match = _MONTH.fullmatch(path)
    if query is not None or match is None:
        return None
    year, month, day = (int(part) if part else 0 for part in match.groups())
    if not (1 <= year <= 9999 and 1 <= month <= 12):
        return None
    if match.group(3) is not None and day not in CALENDAR_DAYS:
        return None
    return Route("trap", variant="day" if day else "month")


def _sessions(host_index: int, path: str, query: str | None) -> Route | None:
    """A real page with a session id (``;jsessionid=``, ``?PHPSESSID=``, ``?sid=``)."""
    page, has_param, param = path.partition(";")
    decorated = has_param or query is not None
    if has_param and not _session_pair(param, ("jsessionid",)):
        return None
    if query is not None and not _session_pair(query, SESSION_KEYS):
        return None
    if decorated and page in real_paths(host_index):
        return Route("trap", page, "session")
    return None


def _session_pair(text: str, keys: tuple[str, ...]) -> bool:
    key, sep, value = text.partition("=")
    return bool(sep) and key in keys and value.isalnum()


def _paths(host_index: int, path: str, query: str | None) -> Route | None:
    """Anything under /docs/ is /docs/ again (a server that ignores the rest)."""
    if path.startswith("/docs/"):
        return Route("trap", "/docs/", "copy")
    return None


def _facets(host_index: int, path: str, query: str | None) -> Route | None:
    """A listing with facets: known keys, each once, each with a known value."""
    if path not in FACET_PATHS or not query:
        return None
    pairs = [pair.partition("=") for pair in query.split("&")]
    keys = [key for key, _, _ in pairs]
    if len(set(keys)) != len(keys):
        return None
    if all(sep and value in FACETS.get(key, ()) for key, sep, value in pairs):
        return Route("trap", path, "facet")
    return None


def _mirrors(host_index: int, path: str, query: str | None) -> Route | None:
    """A tree page again, under ``?print=1`` or ``/print/<page>``."""
    pages = tree(host_index)
    if query == _PRINT and path in pages:
        return Route("trap", path, "print")
    printed = path.removeprefix("/print")
    if query is None and path.startswith("/print/") and printed in pages:
        return Route("trap", printed, "print")
    return None


_SPECIAL = {
    "calendar": _calendar,
    "sessions": _sessions,
    "paths": _paths,
    "facets": _facets,
    "mirrors": _mirrors,
}
