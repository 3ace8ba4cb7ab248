"""One rendered page: its own requests filtered, fetched and counted, the lazy-load
actions run after the load, and the wait until the page settles, all within its
deadline.

A ``PageSession`` is handed to scrapy-playwright through the request's meta: its
``install`` is the page init callback (it runs before the navigation, after
scrapy-playwright's own route, so its route is asked first), and its ``lazy_load``
the page method run after the load. Its route fetches the page's requests itself,
one redirect hop at a time (``crawler.render.hops``): scrapy-playwright's route sees
only streams. Nothing a page says is executed here: actions are property lookups and
selector waits named by the crawl's settings, never code read from a page or Redis.
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
from crawler.render.actions import (
    CALL_JS,
    HEIGHT_JS,
    MAX_SCROLL_STEPS,
    QUIET_INIT_JS,
    QUIET_JS,
    SCROLL_JS,
    action_kind,
)
from crawler.render.hops import (
    Hop,
    Redirect,
    abort_code,
    client_headers,
    fetch_checked,
    fetch_document,
)
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
# Seconds between two looks at whether the page has settled.
POLL_INTERVAL = 0.05
# Browser contexts whose route refuses every request of a page not ours.
_GUARDED: weakref.WeakSet[BrowserContext] = weakref.WeakSet()
# Request types that never end by design: they do not keep a page from settling.
ENDLESS_TYPES = frozenset({"eventsource", "websocket"})


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
    """The rules and the lazy-load of one rendered request."""

    def __init__(
        self,
        request: Request,
        rules: PageRules,
        *,
        stats: StatsCollector,
        timeout: float,
    ) -> None:
        self._host = host_of(request.url)
        self._actions = rules.actions
        self._block = rules.block
        self._settle = rules.settle
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
        self._in_flight: set[BrowserRequest] = set()
        self._last_request = self._loop.time()
        self._navigated = False
        self.page: Page | None = None

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
        page.on("request", self._started)
        page.on("requestfinished", self._ended)
        page.on("requestfailed", self._ended)

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

    def _started(self, request: BrowserRequest) -> None:
        self._last_request = self._loop.time()
        if request.resource_type not in ENDLESS_TYPES:
            self._in_flight.add(request)

    def _ended(self, request: BrowserRequest) -> None:
        self._last_request = self._loop.time()
        self._in_flight.discard(request)

    # --- after the load ----------------------------------------------------------

    async def lazy_load(self, page: Page) -> None:
        """Page method: run each action, then wait until the page settles."""
        for action in self._actions:
            if self._left() <= 0:
                break
            kind = action_kind(action)
            if kind == "scroll":
                await self._scroll(page)
            elif kind == "selector" or not await self._call(page, action):
                if kind == "function":
                    self._missing(action)
                else:
                    await self._wait_for(page, action)
        await self._settled(page)

    async def _call(self, page: Page, action: str) -> bool:
        """Call the function *action* names, awaited within the time left; False
        when the page has no such function."""
        path = action.removesuffix("()")
        try:
            called = await asyncio.wait_for(page.evaluate(CALL_JS, path), self._left())
        except TimeoutError:
            return True  # still running: what it did so far is read
        except PlaywrightError as exc:
            logger.debug("Lazy-load function %s failed: %s", action, exc)
            return True
        return bool(called)

    async def _wait_for(self, page: Page, selector: str) -> None:
        try:
            await page.wait_for_selector(
                selector, state="attached", timeout=self._left() * 1000
            )
        except PlaywrightError:  # not there in time, or not a selector
            self._missing(selector)

    async def _scroll(self, page: Page) -> None:
        """Scroll to the end until the page stops growing once settled."""
        for _ in range(MAX_SCROLL_STEPS):
            height = await self._evaluate(page, SCROLL_JS)
            await self._settled(page)
            grown = await self._evaluate(page, HEIGHT_JS)
            if height is None or grown is None or grown <= height or self._left() <= 0:
                return

    async def _settled(self, page: Page) -> None:
        """Wait until the DOM has not changed and no request has been in flight for
        ``RENDER_SETTLE`` seconds, or the time is up."""
        while (left := self._left()) > 0:
            dom_quiet = await self._evaluate(page, QUIET_JS)
            quiet = min(
                float(dom_quiet or 0) / 1000, self._loop.time() - self._last_request
            )
            if not self._in_flight and quiet >= self._settle:
                return
            await asyncio.sleep(min(POLL_INTERVAL, left))

    async def _evaluate(self, page: Page, script: str) -> float | None:
        """A number from the page, None if it has none now (it is navigating)."""
        try:
            value = await asyncio.wait_for(page.evaluate(script), self._left())
        except (PlaywrightError, TimeoutError):
            return None
        return float(value) if isinstance(value, int | float) else None

    def _missing(self, action: str) -> None:
        self._stats.inc_value("render/action_missing")
        logger.debug("Lazy-load action %r: nothing of that name on the page", action)

    def _left(self) -> float:
        return max(self._deadline - self._loop.time(), 0.0)

    async def close(self) -> None:
        """Close the page if the render ended before scrapy-playwright closed it."""
        if self.page is not None and not self.page.is_closed():
            try:
                await self.page.close()
            except PlaywrightError:
                logger.debug("Page already gone at close")
