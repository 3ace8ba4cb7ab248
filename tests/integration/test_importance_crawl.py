"""Whole crawls in FRONTIER_ORDER=importance, checked at the site's own request log.

A project's own spider through the add-on (its link credits from
``LinkCreditMiddleware``) and the ``bfs`` spider (its own credits, in-links it does
not yield again included) both fetch a page that many pages link to before pages
found earlier with one in-link each; in ``bfs`` order the same page waits its turn
(the control). One host, one request of it at a time: the log's order is the
frontier's.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest
from scrapy import Request, Spider
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.meta import IMPORTANCE, INLINKS
from crawler.spiders.bfs import BfsSpider
from tests.integration.test_crawl import fetched
from tests.servers import running_site
from tests.site import bfs_depths

if TYPE_CHECKING:
    from collections.abc import Iterator

    from scrapy.http import Response

pytestmark = pytest.mark.integration

# The graph the spider follows (page -> pages it links to): the root links to six
# hubs; the first hub links to five leaves and then to the target, every other hub
# to the target only. In BFS order the target comes after the five leaves; by
# importance before them, once two hubs link to it.
HUBS = [1, 2, 3, 4, 5, 6]
LEAVES = [11, 12, 13, 14, 15]
TARGET = 20
GRAPH = {0: HUBS, 1: [*LEAVES, TARGET], **{hub: [TARGET] for hub in HUBS[1:]}}


class GraphSpider(Spider):
    """A project's own spider: yields every link of GRAPH, duplicates included, as
    spiders do (the frontier filters them)."""

    name = "importance-graph"

    def __init__(self, root: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.root = root.rstrip("/")
        self.start_urls = [f"{self.root}/"]
        self.seen: dict[int, tuple[float, int]] = {}

    def parse(self, response: Response) -> Iterator[Request]:
        page = (
            0 if response.url.endswith("/") else int(response.url.split("/")[-1][:-5])
        )
        self.seen[page] = (
            response.meta.get(IMPORTANCE, -1.0),
            response.meta.get(INLINKS, -1),
        )
        for target in GRAPH.get(page, []):
            yield Request(f"{self.root}/p/{target}.html", self.parse)


async def crawl_graph(settings: Any, order: str) -> tuple[list[str], GraphSpider]:
    with running_site(hosts=1, pages=30, links=1) as site:
        values = settings(
            FRONTIER_ORDER=order,
            FRONTIER_HOST_CONCURRENCY=1,
            POLITENESS_DAY_DELAY=0.1,
            POLITENESS_NIGHT_DELAY=0.1,
        )
        crawler = get_crawler(GraphSpider, values)
        await crawler.crawl_async(root=site.seeds[0])
        assert crawler.stats.get_value("finish_reason") == "finished"
        spider = crawler.spider
        assert isinstance(spider, GraphSpider)
        return [row["path"] for row in site.pages()], spider


def path(page: int) -> str:
    return f"/p/{page}.html"


@deferred_f_from_coro_f
async def test_a_page_many_pages_link_to_goes_before_pages_found_earlier(settings):
    order, spider = await crawl_graph(settings, "importance")
    assert sorted(order) == sorted(["/", *map(path, [*HUBS, *LEAVES, TARGET])])
    assert order.index(path(TARGET)) < min(order.index(path(p)) for p in LEAVES)
    importance, inlinks = spider.seen[TARGET]
    assert inlinks >= 2
    assert importance > max(spider.seen[leaf][0] for leaf in LEAVES)


@deferred_f_from_coro_f
async def test_in_bfs_order_the_same_page_waits_its_turn(settings):
    order, spider = await crawl_graph(settings, "bfs")
    assert order.index(path(TARGET)) > max(order.index(path(p)) for p in LEAVES)
    assert spider.seen[TARGET] == (-1.0, -1)  # no importance outside that order


@deferred_f_from_coro_f
async def test_the_bfs_spider_counts_in_links_and_fetches_every_page_once(settings):
    """The bfs spider's in-links it does not yield again reach Redis as credits,
    some lift URLs to a better band, and the crawl is whole: every reachable page
    fetched once, at politeness, by importance."""
    with running_site(hosts=4, pages=40, links=5, cross=0.3) as site:
        crawler = get_crawler(
            BfsSpider,
            settings(
                FRONTIER_ORDER="importance",
                POLITENESS_DAY_DELAY=0.05,
                POLITENESS_NIGHT_DELAY=0.05,
            ),
        )
        await crawler.crawl_async(seeds=site.seeds[0])
        pages = fetched(site)
        expected = bfs_depths(site.spec, [(0, 0)])
    stats = crawler.stats
    assert Counter(pages) == Counter(list(expected))  # each page exactly once
    assert stats.get_value("finish_reason") == "finished"
    assert stats.get_value("frontier/in_links") > 0
