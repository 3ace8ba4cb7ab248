"""A shorter path to a page found while the page is still being fetched: depth
repair reparses it from the page store once its first fetch is stored, and never
fetches it a second time.

The site is built for the race. The seed links a slow page on a second host and a
chain of two fast pages on its own host; the chain's end links a slower page on a
third host, at depth 3. The slow page's response links that page at depth 2 while
its first fetch is still in flight: the frontier queues a reparse at once, and its
body is not in the store yet.
"""

from __future__ import annotations

import contextlib
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest
from scrapy import signals
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.spiders.bfs import BfsSpider
from tests.integration.test_records import rows_of

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.integration

ADDRESSES = ("127.0.0.17", "127.0.0.18", "127.0.0.19")
# (host index, path) -> (seconds before answering, links as (host index, path)).
PAGES: dict[tuple[int, str], tuple[float, list[tuple[int, str]]]] = {
    (0, "/"): (0.0, [(1, "/slow"), (0, "/x")]),
    (1, "/slow"): (1.5, [(2, "/target")]),  # depth 1: the shorter path, late
    (0, "/x"): (0.0, [(0, "/y")]),
    (0, "/y"): (0.0, [(2, "/target")]),  # depth 2: the target found at depth 3
    (2, "/target"): (3.0, [(2, "/leaf")]),  # still in flight when /slow answers
    (2, "/leaf"): (0.0, []),
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        server: Any = self.server
        server.asked.append((server.index, self.path))
        delay, links = PAGES.get((server.index, self.path), (0.0, []))
        time.sleep(delay)
        hrefs = "".join(
            f'<a href="{server.bases[i]}{path}">{path}</a>' for i, path in links
        )
        body = f"<html><body>{hrefs}</body></html>".encode()
        self.send_response(200 if (server.index, self.path) in PAGES else 404)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def racing_site() -> Iterator[tuple[list[str], list[tuple[int, str]]]]:
    """Serve PAGES on ADDRESSES; yields each host's base URL and the pages asked."""
    asked: list[tuple[int, str]] = []
    servers = [ThreadingHTTPServer((address, 0), _Handler) for address in ADDRESSES]
    bases = [
        f"http://{a}:{s.server_address[1]}"
        for a, s in zip(ADDRESSES, servers, strict=True)
    ]
    for index, server in enumerate(servers):
        server.index, server.bases, server.asked = index, bases, asked  # type: ignore[attr-defined]
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield bases, asked
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


async def crawl_the_race(
    values: dict[str, Any],
) -> tuple[Any, list[Any], dict[str, int], list[str]]:
    """Crawl the racing site; the crawler, the pages the site was asked for (robots.txt
    aside), each record's depth by URL (its row's, with a records database), and
    the hosts' base URLs. The feed must hold one record per URL."""
    with racing_site() as (bases, asked):
        crawler = get_crawler(BfsSpider, values)
        depths: dict[str, int] = {}
        fed: list[str] = []  # the feed's URLs, in order

        def scraped(item: Any) -> None:
            depths[item.url] = item.depth
            fed.append(item.url)

        crawler.signals.connect(scraped, signal=signals.item_scraped, weak=False)
        # Every host a seed, so that scope keeps the crawl on them; the other two
        # roots answer 404 and link nothing.
        await crawler.crawl_async(seeds=",".join(f"{b}/" for b in bases))
    assert sorted(fed) == sorted(set(fed))  # one feed line a URL, reparsed or not
    if values.get("RECORDS_DATABASE_URL"):  # the rows, which depth repair lowers
        depths = {
            url: row["depth"]
            for url, row in rows_of(values["RECORDS_DATABASE_URL"]).items()
        }
    pages = [(i, path) for i, path in asked if path != "/robots.txt"]
    return crawler, pages, depths, bases


@deferred_f_from_coro_f
async def test_a_page_found_shorter_while_in_flight_is_reparsed_not_fetched_again(
    settings, tmp_path
):
    crawler, pages, depths, bases = await crawl_the_race(
        settings(
            PAGESTORE_URL=str(tmp_path / "pages"),
            RECORDS_DATABASE_URL=f"sqlite:///{tmp_path}/pages.db",
            DEPTH_LIMIT=3,
            BFS_SCOPE="seed-hosts",
        )
    )
    # Each page once, the target too.
    assert sorted(pages) == sorted([*PAGES, (1, "/"), (2, "/")])
    assert crawler.stats.get_value("reparse/from_store") == 1
    assert crawler.stats.get_value("reparse/fetched") is None
    # Its links followed again from the stored copy, at their true depths.
    assert depths[f"{bases[2]}/target"] == 2
    assert depths[f"{bases[2]}/leaf"] == 3


@deferred_f_from_coro_f
async def test_with_the_pipelines_off_nothing_is_reparsed_or_fetched_again(
    settings, tmp_path
):
    """PAGESTORE_URL set but -s ITEM_PIPELINES={}: nothing is stored, so depth
    repair must not count on a stored copy (it would fetch the target again)."""
    crawler, pages, depths, bases = await crawl_the_race(
        settings(
            PAGESTORE_URL=str(tmp_path / "pages"),
            ITEM_PIPELINES={},
            DEPTH_LIMIT=3,
            BFS_SCOPE="seed-hosts",
        )
    )
    # Each page once. The target keeps the depth it was fetched at (3), so its link
    # is past DEPTH_LIMIT: without a store, depth repair cannot follow it again.
    expected = [page for page in PAGES if page != (2, "/leaf")]
    assert sorted(pages) == sorted([*expected, (1, "/"), (2, "/")])
    assert crawler.stats.get_value("reparse/from_store") is None
    assert crawler.stats.get_value("reparse/fetched") is None
    assert depths[f"{bases[2]}/target"] == 3
