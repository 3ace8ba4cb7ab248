"""IL(P): how important a page looks from its URL alone, between 0 and 1.

The default scorer of ``IMPORTANCE_URL_SCORER`` (any callable taking a URL and
returning a number may replace it). Its features are the ones the design this
crawler follows names; the score is their weighted mean, the weights chosen on
simulated webs (bench/importancesim.py, bench/RESULTS.md):

- a directory index or home page (``/``, ``/docs/``, ``index.html``,
  ``default.asp``) without a query: an entry point (weight 4);
- few slashes: 1 / the number of slashes in the path, so that a section (``/a/``)
  stands well apart from an article (``/a/b/c.html``) (weight 3);
- the site's home page itself (weight 2);
- no query string: a query usually selects one view of many (sorting, paging,
  sessions) (weight 1);
- a short URL (weight 0.5);
- a generic top-level domain (``.com``, ``.org``, ``.net``, ``.edu``, ``.gov``)
  (weight 0.5; another one counts half).

Pure: no I/O, no state; a URL it cannot read scores 0.
"""

from __future__ import annotations

from urllib.parse import urlsplit

# Each feature's weight in the mean.
WEIGHTS = {
    "index": 4.0,
    "depth": 3.0,
    "home": 2.0,
    "query": 1.0,
    "length": 0.5,
    "tld": 0.5,
}
# URL length at which the length feature is worth nothing.
LONGEST_URL = 120
INDEX_NAMES = ("index.", "default.")
GENERIC_TLDS = frozenset({"com", "org", "net", "edu", "gov"})


def url_importance(url: str) -> float:
    """IL(url), in [0, 1]: higher for URLs that look like entry points."""
    try:
        features = url_features(url)
    except ValueError:
        return 0.0
    total = sum(WEIGHTS.values())
    return sum(weight * features[name] for name, weight in WEIGHTS.items()) / total


def url_features(url: str) -> dict[str, float]:
    """Each feature of *url*, from 0 to 1 (``ValueError`` if it cannot be read)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    path = parts.path or "/"
    leaf = path.rsplit("/", 1)[-1].lower()
    is_index = (leaf == "" or leaf.startswith(INDEX_NAMES)) and not parts.query
    return {
        "index": 1.0 if is_index else 0.0,
        "depth": 1.0 / max(path.count("/"), 1),
        "home": 1.0 if is_index and path.count("/") <= 1 else 0.0,
        "query": 0.0 if parts.query else 1.0,
        "length": max(0.0, 1.0 - len(url) / LONGEST_URL),
        "tld": 1.0 if host.rsplit(".", 1)[-1].lower() in GENERIC_TLDS else 0.5,
    }
