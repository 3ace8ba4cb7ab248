"""The metrics endpoint: scraped over HTTP during a crawl of the local site and at
its end (values agree with Scrapy's stats), a bad METRICS_PORT stops start-up in
one line, cluster-wide gauges are read from Redis at most once per METRICS_REFRESH
however often /metrics is scraped, and the endpoint answers while Redis is down."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest
import redis as redis_py
from prometheus_client import start_http_server
from prometheus_client.parser import text_string_to_metric_families
from scrapy import signals
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.context.roundtriptimes import RoundTripTimes
from crawler.crawlstate.keys import CrawlKeys
from crawler.crawlstate.status import read_status
from crawler.metrics.cluster import ClusterGauges
from crawler.metrics.collector import NodeCollector
from crawler.metrics.exporter import metrics_registry
from crawler.spiders.bfs import BfsSpider
from tests.integration.test_honest_exits import assert_one_line_stop, scrapy_crawl
from tests.integration.test_node_commands import KEYS as NODE_KEYS
from tests.integration.test_node_commands import node_cluster  # noqa: F401 (a fixture)
from tests.servers import RestartableRedis

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.integration

# The brief's addresses for metrics servers: apart from other helpers' tests.
METRICS_HOST = "127.0.0.27"
OTHER_HOST = "127.0.0.28"
# A scrape of a crawl this small takes milliseconds; a bound, not a target.
SCRAPE_TIMEOUT = 10.0
# Seconds between two reads of the cluster-wide gauges in the crawl test.
REFRESH = 0.2


def free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def scrape(host: str, port: int) -> dict[str, dict[str, float]]:
    """GET /metrics: family -> {sample name and labels: value}."""
    url = f"http://{host}:{port}/metrics"
    with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT) as response:
        assert response.status == 200
        text = response.read().decode()
    families: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        samples = families.setdefault(family.name, {})
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            samples[f"{sample.name}{{{labels}}}"] = sample.value
    return families


def labelled(family: dict[str, float], label: str) -> dict[str, float]:
    """label value -> value of a family's ``_total`` samples with one label."""
    found = {}
    for key, value in family.items():
        name, _, labels = key.partition("{")
        if name.endswith("_total") and labels.startswith(f"{label}="):
            found[labels[len(label) + 1 : -1]] = value
    return found


class Scraper(threading.Thread):
    """Scrapes /metrics every *interval* s until stopped (at most *limit* times)."""

    def __init__(self, port: int, interval: float = 0.05, limit: int = 2000) -> None:
        super().__init__(daemon=True)
        self.port, self.interval, self.limit = port, interval, limit
        self.results: list[dict[str, dict[str, float]]] = []
        self.errors: list[Exception] = []
        self.done = threading.Event()

    def run(self) -> None:
        for _ in range(self.limit):
            if self.done.wait(self.interval):
                return
            try:
                self.results.append(scrape(METRICS_HOST, self.port))
            except OSError as exc:  # before the server is up, or after it stops
                self.errors.append(exc)


@deferred_f_from_coro_f
async def test_metrics_scraped_during_and_at_the_end_of_a_crawl_agree_with_stats(
    site, settings
):
    port = free_port(METRICS_HOST)
    crawler = get_crawler(
        BfsSpider,
        settings(METRICS_PORT=port, METRICS_HOST=METRICS_HOST, METRICS_REFRESH=REFRESH),
    )
    scraper = Scraper(port)
    at_end: list[dict[str, dict[str, float]]] = []

    def spider_opened() -> None:
        scraper.start()

    def spider_closed() -> None:  # before the endpoint stops (connected first)
        scraper.done.set()
        scraper.join(SCRAPE_TIMEOUT)
        time.sleep(REFRESH + 0.1)  # the cluster-wide gauges are read again
        at_end.append(scrape(METRICS_HOST, port))

    crawler.signals.connect(spider_opened, signal=signals.spider_opened)
    crawler.signals.connect(spider_closed, signal=signals.spider_closed)
    await crawler.crawl_async(seeds=site.seeds[0])
    stats = crawler.stats.get_stats()
    end = at_end[0]

    assert len(scraper.results) >= 2  # the crawl was watched while it ran
    pages_seen = [
        sum(labelled(r["crawler_pages"], "fate").values()) for r in scraper.results
    ]
    assert pages_seen == sorted(pages_seen)  # a counter never goes back
    alive = [
        r.get("crawler_nodes_alive", {}).get("crawler_nodes_alive{}")
        for r in scraper.results
    ]
    assert 1.0 in alive  # this node, seen by the cluster-wide gauges mid-crawl

    fates = labelled(end["crawler_pages"], "fate")
    assert sum(fates.values()) == stats["bfs/records"] == len(site.pages())
    assert fates["fetched"] == stats["bfs/fate_count/fetched"]
    statuses: Counter[str] = Counter()
    prefix = "downloader/response_status_count/"
    for key, value in stats.items():
        if key.startswith(prefix):
            statuses[f"{key[len(prefix)][0]}xx"] += value
    classes = labelled(end["crawler_responses"], "status_class")
    assert {k: v for k, v in classes.items() if v} == dict(statuses)
    assert (
        end["crawler_response_bytes"]["crawler_response_bytes_total{}"]
        == (stats["downloader/response_bytes"])
    )
    assert end["crawler_items"]["crawler_items_total{}"] == stats["item_scraped_count"]
    round_trips = end["crawler_redis_round_trip_seconds"]
    assert round_trips["crawler_redis_round_trip_seconds_count{}"] > 0
    # The cluster-wide gauges, read again after the spider closed: nothing left,
    # every URL acknowledged with its fate.
    for name in ("queued", "leased", "held"):
        family = f"crawler_frontier_{name}_requests"
        assert end[family] == {f"{family}{{}}": 0.0}
    cluster_fates = labelled(end["crawler_cluster_pages"], "fate")
    assert sum(cluster_fates.values()) == stats["frontier/acked"] == len(site.pages())
    assert (
        end["crawler_cluster_gauges_age_seconds"][
            "crawler_cluster_gauges_age_seconds{}"
        ]
        < 60
    )
    # The endpoint stopped with the crawl: nothing listens on its port any more.
    with pytest.raises(OSError, match="refused"):
        scrape(METRICS_HOST, port)


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port of METRICS_HOST some other program listens on."""
    with socket.socket() as listener:
        listener.bind((METRICS_HOST, 0))
        listener.listen()
        yield int(listener.getsockname()[1])


@pytest.mark.parametrize("value", ["busy", "abc", "70000"])
def test_a_bad_metrics_port_stops_start_up_in_one_line(
    tmp_path, redis_url, busy_port, value
):
    port = str(busy_port) if value == "busy" else value
    result = scrapy_crawl(
        tmp_path,
        "-a",
        "seeds=http://127.0.0.2:9/",
        "-s",
        f"METRICS_PORT={port}",
        "-s",
        f"METRICS_HOST={METRICS_HOST}",
        redis_url=redis_url,
    )
    assert_one_line_stop(result, "METRICS_PORT", port)


def test_metrics_on_and_another_bad_setting_start_no_private_redis(
    tmp_path,
):
    port = str(free_port(METRICS_HOST))
    result = scrapy_crawl(
        tmp_path,
        "-a",
        "seeds=http://127.0.0.2:9/",
        "-s",
        "FRONTIER_SHARDS=3",
        "-s",
        f"METRICS_PORT={port}",
        "-s",
        f"METRICS_HOST={METRICS_HOST}",
    )
    assert_one_line_stop(result, "FRONTIER_SHARDS")
    # No private Redis started for the cluster-wide gauges (the pipelines still
    # make their page store and database: not the metrics' doing).
    assert not (tmp_path / "redis").exists()


def commands(client: redis_py.Redis, command: str) -> int:
    """Calls of *command* the server has run since it started."""
    found = client.info("commandstats").get(f"cmdstat_{command}", {})
    return int(found.get("calls", 0))


class FakeClock:
    """Time, moved by the test: refresh intervals without sleeping."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def serve(
    cluster: ClusterGauges, stats: dict[str, Any] | None = None
) -> tuple[Any, int]:
    """The endpoint's registry (node and cluster families) on a free port."""
    collector = NodeCollector(lambda: stats or {}, RoundTripTimes(), cluster, tiers=3)
    server, _thread = start_http_server(0, OTHER_HOST, metrics_registry(collector))
    return server, int(server.server_port)


def stop(server: Any) -> None:
    server.shutdown()
    server.server_close()


def test_cluster_gauges_are_read_once_per_refresh_however_fast_the_scrapes(redis):
    keys = CrawlKeys("m")
    redis.hset(keys.shard(0).counters, mapping={"queued": 7})
    clock = FakeClock()
    cluster = ClusterGauges(refresh=5.0, clock=clock)
    cluster.attach(lambda: read_status(redis, keys, 4))
    server, port = serve(cluster)
    try:
        before = commands(redis, "llen")  # one LLEN (the seeds list) a read
        for _ in range(20):
            families = scrape(OTHER_HOST, port)
            assert families["crawler_frontier_queued_requests"] == {
                "crawler_frontier_queued_requests{}": 7.0
            }
        assert commands(redis, "llen") - before == 1
        clock.now += 5.0
        for _ in range(20):
            scrape(OTHER_HOST, port)
        assert commands(redis, "llen") - before == 2
    finally:
        stop(server)


def test_the_endpoint_answers_with_stale_gauges_while_redis_is_down(
    tmp_path: Path,
) -> None:
    server_redis = RestartableRedis(tmp_path / "redis")
    server_redis.start()
    client = redis_py.Redis.from_url(server_redis.url, socket_timeout=2)
    keys = CrawlKeys("m")
    client.hset(keys.shard(0).counters, mapping={"queued": 7})
    clock = FakeClock()
    cluster = ClusterGauges(refresh=5.0, clock=clock)
    cluster.attach(lambda: read_status(client, keys, 4))
    server, port = serve(cluster, {"bfs/fate_count/fetched": 3})
    try:
        scrape(OTHER_HOST, port)
        server_redis.stop()
        clock.now += 30.0
        families = scrape(OTHER_HOST, port)
        assert labelled(families["crawler_pages"], "fate")["fetched"] == 3
        assert families["crawler_frontier_queued_requests"] == {
            "crawler_frontier_queued_requests{}": 7.0
        }
        assert families["crawler_cluster_gauges_age_seconds"] == {
            "crawler_cluster_gauges_age_seconds{}": 30.0
        }
        assert families["crawler_cluster_read_errors"] == {
            "crawler_cluster_read_errors_total{}": 1.0
        }
    finally:
        stop(server)
        client.close()
        server_redis.stop()


@pytest.mark.usefixtures("node_cluster")
def test_each_live_nodes_capacity_and_load_are_scraped_as_gauges(redis):
    """The node table of test_node_commands' cluster (crawl 'bfs'): two nodes with
    issue 24's fields, an older one without, a dead one."""
    redis.hset(NODE_KEYS.control, "drain:slow", "1")
    cluster = ClusterGauges(refresh=5.0, clock=FakeClock())
    cluster.attach(lambda: read_status(redis, NODE_KEYS, 8))
    server, port = serve(cluster)
    try:
        families = scrape(OTHER_HOST, port)
    finally:
        stop(server)

    def by_node(name: str) -> dict[str, float]:
        return {
            key.partition("node=")[2].rstrip("}"): value
            for key, value in families[name].items()
        }

    assert by_node("crawler_node_capacity_pages_per_second") == {"fast": 3.5}
    assert by_node("crawler_node_weight") == {"fast": 3.5, "slow": 1.0}
    assert by_node("crawler_node_concurrency") == {"fast": 16, "slow": 4}
    assert by_node("crawler_node_in_flight_requests") == {"fast": 12, "slow": 1}
    assert by_node("crawler_node_ready_hosts") == {"fast": 8, "slow": 0}
    assert by_node("crawler_node_load_ratio") == {"fast": 1.25, "slow": 0.25}
    # the older node writes pages a minute and shards too; the dead one is left out
    assert by_node("crawler_node_pages_per_minute") == {
        "fast": 150.0,
        "old": 30.5,
        "slow": 150.0,
    }
    assert by_node("crawler_node_shards") == {"fast": 5, "old": 1, "slow": 2}
    assert by_node("crawler_node_draining") == {"fast": 0, "old": 0, "slow": 1}
