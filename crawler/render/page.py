"""One rendered page: its time, and its own requests filtered, fetched and counted.

A ``PageSession`` is handed to scrapy-playwright through the request's meta: its
``install`` is the page init callback (it runs before the navigation, after
scrapy-playwright's own route, so its route is asked first), and its ``lazy_load``
the page method run after the load. Its route fetches the page's requests itself,
one redirect hop at a time (``crawler.render.hops``): scrapy-playwright's route sees
only streams. What the page does after its load (the actions, then the wait until it
settles) is its ``LazyLoad``'s (``crawler.render.lazyload``), given the seconds left
of the page's time and told when each of its requests starts and ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from playwright.async_api import Error as PlaywrightError

from crawler.policy.hosts import host_of
from crawler.render.actions import QUIET_INIT_JS
from crawler.render.hops import (
    Hop,
    Redirect,
    abort_code,
    client_headers,
    fetch_checked,
    fetch_document,
)
from crawler.render.lazyload import ENDLESS_TYPES, LazyLoad
from crawler.render.subrequests import blocked_reason

if TYPE_CHECKING:
    from collections.abc import Callable

    from playwright.async_api import BrowserContext, Page, Route
    from playwright.async_api import Request as BrowserRequest
    from scrapy import Request
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

# Seconds of a page's timeout kept for reading its DOM after the actions and the
# settling (at most this, and at most a quarter of the timeout).
READ_RESERVE = 2.0
# Browser contexts whose route refuses every request of a page not ours.
_GUARDED: weakref.WeakSet[BrowserContext] = weakref.WeakSet()


@dataclass(frozen=True)
class PageRules:
    """What a rendered page may fetch and does after its load."""

    actions: tuple[str, ...]
    block: frozenset[str]
    settle: float
    # What robots.txt says of a URL when the crawl knows (None: no robots rules).
    robots: Callable[[str], bool | None] | None
    # Keep the main document's bytes as served (meta RENDER_KEEP_STATIC).
    keep_static: bool = False


class PageSession:
    """The time and the rules of one rendered request; its lazy-load is a
    ``LazyLoad``'s."""

    def __init__(
        self,
        request: Request,
        rules: PageRules,
        *,
        stats: StatsCollector,
        timeout: float,
    ) -> None:
        self._host = host_of(request.url)
        self._block = rules.block
        self._robots = rules.robots
        self._keep_static = rules.keep_static
        self._request: Request | None = None
        self._user_agent: str | None = None
        # The main document as its host served it, when asked for.
        self.static_body: bytes | None = None
        # The main document's redirect (the render then stops: Scrapy follows it).
        self.redirect: Redirect | None = None
        # When (epoch seconds) the main document had arrived.
        self.document_at: float | None = None
        self._stats = stats
        self._timeout = timeout
        self._limit: asyncio.Timeout | None = None
        self._loop = asyncio.get_running_loop()
        # loop.time() by which the page must be read: actions and settling stop then.
        self._deadline = self._loop.time() + timeout
        self._navigated = False
        self.page: Page | None = None
        self._lazy_load = LazyLoad(
            rules.actions, settle=rules.settle, stats=stats, left=self._left
        )

    def time_limit(self, open_limit: float) -> asyncio.Timeout:
        """The render's time limit: *open_limit* seconds more to open the page, then
        the page's own timeout from when it is open (opening a browser context or a
        page is the browser's time, not the host's)."""
        self._limit = asyncio.timeout(open_limit + self._timeout)
        return self._limit

    # --- the page's own requests -------------------------------------------------

    async def install(self, page: Page, request: Request) -> None:
        """Page init callback: start the page's time, filter its requests, track
        those in flight."""
        self.page = page
        self._request = request
        user_agent = request.headers.get("User-Agent")
        self._user_agent = user_agent.decode("latin-1") if user_agent else None
        now = self._loop.time()
        if self._limit is not None:
            self._limit.reschedule(now + self._timeout)
        self._deadline = now + self._timeout - min(READ_RESERVE, self._timeout / 4)
        await page.route("**", self._route)  # first: nothing goes out unfiltered
        await page.add_init_script(QUIET_INIT_JS)
        if page.context not in _GUARDED:  # windows the page opens: nothing at all
            _GUARDED.add(page.context)
            await page.context.route("**", self._refuse)
        page.on("popup", self._close_popup)
        page.set_default_timeout(self._left() * 1000)
        page.on("request", self._lazy_load.started)
        page.on("requestfinished", self._lazy_load.ended)
        page.on("requestfailed", self._lazy_load.ended)

    async def _route(self, route: Route, request: BrowserRequest) -> None:
        """Every request of the page: the document fetched for it, the others
        checked and fetched hop by hop, or refused (counted)."""
        try:
            if not self._navigated and request.is_navigation_request():
                self._navigated = True
                await self._fetch_document(route)
                return
            reason = self._blocked(request.url, request.resource_type)
            if reason is None:
                self._stats.inc_value("render/subrequests")
                reason = await self._fetch_subrequest(route, request)
            else:
                await route.abort("blockedbyclient")
        except PlaywrightError as exc:  # the fetch failed: so does the request
            with contextlib.suppress(PlaywrightError):
                await route.abort(abort_code(exc))
            return
        if reason is not None:
            self._count_blocked(reason)

    def _count_blocked(self, reason: str) -> None:
        self._stats.inc_value("render/subrequests_blocked")
        self._stats.inc_value(f"render/subrequests_blocked_reason_count/{reason}")

    async def _fetch_document(self, route: Route) -> None:
        assert self._request is not None
        request = self._request
        hop = Hop(request.url, request.method, request.body or None)
        scrapy_headers = request.headers.to_unicode_dict()
        headers = client_headers({str(k): v for k, v in scrapy_headers.items()}, None)
        # The page's whole time: past it, the render's limit fails it as a timeout.
        answer = await fetch_document(route, hop, headers, self._timeout)
        self.document_at = time.time()
        if isinstance(answer, Redirect):
            self.redirect = answer
        elif self._keep_static:
            self.static_body = answer

    async def _fetch_subrequest(
        self, route: Route, request: BrowserRequest
    ) -> str | None:
        """Fetch an allowed subrequest; why a redirect of it was refused, or None."""
        if request.resource_type in ENDLESS_TYPES:
            await route.fallback()  # a stream: the browser reads it as it comes
            return None
        hop = Hop(request.url, request.method, request.post_data_buffer)
        headers = client_headers(await request.all_headers(), self._user_agent)
        kind = request.resource_type
        return await fetch_checked(
            route,
            hop,
            headers,
            blocked=lambda url: self._blocked(url, kind),
            timeout=self._timeout,  # a slow one makes the page late, not lighter
        )

    async def _refuse(self, route: Route) -> None:
        """The context's route: only requests of pages the crawler did not open (a
        window a page opened) reach it."""
        self._count_blocked("popup")
        await route.abort("blockedbyclient")

    async def _close_popup(self, popup: Page) -> None:
        with contextlib.suppress(PlaywrightError):
            await popup.close()

    def _blocked(self, url: str, resource_type: str) -> str | None:
        reason = blocked_reason(
            url, resource_type, page_host=self._host, block=self._block
        )
        if reason is None and self._robots is not None and self._robots(url) is False:
            return "robots"
        return reason

    # --- after the load: the LazyLoad's ------------------------------------------

    async def lazy_load(self, page: Page) -> None:
        """Page method: run each action, then wait until the page settles."""
        await self._lazy_load.run(page)

    def _left(self) -> float:
        return max(self._deadline - self._loop.time(), 0.0)

    async def close(self) -> None:
        """Close the page if the render ended before scrapy-playwright closed it."""
        if self.page is not None and not self.page.is_closed():
            try:
                await self.page.close()
            except PlaywrightError:
                logger.debug("Page already gone at close")
