"""FRONTIER_SITE_STRATEGY on whole crawls of the local site: a host with a depth limit
of its own is crawled to it and the others to DEPTH_LIMIT (checked at the site's
log); each host's history (pages, links leaving the site, depths) reaches Redis as
the site's own graph says, is carried over crawls in the records database and read
back at start; `scrapy frontier hosts` shows each host's strategy and why; a bad
value stops start-up in one line; a ``dfs`` host is crawled deepest first (the
order at the site's log), every page once.
"""

from __future__ import annotations

import argparse
import io
from collections import deque
from typing import TYPE_CHECKING, Any

import pytest
from scrapy import Request, Spider
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.crawlstate.keys import CrawlKeys
from crawler.crawlstate.sitecounters import evidence_of
from crawler.policy.siteclass import Observation, SiteHistory, classify
from crawler.records.database import RecordsDatabase
from crawler.records.sites import SiteSave, SiteTable
from crawler.reports.hosts import hosts
from crawler.spiders.bfs import BfsSpider
from tests.integration.test_honest_exits import assert_one_line_stop, scrapy_crawl
from tests.servers import running_site
from tests.site import host_address, links_of, url_of

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    import redis as redis_py
    from scrapy.http import Response

    from tests.servers import RunningSite
    from tests.site import SiteSpec

pytestmark = pytest.mark.integration

KEYS = CrawlKeys("bfs")
SITE = {"hosts": 4, "pages": 40, "links": 3, "cross": 0.3, "seed": 5}


async def crawl(values: dict[str, Any], site: RunningSite) -> Any:
    """Crawl from every host's root, confined to the site's hosts."""
    crawler = get_crawler(BfsSpider, values)
    await crawler.crawl_async(seeds=",".join(site.seeds), scope="seed-hosts")
    return crawler


def depths_within(
    spec: SiteSpec, limit_of: Callable[[int], int]
) -> dict[tuple[int, int], int]:
    """Each page's link distance from the roots over the pages a crawl may fetch:
    a page is fetched (and its links followed) only within its host's limit."""
    depths = {(host, 0): 0 for host in range(spec.hosts)}
    queue = deque(depths)
    while queue:
        page = queue.popleft()
        for target in links_of(spec, *page):
            depth = depths[page] + 1
            if target not in depths and depth <= limit_of(target[0]):
                depths[target] = depth
                queue.append(target)
    return depths


def fetched_pages(site: RunningSite) -> set[tuple[int, int]]:
    """(host index, page index) of every page the site served."""
    hosts = {site.host(index): index for index in range(site.spec.hosts)}
    urls = {
        url_of(site.spec, host, page): (host, page)
        for host in range(site.spec.hosts)
        for page in range(site.spec.pages)
    }
    return {urls[f"http://{row['host']}{row['path']}"] for row in site.pages()} | {
        (hosts[row["host"]], 0) for row in site.pages() if row["path"] == "/"
    }


@deferred_f_from_coro_f
async def test_a_host_with_its_own_depth_limit_is_crawled_to_it(settings):
    """Host 1 has a limit of 4, the others DEPTH_LIMIT=2: the site serves exactly
    the pages within each one's limit, and host 1's beyond 2 (the control: without
    its rule they would not be fetched)."""
    own = 1
    with running_site(**SITE) as site:
        values = settings(
            DEPTH_LIMIT=2,
            FRONTIER_BFS_LOOKAHEAD=0,  # exact depths: the expected set is exact
            FRONTIER_SITE_STRATEGY=f"{host_address(own)}=bfs:4",
        )
        crawler = await crawl(values, site)
        fetched = fetched_pages(site)
        expected = depths_within(site.spec, lambda host: 4 if host == own else 2)

    assert fetched == set(expected)
    assert {d for (host, _), d in expected.items() if host == own} >= {3, 4}
    assert crawler.stats.get_value("frontier/depth_limited") > 0


def first_depths(site: RunningSite, count: int) -> list[int]:
    """The true depths (the site's graph) of the first *count* pages the site
    served, in the order it served them."""
    depths = depths_within(site.spec, lambda host: 99)
    hosts = {site.host(index): index for index in range(site.spec.hosts)}
    paths = {
        url_of(site.spec, 0, page).split("/", 3)[-1]: page
        for page in range(site.spec.pages)
    }
    order = []
    for row in site.pages():
        page = 0 if row["path"] == "/" else paths[row["path"].lstrip("/")]
        order.append(depths[(hosts[row["host"]], page)])
    return order[:count]


@deferred_f_from_coro_f
@pytest.mark.parametrize("strategy", ["bfs", "dfs"])
async def test_a_dfs_host_is_crawled_deepest_first(settings, strategy):
    """One host, one request at a time: deepest first reaches deeper pages much
    sooner than breadth-first (the control), and fetches every page once."""
    with running_site(hosts=1, pages=60, links=2, seed=7) as site:
        values = settings(
            FRONTIER_HOST_CONCURRENCY=1,
            FRONTIER_SITE_STRATEGY=f"{host_address(0)}={strategy}",
        )
        await crawl(values, site)
        early = first_depths(site, 12)
        served = [(row["host"], row["path"]) for row in site.pages()]
        reachable = depths_within(site.spec, lambda host: 99)

    assert len(served) == len(set(served)) == len(reachable)
    if strategy == "dfs":  # down a chain at once: depth 4 by the fifth fetch
        assert max(early[:5]) >= 4, early
    else:  # a level at a time: depth 4 only after the 24 pages above it
        assert early == sorted(early), early
        assert max(early) <= 3, early


def site_counts(spec: SiteSpec, pages: set[tuple[int, int]], host: int) -> Observation:
    """What the site history must have counted for *host*: its pages fetched, the
    distinct links on them, and those to another host (another IP: another site)."""
    mine = [page for page in pages if page[0] == host]
    links = [set(links_of(spec, *page)) for page in mine]
    leaving = sum(1 for targets in links for target in targets if target[0] != host)
    return Observation(len(mine), sum(map(len, links)), leaving, 0)


def site_fields(redis: redis_py.Redis, host: int) -> Mapping[bytes, bytes]:
    return redis.hgetall(KEYS.site(host_address(host)))  # type: ignore[return-value]


@deferred_f_from_coro_f
async def test_each_host_s_history_reaches_redis_and_the_records(
    settings, redis, tmp_path
):
    database = f"sqlite:///{tmp_path}/pages.db"
    with running_site(**SITE) as site:
        values = settings(
            DEPTH_LIMIT=3,
            RECORDS_DATABASE_URL=database,
            FRONTIER_SITE_STRATEGY="*=auto",
        )
        await crawl(values, site)
        fetched = fetched_pages(site)
    records = RecordsDatabase(database).open(create=False)
    try:
        rows = SiteTable(records).read()
    finally:
        records.close()

    for host in range(SITE["hosts"]):
        fields = site_fields(redis, host)
        evidence = evidence_of(fields)
        expected = site_counts(site.spec, fetched, host)
        assert (evidence.pages, evidence.links, evidence.leaving) == (
            expected.pages,
            expected.links,
            expected.leaving,
        )
        assert sum(count for _depth, count in evidence.depths) == expected.pages
        found = classify(SiteHistory(), evidence.observation())
        strategy = f"{found.strategy} (auto: {found.why})"
        assert fields[b"strategy"].decode() == strategy
        row = rows[host_address(host)]
        assert row.observation == evidence.observation()
        assert row.strategy == strategy
        assert row.crawl.startswith("bfs@")


class LinkSpider(Spider):
    """A project's own spider: yields a request for every link of a page (no
    SITE_LINKS: the site history counts what it yields)."""

    name = "links"

    def parse(self, response: Response) -> Iterator[Request]:
        for href in response.css("a::attr(href)").getall():
            yield Request(response.urljoin(href))


@deferred_f_from_coro_f
async def test_a_project_s_own_spider_s_links_are_counted_as_it_yields_them(
    settings, redis
):
    with running_site(**SITE) as site:
        values = settings(DEPTH_LIMIT=1, FRONTIER_KEY_PREFIX="bfs")
        crawler = get_crawler(LinkSpider, values)
        await crawler.crawl_async(start_urls=[site.seeds[0]])
        fetched = fetched_pages(site)

    pages = [page for page in fetched if page[0] == 0]
    links = [links_of(site.spec, *page) for page in pages]  # repeats: yielded twice
    fields = site_fields(redis, 0)
    evidence = evidence_of(fields)
    assert (evidence.pages, evidence.links, evidence.leaving) == (
        len(pages),
        sum(map(len, links)),
        sum(1 for targets in links for target in targets if target[0] != 0),
    )
    assert fields[b"strategy"] == b"bfs (default)"


@deferred_f_from_coro_f
async def test_a_crawl_starts_from_the_history_of_the_crawls_before(
    settings, redis, tmp_path
):
    """A host that earlier crawls found deep and specialised is crawled dfs from
    its first page, before this crawl has seen enough of it to tell."""
    database = f"sqlite:///{tmp_path}/pages.db"
    deep = host_address(2)
    records = RecordsDatabase(database).open()
    try:
        SiteTable(records).create()
        SiteTable(records).save(
            "bfs@1", [SiteSave(deep, Observation(300, 9000, 9, 9), "")]
        )
    finally:
        records.close()
    with running_site(**SITE) as site:
        values = settings(
            DEPTH_LIMIT=0,
            CLOSESPIDER_PAGECOUNT=8,  # a few pages: too few to tell on its own
            RECORDS_DATABASE_URL=database,
            FRONTIER_SITE_STRATEGY="*=auto",
        )
        await crawl(values, site)

    strategy = site_fields(redis, 2)[b"strategy"].decode()
    assert strategy == "dfs (auto: 0% links leave, depth 9)"
    others = {site_fields(redis, host).get(b"strategy") for host in (0, 1, 3)}
    assert all(text is None or b"too few to tell" in text for text in others)


@deferred_f_from_coro_f
async def test_frontier_hosts_shows_each_host_s_strategy_and_why(settings, redis):
    with running_site(**SITE) as site:
        values = settings(
            DEPTH_LIMIT=2,
            FRONTIER_SITE_STRATEGY=f"{host_address(0)}=dfs:3,*=bfs",
        )
        await crawl(values, site)
    out = io.StringIO()
    opts = argparse.Namespace(sort="requests", top=10)
    hosts(redis, KEYS, opts, out)
    lines = out.getvalue().splitlines()

    assert lines[0].split()[-1] == "strategy"
    shown = {line.split()[0]: line for line in lines[1:]}
    assert shown[host_address(0)].endswith(
        f"dfs (rule {host_address(0)}, depth limit 3)"
    )
    assert shown[host_address(1)].endswith("bfs (rule *)")


def test_a_bad_site_strategy_stops_start_up_in_one_line(tmp_path):
    result = scrapy_crawl(
        tmp_path,
        "-a",
        "seeds=http://127.0.0.2:9/",
        FRONTIER_SITE_STRATEGY="docs.example.org=deep",
    )
    assert_one_line_stop(
        result,
        "Bad setting: FRONTIER_SITE_STRATEGY['docs.example.org'] must be bfs, dfs "
        "or auto",
        "'deep'",
    )
