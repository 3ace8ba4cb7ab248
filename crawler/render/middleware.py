"""RenderMiddleware: decides, request by request, whether the page is rendered in
headless Chromium or fetched as it is.

``meta["render"]`` True or False decides; else ``RENDER_MODE``: ``never`` fetches
statically, ``always`` renders, ``auto`` asks the render advisor
(``crawler.render.advisor``), which learns per host where rendering pays. A
rendered request stays the Scrapy request the frontier leased: only its download
handler differs (``crawler.render.handler``), so politeness, robots.txt, its
lease, its tier's timeout and the traffic counters apply to it as to any other.
Without a browser or scrapy-playwright, one start-up line says what to install and
pages that would be rendered are fetched statically (``render/unavailable``).
"""

from __future__ import annotations

import importlib
import inspect
import logging
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scrapy.linkextractors import IGNORED_EXTENSIONS

from crawler.context.logonce import OnceLogger
from crawler.context.startup import StartupFailure
from crawler.meta import RENDER, ROBOTS_FETCH
from crawler.render.config import BadRenderSetting, RenderConfig
from crawler.render.install import INSTALL_HINT, missing_part, renders

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler

    from crawler.render.config import Advisor

logger = logging.getLogger(__name__)

# The meta key that sends a request to scrapy-playwright's side of the handler.
PLAYWRIGHT = "playwright"
# URL endings of what a browser would only wrap in a page of its own (images,
# archives, documents, scripts, feeds...): never rendered by RENDER_MODE.
NOT_PAGES = tuple(
    f".{ending}"
    for ending in (*IGNORED_EXTENSIONS, "xml", "json", "txt", "csv", "gz", "woff2")
)


class RenderMiddleware:
    def __init__(self, crawler: Crawler, config: RenderConfig, missing: str | None):
        assert crawler.stats is not None
        self._crawler = crawler
        self._stats = crawler.stats
        self._config = config
        # What this machine lacks to render; None when it can.
        self._missing = missing
        self._advisor: Advisor | None = None
        self._once = OnceLogger(logger, crawler)
        if missing is not None and config.mode != "never":
            self._warn(f"RENDER_MODE={config.mode}")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        """The middleware; with a bad ``RENDER_*`` value, a stand-in that logs one
        line and closes the spider as soon as it opens (exit status 1)."""
        try:
            config = RenderConfig.from_settings(crawler.settings)
        except BadRenderSetting as exc:
            return StartupFailure(crawler, f"Bad setting: {exc}")
        missing = missing_part(config)
        if missing is None and not renders(crawler.settings):
            missing = "the render download handler for http and https"
        return cls(crawler, config, missing)

    async def process_request(self, request: Request) -> None:
        if request.meta.get(ROBOTS_FETCH):
            return  # robots.txt is read as it is
        if not await self._wants_render(request):
            request.meta.pop(PLAYWRIGHT, None)  # a retry decided again
            return
        if self._missing is not None:
            self._stats.inc_value("render/unavailable")
            self._warn("meta['render']")
            request.meta.pop(PLAYWRIGHT, None)
            return
        request.meta[PLAYWRIGHT] = True

    async def _wants_render(self, request: Request) -> bool:
        explicit = request.meta.get(RENDER)
        if explicit is True or explicit is False:
            return explicit
        if self._config.mode == "never" or not looks_like_a_page(request.url):
            return False
        if self._config.mode == "always" or self._missing is not None:
            return True
        verdict = self._advisor_of().wants_render(request)
        if inspect.isawaitable(verdict):
            verdict = await verdict
        return bool(verdict)

    def _advisor_of(self) -> Advisor:
        """The crawl's render advisor (RENDER_MODE = auto), found at first use."""
        if self._advisor is None:
            module = importlib.import_module("crawler.render.advisor")
            self._advisor = module.advisor_of(self._crawler)
        return self._advisor

    def _warn(self, asked_by: str) -> None:
        """The one line saying rendering cannot be done here, and what to do
        (whether start-up or a request asked first)."""
        self._once.once(
            "unavailable",
            "Rendering is asked for (%(asked_by)s) but this machine lacks "
            "%(missing)s: %(hint)s. Pages are fetched without rendering (counted "
            "in render/unavailable)",
            {"asked_by": asked_by, "missing": self._missing, "hint": INSTALL_HINT},
        )


def looks_like_a_page(url: str) -> bool:
    """Whether *url* may be a page (RENDER_MODE renders only those; meta["render"]
    = True renders anything)."""
    try:
        path = urlsplit(url).path.lower()
    except ValueError:
        return False
    return not path.endswith(NOT_PAGES)
