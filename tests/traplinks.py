"""Where each page of the trap site links (tests/traproutes.py says what a URL is),
and the real pages a breadth-first crawl reaches within a depth, found without HTTP.

Links are given as the page writes them (``a/`` on /docs/ pages is relative); the
sessions host decorates each with a fresh session id when it serves the page
(tests/trappages.py), so here they are the pages' canonical paths.
"""

from __future__ import annotations

import datetime
from collections import deque
from urllib.parse import urljoin

from tests.traproutes import (
    CALENDAR_DAYS,
    ENTRANCES,
    FACETS,
    TREES,
    Route,
    kind_of,
    route,
    trap_exits,
    tree,
    tree_size,
)

# The calendar's links lead to traps whatever the day; real_pages needs one.
ANY_DAY = datetime.date(2000, 1, 1)
# Products listed by /shop/ (a category lists those of its number modulo 3).
SHOP_LISTED = 10


def links(host_index: int, target: str, today: datetime.date) -> list[str]:
    """The hrefs of the page at *target*, in page order; a dead URL has none but on
    the soft404 host, whose "not found" pages still link out. *today* is the date the
    calendar's index links to."""
    found = route(host_index, target)
    if found.kind == "real" or found.variant == "session":
        return _real_links(host_index, found.page, today)
    if found.variant == "dead":
        return []
    return _trap_links(found.variant, target) + trap_exits(host_index)


def _trap_links(variant: str, target: str) -> list[str]:
    """A trap page's own links, before the exits every trap page has."""
    path, _, query = target.partition("?")
    if variant in ("month", "day"):
        return _calendar_links(path)
    if variant == "copy":
        return ["a/", "b/"]
    if variant == "facet":
        return _facet_links(path, query)
    return []  # print mirrors and soft 404s


def _real_links(host_index: int, path: str, today: datetime.date) -> list[str]:
    """A real page's links: its tree children, the root, and the host's extras."""
    kind = kind_of(host_index)
    if path in ENTRANCES.get(kind, ()):
        return _entrance_links(host_index, path, today)
    pages = tree(host_index)
    k = pages.index(path)
    found = [pages[c] for c in (2 * k + 1, 2 * k + 2) if c < len(pages)]
    found += ["/"] if k else list(ENTRANCES.get(kind, ()))
    if kind == "mirrors":
        found += [f"{path}?print=1", f"/print{path}"]
    if kind == "soft404" and k and k % 3 == 0:
        found.append(f"/old{path}")  # a dead link, answered 200 all the same
    return found


def _entrance_links(host_index: int, path: str, today: datetime.date) -> list[str]:
    """The calendar's index (to this month), /docs/, the shop's listings, the
    ticking and advert pages."""
    exits = trap_exits(host_index)
    if path == "/calendar/":
        return [_month_path((today.year, today.month)), *exits]
    if path == "/docs/":
        return ["a/", "b/", *exits]
    if path.startswith("/shop/"):
        return _listing(path) + [f"{path}?{key}={FACETS[key][0]}" for key in FACETS]
    return exits


def _listing(path: str) -> list[str]:
    """The products a shop listing links to."""
    prefix, count = tree_size("facets")
    numbers = range(1, SHOP_LISTED + 1)
    if path != "/shop/":
        category = int(path.strip("/").rpartition("/")[2])
        numbers = range(category, count + 1, 3)
    return [f"{prefix}{n}.html" for n in numbers]


def _facet_links(path: str, query: str) -> list[str]:
    """From one facet choice to more: each missing facet added at the end (so the
    same choice is reached in every order), each chosen value moved to the next."""
    pairs = [
        (key, value) for key, _, value in (p.partition("=") for p in query.split("&"))
    ]
    chosen = dict(pairs)
    found = [
        f"{path}?{query}&{key}={values[0]}"
        for key, values in FACETS.items()
        if key not in chosen
    ]
    for key, value in chosen.items():
        values = FACETS[key]
        following = values[(values.index(value) + 1) % len(values)]
        moved = [f"{k}={following if k == key else v}" for k, v in pairs]
        found.append(f"{path}?{'&'.join(moved)}")
    return [path, *found]


def _month_path(month: tuple[int, int]) -> str:
    return f"/calendar/{month[0]:04d}/{month[1]:02d}/"


def _calendar_links(path: str) -> list[str]:
    """A month: the months before and after, and its day pages; a day: its month."""
    year, month = int(path[10:14]), int(path[15:17])
    month_path = _month_path((year, month))
    if path != month_path:
        return [month_path]
    before = (year - 1, 12) if month == 1 else (year, month - 1)
    after = (year + 1, 1) if month == 12 else (year, month + 1)
    months = [_month_path(m) for m in (before, after) if 1 <= m[0] <= 9999]
    return months + [f"{month_path}{day:02d}/" for day in CALENDAR_DAYS]


def real_pages(depth_limit: int, hosts: int = len(TREES)) -> set[tuple[int, str]]:
    """(host index, path) of every real page within *depth_limit* links of its
    host's root, breadth first over real pages' links. Trap pages link only to
    pages one link from the root (TRAP_EXITS), so following them finds nothing
    sooner. On the sessions host the paths are canonical (no session id)."""
    return {
        (host_index, path)
        for host_index in range(hosts)
        for path in _real_depths(host_index, depth_limit)
    }


def _real_depths(host_index: int, depth_limit: int) -> dict[str, int]:
    """Each real page of the host within *depth_limit* links: its least depth."""
    depths = {"/": 0} if depth_limit >= 0 else {}
    queue = deque(depths)
    while queue:
        path = queue.popleft()
        if depths[path] == depth_limit:
            continue
        for href in _real_links(host_index, path, ANY_DAY):
            target = urljoin(path, href)
            if target not in depths and _is_real(host_index, target):
                depths[target] = depths[path] + 1
                queue.append(target)
    return depths


def _is_real(host_index: int, target: str) -> bool:
    return route(host_index, target) == Route("real", target)
