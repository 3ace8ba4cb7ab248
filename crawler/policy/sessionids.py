"""Session ids that no list names, told from one page's links.

A site that keeps its sessions in URLs writes the session's key on every link to
itself, whatever the page linked: ``/a?s=8f3k2...``, ``/b/c?s=8f3k2...``. Each fetch
may be given a new id, so each page comes back under ever new URLs, and a crawl
that keeps them fetches the site again and again. The built-in names
(``traps.SESSION_PARAMS``) catch the usual servers; this catches the rest from the
shape of a page's links, before any of them is fetched:

- the key is on at least ``SHARE`` of the page's links to its own host (at least
  ``MIN_LINKS`` of them), and on links to at least ``MIN_PATHS`` different paths:
  an item id (``/item?id=...``) is on links to one path;
- every value is a token: ``MIN_TOKEN`` or more letters, digits, ``-``, ``_``,
  ``.``, ``~``, ``+`` or ``=``, a digit among them (a language, ``?lang=en``, or a
  sort order is no token; a path, with its ``/``, is none either);
- no value is part of the page's own URL under another name: a product page's
  links to its reviews and questions carry the product's id, which is no session.

Such keys are dropped from the page's links (``canonical_url``'s *sessions*) as the
built-in names are. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, parse_qsl, urlsplit

if TYPE_CHECKING:
    from collections.abc import Iterable

SHARE = 0.8  # of the page's links to its own host that carry the key
MIN_LINKS = 3  # links to its own host a page needs for its keys to be judged
MIN_PATHS = 3  # different paths the key's links lead to
MIN_TOKEN = 12  # characters of a session id, at the least
# Letters, digits and what ids are written with (UUIDs' dashes, base64's + and =).
_TOKEN = re.compile(rf"[A-Za-z0-9_.~+=-]{{{MIN_TOKEN},}}")
_DIGIT = re.compile(r"[0-9]")


def session_keys(page_url: str, links: Iterable[str]) -> frozenset[str]:
    """The query keys (decoded, lowercased) that carry a session on the links of
    the page at *page_url*; links to other hosts are not looked at."""
    links = list(links)
    if sum("?" in link for link in links) < MIN_LINKS:
        return frozenset()  # a key is on MIN_LINKS links at least: no parse needed
    try:
        page = urlsplit(page_url)
    except ValueError:
        return frozenset()
    own: list[tuple[str, list[tuple[str, str]]]] = []
    for link in links:
        try:
            parts = urlsplit(link)
        except ValueError:
            continue
        if parts.netloc == page.netloc:
            own.append((parts.path, _named_pairs(parts.query)))
    if len(own) < MIN_LINKS:
        return frozenset()
    paths: defaultdict[str, set[str]] = defaultdict(set)
    values: defaultdict[str, set[str]] = defaultdict(set)
    carried: defaultdict[str, int] = defaultdict(int)
    for path, pairs in own:
        for key in {key for key, _ in pairs}:
            carried[key] += 1
            paths[key].add(path)
        for key, value in pairs:
            values[key].add(value)
    named = _names_in(page)
    return frozenset(
        key
        for key, count in carried.items()
        if count >= SHARE * len(own)
        and len(paths[key]) >= MIN_PATHS
        and all(_is_token(value) for value in values[key])
        and not any(named.get(value, key) != key for value in values[key])
    )


def _named_pairs(query: str) -> list[tuple[str, str]]:
    """*query*'s pairs, each key as ``traps.is_session_param`` names one (decoded
    once, by parse_qsl; stripped, lowercased)."""
    return [
        (key.strip().lower(), value)
        for key, value in parse_qsl(query, keep_blank_values=True)
    ]


def _is_token(value: str) -> bool:
    return bool(_TOKEN.fullmatch(value) and _DIGIT.search(value))


def _names_in(page: SplitResult) -> dict[str, str]:
    """The values of the page's own URL, each with the key it stands under (its
    path segments under ``""``)."""
    named = {segment: "" for segment in page.path.split("/") if segment}
    for key, value in _named_pairs(page.query):
        named[value] = key
    return named
