"""robots.txt end to end: RFC 9309 rules, failures and sharing through Redis.

Every assertion about what the crawler did is read off the site's request log.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import subprocess
import time
import urllib.error
import urllib.request
from collections import Counter, deque
from typing import TYPE_CHECKING, Any

import pytest
from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

import crawler.defaults as project
from crawler import __version__
from crawler.crawlstate.keys import CrawlKeys
from crawler.frontier.holds import HoldRequest
from crawler.meta import ROBOTS_FETCH
from crawler.middlewares.timeouts import TimeoutsMiddleware
from crawler.policy.robotsfetch import MAX_BYTES, RobotsRecord, origin_of
from crawler.robots.middleware import RobotsMiddleware
from crawler.spiders.bfs import BfsSpider
from tests.integration.test_many_nodes import stat_value
from tests.integration.test_node_failures import run, scrapy_crawl
from tests.servers import ROOT, running_site, wait_for
from tests.site import links_of, page_index

if TYPE_CHECKING:
    from collections.abc import Iterable

    from tests.servers import RunningSite

pytestmark = pytest.mark.integration

KEYS = CrawlKeys("bfs")
DEPTH_LIMIT = 17
CRAWL_DELAY = 0.3
# Host index -> robots.txt of the main site (host 4 has none: 404).
ROBOTS = {
    0: "disallow:/p/1.html,/p/2.html,/p/3.html",
    1: "status:503",
    2: "hang",
    3: f"crawl-delay:{CRAWL_DELAY}",
    5: "agent:otherbot;disallow:/;agent:crawler;disallow:/p/5.html",
}
BLOCKED_HOSTS = {1, 2}
DISALLOWED = {(0, 1), (0, 2), (0, 3), (5, 5)}
# The User-Agent of our robots.txt fetches, with the project's placeholder contact.
BOT_UA = f"crawler/{__version__} (+https://example.com/crawler-contact)"


def obeying(settings: Any, **overrides: Any) -> dict[str, Any]:
    """Test settings with robots.txt obeyed and a short robots.txt timeout."""
    return settings(ROBOTSTXT_OBEY=True, ROBOTS_FETCH_TIMEOUT=1.0, **overrides)


async def crawl(values: dict[str, Any], **kwargs: Any) -> Any:
    crawler = get_crawler(BfsSpider, values)
    await crawler.crawl_async(**kwargs)
    assert crawler.stats.get_value("finish_reason") == "finished"
    return crawler


def fetched_pages(site: RunningSite) -> Counter[tuple[int, int]]:
    """(host index, page index) of every page fetch (robots.txt, sitemaps left out)."""
    hosts = {site.host(i): i for i in range(site.spec.hosts)}
    pages = Counter[tuple[int, int]]()
    for row in site.log():
        page = page_index(row["path"], site.spec.pages)
        if page is not None:
            pages[(hosts[row["host"]], page)] += 1
    return pages


def reachable(
    site: RunningSite, seeds: Iterable[tuple[int, int]], blocked: set[tuple[int, int]]
) -> set[tuple[int, int]]:
    """Pages a crawl from *seeds* fetches when *blocked* pages are never fetched, so
    their links are never seen; within DEPTH_LIMIT."""
    depths = {seed: 0 for seed in seeds if seed not in blocked}
    queue = deque(depths)
    while queue:
        page = queue.popleft()
        for target in links_of(site.spec, *page):
            if target not in depths and target not in blocked:
                depths[target] = depths[page] + 1
                if depths[target] < DEPTH_LIMIT:
                    queue.append(target)
    return set(depths)


def gaps_of(site: RunningSite, host: int) -> list[float]:
    """Seconds between two requests in a row of *host*, robots.txt included."""
    times = [row["t"] for row in site.log() if row["host"] == site.host(host)]
    return [later - earlier for earlier, later in itertools.pairwise(times)]


def plant(redis: Any, origin: str, body: str, *, ttl: float = 3600) -> None:
    """Write a fresh robots record for *origin*, as another node would have."""
    now = time.time()
    record = RobotsRecord("rules", now, now + ttl, 200, body)
    redis.set(KEYS.robots(origin), record.to_json(), ex=int(ttl))


# --- the test site --------------------------------------------------------------------


def test_a_hanging_host_serves_its_pages_but_never_its_robots_txt():
    with running_site(hosts=2, pages=3, robots={0: "hang", 1: "status:503"}) as site:
        hanging, failing = (url + "robots.txt" for url in site.seeds)
        with pytest.raises(TimeoutError):
            urllib.request.urlopen(hanging, timeout=0.5)  # noqa: S310 (our own site)
        with urllib.request.urlopen(site.seeds[0], timeout=5) as page:  # noqa: S310
            assert page.status == 200
        with pytest.raises(urllib.error.HTTPError, match="503"):
            urllib.request.urlopen(failing, timeout=5)  # noqa: S310
        assert wait_for(lambda: len(site.log()) == 3, timeout=5)  # logged after
        statuses = [(row["path"], row["status"]) for row in site.log()]
    assert statuses == [("/robots.txt", None), ("/", 200), ("/robots.txt", 503)]


# --- one node -------------------------------------------------------------------------


@deferred_f_from_coro_f
async def test_rules_failures_and_crawl_delay_are_obeyed(settings):
    with running_site(hosts=6, pages=12, links=3, cross=0.3, robots=ROBOTS) as site:
        crawler = await crawl(obeying(settings), seeds=",".join(site.seeds))
        pages = fetched_pages(site)
        blocked = DISALLOWED | {(h, p) for h in BLOCKED_HOSTS for p in range(12)}
        expected = reachable(site, [(h, 0) for h in range(6)], blocked)
        assert pages == Counter(expected)  # each page once, nothing disallowed
        assert not set(pages) & blocked
        assert site.robots_fetches() == {site.host(h): 1 for h in range(6)}
        for host in BLOCKED_HOSTS:  # nothing but robots.txt from failing hosts
            paths = [r["path"] for r in site.log() if r["host"] == site.host(host)]
            assert paths == ["/robots.txt"]
        assert len(gaps_of(site, 3)) >= 5
        assert min(gaps_of(site, 3)) >= CRAWL_DELAY  # robots.txt -> page 0 too
        robots_agents = {r["ua"] for r in site.log() if r["path"] == "/robots.txt"}
        assert robots_agents == {BOT_UA}  # the bot's own, never a browser's
        for row in site.pages():
            assert f"compatible; crawler/{__version__}; +" in row["ua"], row
    stats = crawler.stats.get_stats()
    assert stats["robots/fetched"] == 6
    assert stats["robots/status_count/200"] == 3
    assert stats["robots/status_count/404"] == 1
    assert stats["robots/status_count/503"] == 1
    assert sum(v for k, v in stats.items() if "robots/exception_count/" in k) == 1
    # Links to a host whose rules are known are dropped before they are queued; the
    # rest (found before their host's robots.txt came) when they are downloaded.
    assert stats["robots/disallowed_links"] >= 1
    assert stats["robots/unreachable"] >= 2  # the roots of the failing hosts
    assert stats["robots/crawl_delay_hosts"] == 1


# Host index -> a robots.txt on which Protego 0.7 alone departs from Google's
# reference parser; each must keep us off /p/1.html (host 4: off nothing).
GROUPED = {
    0: "User-agent: crawler\nCrawl-delay: 0.01\nUser-agent: *\nDisallow: /p/1.html\n",
    1: "User-Agent: CRAWLER EXTRA\nDisallow: /p/1.html\n",
    2: "User-agent: crawler/1.0\nDisallow: /p/1.html\n",
    3: "User-agent: Crawler\nAllow: /\nDisallow: /p/1.html\n\nUser-agent: *\n"
    "Disallow: /\n",
    4: "User-agent: crawl\nDisallow: /\nUser-agent: *\nDisallow: /p/2.html\n",
}


@deferred_f_from_coro_f
async def test_groups_are_read_as_the_reference_parser_reads_them(settings, tmp_path):
    robots = {}
    for host, text in GROUPED.items():
        path = tmp_path / f"robots-{host}.txt"
        path.write_text(text)
        robots[host] = f"file:{path}"
    with running_site(hosts=5, pages=6, links=3, cross=0.0, robots=robots) as site:
        await crawl(obeying(settings), seeds=",".join(site.seeds))
        pages = set(fetched_pages(site))
    blocked = {(h, 1) for h in range(4)} | {(4, 2)}  # "crawl" is not "crawler"
    assert pages == reachable(site, [(h, 0) for h in range(5)], blocked)
    assert not pages & blocked
    assert (4, 1) in pages


@deferred_f_from_coro_f
async def test_forbidden_links_of_a_known_host_cost_it_no_delay(settings):
    """A host that forbids most of its pages: once its robots.txt is known, links
    to them are not queued, so its politeness delay is spent on allowed pages only."""
    delay, pages = 0.2, 30
    forbidden = ",".join(f"/p/{j}.html" for j in range(2, pages))
    with running_site(
        hosts=1, pages=pages, links=6, robots={0: f"disallow:{forbidden}"}
    ) as site:
        crawler = await crawl(
            obeying(settings, POLITENESS_DAY_DELAY=delay, POLITENESS_NIGHT_DELAY=delay),
            seeds=site.seeds[0],
        )
        fetched = {page for _, page in fetched_pages(site)}
    stats = crawler.stats.get_stats()
    assert fetched == {0, 1}
    assert stats["robots/disallowed_links"] >= 3  # the two pages link to forbidden ones
    assert "robots/disallowed" not in stats  # none was handed out to be dropped later
    assert stats["frontier/dequeued"] == 2  # the frontier only handed out pages 0 and 1


@deferred_f_from_coro_f
async def test_without_robots_the_same_checks_fail(settings):
    """Negative control: with ROBOTSTXT_OBEY off, the checks above can fail."""
    with running_site(hosts=6, pages=12, links=3, cross=0.3, robots=ROBOTS) as site:
        crawler = await crawl(settings(), seeds=",".join(site.seeds))
        pages = fetched_pages(site)
        assert set(pages) & DISALLOWED
        assert {host for host, _ in pages} >= BLOCKED_HOSTS
        assert site.robots_fetches() == {}
        assert min(gaps_of(site, 3)) < CRAWL_DELAY
    assert crawler.stats.get_value("robots/fetched") is None


@deferred_f_from_coro_f
async def test_redirects_are_followed_five_times_and_no_more(settings):
    robots = {0: "redirect:5;disallow:/p/1.html", 1: "redirect:6;disallow:/"}
    with running_site(hosts=2, pages=6, links=2, robots=robots) as site:
        crawler = await crawl(obeying(settings), seeds=",".join(site.seeds))
        pages = set(fetched_pages(site))
        hops = Counter(r["host"] for r in site.log() if r["path"].startswith("/robots"))
    assert (0, 1) not in pages  # the file five redirects away is obeyed
    assert {(1, p) for p in range(6)} <= pages  # six: unavailable, nothing disallowed
    assert hops == {site.host(0): 6, site.host(1): 6}
    assert crawler.stats.get_value("robots/fetched") == 2


@deferred_f_from_coro_f
async def test_a_hostile_robots_file_is_parsed_up_to_500_kib(settings, tmp_path):
    rng = random.Random(9309)
    cut = tmp_path / "long.txt"
    head = b"User-agent: *\nDisallow: /p/1.html\n"
    junk = b"Disallow: /p/2" + b"\xff\xfe\x00garbage" * (MAX_BYTES // 8)
    cut.write_bytes(head + junk + b"\nDisallow: /\n")  # past the limit: ignored
    garbage = tmp_path / "garbage.txt"
    garbage.write_bytes(rng.randbytes(200_000) + b"\n" * 3 + rng.randbytes(5000))
    robots = {0: f"file:{cut}", 1: f"file:{garbage}"}
    with running_site(hosts=2, pages=6, links=2, robots=robots) as site:
        crawler = await crawl(obeying(settings), seeds=",".join(site.seeds))
        pages = set(fetched_pages(site))
    assert pages == {(h, p) for h in range(2) for p in range(6)} - {(0, 1)}
    assert crawler.stats.get_value("robots/truncated") == 1


@deferred_f_from_coro_f
async def test_sitemaps_listed_in_robots_txt_are_followed(settings, tmp_path):
    not_a_sitemap = tmp_path / "robots.txt"
    not_a_sitemap.write_text("User-agent: *\nDisallow:\nSitemap: /p/1.html\n")
    robots = {0: "sitemap", 1: f"file:{not_a_sitemap}"}
    with running_site(hosts=2, pages=10, links=0, robots=robots) as site:
        values = obeying(settings, DEPTH_LIMIT=2)
        crawler = await crawl(values, seeds=site.seeds[0], sitemaps="1")
        paths = Counter(r["path"] for r in site.log() if r["host"] == site.host(0))
        pages = fetched_pages(site)
    assert paths["/sitemap.xml"] == paths["/sitemap-pages.xml"] == 1
    assert {(0, p) for p in range(10)} <= set(pages)  # every page the sitemap lists
    assert set(pages.values()) == {1}
    assert crawler.stats.get_value("bfs/bad_sitemaps") == 1  # host 1's: an HTML page


@deferred_f_from_coro_f
async def test_without_the_sitemaps_argument_sitemaps_are_not_followed(settings):
    """Negative control: links alone reach three pages of host 0 at depth 2."""
    with running_site(hosts=2, pages=10, links=0, robots={0: "sitemap"}) as site:
        await crawl(obeying(settings, DEPTH_LIMIT=2), seeds=site.seeds[0])
        paths = {r["path"] for r in site.log() if r["host"] == site.host(0)}
    assert paths == {"/robots.txt", "/", "/p/1.html", "/p/2.html"}


# --- the record in Redis --------------------------------------------------------------


@deferred_f_from_coro_f
async def test_a_record_in_redis_is_obeyed_without_a_fetch(settings, redis):
    with running_site(hosts=1, pages=6, links=2) as site:
        body = f"User-agent: *\nDisallow: /p/1.html\nCrawl-delay: {CRAWL_DELAY}\n"
        plant(redis, origin_of(site.seeds[0]), body)
        crawler = await crawl(obeying(settings), seeds=site.seeds[0])
        pages = set(fetched_pages(site))
        gaps = gaps_of(site, 0)
        fetches = site.robots_fetches()
    assert fetches == {}
    assert pages == {(0, p) for p in range(6)} - {(0, 1)}
    assert min(gaps) >= CRAWL_DELAY  # a node that only read the record keeps it too
    assert crawler.stats.get_value("robots/cache_hits") == 1
    assert crawler.stats.get_value("robots/crawl_delay_hosts") == 1


@deferred_f_from_coro_f
async def test_a_second_crawl_reuses_the_record_of_the_first(settings):
    with running_site(hosts=1, pages=20, links=2, robots={0: "disallow:/nope"}) as site:
        await crawl(obeying(settings, DEPTH_LIMIT=1), seeds=site.seeds[0])
        first = set(fetched_pages(site))
        page = next(p for p in range(20) if (0, p) not in first)
        url = f"{site.seeds[0]}p/{page}.html"
        second = await crawl(obeying(settings, DEPTH_LIMIT=1), seeds=url)
        assert (0, page) in fetched_pages(site)
        assert site.robots_fetches() == {site.host(0): 1}
    assert second.stats.get_value("robots/cache_hits") == 1
    assert second.stats.get_value("robots/fetched") is None


@pytest.mark.parametrize(
    "garbage",
    [
        b"\x80\x03cos\nsystem\n.",
        b'{"v": 1}',
        b"[" * 100_000,
        b'{"v":1,"state":"rules"}',
    ],
    ids=["pickle", "missing-fields", "deep", "truncated"],
)
@deferred_f_from_coro_f
async def test_a_malformed_record_is_counted_and_refetched(settings, redis, garbage):
    robots = {0: "disallow:/p/1.html"}
    with running_site(hosts=1, pages=4, links=2, robots=robots) as site:
        key = KEYS.robots(origin_of(site.seeds[0]))
        redis.set(key, garbage)
        crawler = await crawl(obeying(settings), seeds=site.seeds[0])
        pages = set(fetched_pages(site))
        assert site.robots_fetches() == {site.host(0): 1}
    assert crawler.stats.get_value("robots/bad_records") == 1
    assert (0, 1) not in pages
    assert RobotsRecord.from_json(redis.get(key)).state == "rules"  # replaced


@deferred_f_from_coro_f
async def test_a_node_waits_for_the_record_of_the_node_holding_the_lock(
    settings, redis
):
    with running_site(hosts=1, pages=4, links=2) as site:
        origin = origin_of(site.seeds[0])
        redis.set(KEYS.robots_lock(origin), "another-node", px=20_000)
        crawler = get_crawler(BfsSpider, obeying(settings))
        done = asyncio.ensure_future(crawler.crawl_async(seeds=site.seeds[0]))
        deadline = time.monotonic() + 20
        while not crawler.stats.get_value("robots/lock_waits"):
            assert time.monotonic() < deadline, "the crawl never waited for the lock"
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        assert not done.done()
        plant(redis, origin, "User-agent: crawler\nDisallow: /p/1.html\n")
        redis.delete(KEYS.robots_lock(origin))
        await done
        pages = set(fetched_pages(site))
        assert site.robots_fetches() == {}
    assert pages == {(0, 0), (0, 2), (0, 3)}
    assert crawler.stats.get_value("robots/cache_hits") == 1


@deferred_f_from_coro_f
async def test_a_lock_left_by_a_dead_node_expires_and_the_file_is_fetched_once(
    settings, redis
):
    with running_site(
        hosts=1, pages=4, links=2, robots={0: "disallow:/p/2.html"}
    ) as site:
        locked_at = time.time()
        redis.set(KEYS.robots_lock(origin_of(site.seeds[0])), "dead-node", px=1500)
        crawler = await crawl(obeying(settings), seeds=site.seeds[0])
        robots = [r for r in site.log() if r["path"] == "/robots.txt"]
        pages = set(fetched_pages(site))
    assert len(robots) == 1
    assert robots[0]["t"] >= locked_at + 1.4
    assert pages == {(0, 0), (0, 1), (0, 3)}
    assert crawler.stats.get_value("robots/lock_waits") == 1


# --- the middleware itself -----------------------------------------------------------


def built(values: dict[str, Any], kind: type[Any]) -> Any:
    crawler = get_crawler(BfsSpider, values)
    crawler.spider = crawler._create_spider()
    middleware = kind.from_crawler(crawler)
    assert isinstance(middleware, kind)
    return middleware


async def closed(middleware: Any) -> None:
    """What the spider's end does: the middleware closes its Redis client."""
    await middleware._crawler.signals.send_catch_log_async(signals.spider_closed)


@deferred_f_from_coro_f
async def test_a_users_dont_obey_robotstxt_request_is_not_checked(settings, redis):
    """Scrapy's meaning of the key is kept for the user's requests."""
    values = obeying(settings)
    plant(redis, "http://a.example:80", "User-agent: *\nDisallow: /\n")
    middleware = built(values, RobotsMiddleware)
    mine = Request("http://a.example/page", meta={"dont_obey_robotstxt": True})
    try:
        assert await middleware.process_request(mine) is None
        with pytest.raises(IgnoreRequest, match=r"Forbidden by robots\.txt"):
            await middleware.process_request(Request("http://a.example/page"))
    finally:
        await closed(middleware)


def test_a_users_dont_obey_robotstxt_request_keeps_its_timeout_tier(settings):
    """Only our own robots.txt fetches (crawler.meta.ROBOTS_FETCH) skip the tiers."""
    middleware = built(settings(), TimeoutsMiddleware)
    mine = Request("http://a.example/page", meta={"dont_obey_robotstxt": True})
    middleware.process_request(mine)
    assert mine.meta["tier"] == 0
    assert mine.meta["download_timeout"] == project.TIMEOUTS_TIERS[0]
    ours = Request("http://a.example/robots.txt", meta={ROBOTS_FETCH: True})
    middleware.process_request(ours)
    assert "tier" not in ours.meta
    assert "download_timeout" not in ours.meta


@deferred_f_from_coro_f
async def test_an_unreachable_robots_txt_holds_requests_until_the_next_attempt(
    settings, redis, caplog
):
    now = time.time()
    record = RobotsRecord("deny", now, now + 600, 503, None, now)
    redis.set(KEYS.robots("http://a.example:80"), record.to_json(), ex=3600)
    middleware = built(obeying(settings), RobotsMiddleware)
    try:
        for page in range(3):
            with pytest.raises(HoldRequest) as held:
                await middleware.process_request(Request(f"http://a.example/{page}"))
            assert held.value.until == record.expires_at
            assert held.value.fate == "robots_unreachable"
    finally:
        await closed(middleware)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    held_lines = [w for w in warnings if "robots.txt of http://a.example:80" in w]
    assert len(held_lines) == 1  # once, then counted
    assert (
        "unreachable (HTTP 503): its URLs are held until the next attempt"
        in (held_lines[0])
    )
    assert "dropped" not in held_lines[0]
    assert middleware._stats.get_value("robots/unreachable") == 3


# --- several nodes --------------------------------------------------------------------


def start_nodes(*commands: list[str]) -> list[subprocess.Popen[str]]:
    return [
        subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for command in commands
    ]


def finish(nodes: list[subprocess.Popen[str]]) -> list[str]:
    outputs = [node.communicate(timeout=120)[1] for node in nodes]
    assert [node.returncode for node in nodes] == [0] * len(nodes), outputs[0][-3000:]
    return outputs


def test_two_nodes_fetch_each_robots_txt_once_and_share_its_crawl_delay(redis_url):
    robots = {0: "disallow:/p/1.html,/p/2.html", 1: "status:503", 2: "crawl-delay:0.2"}
    with running_site(hosts=4, pages=12, links=3, latency=0.05, robots=robots) as site:
        # No later tries: host 1's URLs fail for good at once instead of waiting for
        # its next robots.txt attempt (test_retry_later.py covers that).
        settings = [
            f"REDIS_URL={redis_url}",
            "ROBOTSTXT_OBEY=True",
            "RETRY_LATER_DELAYS=",
        ]
        command = scrapy_crawl(*settings, seeds=",".join(site.seeds))
        outputs = finish(start_nodes(command, command))
        pages = fetched_pages(site)
        gaps = gaps_of(site, 2)
        assert site.robots_fetches() == {site.host(h): 1 for h in range(4)}
    assert not set(pages) & {(0, 1), (0, 2)}
    assert not [page for page in pages if page[0] == 1]
    assert set(pages.values()) == {1}
    assert min(gaps) >= 0.2  # whichever node fetched, from its robots.txt on
    assert sum(stat_value(out, "robots/fetched") for out in outputs) == 4


def test_two_nodes_racing_for_one_robots_txt_fetch_it_once(redis_url):
    """Up to three requests of a host in flight at once, on two nodes of two slots
    each: the nodes usually meet at the lock (robots/lock_waits), yet one fetch."""
    robots = dict.fromkeys(range(4), "disallow:/p/5.html")
    with running_site(hosts=4, pages=8, links=3, latency=0.2, robots=robots) as site:
        paths = ("", "p/3.html", "p/6.html")
        seeds = ",".join(root + path for root in site.seeds for path in paths)
        settings = [
            f"REDIS_URL={redis_url}",
            "ROBOTSTXT_OBEY=True",
            "FRONTIER_HOST_CONCURRENCY=3",
            "CONCURRENT_REQUESTS=2",
        ]
        command = scrapy_crawl(*settings, seeds=seeds)
        outputs = finish(start_nodes(command, command))
        assert site.robots_fetches() == {site.host(h): 1 for h in range(4)}
        assert not [page for page in fetched_pages(site) if page[1] == 5]
    assert sum(stat_value(out, "robots/fetched") for out in outputs) == 4


def test_a_bad_robots_setting_stops_start_up_with_one_line(redis_url):
    result = run(scrapy_crawl(f"REDIS_URL={redis_url}", "ROBOTS_CACHE_TTL=-5"))
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1, result.stderr[-2000:]
    assert "ROBOTS_CACHE_TTL must be > 0" in errors[0]
    assert "Traceback" not in result.stderr
