"""The download handler for http and https: Scrapy's own for a static fetch,
headless Chromium (scrapy-playwright) for a request the render middleware marked.

Playwright and the browser start at the first rendered page, not with the engine:
a crawl that renders nothing never starts them. A rendered page waits for one of
``RENDER_CONCURRENCY`` places, then has ``download_timeout`` seconds (the render
timeout of its tier, set by the timeouts middleware) for the load, the lazy-load
actions and settling; over that it fails with Scrapy's ``DownloadTimeoutError``,
a timeout of its tier like any other. Pages open in browser contexts taken in
turn (``crawler.render.contexts``), each closed after
``RENDER_MAX_PAGES_PER_CONTEXT`` pages.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
)
from scrapy.http import HtmlResponse, Response
from scrapy_playwright.handler import (  # type: ignore[import-untyped]
    ScrapyPlaywrightDownloadHandler,
)
from scrapy_playwright.page import PageMethod  # type: ignore[import-untyped]

from crawler.meta import (
    RENDER_ACTION,
    RENDER_DOCUMENT_AT,
    RENDER_KEEP_STATIC,
    RENDER_STATIC_BODY,
)
from crawler.render.config import RenderConfig, parse_actions
from crawler.render.contexts import ContextRota
from crawler.render.page import PageRules, PageSession

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from scrapy.crawler import Crawler

    from crawler.render.hops import Redirect

logger = logging.getLogger(__name__)
# scrapy-playwright's logger: it warns, with a traceback, of every page it closes
# after a failure, which Scrapy logs already and render/timeouts or
# render/errors count.
PLAYWRIGHT_LOGGER = logging.getLogger("scrapy-playwright")

# Seconds a browser context and page may take to open, on top of the page's
# timeout (which starts once the page is open).
OPEN_LIMIT = 30.0
# What the browser context of rendered pages is opened with: service workers
# would answer the page's requests without our route seeing them; certificates are
# not checked, as Scrapy's own HTTP client does not check them.
CONTEXT_OPTIONS: dict[str, Any] = {
    "service_workers": "block",
    "ignore_https_errors": True,
}
# Headers of the main response that describe its bytes, not the rendered DOM.
WIRE_HEADERS = (b"Content-Encoding", b"Content-Length", b"Transfer-Encoding")
# Chromium's network errors, as the failures Scrapy's retry and fates know.
NETWORK_ERRORS: tuple[tuple[str, type[Exception]], ...] = (
    ("ERR_CONNECTION_REFUSED", DownloadConnectionRefusedError),
    ("ERR_NAME_NOT_RESOLVED", CannotResolveHostError),
    ("ERR_TIMED_OUT", DownloadTimeoutError),
)


class RenderDownloadHandler(ScrapyPlaywrightDownloadHandler):  # type: ignore[misc]
    """scrapy-playwright's handler, started on demand, with the crawl's rules."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        assert crawler.stats is not None
        self._crawler = crawler
        self._render_stats = crawler.stats
        self._render = RenderConfig.from_settings(crawler.settings)
        self._places = asyncio.Semaphore(self._render.concurrency)
        self._rota = ContextRota(self._render.max_pages_per_context)
        self._maxsize = crawler.settings.getint("DOWNLOAD_MAXSIZE")
        self._started = False
        self._start_lock = asyncio.Lock()
        PLAYWRIGHT_LOGGER.addFilter(_quiet_failures)

    async def _maybe_launch_in_thread(self) -> None:
        """Nothing at engine start: Playwright starts with the first render."""

    async def download_request(self, request: Request) -> Response:
        if not request.meta.get("playwright"):
            static: Response = await super().download_request(request)
            return static
        async with self._places:
            await self._start()
            return await self._render_page(request)

    async def close(self) -> None:
        PLAYWRIGHT_LOGGER.removeFilter(_quiet_failures)
        await super().close()

    async def _start(self) -> None:
        async with self._start_lock:
            if not self._started:
                await self._maybe_future_from_coro(self._launch())
                self._started = True

    async def _render_page(self, request: Request) -> Response:
        timeout = float(request.meta.get("download_timeout") or self._render.timeout)
        rules = PageRules(
            actions=self._actions(request),
            block=self._render.block,
            settle=self._render.settle,
            robots=self._robots_verdict(),
            keep_static=bool(request.meta.get(RENDER_KEEP_STATIC)),
        )
        session = PageSession(request, rules, stats=self._render_stats, timeout=timeout)
        context, retired = self._rota.take()
        for name in retired:
            await self._close_context(name)
        request.meta.update(playwright_meta(session, context, timeout))
        try:
            async with session.time_limit(OPEN_LIMIT):
                response = await self._download_request(request)
        except (TimeoutError, PlaywrightError) as exc:
            if session.redirect is not None:  # Scrapy follows it, through the frontier
                return redirected(request, session.redirect)
            raise self._failure(request, exc) from exc
        finally:
            await session.close()
            if self._rota.release(context):
                await self._close_context(context)
        self._check_size(request, response)
        if session.static_body is not None:
            request.meta[RENDER_STATIC_BODY] = session.static_body
        if session.document_at is not None:
            request.meta[RENDER_DOCUMENT_AT] = session.document_at
        self._render_stats.inc_value("render/pages")
        return rendered(response)

    def _check_size(self, request: Request, response: Response) -> None:
        """A rendered DOM over DOWNLOAD_MAXSIZE is refused as a static body is."""
        limit = request.meta.get("download_maxsize", self._maxsize)
        if limit and len(response.body) > limit:
            raise DownloadCancelledError(
                f"Rendered {request.url}: {len(response.body)} bytes, over "
                f"DOWNLOAD_MAXSIZE ({limit})"
            )

    def _actions(self, request: Request) -> tuple[str, ...]:
        """The request's own actions (a bad meta value: RENDER_ACTION's, counted)."""
        if RENDER_ACTION not in request.meta:
            return self._render.actions
        try:
            return parse_actions(request.meta[RENDER_ACTION])
        except ValueError:
            self._render_stats.inc_value("render/bad_action")
            return self._render.actions

    def _robots_verdict(self) -> Callable[[str], bool | None] | None:
        """What robots.txt says of a URL, when the robots middleware knows."""
        from crawler.robots.middleware import RobotsMiddleware  # noqa: PLC0415 (cycle)

        found = self._crawler.get_downloader_middleware(RobotsMiddleware)
        return found.known_verdict if isinstance(found, RobotsMiddleware) else None

    def _failure(self, request: Request, exc: Exception) -> Exception:
        """The Scrapy exception a failed render stands for (a timeout of its tier,
        a refused connection...); counted."""
        if isinstance(exc, TimeoutError | PlaywrightTimeoutError):
            self._render_stats.inc_value("render/timeouts")
            return DownloadTimeoutError(
                f"Rendering {request.url} took longer than "
                f"{request.meta.get('download_timeout')} s"
            )
        self._render_stats.inc_value("render/errors")
        message = getattr(exc, "message", str(exc))
        for marker, error in NETWORK_ERRORS:
            if marker in message:
                return error(message)
        return DownloadFailedError(f"Rendering {request.url} failed: {message}")

    async def _close_context(self, name: str) -> None:
        wrapper = self.context_wrappers.get(name)
        if wrapper is None:
            return
        try:
            await wrapper.context.close()
        except PlaywrightError:
            logger.debug("Browser context %s already gone", name)
        self._render_stats.inc_value("render/contexts_closed")


def playwright_meta(
    session: PageSession, context: str, timeout: float
) -> dict[str, Any]:
    """What scrapy-playwright reads from a request's meta, for one rendered attempt
    (never stored: ``crawler.frontier.encoding.codec.TRANSIENT_META``)."""
    return {
        "playwright_context": context,
        "playwright_context_kwargs": CONTEXT_OPTIONS,
        "playwright_include_page": False,
        "playwright_page_init_callback": session.install,
        "playwright_page_methods": [PageMethod(session.lazy_load)],
        "playwright_page_goto_kwargs": {
            "wait_until": "load",
            "timeout": timeout * 1000,
        },
    }


def redirected(request: Request, redirect: Redirect) -> Response:
    """The page's redirect, as the static fetch would have answered it."""
    return Response(
        request.url,
        status=redirect.status,
        headers=redirect.headers,
        request=request,
        flags=["render"],
    )


def rendered(response: Response) -> Response:
    """The rendered DOM as an ``HtmlResponse`` flagged "render" (a download the
    browser made instead keeps its type), without the headers of the wire body."""
    for name in WIRE_HEADERS:
        response.headers.pop(name, None)
    flags = [*response.flags, "render"]
    if "playwright_suggested_filename" in response.meta:
        return response.replace(flags=flags)
    return response.replace(cls=HtmlResponse, flags=flags)


def _quiet_failures(record: logging.LogRecord) -> bool:
    """Drops scrapy-playwright's warning of a page closed after a failure."""
    return not str(record.msg).startswith("Closing page due to failed request")
