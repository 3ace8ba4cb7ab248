"""IL(P): how important a page looks from its URL alone, between 0 and 1.

The default scorer of ``IMPORTANCE_URL_SCORER`` (any callable taking a URL and
returning a number may replace it). Its features are the ones the design this
crawler follows names, each worth a fixed share of the score:

- the path's depth: a page near the root of its site is usually an entry point
  (the home page scores most, each directory level less);
- a home or index page (``/``, ``index.html``, ``default.asp``...);
- no query string: a query usually selects one view of many (sorting, paging,
  sessions);
- a short URL;
- a generic top-level domain (``.com``, ``.org``, ``.net``, ``.edu``, ``.gov``).

Pure: no I/O, no state; a URL it cannot read scores 0.
"""

from __future__ import annotations

from urllib.parse import urlsplit

# What each feature is worth (they sum to 1).
PATH_DEPTH_SHARE = 0.4
INDEX_PAGE_SHARE = 0.2
NO_QUERY_SHARE = 0.2
SHORT_URL_SHARE = 0.1
GENERIC_TLD_SHARE = 0.1
# Path depth at which the depth feature is worth nothing.
DEEPEST_PATH = 8
# URL length at which the length feature is worth nothing.
LONGEST_URL = 200
INDEX_NAMES = frozenset(
    {"", "index", "default", "home", "main", "welcome", "start", "contents"}
)
GENERIC_TLDS = frozenset({"com", "org", "net", "edu", "gov", "int"})


def url_importance(url: str) -> float:
    """IL(url), in [0, 1]: higher for URLs that look like entry points."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return 0.0
    segments = [s for s in parts.path.split("/") if s]
    trailing = parts.path.endswith("/") or not segments
    depth = len(segments) - (0 if trailing else 1)
    name = "" if trailing else segments[-1].rsplit(".", 1)[0].lower()
    score = PATH_DEPTH_SHARE * max(0.0, 1 - depth / DEEPEST_PATH)
    if name in INDEX_NAMES:
        score += INDEX_PAGE_SHARE
    if not parts.query:
        score += NO_QUERY_SHARE
    score += SHORT_URL_SHARE * max(0.0, 1 - len(url) / LONGEST_URL)
    if host.rsplit(".", 1)[-1].lower() in GENERIC_TLDS:
        score += GENERIC_TLD_SHARE
    return score
