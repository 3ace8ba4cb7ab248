"""RenderSampler: compares each sample's rendered page with its static one, and tells
the advisor.

A spider middleware, active in ``RENDER_MODE = auto``. A sample (``meta[RENDER_SAMPLE]``,
set by ``crawler.render.advisor``) is fetched once, rendered, with the page's main
document kept as its host served it (``meta[RENDER_KEEP_STATIC]``: the render handler
puts those bytes in ``meta[RENDER_STATIC_BODY]``). One browser fetch gives both pages:
the spider reads the rendered one, as for any rendered page, and this middleware
compares them and records the outcome with the advisor before the page's lease is
acknowledged.

What a page "finds" is read from the page itself (every link on it, its text), not
only from the spider's output: the bfs spider yields a link once per crawl, so pages
that share script-written links would show them only once. A link counts as gained
when the rendered page has it and the static one does not: one the spider yielded
from the rendered page, or one in the rendered DOM that leads to the page's own host
(script-written links to other hosts, such as ads, do not make a host worth
rendering).

A page fetched statically while its host was undecided (``UNDECIDED``) is parked for
the decision (``RenderAdvisor.park``); this middleware sends it to be rendered if the
decision says so, now or when a later sample brings it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse, TextResponse

from crawler import meta
from crawler.links import HtmlDocument
from crawler.policy.hosts import BadURLError, host_of
from crawler.render.adaptive import text_gain
from crawler.render.advisor import SAMPLE_LEVEL, UNDECIDED, advisor_of
from crawler.render.config import RenderConfig
from crawler.spiders.follow import Follower
from crawler.spiders.pagerecords import is_html

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from selectolax.lexbor import LexborHTMLParser

    from crawler.render.advisor import RenderAdvisor

logger = logging.getLogger(__name__)

# A parked page's rendered fetch goes ahead of its host's other requests of its depth.
SAMPLE_PRIORITY = 100
# Elements whose text a reader never sees.
HIDDEN = ["script", "style", "noscript", "template"]
# What a parked page's rendered fetch does not inherit from its static fetch: the
# fetch's own history, and what would make the frontier treat it as a seed, a
# revisit or a reparse.
NOT_INHERITED = frozenset({
    meta.RENDER_SAMPLE, SAMPLE_LEVEL, UNDECIDED, meta.REVISIT, meta.HELD_TIMES,
    meta.HOLD_UNTIL, meta.FATE, meta.REQUEUED, meta.STARTED, meta.REVIVE,
    meta.REPARSE, meta.REPARSED, meta.LEASE, meta.NODE, meta.RENDER_STATIC_BODY,
    "is_start_request", "redirect_times", "redirect_ttl", "redirect_urls",
    "redirect_reasons", "retry_times", "download_slot", "download_latency",
    "download_timeout",
})  # fmt: skip
CONDITIONAL_HEADERS = (b"If-None-Match", b"If-Modified-Since")
# The meta keys of the responses this middleware looks at.
WATCHED = frozenset({meta.RENDER_SAMPLE, UNDECIDED})


class RenderSampler:
    """Turns a sample into an outcome, and a page fetched while its host was
    undecided into a parked one (see the module)."""

    def __init__(self, crawler: Crawler, advisor: RenderAdvisor) -> None:
        assert crawler.stats is not None
        self._stats = crawler.stats
        self._advisor = advisor
        self._follower = Follower("pages")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        mode = str(crawler.settings.get("RENDER_MODE") or "").strip().lower()
        if mode != "auto":
            raise NotConfigured  # off by default: no message (a message warns)
        try:
            RenderConfig.from_settings(crawler.settings)
        except ValueError:  # the render middleware stops start-up on it
            raise NotConfigured from None
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
        if request.meta.get(meta.RENDER_SAMPLE):
            for late in await self._compare(response, request, urls):
                yield late
        elif request.meta.get(UNDECIDED) and _is_page(response):
            again = _again(response, request)
            if await self._advisor.park(again):
                self._stats.inc_value("render/late_pages")
                yield again

    async def _compare(
        self, response: Response, request: Request, urls: list[str]
    ) -> list[Request]:
        """Count what the rendered page has that its static document had not; tell
        the advisor. Returns the parked pages its decision sends to be rendered. A
        sample that cannot be compared (not an HTML page, no static document) gives
        its slot back."""
        rendered = _page(self._follower, response)
        static = _page(self._follower, _static_response(response, request))
        if rendered is None or static is None:
            self._stats.inc_value("render/samples_unusable")
            await self._advisor.release(request)
            return []
        self._stats.inc_value("render/samples")
        if not static.scripted:  # a browser shows what was served
            self._stats.inc_value("render/samples_without_scripts")
            return await self._advisor.record_sample(
                response.url, gained_links=0, gained_text=0.0
            )
        found = {*urls, *_own_host(response.url, rendered.links)}
        gained = len(found - set(static.links))
        growth = text_gain(static.text, rendered.text)
        self._stats.inc_value("render/gained_links", gained)
        return await self._advisor.record_sample(
            response.url, gained_links=gained, gained_text=growth
        )


def _static_response(response: Response, request: Request) -> Response | None:
    """The page's main document as its host served it, or None if the render
    handler did not keep it."""
    body = request.meta.get(meta.RENDER_STATIC_BODY)
    if not isinstance(body, bytes):
        return None
    return HtmlResponse(response.url, body=body, headers=response.headers)


def _again(response: Response, request: Request) -> Request:
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
        meta={**inherited, "depth": response.meta.get("depth", 0), meta.RENDER: True},
    )


def _is_page(response: Response | None) -> TypeGuard[TextResponse]:
    """Whether *response* is an HTML page fetched successfully."""
    return (
        isinstance(response, TextResponse)
        and is_html(response)
        and 200 <= response.status < 300
    )


@dataclass(frozen=True, slots=True)
class PageFacts:
    """What a page has: its links, the length of its visible text (whitespace runs
    counted as one character), whether it runs any script."""

    links: list[str]
    text: int
    scripted: bool


def _page(follower: Follower, response: Response | None) -> PageFacts | None:
    """The facts of an HTML page, or None for a response that is not one."""
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
