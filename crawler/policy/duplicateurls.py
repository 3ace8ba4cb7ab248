"""Different URLs, one page: what near-duplicate pages teach about a host's URLs.

Two kinds of lesson (``NEARDUP_*``; crawler/spiders/neardups.py learns them,
crawler/crawlstate/urlrules.py keeps them in Redis for the cluster):

- **A copy's links lead to copies.** A page whose text is a near-duplicate of
  another page of its host *and* whose links, read relative to its own place, are
  that page's links (``links_signature``) is the same page served again under
  another path: a server that ignores the rest of a path (``/docs/a/b/a/``), a
  mirror of a subtree. Its relative links resolve below the copy, to more copies,
  for ever; its other links are the original's, followed already. So a copy's links
  are not followed (Mercator's "content seen" test, made safe by the links check:
  a printer-friendly copy has other links, and they are still followed).
- **Rewrites that keep the page** (Bar-Yossef, Keidar and Schonfeld, "Do not crawl
  in the DUST: different URLs with similar text", 2007). A rule says that removing
  one query pair (``param:print=1``) or one run of path segments at one place
  (``segments:1:print``) from a URL leaves its page the same. A fetched page whose
  URL with such a removal (``removals``) was fetched too is evidence for that rule
  when the two are near-duplicates, and contradicts it for good when they are
  different pages (``DIFFERENT_PAGES`` bits apart or more). Only fingerprints are
  compared, by URL key: no URL is kept. A rule with ``support`` distinct pieces of evidence
  (pairs at different paths) and no contradiction rewrites the host's new links
  before they are queued, so a copy under a known spelling costs no fetch.

A query rule names a value (``param:print=1``, evidence at different paths) or a
key whatever its value (``param:color=*``, evidence from different values, one more
than the support: ``evidence_needed``, which also lets one pair confirm a
well-known copy's marker such as ``?print=1`` or ``/printable/``). ``?lang=en`` may
be the default page while ``?lang=fr`` is another: a fetched ``?lang=fr`` page that
is not its URL without the pair contradicts both ``param:lang=fr`` and
``param:lang=*``.

A path's rule (``query:/shop/``) drops any query from that path: a listing whose
filters and sort orders all show the listing again (faceted navigation). It is
learnt from query strings of different keys (``?color=red`` and ``?size=s`` both
near ``/shop/``), so that the next filter, or a filter of a filter, costs no fetch;
number segments are one path to it (``query:/shop/c/{n}/``: the filters of
category 1 teach those of category 2). A path whose query strings are pages of
their own (``?page=2``, ``?id=7``) contradicts it as soon as one of them and the
path's own page are both fetched. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Iterator

# Fingerprints at least this many bits apart are of different pages: unrelated
# texts differ in about 32 of 64 bits, while a copy with a line of its own may
# differ in a few more than NEARDUP_MAX_DISTANCE. Between the two a page is no
# evidence either way, so SimHash's noise never contradicts a rule.
DIFFERENT_PAGES = 16
# The longest run of segments a rule removes: /print/, /m/amp/; longer is rarely a
# copy's marker and more often a real subtree.
MAX_RULE_SEGMENTS = 2
# The longest path a query rule names: longer paths learn no rule.
MAX_RULE_PATH = 512
PARAM = "param:"
SEGMENTS = "segments:"
QUERY = "query:"
ANY_VALUE = "*"
# Query keys and path segments that mark a copy of a page on many sites: the
# printer-friendly and AMP versions. Their rules need one near-duplicate pair.
MARKER_KEYS = frozenset(
    {"print", "printable", "printer", "printerfriendly", "printer_friendly",
     "print_view", "printview", "print_version", "amp"}
)  # fmt: skip
_MARKER_VALUES = ("print", "printable", "printer", "amp")
_MARKER_PAIRS = [(key, "1") for key in sorted(MARKER_KEYS)] + [
    (key, value)
    for key in ("view", "format", "output", "mode", "layout", "version")
    for value in _MARKER_VALUES
]
_MARKER_SEGMENTS = (
    "print", "printable", "printer", "printer-friendly", "printerfriendly",
    "print-friendly", "print-version", "amp",
)  # fmt: skip
KNOWN_COPY_MARKERS = frozenset(
    [f"{PARAM}{urlencode([pair])}" for pair in _MARKER_PAIRS]
    + [f"{SEGMENTS}1:{segment}" for segment in _MARKER_SEGMENTS]
)
# A rule as this module writes it: anything else (damaged crawl state) is ignored.
_RULE = re.compile(
    r"param:[^&]+|segments:[1-9][0-9]{0,3}:[^/]+(?:/[^/]+)?"
    rf"|query:/[^?#\s]{{0,{MAX_RULE_PATH}}}"
)


@dataclass(frozen=True, slots=True)
class Evidence:
    """A rule and what speaks for it: the URL the removal gave (distinct
    ``where`` values count as distinct evidence)."""

    rule: str
    where: str


def links_signature(page_url: str, links: Iterable[str]) -> str:
    """A digest of *links* as *page_url* would write them relatively: a link below
    the page's directory by its rest (``a/``), any other by itself. A copy of a page
    served under another directory has its original's signature."""
    links = list(links)
    if not links:
        return ""  # a page without links is nobody's copy: it has none to drop
    directory = page_url.split("?", 1)[0].rsplit("/", 1)[0] + "/"
    relative = sorted({link.removeprefix(directory) for link in links})
    digest = hashlib.blake2b("\n".join(relative).encode("utf-8", "replace"))
    return digest.hexdigest()[:16]


def removals(url: str) -> Iterator[tuple[Evidence, str]]:
    """Each rule that could fit *url*, with the URL it would rewrite *url* to: one
    query pair taken out, the whole query (evidence counted by its keys), or one
    run of 1 to ``MAX_RULE_SEGMENTS`` path segments (something must follow the
    run). A fetched page is checked against each
    (``Evidence``: is that URL's page, if fetched, the same page?)."""
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    for index, pair in enumerate(pairs):
        rest = urlencode(pairs[:index] + pairs[index + 1 :])
        without = urlunsplit(parts._replace(query=rest, fragment=""))
        for evidence in _param_evidence(*pair, parts.path):
            yield evidence, without
    view = _view_of(parts.path, pairs)
    if view is not None:
        without = urlunsplit(parts._replace(query="", fragment=""))
        yield Evidence(view.rule, view.where), without
    segments = parts.path.split("/")
    for at in range(1, len(segments) - 1):
        for length in range(1, MAX_RULE_SEGMENTS + 1):
            if at + length >= len(segments):
                break
            rule = f"{SEGMENTS}{at}:{'/'.join(segments[at : at + length])}"
            if not is_rule(rule):
                continue
            path = "/".join(segments[:at] + segments[at + length :])
            without = urlunsplit(parts._replace(path=path, fragment=""))
            yield Evidence(rule, path), without


def rewrite(url: str, rules: Collection[str]) -> str:
    """*url* with every rule of *rules* that fits it applied (query pairs and runs
    of segments removed); *url* itself when none fits."""
    if not rules:
        return url
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    kept = [
        (key, value)
        for key, value in pairs
        if _param_rule(key, value) not in rules and _any_value(key) not in rules
    ]
    if parts.query and query_rule_of(parts.path) in rules:
        kept = []
    path = _without_segments(parts.path, rules)
    if len(kept) == len(pairs) and path == parts.path:
        return url
    query = urlencode(kept) if len(kept) != len(pairs) else parts.query
    return urlunsplit(parts._replace(path=path, query=query))


@dataclass(frozen=True, slots=True)
class QueryView:
    """A URL's query as a view of its path's listing: the path's query rule and the
    query's keys (``?color=red&size=s`` -> ``color``, ``size``)."""

    rule: str
    keys: frozenset[str]

    @property
    def where(self) -> str:
        """The evidence's ``where``: the keys, as ``removals`` writes them."""
        return "&".join(sorted(self.keys))

    @property
    def entry(self) -> str:
        """The view as the near-duplicate index keeps it: a digest of the rule,
        then the escaped keys (no URL is kept)."""
        keys = ",".join(quote(key, safe="") for key in sorted(self.keys))
        return f"{_digest(self.rule)}:{keys}"

    def sibling(self, entry: str) -> str | None:
        """The ``where`` of the view kept as *entry* if it is another view of the
        same listing by other keys (``?color=red`` and ``?size=s``: two such pages
        alike say that the listing's query strings show one page), else None."""
        digest, sep, written = entry.partition(":")
        if not sep or digest != _digest(self.rule) or not written:
            return None
        keys = {unquote(key) for key in written.split(",")}
        return None if self.keys & keys else "&".join(sorted(keys))


def _digest(rule: str) -> str:
    return hashlib.blake2b(rule.encode("utf-8", "replace"), digest_size=4).hexdigest()


def query_view(url: str) -> QueryView | None:
    """*url*'s query as a view of its path's listing, or None without a query (or
    with a path no rule can name, or none that parses)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    return _view_of(parts.path, parse_qsl(parts.query, keep_blank_values=True))


def _view_of(path: str, pairs: list[tuple[str, str]]) -> QueryView | None:
    keys = frozenset(key for key, _ in pairs)
    rule = query_rule_of(path)
    return QueryView(rule, keys) if keys and is_rule(rule) else None


def query_rule_of(path: str) -> str:
    """The query rule of *path*'s listings: the path with each number segment
    written ``{n}`` (``/shop/c/2/`` -> ``query:/shop/c/{n}/``), so the categories
    of one listing teach one rule."""
    segments = [
        "{n}" if segment.isdecimal() else segment for segment in path.split("/")
    ]
    return f"{QUERY}{'/'.join(segments)}"


def is_rule(text: str) -> bool:
    """Whether *text* is a rule as ``removals`` writes them."""
    return bool(_RULE.fullmatch(text))


def _param_rule(key: str, value: str) -> str:
    return f"{PARAM}{urlencode([(key, value)])}"


def _any_value(key: str) -> str:
    """The rule that removes *key* whatever its value: ``param:color=*``."""
    return f"{PARAM}{urlencode([(key, '')])}{ANY_VALUE}"


def evidence_needed(rule: str, support: int) -> int:
    """The pieces of evidence that confirm *rule* (*support*, ``NEARDUP_RULE_SUPPORT``,
    is the usual need): one more for a rule of any value of a key, which stands for
    values never seen; one alone for a well-known copy's marker (``?print=1``,
    ``/printable/``, ``?amp=1``), whose first near-duplicate pair only confirms
    what sites mean by it."""
    if rule in KNOWN_COPY_MARKERS or _any_marker_value(rule):
        return min(1, support)
    return support + 1 if rule.endswith(f"={ANY_VALUE}") else support


def _any_marker_value(rule: str) -> bool:
    """Whether *rule* removes a copy's marker key whatever its value (``print=*``)."""
    key = rule.removeprefix(PARAM).removesuffix(f"={ANY_VALUE}")
    return rule.startswith(PARAM) and rule.endswith(ANY_VALUE) and key in MARKER_KEYS


def _param_evidence(key: str, value: str, path: str) -> list[Evidence]:
    """What a query pair that leaves the page the same is evidence for: removing
    that pair (evidence counted by path), and removing its key whatever the value
    (evidence counted by value)."""
    return [Evidence(_param_rule(key, value), path), Evidence(_any_value(key), value)]


def _without_segments(path: str, rules: Collection[str]) -> str:
    """*path* with the first segments rule that fits it applied."""
    segments = path.split("/")
    for rule in rules:
        if not rule.startswith(SEGMENTS):
            continue
        at_text, _, run = rule[len(SEGMENTS) :].partition(":")
        at, removed = int(at_text), run.split("/")
        # A run that would leave nothing after it is no copy's marker: kept.
        if segments[at : at + len(removed)] == removed and len(segments) > at + len(
            removed
        ):
            return "/".join(segments[:at] + segments[at + len(removed) :])
    return path


def url_key(url: str) -> str:
    """A short stable key of *url* in a host's index of fetched pages (a revisit
    of a URL is not its own near-duplicate)."""
    return hashlib.blake2b(url.encode("utf-8", "replace"), digest_size=6).hexdigest()
