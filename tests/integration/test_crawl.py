"""Whole crawls of the local site through the frontier, asserted from the site's log."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.frontier.frontierconfig import FrontierConfig
from crawler.frontier.store.store import FrontierStore, Pending
from crawler.policy.sharding import shard_of
from crawler.spiders.bfs import BfsSpider
from tests.servers import running_site
from tests.site import bfs_depths, links_of, page_index

if TYPE_CHECKING:
    from tests.servers import RunningSite

pytestmark = pytest.mark.integration


def fetched(site: RunningSite) -> list[tuple[int, int]]:
    """(host index, page index) of every page fetch, in arrival order."""
    hosts = {f"127.0.0.{2 + i}:{site.spec.port}": i for i in range(site.spec.hosts)}
    result = []
    for row in site.pages():
        page = page_index(row["path"], site.spec.pages)
        assert page is not None, row
        result.append((hosts[row["host"]], page))
    return result


async def crawl(settings: dict[str, Any], **kwargs: Any) -> Any:
    crawler = get_crawler(BfsSpider, settings)
    await crawler.crawl_async(**kwargs)
    return crawler


@deferred_f_from_coro_f
async def test_every_reachable_page_fetched_once(site, settings):
    crawler = await crawl(settings(), seeds=site.seeds[0])
    pages = fetched(site)
    expected = bfs_depths(site.spec, [(0, 0)])
    assert Counter(pages) == Counter(list(expected))  # each page exactly once
    assert crawler.stats.get_value("finish_reason") == "finished"
    assert crawler.stats.get_value("frontier/acked") == len(expected)


def late_shallow_pages(site: RunningSite) -> int:
    """Fetches of a page shallower than one its host served before (BFS breaks)."""
    depths = bfs_depths(site.spec, [(0, 0)])
    deepest: dict[int, int] = {}
    late = 0
    for host, page in fetched(site):
        late += depths[(host, page)] < deepest.get(host, 0)
        deepest[host] = max(deepest.get(host, 0), depths[(host, page)])
    return late


@deferred_f_from_coro_f
async def test_each_host_is_crawled_in_breadth_first_order(settings):
    with running_site(hosts=6, pages=60, links=5, cross=0.3) as site:
        await crawl(settings(FRONTIER_BFS_LOOKAHEAD=0), seeds=site.seeds[0])
        assert late_shallow_pages(site) == 0
        assert len(fetched(site)) == len(bfs_depths(site.spec, [(0, 0)]))


@deferred_f_from_coro_f
async def test_without_the_bfs_barrier_fast_hosts_run_ahead(settings):
    """Negative control: with unlimited lookahead, hosts leave the BFS order."""
    with running_site(hosts=6, pages=60, links=5, cross=0.3) as site:
        await crawl(settings(FRONTIER_BFS_LOOKAHEAD=-1), seeds=site.seeds[0])
        assert late_shallow_pages(site) > 0


@deferred_f_from_coro_f
async def test_one_host_is_crawled_in_breadth_first_order(settings):
    with running_site(hosts=1, pages=60, links=4) as site:
        await crawl(settings(FRONTIER_BFS_LOOKAHEAD=0), seeds=site.seeds[0])
        depths = bfs_depths(site.spec, [(0, 0)])
        order = [depths[page] for page in fetched(site)]
    assert len(order) == len(depths)
    assert order == sorted(order)
    assert order[-1] >= 3  # the site is deep enough for the order to mean something


@deferred_f_from_coro_f
async def test_every_page_within_the_depth_limit_and_none_deeper(settings):
    with running_site(hosts=6, pages=60, links=5, cross=0.3) as site:
        crawler = await crawl(
            settings(DEPTH_LIMIT=3, FRONTIER_BFS_LOOKAHEAD=0), seeds=site.seeds[0]
        )
        depths = bfs_depths(site.spec, [(0, 0)])
        pages = fetched(site)
    assert sorted(pages) == sorted(p for p, d in depths.items() if d <= 3)
    assert max(depths.values()) > 3  # the limit cut something off
    assert crawler.stats.get_value("frontier/depth_limited") > 0


@deferred_f_from_coro_f
async def test_per_host_delay_is_kept_between_fetches(site, settings):
    delay = 0.3
    await crawl(settings(DOWNLOAD_DELAY=delay, DEPTH_LIMIT=2), seeds=site.seeds[0])
    gaps = site.gaps_by_host()
    assert gaps, "the crawl fetched no host twice"
    assert min(min(g) for g in gaps.values()) >= delay


@deferred_f_from_coro_f
async def test_without_delay_hosts_are_fetched_back_to_back(site, settings):
    """Negative control for the delay test: the gap check can fail."""
    await crawl(settings(DOWNLOAD_DELAY=0, DEPTH_LIMIT=2), seeds=site.seeds[0])
    gaps = site.gaps_by_host()
    assert min(min(g) for g in gaps.values()) < 0.3


@deferred_f_from_coro_f
async def test_a_hostile_queue_entry_is_counted_and_skipped(site, settings, redis):
    values = settings()
    store = FrontierStore.on(
        redis, FrontierConfig.from_settings(Settings(values), "bfs")
    )
    store.prepare(time.time())
    payload = "cos\nsystem\n(S'touch /tmp/pwned-by-frontier'\ntR."  # a pickle
    shard = shard_of("evil.invalid", store.shards.config.shards)
    store.flush([Pending(shard, "evil.invalid", 0, "", payload)], [], time.time())
    crawler = await crawl(values, seeds=site.seeds[0])
    assert crawler.stats.get_value("frontier/bad_entries") == 1
    assert crawler.stats.get_value("finish_reason") == "finished"
    assert len(fetched(site)) == len(bfs_depths(site.spec, [(0, 0)]))
    assert not Path("/tmp/pwned-by-frontier").exists()  # noqa: S108 (the payload's target)


@deferred_f_from_coro_f
async def test_every_key_of_a_crawl_carries_its_prefix(site, settings, redis):
    await crawl(settings(FRONTIER_KEY_PREFIX="crawl-a"), seeds=site.seeds[0])
    keys = [key.decode() for key in redis.scan_iter()]
    assert keys
    assert all(key.startswith("crawl-a:") for key in keys), keys


@deferred_f_from_coro_f
async def test_two_crawls_with_other_prefixes_share_one_redis(site, settings):
    await crawl(settings(FRONTIER_KEY_PREFIX="one"), seeds=site.seeds[0])
    await crawl(settings(FRONTIER_KEY_PREFIX="two"), seeds=site.seeds[0])
    counts = Counter(fetched(site))
    assert set(counts.values()) == {2}  # each crawl fetched every page once


@deferred_f_from_coro_f
async def test_a_seeds_file_skips_bad_lines_and_names_them(
    site, settings, tmp_path, caplog
):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"# seeds\n\nftp://nope.example/\n{site.seeds[1]}\nnot a url\n")
    crawler = await crawl(settings(DEPTH_LIMIT=1), seeds_file=str(seeds))
    assert crawler.stats.get_value("bfs/bad_seeds") == 2
    assert f"{seeds} line 3" in caplog.text
    assert f"{seeds} line 5" in caplog.text
    assert fetched(site)[0] == (1, 0)


@deferred_f_from_coro_f
async def test_a_crawl_that_waits_takes_seeds_pushed_to_redis(site, settings, redis):
    crawler = get_crawler(
        BfsSpider, settings(FRONTIER_CLOSE_WHEN_DRAINED=False, DEPTH_LIMIT=1)
    )
    done = asyncio.ensure_future(crawler.crawl_async())
    hostile = ["javascript:alert(1)", "ftp://127.0.0.1/", "http://" + "a" * 64 + ".x/"]
    redis.rpush("bfs:seeds", site.seeds[2], *hostile)
    deadline = time.monotonic() + 30
    expected = len(links_from_root(site, 2)) + 1
    while len(set(fetched(site))) < expected and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    await asyncio.sleep(1.5)  # idle now: a crawl that waits does not close by itself
    assert crawler.crawling
    await crawler.stop_async()
    await done
    assert fetched(site)[0] == (2, 0)
    assert len(set(fetched(site))) == expected
    assert crawler.stats.get_value("frontier/bad_seeds") == len(hostile)


def links_from_root(site: RunningSite, host: int) -> set[tuple[int, int]]:
    return set(links_of(site.spec, host, 0)) - {(host, 0)}


@deferred_f_from_coro_f
async def test_a_crawl_that_does_not_persist_leaves_no_key(site, settings, redis):
    crawler = await crawl(settings(FRONTIER_PERSIST=False), seeds=site.seeds[0])
    assert crawler.stats.get_value("frontier/acked") > 0
    assert list(redis.scan_iter()) == []


@deferred_f_from_coro_f
async def test_a_persisted_crawl_resumes_and_reset_starts_afresh(site, settings):
    await crawl(settings(DEPTH_LIMIT=1), seeds=site.seeds[0])
    first = len(fetched(site))
    resumed = await crawl(settings(DEPTH_LIMIT=1), seeds=site.seeds[0])
    assert len(fetched(site)) == first  # seen before: nothing fetched again
    assert resumed.stats.get_value("dupefilter/filtered") >= 1
    await crawl(settings(DEPTH_LIMIT=1, FRONTIER_RESET=True), seeds=site.seeds[0])
    assert len(fetched(site)) == 2 * first
