"""Back-off that learns, end to end: a host that answers 429 beyond one request every
LIMIT seconds, measured at the site (tests/site.py ``limit:S``)."""

from __future__ import annotations

import asyncio
import itertools
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.context.crawl import CrawlContext
from crawler.policy.backoff import BackoffConfig, decode
from crawler.spiders.bfs import BfsSpider
from tests.integration.test_timeouts import crawl
from tests.integration.test_traffic import frontier, redis_url
from tests.servers import running_site
from tests.site import host_address

if TYPE_CHECKING:
    from tests.servers import RunningSite

pytestmark = pytest.mark.integration

LIMIT = 0.3  # the host accepts one request every LIMIT s, and answers 429 sooner
DELAY = 0.05  # the politeness delay: six times faster than the host allows
PAGES = 24
HOST = host_address(0)


def limited(settings: Any, node: str, **overrides: Any) -> dict[str, Any]:
    """A crawl of the limited host by *node*: 429s come back after 1 s."""
    return settings(
        POLITENESS_DAY_DELAY=DELAY,
        POLITENESS_NIGHT_DELAY=DELAY,
        RETRY_LATER_DELAYS=[1, 1, 1, 1, 1],
        FRONTIER_NODE_NAME=node,
        DEFAULT_REQUEST_HEADERS={"X-Crawler-Node": node},
        **overrides,
    )


def answers(site: RunningSite, node: str | None = None) -> list[int | None]:
    return [r["status"] for r in site.pages() if node is None or r["node"] == node]


@deferred_f_from_coro_f
async def test_a_rate_limited_host_is_slowed_to_its_limit(settings, redis):
    with running_site(
        hosts=1, pages=PAGES, links=3, cross=0.0, behave={0: f"limit:{LIMIT}"}
    ) as site:
        crawler = await crawl(limited(settings, "one"), site.seeds)
        statuses = answers(site)
        fetched = {r["path"] for r in site.pages() if r["status"] == 200}

    assert len(fetched) == PAGES  # every page, 429s tried again later
    # At the delay alone, five requests in six would be refused; the delay learns
    # from the first few (0.05 s, 0.275 s, then 0.55 s) and the rest go through.
    assert statuses.count(429) <= 4, statuses
    stats = crawler.stats.get_value
    assert stats("politeness/throttled/429") == statuses.count(429)
    assert stats("politeness/hosts_throttled") == 1
    # What the host taught is in the crawl state, for every node.
    records = [
        decode(raw, crawler_config(crawler))
        for key in redis.scan_iter(match="*:backoffs")
        for raw in redis.hvals(key)
    ]
    assert len(records) == 1
    assert records[0] is not None
    assert records[0].delay >= LIMIT
    assert records[0].reason == "429"


@deferred_f_from_coro_f
async def test_a_node_that_takes_the_host_over_keeps_what_it_taught(settings, redis):
    with running_site(
        hosts=1, pages=PAGES, links=3, cross=0.0, behave={0: f"limit:{LIMIT}"}
    ) as site:
        first = get_crawler(
            BfsSpider, limited(settings, "first", CLOSESPIDER_PAGECOUNT=8)
        )
        await asyncio.wait_for(first.crawl_async(seeds=site.seeds[0]), 60)
        taught = answers(site, "first")
        second = await crawl(limited(settings, "second"), site.seeds)
        rows = [r for r in site.pages() if r["node"] == "second"]

    assert 429 in taught  # the first node learnt from the host
    assert len(rows) >= 8  # the second node fetched the rest
    # It starts at the learnt delay: not one 429, every gap at or above the limit.
    assert [r["status"] for r in rows].count(429) == 0
    gaps = [b["t"] - a["t"] for a, b in itertools.pairwise(rows)]
    assert min(gaps) >= LIMIT
    assert second.stats.get_value("politeness/learnt_adopted") >= 1


def crawler_config(crawler: Any) -> BackoffConfig:
    return CrawlContext.of(crawler).delays.config.backoff


@deferred_f_from_coro_f
async def test_timeouts_teach_a_delay_and_the_hosts_report_says_why(settings, redis):
    """A host that leaves every other request unanswered: each timeout raises its
    learnt delay, and `scrapy frontier hosts` shows it with the reason."""
    with running_site(
        hosts=1, pages=4, links=1, cross=0.0, behave={0: "flaky"}
    ) as site:
        values = limited(settings, "one", TIMEOUTS_TIERS=[0.3, 1.0, 2.0])
        crawler = await crawl(values, site.seeds)
        statuses = answers(site)
    table = frontier("hosts", "-s", f"REDIS_URL={redis_url(redis)}")

    assert statuses.count(200) == 4  # every page, each on its second try
    assert crawler.stats.get_value("politeness/throttled/timeout") == 4
    assert table.returncode == 0, table.stderr
    [row] = [line for line in table.stdout.splitlines() if line.startswith(HOST)]
    assert "throttled (timeout)" in row
