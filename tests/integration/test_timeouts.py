"""Tiered timeouts end to end: hosts that answer late, every other time or never.

The site's request log is the witness. Every request is logged with the time it
arrived and its status, or ``None`` when the crawler gave up before an answer (a
timeout), so each attempt of each page, and how long it was given, can be read off
it. The hosts' records in Redis and the crawl's stats are checked against it.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.crawlstate.keys import CrawlKeys
from crawler.frontier import admission
from crawler.frontier.frontierconfig import FrontierConfig
from crawler.frontier.store import store
from crawler.frontier.store.store import FrontierStore
from crawler.policy.tiers import HostHealth
from crawler.spiders.bfs import BfsSpider
from tests.integration.test_traffic import frontier, redis_url, slow_column
from tests.servers import running_site, wait_for
from tests.site import Behaviour, parse_behaviour

if TYPE_CHECKING:
    from tests.servers import RunningSite

pytestmark = pytest.mark.integration

KEYS = CrawlKeys("bfs")
TIERS = [0.5, 2, 4]
# Slack on gaps the site measures: the crawler starts a timeout's clock a moment
# before the request reaches the site.
SLACK = 0.05
# Longest any crawl here may take before its test fails (each takes seconds).
CRAWL_LIMIT = 60.0
PAGES = ["/", "/p/1.html", "/p/2.html", "/p/3.html"]


def tiered(settings: Any, **overrides: Any) -> dict[str, Any]:
    """Test settings with tiers of 0.5, 2 and 4 s; a host is slow after two
    escalations within a minute and stays slow; one give-up pauses it for a minute.
    The gaps measured here are the tiers': the delay a timeout teaches (the back-off
    that learns) is off, and tested in test_backoff.py."""
    values = {
        "POLITENESS_BACKOFF": False,
        "TIMEOUTS_TIERS": TIERS,
        "TIMEOUTS_SLOW_AFTER": 2,
        "TIMEOUTS_SLOW_WINDOW": 60,
        "TIMEOUTS_SLOW_RECOVER_AFTER": 100,
        "TIMEOUTS_HOST_DEAD_AFTER": 1,
        "TIMEOUTS_HOST_PAUSE": 60,
    }
    return settings(**{**values, **overrides})


async def crawl(values: dict[str, Any], seeds: list[str], **spider_args: str) -> Any:
    """Crawl from *seeds* (and *spider_args*, such as ``scope``) until the frontier is
    drained (bounded); the crawler."""
    crawler = get_crawler(BfsSpider, values)
    done = asyncio.ensure_future(
        crawler.crawl_async(seeds=",".join(seeds), **spider_args)
    )
    try:
        await asyncio.wait_for(asyncio.shield(done), CRAWL_LIMIT)
    except TimeoutError:
        await crawler.stop_async()
        await done
        pytest.fail(f"the crawl took longer than {CRAWL_LIMIT} s")
    assert crawler.stats.get_value("finish_reason") == "finished"
    return crawler


def requests_of(site: RunningSite, index: int) -> list[tuple[str, int | None]]:
    """(path, status) of each request to host *index*, in arrival order."""
    rows = sorted(
        (row for row in site.log() if row["host"] == site.host(index)),
        key=lambda row: row["t"],
    )
    return [(row["path"], row["status"]) for row in rows]


def arrivals(site: RunningSite, index: int, path: str | None = None) -> list[float]:
    """When each request to host *index* (for *path*, if given) arrived."""
    return sorted(
        row["t"]
        for row in site.log()
        if row["host"] == site.host(index) and path in (None, row["path"])
    )


def gaps(times: list[float]) -> list[float]:
    return [later - earlier for earlier, later in itertools.pairwise(times)]


def health_of(redis: Any, index: int) -> HostHealth | None:
    """Host *index*'s timeout record in Redis, if it has one."""
    raw = redis.hget(KEYS.health, f"127.0.0.{2 + index}")
    return None if raw is None else HostHealth.from_json(raw)


def totals(redis: Any, values: dict[str, Any]) -> tuple[int, int]:
    """(queued, leased) requests left in the crawl's frontier."""
    config = FrontierConfig.from_settings(Settings(values), "bfs")
    return FrontierStore.on(redis, config).shards.totals()


def timeouts_stats(crawler: Any) -> dict[str, int]:
    stats = crawler.stats.get_stats().items()
    return {key: value for key, value in stats if key.startswith("timeouts/")}


# --- one crawl of a site with a late, a flaky and a dead host -------------------------

NORMAL, LATE, FLAKY, DEAD = range(4)


@deferred_f_from_coro_f
async def test_late_flaky_and_dead_hosts_lose_nothing(settings, redis):
    """Host 1 answers after 1.5 s, host 2 every other time, host 3 never; each
    host's pages form a chain (page j links to page j + 1), one page a depth."""
    behave = {LATE: "delay:1.5", FLAKY: "flaky", DEAD: "dead"}
    with running_site(hosts=4, pages=4, links=0, cross=0.0, behave=behave) as site:
        values = tiered(settings)
        crawler = await crawl(values, site.seeds)
        table = frontier("hosts", "-s", f"REDIS_URL={redis_url(redis)}")

        assert requests_of(site, NORMAL) == [(path, 200) for path in PAGES]
        # The late host's first two pages are given up on at tier 0's 0.5 s (the
        # answer would have come at 1.5 s) and fetched at tier 1. Those two
        # escalations mark it slow: its later pages start at tier 1, fetched once.
        assert requests_of(site, LATE) == [
            ("/", None),
            ("/", 200),
            ("/p/1.html", None),
            ("/p/1.html", 200),
            ("/p/2.html", 200),
            ("/p/3.html", 200),
        ]
        for path in PAGES[:2]:
            [gap] = gaps(arrivals(site, LATE, path))
            assert TIERS[0] - SLACK <= gap < 1.5
        # The flaky host leaves every other request unanswered: its first two pages
        # escalate from tier 0 (0.5 s), which marks it slow; the later ones start
        # at tier 1 (2 s) and are answered at tier 2.
        assert requests_of(site, FLAKY) == [(p, s) for p in PAGES for s in (None, 200)]
        retries = [gaps(arrivals(site, FLAKY, path))[0] for path in PAGES]
        assert all(TIERS[0] - SLACK <= gap < TIERS[1] for gap in retries[:2])
        assert all(gap >= TIERS[1] - SLACK for gap in retries[2:])
        # The dead host's root is tried once per tier, then given up and paused;
        # nothing else of it is ever seen, so nothing else is asked of it.
        assert requests_of(site, DEAD) == [("/", None)] * len(TIERS)
        tries = gaps(arrivals(site, DEAD))
        assert all(
            tier - SLACK <= gap < tier + 0.5
            for gap, tier in zip(tries, TIERS[:2], strict=True)
        ), f"gaps {tries} against tiers {TIERS[:2]}"

    assert timeouts_stats(crawler) == {
        "timeouts/tier_0": 5,  # late 2, flaky 2, dead 1
        "timeouts/tier_1": 3,  # flaky 2, dead 1
        "timeouts/tier_2": 1,  # dead
        "timeouts/escalated": 8,
        "timeouts/gave_up": 1,
        "timeouts/slow_hosts": 3,  # late, flaky, and dead (two escalations)
        "timeouts/paused_hosts": 1,
    }
    assert health_of(redis, NORMAL) is None
    for index in (LATE, FLAKY):
        health = health_of(redis, index)
        assert health is not None
        assert health.slow
        assert health.paused_until == 0
    dead = health_of(redis, DEAD)
    assert dead is not None
    assert dead.slow
    assert time.time() < dead.paused_until < time.time() + 60  # a minute from give-up
    # Nothing lost: 12 pages answered, the dead root given up (and counted), and
    # every lease released (9 timeouts replaced or dropped, 12 answers).
    assert crawler.stats.get_value("response_received_count") == 12
    assert crawler.stats.get_value("frontier/acked") == 21
    assert totals(redis, values) == (0, 0)
    # `scrapy frontier hosts` shows the hosts' records.
    assert table.returncode == 0, table.stderr
    shown = slow_column(table.stdout)
    assert shown["127.0.0.2"] == ""
    assert shown["127.0.0.3"] == shown["127.0.0.4"] == "slow"
    assert shown["127.0.0.5"].startswith("slow, paused until ")


# --- order: tier 0 of a depth before the retries of that depth ------------------------


async def push_a_seed_while_a_retry_waits(
    site: RunningSite, redis: Any, values: dict[str, Any]
) -> Any:
    """Crawl /p/1 and /p/2 of a host answering after 0.8 s with tiers [0.2, 2]; once
    both have timed out at tier 0 (their retries queued at tier 1) and while the
    first retry is being fetched, push / as a new seed (tier 0, depth 0)."""
    crawler = get_crawler(BfsSpider, values)
    first, second = (site.seeds[0] + path[1:] for path in PAGES[1:3])
    done = asyncio.ensure_future(crawler.crawl_async(seeds=f"{first},{second}"))
    try:
        deadline = time.monotonic() + 10
        while len(site.log()) < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)  # both first attempts abandoned
        redis.rpush(KEYS.seeds, site.seeds[0])
        while redis.llen(KEYS.seeds) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)  # taken into the frontier
        # The seed went in while the first retry was in flight (or the check below
        # could not tell tier order from FIFO order).
        assert requests_of(site, 0) == [("/p/1.html", None), ("/p/2.html", None)]
        await asyncio.wait_for(asyncio.shield(done), CRAWL_LIMIT)
    finally:
        if not done.done():
            await crawler.stop_async()
            await done
    assert crawler.stats.get_value("finish_reason") == "finished"
    return crawler


def order_settings(settings: Any) -> dict[str, Any]:
    """Tiers of 0.2 and 2 s; the back-off off, as in ``tiered``."""
    return settings(
        POLITENESS_BACKOFF=False,
        TIMEOUTS_TIERS=[0.2, 2],
        TIMEOUTS_SLOW_AFTER=50,
        FRONTIER_MAINTENANCE_INTERVAL=0.05,
    )


@deferred_f_from_coro_f
async def test_a_new_tier_0_request_goes_before_waiting_retries_of_its_depth(
    settings, redis
):
    """No request of a lower tier is handed out while one of a higher tier and the
    same depth is ready: the seed pushed last (tier 0) goes before the retry of
    /p/2 (tier 1) that was queued before it."""
    with running_site(hosts=1, pages=3, links=0, behave={0: "delay:0.8"}) as site:
        crawler = await push_a_seed_while_a_retry_waits(
            site, redis, order_settings(settings)
        )
        assert requests_of(site, 0) == [
            ("/p/1.html", None),  # tier 0, depth 0
            ("/p/2.html", None),  # tier 0, depth 0
            ("/p/1.html", 200),  # tier 1: the only ready request when it went
            ("/", None),  # tier 0, queued after /p/2's retry, handed out before it
            ("/p/2.html", 200),  # tier 1
            ("/", 200),  # tier 1
        ]
    assert crawler.stats.get_value("timeouts/escalated") == 3


@deferred_f_from_coro_f
async def test_without_tiers_in_the_queue_order_retries_go_first(
    settings, redis, monkeypatch
):
    """Negative control: queued by depth alone (every tier and priority as 0), FIFO
    hands out the waiting retry of /p/2 before the newer tier-0 request, and the
    order checked above breaks."""
    level_of, queue_class = admission.level_of, store.queue_class
    monkeypatch.setattr(admission, "level_of", lambda depth, tier=0: level_of(depth))
    # ...and the retry's lower priority ignored too, as it would rank it last.
    monkeypatch.setattr(store, "queue_class", lambda level, _: queue_class(level, 0))
    with running_site(hosts=1, pages=3, links=0, behave={0: "delay:0.8"}) as site:
        await push_a_seed_while_a_retry_waits(site, redis, order_settings(settings))
        assert requests_of(site, 0)[3:5] == [("/p/2.html", 200), ("/", None)]


# --- a dead host's pause --------------------------------------------------------------


async def crawl_a_dead_host(settings: Any, **overrides: Any) -> tuple[Any, list[float]]:
    """Crawl / and /p/1 of a host that never answers, with tiers [0.2, 0.4, 0.6];
    the crawler, and the arrival times of the host's requests."""
    with running_site(hosts=1, pages=2, links=0, behave={0: "dead"}) as site:
        values = settings(
            POLITENESS_BACKOFF=False,  # the gaps measured are the tiers' and pause's
            TIMEOUTS_TIERS=[0.2, 0.4, 0.6],
            TIMEOUTS_SLOW_AFTER=50,
            **overrides,
        )
        seeds = [site.seeds[0], site.seeds[0] + "p/1.html"]
        crawler = await crawl(values, seeds)
        # Tier 0 of both, tier 1 of both, then tier 2 of both: each given up.
        assert requests_of(site, 0) == [(path, None) for path in PAGES[:2]] * 3
        return crawler, arrivals(site, 0)


@deferred_f_from_coro_f
async def test_a_dead_host_is_paused_and_its_other_requests_wait(settings, redis):
    pause = 1.5
    crawler, times = await crawl_a_dead_host(
        settings, TIMEOUTS_HOST_DEAD_AFTER=1, TIMEOUTS_HOST_PAUSE=pause
    )
    # / was given up 0.6 s after its last try; /p/1 waited out the pause.
    assert times[5] - times[4] >= 0.6 + pause - SLACK
    assert all(gap < 0.6 + pause for gap in gaps(times)[:4])
    assert crawler.stats.get_value("timeouts/gave_up") == 2
    assert crawler.stats.get_value("timeouts/paused_hosts") == 2
    health = health_of(redis, 0)
    assert health is not None
    assert health.paused_until >= times[5] + 0.6 + pause - SLACK
    assert crawler.stats.get_value("frontier/acked") == 6


@deferred_f_from_coro_f
async def test_a_host_not_yet_dead_is_not_paused(settings, redis):
    """Negative control: with 3 give-ups needed, /p/1's last try follows at once."""
    crawler, times = await crawl_a_dead_host(settings, TIMEOUTS_HOST_DEAD_AFTER=3)
    assert times[5] - times[4] < 0.6 + 1.5
    assert crawler.stats.get_value("timeouts/gave_up") == 2
    assert crawler.stats.get_value("timeouts/paused_hosts") is None


# --- where a host starts --------------------------------------------------------------


@deferred_f_from_coro_f
async def test_a_host_marked_slow_elsewhere_starts_on_tier_1_until_it_recovers(
    settings, redis
):
    """A record another node wrote marks the host slow: its pages start at tier 1
    and are fetched once; after 2 answers it is normal again and starts at tier 0."""
    redis.hset(KEYS.health, "127.0.0.2", HostHealth(slow=True).to_json())
    with running_site(hosts=1, pages=3, links=0, behave={0: "delay:0.8"}) as site:
        values = tiered(settings, TIMEOUTS_SLOW_RECOVER_AFTER=2, TIMEOUTS_SLOW_AFTER=50)
        crawler = await crawl(values, site.seeds)
        assert requests_of(site, 0) == [
            ("/", 200),
            ("/p/1.html", 200),
            ("/p/2.html", None),
            ("/p/2.html", 200),
        ]
    assert crawler.stats.get_value("timeouts/recovered") == 1
    assert crawler.stats.get_value("timeouts/tier_0") == 1
    health = health_of(redis, 0)
    assert health is not None
    assert not health.slow
    assert len(health.escalations) == 1


@deferred_f_from_coro_f
async def test_far_hosts_start_on_tier_1(settings, redis):
    with running_site(
        hosts=2, pages=2, links=0, behave={0: "delay:0.8", 1: "delay:0.8"}
    ) as site:
        values = tiered(settings, TIMEOUTS_FAR_HOSTS=["127.0.0.3"])
        crawler = await crawl(values, site.seeds)
        assert requests_of(site, 0) == [(p, s) for p in PAGES[:2] for s in (None, 200)]
        assert requests_of(site, 1) == [(path, 200) for path in PAGES[:2]]
    assert crawler.stats.get_value("timeouts/tier_0") == 2
    assert health_of(redis, 1) is None


@deferred_f_from_coro_f
async def test_with_one_loose_tier_nothing_escalates(settings, redis):
    """Negative control for the late host: a 5 s tier fetches each page once."""
    with running_site(hosts=1, pages=2, links=0, behave={0: "delay:1.5"}) as site:
        crawler = await crawl(tiered(settings, TIMEOUTS_TIERS=[5]), site.seeds)
        assert requests_of(site, 0) == [(path, 200) for path in PAGES[:2]]
    assert timeouts_stats(crawler) == {}
    assert health_of(redis, 0) is None


# --- Retry-After ----------------------------------------------------------------------


@pytest.mark.parametrize("seconds", [1, 0])
@deferred_f_from_coro_f
async def test_retry_after_holds_the_host_back_and_the_page_is_retried(
    settings, redis, seconds
):
    """Each page first answers 503 with Retry-After: the retry goes through the
    frontier and waits that long (with 0, the negative control, it does not)."""
    behave = {0: f"retry-after:{seconds}"}
    with running_site(hosts=2, pages=2, links=0, behave=behave) as site:
        crawler = await crawl(tiered(settings), site.seeds)
        assert requests_of(site, 0) == [(p, s) for p in PAGES[:2] for s in (503, 200)]
        assert requests_of(site, 1) == [(path, 200) for path in PAGES[:2]]
        retried = [gaps(arrivals(site, 0, path))[0] for path in PAGES[:2]]
    if seconds:
        assert min(retried) >= seconds - SLACK
    else:
        assert max(retried) < 0.5
    assert crawler.stats.get_value("timeouts/retry_after") == 2
    assert crawler.stats.get_value("retry/count") == 2
    assert totals(redis, tiered(settings)) == (0, 0)


# --- the test site itself -------------------------------------------------------------


def fetch(url: str, timeout: float) -> tuple[int | str, str | None]:
    """(status or "timeout", Retry-After) of one GET."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as page:  # noqa: S310 (ours)
            return page.status, page.headers.get("Retry-After")
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Retry-After")
    except TimeoutError:
        return "timeout", None


def test_the_site_answers_late_every_other_time_never_or_retry_later():
    behave = {0: "delay:0.4", 1: "flaky", 2: "dead", 3: "retry-after:7"}
    with running_site(
        hosts=4, pages=2, behave=behave, robots={2: "status:200"}
    ) as site:
        late, flaky, dead, busy = site.seeds
        assert fetch(late, 0.2) == ("timeout", None)
        started = time.monotonic()
        assert fetch(late, 5) == (200, None)
        assert time.monotonic() - started >= 0.4
        assert [fetch(flaky, 0.3)[0] for _ in range(3)] == ["timeout", 200, "timeout"]
        assert fetch(dead, 0.3) == ("timeout", None)
        assert fetch(dead + "robots.txt", 5) == (200, None)  # --robots still rules
        assert [fetch(busy, 5) for _ in range(2)] == [(503, "7"), (200, None)]
        assert fetch(busy + "p/1.html", 5) == (503, "7")  # the first of each page
        assert wait_for(lambda: len(site.log()) == 10, timeout=5)
        assert requests_of_site(site) == [
            ("/", None),  # the client left before the late answer
            ("/", 200),
            *[("/", None), ("/", 200), ("/", None)],  # flaky
            ("/", None),  # dead
            ("/robots.txt", 200),
            ("/", 503),
            ("/", 200),
            ("/p/1.html", 503),
        ]


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("0=delay:1.5", (0, Behaviour(delay=1.5))),
        ("2=flaky", (2, Behaviour(flaky=True))),
        ("3= dead ", (3, Behaviour(dead=True))),
        ("1=retry-after:2;delay:0.1", (1, Behaviour(delay=0.1, retry_after=2.0))),
        ("1=", (1, Behaviour())),
    ],
)
def test_behaviours_are_parsed(text: str, parsed: tuple[int, Behaviour]) -> None:
    assert parse_behaviour(text) == parsed


@pytest.mark.parametrize(
    "text",
    [
        "delay:1",
        "x=flaky",
        "0=slow",
        "0=delay",
        "0=delay:-1",
        "0=delay:nan",
        "0=dead:1",
    ],
)
def test_bad_behaviours_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"behav|delay"):
        parse_behaviour(text)


def requests_of_site(site: RunningSite) -> list[tuple[str, int | None]]:
    """(path, status) of every request to the site, in arrival order."""
    rows = sorted(site.log(), key=lambda row: row["t"])
    return [(row["path"], row["status"]) for row in rows]


def test_held_connections_do_not_hold_the_sites_shutdown_back():
    with running_site(hosts=2, pages=2, behave={0: "dead", 1: "delay:60"}) as site:
        clients = []
        for index in range(2):
            client = socket.create_connection((f"127.0.0.{2 + index}", site.spec.port))
            client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            clients.append(client)
        assert wait_for(lambda: len(site.log()) == 1, timeout=5)  # the dead host's
        started = time.monotonic()
    try:
        assert time.monotonic() - started < 5
        assert all(closed_unanswered(client) for client in clients)
    finally:
        for client in clients:
            client.close()


def closed_unanswered(client: socket.socket) -> bool:
    """Whether the site closed *client*'s connection without a byte of answer."""
    client.settimeout(5)
    try:
        return client.recv(100) == b""
    except ConnectionResetError:
        return True
