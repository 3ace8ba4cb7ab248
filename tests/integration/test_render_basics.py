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
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

import pytest
import redis as redis_py
from scrapy import Request, signals
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler
from warcio.archiveiterator import ArchiveIterator

from crawler.crawlstate.keys import CrawlKeys
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


# Every host's pages (path -> body); {b1} is host 1's base URL.
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
        "<html><head><script src='{b1}/tracker.js'></script>"
        "<script src='/redirected.js'></script></head><body>"
        "<img src='/picture.png'><script>fetch('/private/data.txt');"
        "window.open('/popup.html');"
        + _add_link("/from-third.html")
        + "</script></body></html>"
    ),
    "/hang.html": "<html><head><script src='/hang.js'></script></head><body>"
    "<a href='/after-hang.html'>next</a></body></html>",
    "/more.txt": "more",
    "/tracker.js": "var tracked = true;",
    "/picture.png": "png",
    "/private/data.txt": "not for robots",
    "/robots.txt": "User-agent: *\nDisallow: /private/\n",
}
# Paths that answer with a redirect (to a path of {b1}: host 1's base URL).
REDIRECTS = {
    "/redirected.js": "{b1}/tracker.js",
    "/away.html": "{b1}/from-away.html",
    "/moved.html": "/from-moved.html",
}
# Pages /busy.html links to.
BUSY_PAGES = 3
# Seconds a path makes its answer wait.
DELAYS = {"/hang.js": 2.0, "/hold.js": 0.3}


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
        if path in REDIRECTS:
            with contextlib.suppress(OSError):
                self.send_response(302)
                self.send_header(
                    "Location", REDIRECTS[path].replace("{b1}", server.bases[1])
                )
                self.send_header("Content-Length", "0")
                self.end_headers()
            return
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
            return "".join(
                f"<a href='/busy-{n}.html'>{n}</a>" for n in range(BUSY_PAGES)
            )
        if path in ("/hold.js", "/hang.js", "/context.txt"):
            return ""
        if path in SITE:
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
    """The bfs spider whose seeds carry meta["render"] = True, and the lazy-load
    action ACTIONS gives their path (meta["render_action"])."""

    ACTIONS: ClassVar[dict[str, str]] = {}

    async def start(self) -> AsyncIterator[Any]:
        async for output in super().start():
            if isinstance(output, Request):
                output.meta["render"] = True
                output.meta["render_keep_static"] = True
                action = self.ACTIONS.get(urlsplit(output.url).path)
                if action is not None:
                    output.meta["render_action"] = action
            yield output


class ActionsSpider(RenderSeedsSpider):
    ACTIONS: ClassVar[dict[str, str]] = {
        "/function.html": "site.loadMore()",
        "/scroll.html": "scroll",
        "/late.html": "div.late",
        "/script.html": "notDefinedHere()",
    }


async def crawl(
    settings: Any,
    seeds: list[str],
    spider: type[BfsSpider] = BfsSpider,
    **overrides: Any,
) -> Any:
    values = settings(
        RENDER_SETTLE=0.2, TIMEOUTS_TIERS=[10.0, 60.0], BFS_SCOPE="seed-hosts"
    )
    values.update(overrides)
    client = redis_py.Redis.from_url(values["REDIS_URL"])
    client.flushdb()  # each crawl from scratch (the seen filter)
    client.close()
    handlers = values.pop("signals", {})
    crawler = get_crawler(spider, values)
    if "downloaded" in handlers:
        crawler.signals.connect(
            handlers["downloaded"], signal=signals.response_downloaded
        )
    await crawler.crawl_async(seeds=",".join(seeds), scope="seed-hosts")
    return crawler


def stat(crawler: Any, key: str) -> Any:
    return crawler.stats.get_value(key)


@deferred_f_from_coro_f
async def test_script_links_are_found_with_meta_render_only(settings, caplog):
    caplog.set_level(logging.INFO, logger="scrapy-playwright")
    with render_site() as site:
        seed = [site.bases[0] + "/script.html"]
        bodies = []

        def downloaded(response: Any, request: Any) -> None:
            bodies.append(
                (response.body, request.meta.get("frontier_render_static_body"))
            )

        crawler = await crawl(
            settings, seed, spider=RenderSeedsSpider, signals={"downloaded": downloaded}
        )
        assert "/from-script.html" in site.paths()
        assert stat(crawler, "render/pages") == 1  # the seed; its link is static
        # The seed asked to keep its document as served: one fetch, both pages.
        rendered, served = bodies[0]
        assert b"from-script.html" in served  # in the script's text
        assert b'href="/from-script.html"' in rendered
        assert b'href="/from-script.html"' not in served
        assert served == SITE["/script.html"].encode()
        assert "Starting download handler" in caplog.text  # Playwright started
        caplog.clear()
        static = await crawl(settings, seed, RENDER_MODE="never")
        assert site.paths() == ["/script.html", "/from-script.html", "/script.html"]
        # Nothing rendered: Playwright and the browser never started.
        assert stat(static, "playwright/browser_count") is None
        assert "Starting download handler" not in caplog.text
        assert not [k for k in static.stats.get_stats() if k.startswith("render/")]


@deferred_f_from_coro_f
async def test_always_renders_every_page_through_the_same_counters(
    settings, redis, tmp_path
):
    with render_site() as site:
        crawler = await crawl(
            settings,
            [site.bases[0] + "/script.html"],
            RENDER_MODE="always",
            WARC_URL=str(tmp_path),
        )
        assert "/from-script.html" in site.paths()
        assert stat(crawler, "render/pages") == 2
        # The traffic counters see the rendered requests as any other.
        traffic = redis.hget(CrawlKeys("bfs").traffic(ADDRESSES[0]), "requests")
        assert int(traffic) == len(site.paths()) == 2
    # WARC keeps each rendered page's request and response: the DOM as rendered.
    responses = {}
    for path in tmp_path.iterdir():
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream, check_digests="raise"):
                if record.rec_type == "response":
                    url = record.rec_headers.get_header("WARC-Target-URI")
                    responses[urlsplit(url).path] = record.content_stream().read()
    assert set(responses) == {"/script.html", "/from-script.html"}
    assert b'href="/from-script.html"' in responses["/script.html"]


@deferred_f_from_coro_f
async def test_lazy_load_actions_function_scroll_and_selector(settings):
    with render_site() as site:
        paths = ("/function.html", "/scroll.html", "/late.html", "/script.html")
        seeds = [site.bases[n % 3] + path for n, path in enumerate(paths)]
        found = {"/from-function.html", "/from-scroll.html", "/from-selector.html"}
        crawler = await crawl(settings, seeds, spider=ActionsSpider, RENDER_ACTION="")
        asked = {path for _, path, _ in site.asked}
        assert found <= asked
        assert "/more.txt" in site.paths(host=1)  # asked for by the scrolled page
        assert stat(crawler, "render/subrequests") == 1
        assert stat(crawler, "render/action_missing") == 1  # notDefinedHere()
        before = len(site.asked)
        # The control: rendered, no action; only the script's own link is found.
        await crawl(settings, seeds, spider=RenderSeedsSpider, RENDER_ACTION="")
        again = {path for _, path, _ in site.asked[before:]}
        assert "/from-script.html" in again
        assert not found & again


@deferred_f_from_coro_f
async def test_a_global_action_missing_from_a_page_is_counted(settings):
    with render_site() as site:
        seeds = [site.bases[0] + "/function.html", site.bases[0] + "/script.html"]
        crawler = await crawl(
            settings, seeds, RENDER_MODE="always", RENDER_ACTION="site.loadMore"
        )
        assert "/from-function.html" in site.paths()
        # script.html and the two pages found have no site.loadMore.
        assert stat(crawler, "render/pages") == 4
        assert stat(crawler, "render/action_missing") == 3


@deferred_f_from_coro_f
async def test_third_party_and_image_requests_are_blocked_and_counted(settings):
    with render_site() as site:
        crawler = await crawl(
            settings,
            [site.bases[0] + "/third.html"],
            RENDER_MODE="always",
            ROBOTSTXT_OBEY=True,
        )
        assert "/from-third.html" in site.paths()  # the page's own script ran
        assert site.paths(host=1) == []
        assert "/picture.png" not in site.paths()
        assert "/private/data.txt" not in site.paths()  # robots.txt forbids it
        assert "/popup.html" not in site.paths()  # a window the page opened
        assert "/redirected.js" in site.paths()  # its redirect to host 1 refused
        assert stat(crawler, "render/subrequests_blocked") == 5
        blocked = "render/subrequests_blocked_reason_count"
        assert stat(crawler, f"{blocked}/third-party") == 2
        assert stat(crawler, f"{blocked}/image") == 1
        assert stat(crawler, f"{blocked}/robots") == 1
        assert stat(crawler, f"{blocked}/popup") == 1


@deferred_f_from_coro_f
async def test_a_redirected_page_is_followed_by_scrapy_through_the_frontier(settings):
    with render_site() as site:
        seeds = [site.bases[0] + "/away.html", site.bases[0] + "/moved.html"]
        seeds.append(site.bases[1] + "/from-script.html")  # host 1 in scope
        crawler = await crawl(settings, seeds, RENDER_MODE="always")
        # Each target fetched once, as a request of its own (rendered too).
        assert site.paths(host=1).count("/from-away.html") == 1
        assert site.paths().count("/from-moved.html") == 1
        assert site.paths().count("/away.html") == 1
        assert stat(crawler, "render/pages") == 3  # the two targets, host 1's seed
        assert stat(crawler, "bfs/fate_count/redirected") == 2


@deferred_f_from_coro_f
async def test_render_concurrency_bounds_the_pages_open_at_once(settings):
    with render_site() as site:
        seeds = [base + "/busy-0.html" for base in site.bases]
        await crawl(settings, seeds, RENDER_MODE="always", RENDER_CONCURRENCY=1)
        assert site.paths(0).count("/hold.js") == 1
        assert len([p for _, p, _ in site.asked if p == "/hold.js"]) == 3
        assert site.most_open == 1
    with render_site() as site:  # the control: three hosts render side by side
        seeds = [base + "/busy-0.html" for base in site.bases]
        await crawl(settings, seeds, RENDER_MODE="always", RENDER_CONCURRENCY=3)
        assert site.most_open > 1


@deferred_f_from_coro_f
async def test_contexts_are_replaced_after_their_pages(settings):
    def contexts(site: Site) -> set[str]:
        return {p.split("?")[1] for p in site.paths() if p.startswith("/context.txt")}

    with render_site() as site:
        seed = [site.bases[0] + "/busy.html"]
        crawler = await crawl(
            settings, seed, RENDER_MODE="always", RENDER_MAX_PAGES_PER_CONTEXT=1
        )
        assert stat(crawler, "render/pages") == 1 + BUSY_PAGES
        # Each busy page tells its context's id (localStorage is per context); the
        # index page has a context of its own and tells nothing.
        assert len(contexts(site)) == BUSY_PAGES
        assert stat(crawler, "playwright/context_count") == 1 + BUSY_PAGES
    with render_site() as site:  # the control: one context for all
        await crawl(settings, [site.bases[0] + "/busy.html"], RENDER_MODE="always")
        assert len(contexts(site)) == 1


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
        busy = [p for p in site.paths() if p.startswith("/busy-")]
        assert len(busy) == BUSY_PAGES
        assert "/hold.js" not in site.paths()  # nothing rendered
        said = [
            r.getMessage()
            for r in caplog.records
            if "apt-get install chromium" in r.getMessage()
        ]
        assert len(said) == 1, said
        assert stat(crawler, "render/unavailable") == 1 + BUSY_PAGES
        assert stat(crawler, "render/pages") is None
        # RENDER_MODE = never: the first meta["render"] says it, once.
        caplog.clear()
        crawler = await crawl(
            settings,
            [site.bases[0] + "/script.html", site.bases[1] + "/script.html"],
            spider=RenderSeedsSpider,
            RENDER_BROWSER="/nonexistent/chromium",
        )
        said = [
            r.getMessage()
            for r in caplog.records
            if "apt-get install chromium" in r.getMessage()
        ]
        assert len(said) == 1, said
        assert "meta['render']" in said[0]
        assert stat(crawler, "render/unavailable") == 2
        assert "/from-script.html" not in site.paths()
