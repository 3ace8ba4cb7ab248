"""Whether this machine can render, and the settings that make it do so.

The add-on calls ``install`` while it sets the crawl up: when scrapy-playwright is
importable and a browser is found, the render download handler takes http and
https, and scrapy-playwright's own settings follow the ``RENDER_*`` ones (unless
the project set them). Nothing is imported or started here: Playwright and the
browser start with the first rendered page.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

from crawler.context.startup import StartupFailure
from crawler.render.config import BadRenderSetting, RenderConfig
from crawler.spiders.arguments import stand_down

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

HANDLER = "crawler.render.handler.RenderDownloadHandler"
SCHEMES = ("http", "https")
# Chromium's flags that work here (see docs/rendering.md): no sandbox inside
# containers, no GPU, no calls home.
BROWSER_ARGS = ("--no-sandbox", "--disable-gpu", "--disable-background-networking")
# What to install when rendering is asked for and cannot be done.
INSTALL_HINT = (
    "install Chromium (Debian: apt-get install chromium, or set RENDER_BROWSER) "
    "and scrapy-playwright (pip install .[render])"
)


def missing_part(config: RenderConfig) -> str | None:
    """What this machine lacks to render ("scrapy-playwright", "a browser"), or
    None when it can."""
    if importlib.util.find_spec("scrapy_playwright") is None:
        return "scrapy-playwright"
    if config.browser is None:
        return "a browser"
    return None


def install(crawler: Crawler, settings: BaseSettings, priority: int) -> None:
    """The render handler for http and https, and scrapy-playwright's settings,
    when this machine can render. A bad ``RENDER_*`` value stops the crawl with one
    line before anything opens (no Redis, no database)."""
    try:
        config = RenderConfig.from_settings(settings)
    except BadRenderSetting as exc:
        StartupFailure(crawler, f"Bad setting: {exc}")
        stand_down(crawler)
        return
    if missing_part(config) is not None:
        return
    handlers = dict(settings.getdict("DOWNLOAD_HANDLERS"))
    for scheme in SCHEMES:
        handlers.setdefault(scheme, HANDLER)
    at = max(settings.getpriority("DOWNLOAD_HANDLERS") or 0, priority)
    settings.set("DOWNLOAD_HANDLERS", handlers, priority=at)
    derived = {
        "PLAYWRIGHT_BROWSER_TYPE": "chromium",
        "PLAYWRIGHT_LAUNCH_OPTIONS": {
            "executable_path": config.browser,
            "headless": True,
            "args": list(BROWSER_ARGS),
        },
        # Pages at once in a context: never fewer than the render places.
        "PLAYWRIGHT_MAX_PAGES_PER_CONTEXT": config.concurrency,
    }
    for name, value in derived.items():
        if settings.getpriority(name) is None:
            settings.set(name, value, priority=priority)


def renders(settings: BaseSettings) -> bool:
    """Whether requests of http(s) reach the render handler in this crawl."""
    handlers = settings.getdict("DOWNLOAD_HANDLERS")
    return all(_path(handlers.get(scheme)) == HANDLER for scheme in SCHEMES)


def _path(value: object) -> str:
    """The import path a DOWNLOAD_HANDLERS value names (a path or a class)."""
    if isinstance(value, str):
        return value
    return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', '')}"
