"""A whole crawl where the spider yields requests with priorities: the site's own
request log shows them fetched by priority within a depth (``bfs``), and a
high-priority deeper request jumping the queue only with ``FRONTIER_ORDER=priority``.

One host, one request of it at a time: the log's arrival order is the frontier's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from scrapy import Request, Spider
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from tests.servers import running_site

if TYPE_CHECKING:
    from collections.abc import Iterator

    from scrapy.http import Response

pytestmark = pytest.mark.integration

# Children of the root (page, priority), in the order the spider yields them: ties
# (5, 5) must keep that order; 1000 is past the exact range and still goes first.
CHILDREN = [
    (1, 3),
    (2, -7),
    (3, 12),
    (4, 0),
    (5, 5),
    (6, 5),
    (7, -1),
    (8, 100),
    (9, 1000),
    (10, -300),
]
# Depth 2, yielded by the first child fetched: (page, priority).
URGENT, LATE = (20, 2000), (21, -1000)


class PrioritySpider(Spider):
    """Yields the children of its root with their priorities; the first child
    fetched yields two deeper requests, one urgent, one late."""

    name = "priority-crawl"

    def __init__(self, root: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.root = root.rstrip("/")
        self.allowed_domains = ["127.0.0.2"]
        self.start_urls = [f"{self.root}/"]
        self._deeper_sent = False

    def page(self, number: int, priority: int, callback: Any) -> Request:
        return Request(f"{self.root}/p/{number}.html", callback, priority=priority)

    def parse(self, response: Response) -> Iterator[Request]:
        for number, priority in CHILDREN:
            yield self.page(number, priority, self.parse_child)

    def parse_child(self, response: Response) -> Iterator[Request]:
        if not self._deeper_sent:
            self._deeper_sent = True
            for number, priority in (URGENT, LATE):
                yield self.page(number, priority, self.parse_leaf)

    def parse_leaf(self, response: Response) -> None:
        return None


async def fetch_order(settings: dict[str, Any], order: str) -> list[str]:
    """Crawl the root's children; the paths of the site's log, in arrival order."""
    with running_site(hosts=1, pages=30, links=1) as site:
        values = settings(
            FRONTIER_ORDER=order,
            FRONTIER_HOST_CONCURRENCY=1,
            BFS_SCOPE="seed-hosts",
        )
        crawler = get_crawler(PrioritySpider, values)
        await crawler.crawl_async(root=site.seeds[0])
        assert crawler.stats.get_value("finish_reason") == "finished"
        return [row["path"] for row in site.pages()]


def paths(*pages: int) -> list[str]:
    return [f"/p/{page}.html" for page in pages]


@deferred_f_from_coro_f
async def test_bfs_order_fetches_by_priority_within_each_depth(settings):
    order = await fetch_order(settings, "bfs")
    assert order == ["/", *paths(9, 8, 3, 5, 6, 1, 4, 7, 2, 10), *paths(20, 21)]


@deferred_f_from_coro_f
async def test_priority_order_lets_a_deeper_urgent_request_go_first(settings):
    order = await fetch_order(settings, "priority")
    assert order == ["/", *paths(9, 20, 8, 3, 5, 6, 1, 4, 7, 2, 10, 21)]
