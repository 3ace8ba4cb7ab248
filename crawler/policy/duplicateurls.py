"""Different URLs, one page: what near-duplicate pages teach about a host's URLs.

Two kinds of lesson (``NEARDUP_*``; crawler/spiders/duplicateurls.py keeps them in
Redis for the cluster):

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
  URL without that pair or run was fetched too and is *not* a near-duplicate
  contradicts it for good. A rule with ``support`` distinct pieces of evidence
  (pairs at different paths) and no contradiction rewrites the host's new links
  before they are queued, so a copy under a known spelling costs no fetch.

Value-specific query rules only: ``?lang=en`` may be the default page while
``?lang=fr`` is another, so ``lang=en`` teaches nothing about ``lang=fr``. Pure: no
I/O.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Iterator

# The longest run of segments a rule removes: /print/, /m/amp/; longer is rarely a
# copy's marker and more often a real subtree.
MAX_RULE_SEGMENTS = 2
PARAM = "param:"
SEGMENTS = "segments:"
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
        return [Evidence(_param_rule(*removed), b.path)] if removed else []
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
        yield Evidence(_param_rule(*pair), parts.path), without


def rewrite(url: str, rules: Collection[str]) -> str:
    """*url* with every rule of *rules* that fits it applied (query pairs and runs
    of segments removed); *url* itself when none fits."""
    if not rules:
        return url
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    kept = [pair for pair in pairs if _param_rule(*pair) not in rules]
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
