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
  (``segments:1:print``) from a URL leaves its page the same. Each near-duplicate
  pair whose URLs differ by such a removal is evidence for it; a fetched page whose
  URL without that query pair was fetched too and is a different page
  (``DIFFERENT_PAGES`` bits apart or more) contradicts it for good. A rule with ``support`` distinct pieces of evidence
  (pairs at different paths) and no contradiction rewrites the host's new links
  before they are queued, so a copy under a known spelling costs no fetch.

A query rule names a value (``param:print=1``, evidence at different paths) or a
key whatever its value (``param:color=*``, evidence from different values, one more
than the support: ``needs_more``). ``?lang=en`` may be the default page while
``?lang=fr`` is another: a fetched ``?lang=fr`` page that is not its URL without the
pair contradicts both ``param:lang=fr`` and ``param:lang=*``. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

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
PARAM = "param:"
SEGMENTS = "segments:"
ANY_VALUE = "*"
# A rule as this module writes it: anything else (damaged crawl state) is ignored.
_RULE = re.compile(r"param:[^&]+|segments:[1-9][0-9]{0,3}:[^/]+(?:/[^/]+)?")


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
    directory = page_url.split("?", 1)[0].rsplit("/", 1)[0] + "/"
    relative = sorted({link.removeprefix(directory) for link in links})
    digest = hashlib.blake2b("\n".join(relative).encode("utf-8", "replace"))
    return digest.hexdigest()[:16]


def rules_between(url: str, twin: str) -> list[Evidence]:
    """The rules a near-duplicate pair of URLs (either order) is evidence for: one
    query pair more in one, or one run of 1 to ``MAX_RULE_SEGMENTS`` path segments
    more in one, all else alike."""
    longer, shorter = (url, twin) if len(url) >= len(twin) else (twin, url)
    a, b = urlsplit(longer), urlsplit(shorter)
    if (a.scheme, a.netloc) != (b.scheme, b.netloc):
        return []
    if a.path == b.path:
        removed = _one_pair_more(a.query, b.query)
        return _param_evidence(*removed, b.path) if removed else []
    if a.query == b.query:
        rule = _segments_rule(a.path, b.path)
        return [Evidence(rule, b.path)] if rule and is_rule(rule) else []
    return []


def removals(url: str) -> Iterator[tuple[Evidence, str]]:
    """Each (evidence, URL without it) of *url*'s query pairs: what a fetched page
    can be checked against (its URL without the pair, if fetched too)."""
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    for index, pair in enumerate(pairs):
        rest = urlencode(pairs[:index] + pairs[index + 1 :])
        without = urlunsplit(parts._replace(query=rest, fragment=""))
        for evidence in _param_evidence(*pair, parts.path):
            yield evidence, without


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
    path = _without_segments(parts.path, rules)
    if len(kept) == len(pairs) and path == parts.path:
        return url
    query = urlencode(kept) if len(kept) != len(pairs) else parts.query
    return urlunsplit(parts._replace(path=path, query=query))


def is_rule(text: str) -> bool:
    """Whether *text* is a rule as ``rules_between`` and ``removals`` write them."""
    return bool(_RULE.fullmatch(text))


def _param_rule(key: str, value: str) -> str:
    return f"{PARAM}{urlencode([(key, value)])}"


def _any_value(key: str) -> str:
    """The rule that removes *key* whatever its value: ``param:color=*``."""
    return f"{PARAM}{urlencode([(key, '')])}{ANY_VALUE}"


def needs_more(rule: str) -> bool:
    """Whether *rule* needs one piece of evidence more than the support: a rule for
    any value of a key stands for values never seen."""
    return rule.endswith(f"={ANY_VALUE}")


def _param_evidence(key: str, value: str, path: str) -> list[Evidence]:
    """What a query pair that leaves the page the same is evidence for: removing
    that pair (evidence counted by path), and removing its key whatever the value
    (evidence counted by value)."""
    return [Evidence(_param_rule(key, value), path), Evidence(_any_value(key), value)]


def _one_pair_more(longer: str, shorter: str) -> tuple[str, str] | None:
    """The one query pair *longer* has beyond *shorter*'s (in any order)."""
    extra = parse_qsl(longer, keep_blank_values=True)
    for pair in parse_qsl(shorter, keep_blank_values=True):
        if pair not in extra:
            return None
        extra.remove(pair)
    return extra[0] if len(extra) == 1 else None


def _segments_rule(longer: str, shorter: str) -> str | None:
    """``segments:<at>:<run>`` when *longer* is *shorter* with one run inserted."""
    a, b = longer.split("/"), shorter.split("/")
    extra = len(a) - len(b)
    if not 1 <= extra <= MAX_RULE_SEGMENTS:
        return None
    at = 0
    while at < len(b) and a[at] == b[at]:
        at += 1
    if at == 0 or a[at + extra :] != b[at:]:
        return None  # the leading "" of an absolute path is never removed
    return f"{SEGMENTS}{at}:{'/'.join(a[at : at + extra])}"


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
