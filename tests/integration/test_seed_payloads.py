"""A running crawl takes scrapy-redis JSON seeds from its Redis seed list, besides
plain URLs, and counts and skips bad ones (crawler/frontier/node/seedintake.py)."""

from __future__ import annotations

import json
import logging

import pytest
from scrapy import signals
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler
from twisted.internet import reactor

from crawler.crawlstate.keys import CrawlKeys
from crawler.spiders.bfs import BfsSpider
from tests.integration.test_crawl import fetched

pytestmark = pytest.mark.integration

SEEDS = CrawlKeys("bfs").seeds
# Seconds between two fetches of the seed host: its 6 pages within depth 1 keep the
# crawl running well past the push.
DELAY = 0.3
PUSH_AT = 0.5


@deferred_f_from_coro_f
async def test_a_running_crawl_takes_json_and_plain_seeds(
    site, settings, redis, caplog
):
    payloads = [
        json.dumps({"url": site.seeds[1], "meta": {"job": "j1"}, "priority": 5}),
        json.dumps({"url": site.seeds[2], "meta": {"job": "j2", "n": [1, None]}}),
        site.seeds[3],
        json.dumps({"url": site.seeds[1] + "x", "meta": {"frontier_lease": "0:1"}}),
        "{not json",
        json.dumps({"url": site.seeds[2]}) + " trailing",
    ]
    seen: dict[str, tuple[object, int]] = {}

    def received(response, request, spider):
        seen[request.url] = (request.meta.get("job"), request.priority)

    crawler = get_crawler(
        BfsSpider,
        settings(
            DEPTH_LIMIT=1,
            BFS_SCOPE="seed-hosts",
            POLITENESS_DAY_DELAY=DELAY,
            POLITENESS_NIGHT_DELAY=DELAY,
            FRONTIER_MAINTENANCE_INTERVAL=0.2,
        ),
    )
    crawler.signals.connect(received, signal=signals.response_received, weak=False)
    pushed_while_running: list[bool] = []

    def push() -> None:
        pushed_while_running.append(crawler.crawling)
        redis.rpush(SEEDS, *payloads)

    reactor.callLater(PUSH_AT, push)  # type: ignore[attr-defined]
    with caplog.at_level(logging.WARNING, logger="crawler.frontier.node.seedintake"):
        await crawler.crawl_async(seeds=site.seeds[0])
    assert pushed_while_running == [True]
    assert crawler.stats.get_value("finish_reason") == "finished"
    assert {(1, 0), (2, 0), (3, 0)} <= set(fetched(site))
    assert seen[site.seeds[1]] == ("j1", 5)
    assert seen[site.seeds[2]] == ("j2", 0)
    assert seen[site.seeds[3]] == (None, 0)
    assert not any(url.endswith("x") for url in seen)
    assert crawler.stats.get_value("frontier/bad_seeds") == 3
    skipped = [r for r in caplog.records if r.getMessage().startswith("Skipped a seed")]
    assert len(skipped) == 2  # one line per kind of fault: meta, json
    assert redis.llen(SEEDS) == 0
