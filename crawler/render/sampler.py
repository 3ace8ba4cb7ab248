"""RenderSampler: fetches each sample twice and tells the advisor what rendering found.

A spider middleware, active in ``RENDER_MODE = auto``. For a page fetched statically
as a sample (``meta[RENDER_SAMPLE]``, set by ``crawler.render.advisor``) it passes the
spider's output through, then adds one request: the same page, rendered, carrying
what the static fetch found (``meta[RENDER_STATIC]``). It goes through the frontier
like any request (politeness, robots, leases), at the page's own depth and ahead of
the host's other requests of that depth, so the decision comes early. For that
rendered page it compares and records the outcome with the advisor before the
page's lease is acknowledged.

What a page "finds" is read from the page itself (every link on it, its text), not
only from the spider's output: the bfs spider yields a link once per crawl, so the
rendered copies of pages that share script-written links would show them only once.
A link counts as gained when the rendered page has it and the static one did not:
one the spider yielded from the rendered page, or one on the rendered page that
leads to the page's own host (script-written links to other hosts, such as ads, do
not make a host worth rendering).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.http import TextResponse

from crawler import meta
from crawler.links import HtmlDocument
from crawler.policy.hosts import BadURLError, host_of
from crawler.render.adaptive import text_gain
from crawler.render.advisor import SAMPLE_LEVEL, UNDECIDED, advisor_of
from crawler.render.config import RenderConfig
from crawler.spiders.follow import Follower
from crawler.spiders.pagerecords import is_html

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from selectolax.lexbor import LexborHTMLParser

    from crawler.render.advisor import RenderAdvisor

logger = logging.getLogger(__name__)

# Links of the static page carried to its rendered fetch (through the frontier's
# queue): their digests, at most this many; a page with more compares by count
# beyond them.
MAX_STATIC_LINKS = 1000
# Hex digits of a link's digest (40 bits: no collision to fear among a page's links).
DIGEST_LENGTH = 10
# The rendered fetch goes ahead of its host's other requests of the same depth.
SAMPLE_PRIORITY = 100
# Elements whose text a reader never sees.
HIDDEN = ["script", "style", "noscript", "template"]
# What the rendered copy does not inherit from the sample: the fetch's own history,
# and what would make the frontier treat it as a seed, a revisit or a reparse.
NOT_INHERITED = frozenset({
    meta.RENDER_SAMPLE, SAMPLE_LEVEL, UNDECIDED, meta.REVISIT, meta.HELD_TIMES, meta.HOLD_UNTIL,
    meta.FATE, meta.REQUEUED, meta.STARTED, meta.REVIVE, meta.REPARSE, meta.REPARSED,
    meta.LEASE, meta.NODE, "is_start_request", "redirect_times", "redirect_ttl",
    "redirect_urls", "redirect_reasons", "retry_times", "download_slot",
    "download_latency", "download_timeout",
})  # fmt: skip
CONDITIONAL_HEADERS = (b"If-None-Match", b"If-Modified-Since")
# The meta keys of the responses this middleware looks at.
WATCHED = frozenset({meta.RENDER_SAMPLE, meta.RENDER_STATIC, UNDECIDED})


class RenderSampler:
    """Turns a sample into a rendered fetch, and the rendered fetch into an
    outcome (see the module)."""

    def __init__(self, crawler: Crawler, advisor: RenderAdvisor) -> None:
        assert crawler.stats is not None
        self._stats = crawler.stats
        self._advisor = advisor
        self._follower = Follower("pages")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        mode = str(crawler.settings.get("RENDER_MODE") or "").strip().lower()
        if mode != "auto":
            raise NotConfigured("RENDER_MODE is not auto")
        try:
            RenderConfig.from_settings(crawler.settings)
        except ValueError as exc:  # the render middleware stops start-up on it
            raise NotConfigured(f"bad RENDER_* setting: {exc}") from None
        return cls(crawler, advisor_of(crawler))

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        request = response.request
        if (
            request is None
            or meta.REPARSED in request.meta
            or not (request.meta.keys() & WATCHED)
        ):
            async for item in result:
                yield item
            return
        urls = []
        async for item in result:
            if isinstance(item, Request):
                urls.append(item.url)
            yield item
        static = request.meta.get(meta.RENDER_STATIC)
        if request.meta.get(meta.RENDER_SAMPLE):
            for rendered in await self._rendered_copy(response, request, urls):
                yield rendered
        elif isinstance(static, dict):
            for late in await self._compare(response, static, urls):
                yield late
        elif request.meta.get(UNDECIDED) and _is_page(response):
            again = _again(response, request)
            if await self._advisor.hold(again):
                self._stats.inc_value("render/late_pages")
                yield again

    async def _rendered_copy(
        self, response: Response, request: Request, urls: list[str]
    ) -> list[Request]:
        """The sample's page again, to be rendered, with what this fetch found.
        A page that cannot be compared gives its slot back; a page that runs no
        script is static enough as it is (a browser would show the same): its
        outcome is recorded at once, and the held pages its decision may send to
        be rendered are returned instead."""
        found = _page(self._follower, response)
        if found is None:
            self._stats.inc_value("render/samples_unusable")
            await self._advisor.release(request)
            return []
        if not found.scripted:
            self._stats.inc_value("render/samples_without_scripts")
            return await self._advisor.record_sample(
                response.url, gained_links=0, gained_text=0.0
            )
        digests = list(dict.fromkeys(_digest(url) for url in [*urls, *found.links]))
        static = {
            "links": digests[:MAX_STATIC_LINKS],
            "count": len(digests),
            "text": found.text,
        }
        self._stats.inc_value("render/samples")
        return [_again(response, request, {meta.RENDER_STATIC: static})]

    async def _compare(
        self, response: Response, static: dict[str, Any], urls: list[str]
    ) -> list[Request]:
        """Count what the rendered page found that the static one did not; tell
        the advisor. Returns the held pages its decision sends to be rendered."""
        found = _page(self._follower, response)
        if found is None:
            self._stats.inc_value("render/samples_unusable")
            return []
        gained = _gained(static, urls, _own_host(response.url, found.links))
        growth = text_gain(_count(static.get("text")), found.text)
        self._stats.inc_value("render/gained_links", gained)
        return await self._advisor.record_sample(
            response.url, gained_links=gained, gained_text=growth
        )


def _again(
    response: Response, request: Request, extra: dict[str, Any] | None = None
) -> Request:
    """*request*'s page to be fetched again, rendered: at the page's own depth,
    ahead of its host's other requests of that depth, past the seen filter."""
    inherited = {k: v for k, v in request.meta.items() if k not in NOT_INHERITED}
    headers = request.headers.copy()
    for name in CONDITIONAL_HEADERS:
        headers.pop(name, None)
    return request.replace(
        url=response.url,
        headers=headers,
        dont_filter=True,
        priority=request.priority + SAMPLE_PRIORITY,
        meta={
            **inherited,
            "depth": response.meta.get("depth", 0),
            meta.RENDER: True,
            **(extra or {}),
        },
    )


def _is_page(response: Response) -> TypeGuard[TextResponse]:
    """Whether *response* is an HTML page fetched successfully."""
    return (
        isinstance(response, TextResponse)
        and is_html(response)
        and 200 <= response.status < 300
    )


@dataclass(frozen=True, slots=True)
class PageFacts:
    """What a fetch of a page found: its links, the length of its visible text
    (whitespace runs counted as one character), whether it runs any script."""

    links: list[str]
    text: int
    scripted: bool


def _page(follower: Follower, response: Response) -> PageFacts | None:
    """The facts of an HTML page, or None for a response that is not one
    (nothing to compare)."""
    if not _is_page(response):
        return None
    try:
        document = HtmlDocument.from_response(response)
        found = follower.read(response)
    except (ValueError, TypeError, AttributeError, UnicodeError):
        return None
    tree = document.tree
    scripted = _runs_scripts(tree)
    tree.strip_tags(HIDDEN)
    body = tree.body
    text = " ".join(body.text(separator=" ").split()) if body is not None else ""
    return PageFacts(found.links if found is not None else [], len(text), scripted)


def _runs_scripts(tree: LexborHTMLParser) -> bool:
    """Whether a browser would run any script of the page: a ``<script>``
    element, or an event handler attribute (``onload=``...)."""
    if tree.css_first("script") is not None:
        return True
    if tree.root is None:
        return False
    return any(
        name.lower().startswith("on")
        for node in tree.root.traverse(include_text=False)
        for name in node.attributes
    )


def _gained(static: dict[str, Any], urls: list[str], links: Iterable[str]) -> int:
    """Links of the rendered page the static page did not have (by digest). When
    the static page had more links than were carried, no more than the growth in
    the number of links counts."""
    carried = static.get("links")
    known = (
        {d for d in carried if isinstance(d, str)}
        if isinstance(carried, list)
        else set()
    )
    rendered = dict.fromkeys(_digest(url) for url in [*urls, *links])
    gained = sum(1 for digest in rendered if digest not in known)
    total = _count(static.get("count"))
    if total > len(known):
        gained = min(gained, max(len(rendered) - total, 0))
    return gained


def _own_host(url: str, links: list[str]) -> list[str]:
    """The links of *links* that lead to *url*'s host."""
    try:
        host = host_of(url)
    except BadURLError:
        return []
    own = []
    for link in links:
        try:
            if host_of(link) == host:
                own.append(link)
        except BadURLError:
            continue
    return own


def _digest(url: str) -> str:
    return hashlib.blake2b(url.encode("utf-8", "replace"), digest_size=8).hexdigest()[
        :DIGEST_LENGTH
    ]


def _count(value: object) -> int:
    """A count carried in meta (read back from the frontier's queue: any type)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return 0
