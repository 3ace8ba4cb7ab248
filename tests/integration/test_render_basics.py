"""Rendering in the real Chromium, on a tiny site of three hosts served here.

Links written by scripts after the load, by a named lazy-load function, on scroll
and after a delay (a selector waited for) are found only when the page is
rendered; the browser's own requests to other hosts and for images never reach a
server; pages open at once, contexts and render timeouts are checked at the
server, never from the crawler's own account alone.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest
import redis as redis_py
from scrapy import Request
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.spiders.bfs import BfsSpider

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

pytestmark = pytest.mark.integration

ADDRESSES = ("127.0.0.21", "127.0.0.22", "127.0.0.23")
PLAIN = "<html><body><p>a page</p></body></html>"


def _page(script: str, body: str = "") -> str:
    return f"<html><head><script>{script}</script></head><body>{body}</body></html>"


def _add_link(path: str) -> str:
    """JavaScript that appends a link to *path*."""
    return (
        "var a = document.createElement('a'); "
        f"a.href = '{path}'; a.textContent = 'more'; document.body.appendChild(a);"
    )


# Host 0's pages (path -> body); {b1} is host 1's base URL.
SITE: dict[str, str] = {
    "/script.html": _page(
        f"window.addEventListener('load', function () {{ {_add_link('/from-script.html')} }});"
    ),
    "/function.html": _page(
        "window.site = { loadMore: function () { return new Promise(function (done) {"
        f" setTimeout(function () {{ {_add_link('/from-function.html')} done(); }}, 300);"
        " }); } };"
    ),
    "/scroll.html": _page(
        "window.addEventListener('scroll', function () {"
        " if (window.loaded) return; window.loaded = true;"
        " fetch('/more.txt').then(function (r) { return r.text(); }).then(function (t) {"
        f" {_add_link('/from-scroll.html')} }}); }});",
        "<div style='height: 5000px'>tall</div>",
    ),
    "/late.html": _page(
        "setTimeout(function () { var d = document.createElement('div');"
        " d.className = 'late'; document.body.appendChild(d);"
        f" {_add_link('/from-selector.html')} }}, 1500);"
    ),
    "/third.html": (
        "<html><head><script src='{b1}/tracker.js'></script></head><body>"
        "<img src='/picture.png'><script>"
        + _add_link("/from-third.html")
        + "</script></body></html>"
    ),
    "/hang.html": "<html><head><script src='/hang.js'></script></head><body>"
    "<a href='/after-hang.html'>next</a></body></html>",
    "/more.txt": "more",
    "/tracker.js": "var tracked = true;",
    "/picture.png": "png",
}
# Seconds a path makes its answer wait.
DELAYS = {"/hang.js": 2.0, "/hold.js": 0.4}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        server: Any = self.server
        path = urlsplit(self.path).path
        with server.lock:
            server.asked.append((server.index, self.path, time.monotonic()))
            if path == "/hold.js":
                server.open_now[0] += 1
                server.open_max[0] = max(server.open_max[0], server.open_now[0])
        time.sleep(DELAYS.get(path, 0.0))
        if path == "/hold.js":
            with server.lock:
                server.open_now[0] -= 1
        body = self._body(server, path)
        kind = "text/html" if path.endswith(".html") else "text/plain"
        with contextlib.suppress(OSError):  # the browser may have gone
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", kind)
            data = (body or "").encode()
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    @staticmethod
    def _body(server: Any, path: str) -> str | None:
        if path.startswith("/from-") or path == "/after-hang.html":
            return PLAIN
        if path.startswith("/busy-"):  # holds a script, then tells its context
            return _page(
                "",
                "<script src='/hold.js'></script><script>"
                "var id = localStorage.getItem('context') || String(Math.random());"
                "localStorage.setItem('context', id);"
                "fetch('/context.txt?' + id);</script>",
            )
        if path == "/busy.html":
            return "".join(f"<a href='/busy-{n}.html'>{n}</a>" for n in range(5))
        if path in ("/hold.js", "/hang.js", "/context.txt"):
            return ""
        if server.index == 0 and path in SITE:
            return SITE[path].replace("{b1}", server.bases[1])
        return None

    def log_message(self, format: str, *args: Any) -> None:
        pass


class Site:
    def __init__(self, bases: list[str], server: Any) -> None:
        self.bases = bases
        self._server = server

    @property
    def asked(self) -> list[tuple[int, str, float]]:
        return list(self._server.asked)

    def paths(self, host: int = 0) -> list[str]:
        return [path for index, path, _ in self.asked if index == host]

    @property
    def most_open(self) -> int:
        return int(self._server.open_max[0])


@contextlib.contextmanager
def render_site() -> Iterator[Site]:
    """The pages above on ADDRESSES (host 0 the site, all three the busy pages)."""
    lock, open_now, open_max = threading.Lock(), [0], [0]
    asked: list[tuple[int, str, float]] = []
    servers = [ThreadingHTTPServer((address, 0), _Handler) for address in ADDRESSES]
    bases = [
        f"http://{a}:{s.server_address[1]}"
        for a, s in zip(ADDRESSES, servers, strict=True)
    ]
    threads = []
    for index, server in enumerate(servers):
        shared: Any = server
        shared.index, shared.bases, shared.lock = index, bases, lock
        shared.asked, shared.open_now, shared.open_max = asked, open_now, open_max
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        threads.append(thread)
    try:
        yield Site(bases, servers[0])
    finally:
        for server, thread in zip(servers, threads, strict=True):
            server.shutdown()
            server.server_close()
            thread.join(10)


class RenderSeedsSpider(BfsSpider):
    """The bfs spider whose seeds carry meta["render"] = True."""

    async def start(self) -> AsyncIterator[Any]:
        async for output in super().start():
            if isinstance(output, Request):
                output.meta["render"] = True
            yield output


async def crawl(
    settings: Any,
    seeds: list[str],
    spider: type[BfsSpider] = BfsSpider,
    **overrides: Any,
) -> Any:
    values = settings(
        RENDER_SETTLE=0.3, TIMEOUTS_TIERS=[10.0, 60.0], BFS_SCOPE="seed-hosts"
    )
    values.update(overrides)
    client = redis_py.Redis.from_url(values["REDIS_URL"])
    client.flushdb()  # each crawl from scratch (the seen filter)
    client.close()
    crawler = get_crawler(spider, values)
    await crawler.crawl_async(seeds=",".join(seeds), scope="seed-hosts")
    return crawler


def stat(crawler: Any, key: str) -> Any:
    return crawler.stats.get_value(key)


@deferred_f_from_coro_f
async def test_script_links_are_found_with_meta_render_only(settings):
    with render_site() as site:
        seed = [site.bases[0] + "/script.html"]
        crawler = await crawl(settings, seed, spider=RenderSeedsSpider)
        assert "/from-script.html" in site.paths()
        assert stat(crawler, "render/pages") == 1  # the seed; its link is static
        never = site.asked
        await crawl(settings, seed, RENDER_MODE="never")
        assert site.paths().count("/from-script.html") == 1  # the first crawl's
        assert len(site.asked) == len(never) + 1


@deferred_f_from_coro_f
async def test_always_renders_every_page_and_finds_their_script_links(settings):
    with render_site() as site:
        crawler = await crawl(
            settings, [site.bases[0] + "/script.html"], RENDER_MODE="always"
        )
        assert "/from-script.html" in site.paths()
        assert stat(crawler, "render/pages") == 2


@deferred_f_from_coro_f
async def test_a_named_function_is_called_and_a_missing_one_counted(settings):
    with render_site() as site:
        seeds = [site.bases[0] + "/function.html", site.bases[0] + "/script.html"]
        crawler = await crawl(
            settings, seeds, RENDER_MODE="always", RENDER_ACTION="site.loadMore()"
        )
        assert "/from-function.html" in site.paths()
        # script.html and the pages found have no site.loadMore.
        assert (
            stat(crawler, "render/action_missing") == stat(crawler, "render/pages") - 1
        )
        await crawl(settings, seeds[:1], RENDER_MODE="always", RENDER_ACTION="")
        assert site.paths().count("/from-function.html") == 1  # not without the action


@deferred_f_from_coro_f
async def test_scroll_loads_what_the_page_adds_at_its_end(settings):
    with render_site() as site:
        seed = [site.bases[0] + "/scroll.html"]
        crawler = await crawl(
            settings, seed, RENDER_MODE="always", RENDER_ACTION="scroll"
        )
        assert "/more.txt" in site.paths()
        assert "/from-scroll.html" in site.paths()
        assert stat(crawler, "render/subrequests") == 1  # more.txt
        await crawl(settings, seed, RENDER_MODE="always", RENDER_ACTION="")
        assert site.paths().count("/from-scroll.html") == 1


@deferred_f_from_coro_f
async def test_a_selector_is_waited_for(settings):
    with render_site() as site:
        seed = [site.bases[0] + "/late.html"]
        await crawl(settings, seed, RENDER_MODE="always", RENDER_ACTION="div.late")
        assert "/from-selector.html" in site.paths()
        crawler = await crawl(settings, seed, RENDER_MODE="always", RENDER_ACTION="")
        assert site.paths().count("/from-selector.html") == 1  # settled before it
        assert stat(crawler, "render/action_missing") is None


@deferred_f_from_coro_f
async def test_third_party_and_image_requests_are_blocked_and_counted(settings):
    with render_site() as site:
        crawler = await crawl(
            settings, [site.bases[0] + "/third.html"], RENDER_MODE="always"
        )
        assert "/from-third.html" in site.paths()  # the page's own script ran
        assert site.paths(host=1) == []
        assert "/picture.png" not in site.paths()
        assert stat(crawler, "render/subrequests_blocked") == 2
        assert stat(crawler, "render/subrequests_blocked_reason_count/third-party") == 1
        assert stat(crawler, "render/subrequests_blocked_reason_count/image") == 1


@deferred_f_from_coro_f
async def test_render_concurrency_bounds_the_pages_open_at_once(settings):
    with render_site() as site:
        seeds = [base + "/busy.html" for base in site.bases]
        await crawl(settings, seeds, RENDER_MODE="always", RENDER_CONCURRENCY=1)
        assert site.paths().count("/hold.js") == 5
        assert site.most_open == 1
    with render_site() as site:  # the control: three hosts render side by side
        seeds = [base + "/busy.html" for base in site.bases]
        await crawl(settings, seeds, RENDER_MODE="always", RENDER_CONCURRENCY=3)
        assert site.most_open > 1


@deferred_f_from_coro_f
async def test_contexts_are_replaced_after_their_pages(settings):
    def contexts(site: Site) -> set[str]:
        return {p.split("?")[1] for p in site.paths() if p.startswith("/context.txt")}

    with render_site() as site:
        seed = [site.bases[0] + "/busy.html"]
        crawler = await crawl(
            settings, seed, RENDER_MODE="always", RENDER_MAX_PAGES_PER_CONTEXT=2
        )
        assert len(contexts(site)) == 3  # 6 pages: index and 5 busy pages, 2 a context
        assert stat(crawler, "playwright/context_count") == 3
    with render_site() as site:
        await crawl(
            settings, seed := [site.bases[0] + "/busy.html"], RENDER_MODE="always"
        )
        assert len(contexts(site)) == 1, seed


@deferred_f_from_coro_f
async def test_a_render_over_its_timeout_goes_one_tier_down(settings):
    with render_site() as site:
        crawler = await crawl(
            settings,
            [site.bases[0] + "/hang.html"],
            RENDER_MODE="always",
            RENDER_TIMEOUT=1.0,
        )
        # Tier 0: 1 s, under hang.js's 2 s; tier 1: 1 s x 60 / 10.
        assert site.paths().count("/hang.html") == 2
        assert stat(crawler, "timeouts/escalated") == 1
        assert stat(crawler, "render/timeouts") == 1
        assert "/after-hang.html" in site.paths()


@deferred_f_from_coro_f
async def test_without_a_browser_one_warning_and_a_static_crawl(settings, caplog):
    caplog.set_level(logging.WARNING)
    with render_site() as site:
        crawler = await crawl(
            settings,
            [site.bases[0] + "/busy.html"],
            RENDER_MODE="always",
            RENDER_BROWSER="/nonexistent/chromium",
        )
        assert len([p for p in site.paths() if p.startswith("/busy-")]) == 5
        assert "/hold.js" not in site.paths()  # nothing rendered
        said = [
            r.getMessage()
            for r in caplog.records
            if "apt-get install chromium" in r.getMessage()
        ]
        assert len(said) == 1, said
        assert stat(crawler, "render/unavailable") == 6
        assert stat(crawler, "render/pages") is None
