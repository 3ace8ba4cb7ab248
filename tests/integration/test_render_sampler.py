"""RENDER_MODE=auto end to end, in real Chromium: a host whose links scripts write is
rendered once its samples pay, a static host only while sampled, and a host that mixes
both is decided per URL pattern; the decisions stay in Redis for the cluster."""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.crawlstate.keys import CrawlKeys
from crawler.policy.storepath import store_path
from crawler.records.database import RecordsDatabase
from crawler.render.config import find_browser
from crawler.spiders.bfs import BfsSpider

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    import redis as redis_py

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(find_browser("") is None, reason="no Chromium on this machine"),
]

DYNAMIC, STATIC, MIXED = "127.0.0.24", "127.0.0.25", "127.0.0.26"
PAGES = 7  # per section: a binary tree, page i links to 2i+1 and 2i+2
SAMPLE_PAGES = 3
MARK = "/mark.js"  # asked for by every page a browser renders, never by a fetch


def tree_links(section: str, index: int) -> list[str]:
    return [f"/{section}/{i}.html" for i in (2 * index + 1, 2 * index + 2) if i < PAGES]


def page(title: str, links: list[str], *, scripted: bool) -> str:
    """A page whose links are in its HTML, or written by a script after load."""
    if scripted:
        shown = (
            "<script>for (const href of " + json.dumps(links) + ") {"
            " const a = document.createElement('a'); a.href = href;"
            " a.textContent = href; document.body.appendChild(a); }</script>"
        )
    else:
        shown = "".join(f'<a href="{link}">{link}</a>' for link in links)
    return (
        f"<!DOCTYPE html><html><head><title>{title}</title>"
        f'<script src="{MARK}"></script></head>'
        f"<body><p>Some text of {title}.</p>{shown}</body></html>"
    )


def dynamic_host(path: str) -> str | None:
    """Every page's links are written by a script."""
    section, _, name = path.strip("/").partition("/")
    if section != "d" or not name.removesuffix(".html").isdigit():
        return None
    index = int(name.removesuffix(".html"))
    return page(path, tree_links("d", index), scripted=True)


def static_host(path: str) -> str | None:
    section, _, name = path.strip("/").partition("/")
    if section != "s" or not name.removesuffix(".html").isdigit():
        return None
    index = int(name.removesuffix(".html"))
    return page(path, tree_links("s", index), scripted=False)


def mixed_host(path: str) -> str | None:
    """/app/ pages have script-written links, /doc/ pages links in their HTML."""
    if path == "/index.html":
        return page(path, ["/app/0.html", "/doc/0.html"], scripted=False)
    section, _, name = path.strip("/").partition("/")
    if section not in ("app", "doc") or not name.removesuffix(".html").isdigit():
        return None
    index = int(name.removesuffix(".html"))
    links = tree_links(section, index)
    return page(path, links, scripted=section == "app")


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        server: Any = self.server
        if self.path == MARK:
            server.renders.append(self.headers.get("Referer", ""))
            body, kind = b"/* rendered */", "application/javascript"
        else:
            server.fetches.append(self.path)
            html = server.pages(self.path)
            if html is None:
                self.send_error(404)
                return
            body, kind = html.encode(), "text/html; charset=utf-8"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serving(
    address: str, pages: Callable[[str], str | None]
) -> Iterator[ThreadingHTTPServer]:
    server: Any = ThreadingHTTPServer((address, 0), _Handler)
    server.pages, server.fetches, server.renders = pages, [], []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def origin(server: Any) -> str:
    address, port = server.server_address
    return f"http://{address}:{port}"


def renders(server: Any, section: str = "") -> Counter[str]:
    """Pages the browser rendered (by the mark's Referer), with how many times."""
    paths = Counter(
        "/" + r.split("/", 3)[3] for r in server.renders if r.count("/") >= 3
    )
    return Counter({p: n for p, n in paths.items() if p.startswith(f"/{section}")})


def fetched(server: Any, section: str) -> set[str]:
    return {path for path in server.fetches if path.startswith(f"/{section}/")}


def section(name: str) -> set[str]:
    return {f"/{name}/{i}.html" for i in range(PAGES)}


@contextlib.contextmanager
def three_hosts() -> Iterator[tuple[Any, Any, Any]]:
    with (
        serving(DYNAMIC, dynamic_host) as dynamic,
        serving(STATIC, static_host) as static,
        serving(MIXED, mixed_host) as mixed,
    ):
        yield dynamic, static, mixed


async def crawl(settings: dict[str, Any], *servers: Any) -> Any:
    seeds = [
        origin(servers[0]) + "/d/0.html",
        origin(servers[1]) + "/s/0.html",
        origin(servers[2]) + "/index.html",
    ]
    crawler = get_crawler(BfsSpider, settings)
    await crawler.crawl_async(seeds=",".join(seeds), scope="seed-hosts")
    assert crawler.stats.get_value("finish_reason") == "finished"
    return crawler


def decisions(redis: redis_py.Redis, server: Any) -> dict[str, str]:
    host = origin(server).removeprefix("http://")
    found: dict[bytes, bytes] = redis.hgetall(CrawlKeys("bfs").render(host))  # type: ignore[assignment]
    return {
        k.decode().partition(":")[2] or "host": v.decode()
        for k, v in found.items()
        if k.startswith(b"decision:")
    }


@deferred_f_from_coro_f
async def test_auto_renders_where_it_pays(settings, redis, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="crawler.render.learning")
    with three_hosts() as (dynamic, static, mixed):
        values = settings(
            RENDER_MODE="auto",
            RENDER_SAMPLE_PAGES=SAMPLE_PAGES,
            RENDER_SETTLE=0.1,
            PAGESTORE_URL=str(tmp_path / "store"),
            RECORDS_DATABASE_URL=f"sqlite:///{tmp_path}/pages.db",
        )
        crawler = await crawl(values, dynamic, static, mixed)
    # every page was found, those only scripts link to included
    assert fetched(dynamic, "d") == section("d")
    assert fetched(static, "s") == section("s")
    assert fetched(mixed, "app") == section("app")
    assert fetched(mixed, "doc") == section("doc")
    # the static host and the mixed host's static pattern: rendered only as samples
    assert sum(renders(static).values()) <= SAMPLE_PAGES
    assert sum(renders(mixed, "doc").values()) <= SAMPLE_PAGES
    assert renders(mixed, "index") == Counter({"/index.html": 1})
    # the dynamic host and pattern: every page rendered, once past their samples
    assert set(renders(dynamic)) == section("d")
    assert set(renders(mixed, "app")) == section("app")
    # (a pattern's own decision is kept, and applies if its host turns mixed)
    assert decisions(redis, dynamic) == {"host": "render", "/d/": "render"}
    assert decisions(redis, static) == {"host": "static", "/s/": "static"}
    assert decisions(redis, mixed) == {
        "host": "mixed",
        "/app/": "render",
        "/doc/": "static",
    }
    stats = crawler.stats
    # static and dynamic hosts: 3 each; the mixed host: 3 of its own (index, app/0,
    # doc/0), then 2 more for /app/ and for /doc/ (each has one already)
    assert stats.get_value("render/samples") == 3 + 3 + (3 + 2 + 2)
    assert stats.get_value("render/gained_links") >= 2 * SAMPLE_PAGES
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith(f"Rendering host {DYNAMIC}:") for m in messages)
    assert any(
        m.startswith(f"Host {STATIC}:") and "static enough" in m for m in messages
    )
    assert any(
        m.startswith(f"Host {MIXED}:") and "per URL pattern" in m for m in messages
    )
    # a sample's rendered copy replaced its static one in the page store and records
    stored = (
        tmp_path / "store" / store_path(origin(dynamic) + "/d/0.html")
    ).read_text()
    assert '<a href="/d/1.html">' in stored
    database = RecordsDatabase(f"sqlite:///{tmp_path}/pages.db").open(create=False)
    try:
        rows = {row["url"]: row for row in database.query()}
    finally:
        database.close()
    assert rows[origin(dynamic) + "/d/0.html"]["links"] == 2


@deferred_f_from_coro_f
async def test_never_misses_what_auto_finds(settings, redis):
    """The control: without rendering, the script-written links are never found."""
    with three_hosts() as (dynamic, static, mixed):
        await crawl(settings(RENDER_MODE="never"), dynamic, static, mixed)
    assert fetched(dynamic, "d") == {"/d/0.html"}
    assert fetched(mixed, "app") == {"/app/0.html"}
    assert fetched(static, "s") == section("s")
    assert dynamic.renders == static.renders == mixed.renders == []


FAN_OUT = 4
WIDE_PAGES = 1 + FAN_OUT + FAN_OUT**2  # three levels


def wide_host(path: str) -> str | None:
    """A dynamic host whose pages each write links to FAN_OUT children."""
    name = path.removeprefix("/w/").removesuffix(".html")
    if not path.startswith("/w/") or not name.isdigit():
        return None
    index = int(name)
    children = range(index * FAN_OUT + 1, index * FAN_OUT + FAN_OUT + 1)
    links = [f"/w/{i}.html" for i in children if i < WIDE_PAGES]
    return page(path, links, scripted=True)


@deferred_f_from_coro_f
async def test_pages_fetched_while_undecided_are_rendered_later(settings, redis):
    """With four fetches of a host at once, pages go out while its samples are
    still out: parked, then rendered once the decision comes, so their links (which
    only scripts write) are found all the same."""
    with serving(DYNAMIC, wide_host) as wide:
        values = settings(
            RENDER_MODE="auto",
            RENDER_SAMPLE_PAGES=SAMPLE_PAGES,
            RENDER_SETTLE=0.1,
            FRONTIER_HOST_CONCURRENCY=FAN_OUT,
        )
        crawler = get_crawler(BfsSpider, values)
        await crawler.crawl_async(seeds=origin(wide) + "/w/0.html", scope="seed-hosts")
    assert fetched(wide, "w") == {f"/w/{i}.html" for i in range(WIDE_PAGES)}
    assert crawler.stats.get_value("render/parked_pages") >= 1
    assert crawler.stats.get_value("render/late_pages") >= 1
