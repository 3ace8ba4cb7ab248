"""LazyLoad: what a rendered page does after its load, and the wait until it settles.

After the ``load`` event the page's actions run in order (``crawler.render.actions``:
scroll to the end while the page grows, call a function the page defines, wait for a
selector), then the page is given time to settle: until neither its DOM changed nor
one of its requests was in flight for ``RENDER_SETTLE`` seconds, or its time is up.
All of it within the page's time, which the page's session (``crawler.render.page``)
owns and moves when the page opens: a ``LazyLoad`` asks it for the seconds left.

It is a class of its own because what the page does once loaded is a concept apart
from filtering and fetching the page's requests: it needs of them only when each
starts and ends (``started``, ``ended``, the page's request events). Nothing a page
says is executed: a function is found by property lookups on ``window``, selectors
and names come from the crawl's settings or the request.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from playwright.async_api import Error as PlaywrightError

from crawler.render.actions import (
    CALL_JS,
    HEIGHT_JS,
    MAX_SCROLL_STEPS,
    QUIET_JS,
    SCROLL_JS,
    action_kind,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from playwright.async_api import Page
    from playwright.async_api import Request as BrowserRequest
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

# Seconds between two looks at whether the page has settled.
POLL_INTERVAL = 0.05
# Request types that never end by design: they do not keep a page from settling.
ENDLESS_TYPES = frozenset({"eventsource", "websocket"})


class LazyLoad:
    """The actions after one page's load and its settling (see the module)."""

    def __init__(
        self,
        actions: tuple[str, ...],
        *,
        settle: float,
        stats: StatsCollector,
        left: Callable[[], float],
    ) -> None:
        self._actions = actions
        self._settle = settle
        self._stats = stats
        # Seconds left of the page's time: actions and settling stop at 0.
        self._left = left
        self._loop = asyncio.get_running_loop()
        self._in_flight: set[BrowserRequest] = set()
        self._last_request = self._loop.time()

    def started(self, request: BrowserRequest) -> None:
        """The page's ``request`` event."""
        self._last_request = self._loop.time()
        if request.resource_type not in ENDLESS_TYPES:
            self._in_flight.add(request)

    def ended(self, request: BrowserRequest) -> None:
        """The page's ``requestfinished`` and ``requestfailed`` events."""
        self._last_request = self._loop.time()
        self._in_flight.discard(request)

    async def run(self, page: Page) -> None:
        """Run each action, then wait until the page settles."""
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
