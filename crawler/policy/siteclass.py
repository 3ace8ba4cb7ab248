"""``auto`` site strategy: a host classified from its own crawl history. Pure.

Each crawl observes, for every host, the pages it parsed, the links on them and how
many of those leave the site (point to another registered domain), and how deep its
content goes: the link depths its pages were found at, from its shallowest down
(``SiteEvidence``). A crawl's observation counts once it has ``MIN_PAGES`` pages
and ``MIN_LINKS`` links; observations of successive crawls are averaged with an
exponentially weighted moving average (``WEIGHT``: the last crawl counts half, the
one before a quarter, ...), kept in ``SiteHistory``. Until a host has one such
observation it keeps the default, ``bfs``.

The classes (Cho and Garcia-Molina's portal and specialised sites), split where
the issue's words split them, at a majority of links:

- a **portal**: at least ``PORTAL_SHARE`` (half) of its links leave the site; its
  pages fan out to many sites, so breadth first (``bfs``);
- a **specialised** site: fewer leave, and its pages span at least
  ``SPECIALISED_DEPTH`` link levels below its shallowest: deep content of its own,
  so deepest first (``dfs``);
- a flat site (every page a link from its entry) stays ``bfs``: there is no
  depth for ``dfs`` to go first into.

Measured on the hand-labelled set of ``bench.sitestrategy`` (bench/RESULTS.md):
portals 74-79% of links leave, the real documentation sites 12-26% and the
synthetic manuals 5-6%; the documentation sites span 2 to 4 levels (their index
pages link to nearly everything), so a deep site is one of 2 levels or more.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from crawler.policy.hosts import BadURLError, host_of, registered_domain

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from crawler.policy.sitestrategy import Strategy

# Weight of the newest crawl's observation in the moving average (EWMA).
WEIGHT = 0.5
# A crawl's observation of a host counts from this many pages and links on.
MIN_PAGES = 20
MIN_LINKS = 20
# The share of links leaving the site from which a site is a portal.
PORTAL_SHARE = 0.5
# Link levels a specialised site's pages span at least (below: a flat site).
SPECIALISED_DEPTH = 2.0
# Deepest depth a histogram keeps apart (deeper pages count at it): the frontier's
# levels end at 127 (crawler.policy.order), and a hostile value costs nothing.
MAX_DEPTH = 127
# A URL's authority, after its "//".
_AUTHORITY = re.compile(r"[^/?#]*")


@dataclass(frozen=True, slots=True)
class SiteEvidence:
    """What one crawl saw of a host so far: pages parsed, links on them, those that
    leave the site, and pages by link depth (``(depth, pages)`` pairs, sorted)."""

    pages: int = 0
    links: int = 0
    leaving: int = 0
    depths: tuple[tuple[int, int], ...] = ()

    @classmethod
    def of(
        cls, pages: int, links: int, leaving: int, depths: Mapping[int, int]
    ) -> SiteEvidence:
        """Evidence from counts (negative ones read as 0, depths clamped)."""
        histogram: dict[int, int] = {}
        for depth, count in depths.items():
            if count > 0:
                key = min(max(depth, 0), MAX_DEPTH)
                histogram[key] = histogram.get(key, 0) + count
        return cls(
            max(pages, 0),
            max(links, 0),
            min(max(leaving, 0), max(links, 0)),
            tuple(sorted(histogram.items())),
        )

    def span(self) -> int:
        """Link levels its pages span: the deepest depth less the shallowest."""
        if not self.depths:
            return 0
        return self.depths[-1][0] - self.depths[0][0]

    def observation(self) -> Observation:
        return Observation(self.pages, self.links, self.leaving, self.span())


@dataclass(frozen=True, slots=True)
class Observation:
    """One crawl's evidence of a host, summed up: what the records keep of it."""

    pages: int
    links: int
    leaving: int
    depth: int

    @property
    def counts(self) -> bool:
        """Whether it is evidence enough to classify by (``MIN_PAGES``, ``MIN_LINKS``)."""
        return self.pages >= MIN_PAGES and self.links >= MIN_LINKS

    @property
    def share(self) -> float:
        """The share of its links that leave the site."""
        return self.leaving / self.links if self.links > 0 else 0.0


@dataclass(frozen=True, slots=True)
class SiteHistory:
    """A host's moving averages over the crawls whose observation counted: the
    share of links leaving the site and the link levels spanned (None: no crawl
    yet), the number of such crawls and their pages."""

    crawls: int = 0
    pages: int = 0
    share: float | None = None
    depth: float | None = None

    def folded(self, observation: Observation) -> SiteHistory:
        """The history with *observation* as its newest crawl (unchanged if the
        observation does not count)."""
        if not observation.counts:
            return self
        share, depth = observation.share, float(observation.depth)
        if self.share is not None and self.depth is not None:
            share = WEIGHT * share + (1 - WEIGHT) * self.share
            depth = WEIGHT * depth + (1 - WEIGHT) * self.depth
        return replace(
            self,
            crawls=self.crawls + 1,
            pages=self.pages + observation.pages,
            share=share,
            depth=depth,
        )

    def folded_all(self, observations: Iterable[Observation]) -> SiteHistory:
        history = self
        for observation in observations:
            history = history.folded(observation)
        return history


@dataclass(frozen=True, slots=True)
class Classification:
    """What ``auto`` makes of a host, and why in a few words
    (``3% links leave, depth 9``)."""

    strategy: Strategy
    why: str
    known: bool  # False: too little evidence, the default holds


def classify(
    history: SiteHistory, current: Observation | None = None
) -> Classification:
    """The strategy of a host with *history* (earlier crawls) and the *current*
    crawl's observation so far, which counts as the newest crawl once it has
    enough evidence; until some crawl has, ``bfs``."""
    seen = history if current is None else history.folded(current)
    if seen.share is None or seen.depth is None:
        pages = seen.pages + (current.pages if current is not None else 0)
        return Classification("bfs", f"{pages} pages, too few to tell", known=False)
    why = f"{seen.share:.0%} links leave, depth {seen.depth:.0f}"
    if seen.share >= PORTAL_SHARE:
        return Classification("bfs", why, known=True)
    if seen.depth >= SPECIALISED_DEPTH:
        return Classification("dfs", why, known=True)
    return Classification("bfs", why, known=True)


def leaving_links(page_url: str, urls: Iterable[str]) -> int:
    """How many of *urls* lead off *page_url*'s site (another registered domain:
    ``docs.example.org`` to ``www.example.org`` stays on it). A URL without a host
    is not counted. A link to the page's own origin costs a string comparison, and
    each other authority is looked up once, so a page's hundred links cost little."""
    site = site_of(page_url)
    if site is None:
        return 0
    origin = page_url[: _authority_end(page_url)]
    leaves: dict[str, bool] = {}
    leaving = 0
    for url in urls:
        end = _authority_end(url)
        if end == len(origin) and url.startswith(origin):
            continue
        authority = url[:end]
        left = leaves.get(authority)
        if left is None:
            other = site_of(url)
            left = leaves[authority] = other is not None and other != site
        leaving += left
    return leaving


def site_of(url: str) -> str | None:
    """The site (registered domain) *url* belongs to, None if it has no host."""
    try:
        return registered_domain(host_of(url))
    except BadURLError:
        return None


def _authority_end(url: str) -> int:
    """Where *url*'s scheme and authority (``http://host:port``) end."""
    start = url.find("//")
    if start < 0:
        return 0
    match = _AUTHORITY.match(url, start + 2)
    return len(url) if match is None else match.end()
