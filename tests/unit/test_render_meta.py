"""A rendered request goes back to the frontier (a retry, a timeout one tier down,
a requeue) as JSON: what the render handler put in its meta for one attempt
(callables, page methods, the context) is never stored; what the user asked
(render, render_action) is."""

from __future__ import annotations

from scrapy import Request, Spider
from scrapy_playwright.page import PageMethod  # type: ignore[import-untyped]

from crawler.frontier.encoding.codec import decode, encode


class RenderingSpider(Spider):
    name = "rendering"

    def parse(self, response: object) -> None:
        """The callback the codec names."""


SPIDER = RenderingSpider()


async def _install(page: object, request: object) -> None:
    """Stands for the page init callback the handler sets."""


def test_an_attempts_render_meta_is_dropped_and_the_users_kept():
    request = Request(
        "http://example.org/page",
        callback=SPIDER.parse,
        meta={
            "render": True,
            "render_action": ["scroll", "div.items"],
            "depth": 2,
            # What the render middleware and handler set for one attempt:
            "playwright": True,
            "playwright_context": "render-3",
            "playwright_context_kwargs": {"service_workers": "block"},
            "playwright_include_page": False,
            "playwright_page_init_callback": _install,
            "playwright_page_methods": [PageMethod(_install)],
            "playwright_page_goto_kwargs": {"wait_until": "load", "timeout": 30000.0},
            "playwright_security_details": {"protocol": "TLS 1.3"},
            "download_timeout": 30.0,
        },
    )
    stored = decode(encode(request, SPIDER), SPIDER)
    assert stored.meta == {
        "render": True,
        "render_action": ["scroll", "div.items"],
        "depth": 2,
    }
    assert stored.callback == SPIDER.parse
