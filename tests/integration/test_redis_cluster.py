"""The crawler on a real Redis Cluster: three local `redis-server --cluster-enabled`
nodes, made into a cluster by the fixture (no redis-cli needed)."""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import subprocess
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import redis as redis_py
from redis.cluster import RedisCluster
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.context.crawl import CrawlContext
from crawler.crawlstate.clients import async_connect
from crawler.crawlstate.connection import RedisUnreachableError, connect
from crawler.crawlstate.embedded import redis_server_binary
from crawler.crawlstate.keys import CrawlKeys
from crawler.frontier.dedup import bloom_hashes
from crawler.frontier.frontierconfig import FrontierConfig
from crawler.frontier.node.membership import Membership, NodeReport
from crawler.frontier.store.store import FrontierStore, Pending, PopOrder
from crawler.policy.order import level_of
from crawler.policy.sharding import shard_of
from crawler.spiders.bfs import BfsSpider
from tests.integration.test_frontier_commands import frontier
from tests.integration.test_many_nodes import two_nodes_share_a_crawl
from tests.integration.test_node_failures import page_fetches, run, scrapy_crawl
from tests.servers import running_site, wait_for
from tests.site import bfs_depths

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

pytestmark = pytest.mark.integration

NODES = 3
SLOTS = 16384
# Seconds a node may take to answer PING, and the cluster to report itself ok
# (a new primary waits 2 s before it accepts writes).
START_TIMEOUT = 10.0
READY_TIMEOUT = 20.0
KEYS = CrawlKeys("bfs")
SHARDS = 8  # the test settings' FRONTIER_SHARDS
NODE = "test-node"
# Every node asks for it: each test passes it on in REDIS_URL.
PASSWORD = "pa55"  # noqa: S105 (a test server on loopback)


@dataclass(frozen=True)
class LocalCluster:
    """Three primaries on loopback ports, each serving a third of the slots, all
    asking for PASSWORD."""

    ports: list[int]

    @property
    def url(self) -> str:
        """The URL of one node: what a user puts in REDIS_URL."""
        return f"redis://:{PASSWORD}@127.0.0.1:{self.ports[0]}/0"

    def node(self, index: int) -> redis_py.Redis:
        """A plain client of one node (it sees only that node's keys)."""
        return redis_py.Redis(port=self.ports[index], password=PASSWORD)

    def keys_by_node(self) -> list[set[bytes]]:
        """The keys each node holds, read node by node."""
        found = []
        for index in range(NODES):
            with contextlib.closing(self.node(index)) as node:
                found.append(set(node.scan_iter(count=1000)))
        return found

    def flush(self) -> None:
        for index in range(NODES):
            with contextlib.closing(self.node(index)) as node:
                node.flushall()


def cluster_ports(count: int) -> list[int]:
    """Free ports P whose cluster bus port P + 10000 is free too (below the usual
    ephemeral range; the first one tried varies, so that two sessions rarely race)."""
    ports: list[int] = []
    for candidate in range(20000 + 97 * (time.time_ns() % 100), 32000, 97):
        if all(_free(port) for port in (candidate, candidate + 10000)):
            ports.append(candidate)
            if len(ports) == count:
                return ports
    raise AssertionError("no free ports for a cluster")


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def server_command(port: int, directory: Path) -> list[str]:
    """A cluster-enabled redis-server on loopback, keeping nothing on disk."""
    return [
        redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1",
        "--cluster-enabled", "yes", "--requirepass", PASSWORD,
        "--cluster-config-file", str(directory / "nodes.conf"),
        "--save", "", "--appendonly", "no", "--dir", str(directory),
    ]  # fmt: skip


def _answers(client: redis_py.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis_py.ConnectionError:
        return False


def _cluster_ok(clients: list[redis_py.Redis]) -> bool:
    return all(
        c.execute_command("CLUSTER INFO").get("cluster_state") == "ok" for c in clients
    )


def _form_cluster(clients: list[redis_py.Redis], ports: list[int]) -> None:
    """Give each node its third of the slots, introduce them, wait until all agree."""
    for index, client in enumerate(clients):
        first, end = SLOTS * index // NODES, SLOTS * (index + 1) // NODES
        client.execute_command("CLUSTER ADDSLOTS", *range(first, end))
    for port in ports[1:]:
        clients[0].execute_command("CLUSTER MEET", "127.0.0.1", port)
    assert wait_for(lambda: _cluster_ok(clients), timeout=READY_TIMEOUT, interval=0.1)


@pytest.fixture(scope="module")
def redis_cluster() -> Iterator[LocalCluster]:
    ports = cluster_ports(NODES)
    servers: list[subprocess.Popen[bytes]] = []
    clients = [redis_py.Redis(port=port, password=PASSWORD) for port in ports]
    with tempfile.TemporaryDirectory(prefix="redis-cluster-") as tmp:
        try:
            for port in ports:
                directory = Path(tmp) / str(port)
                directory.mkdir()
                command = server_command(port, directory)
                servers.append(subprocess.Popen(command, stdout=subprocess.DEVNULL))
            for client in clients:
                assert wait_for(lambda c=client: _answers(c), timeout=START_TIMEOUT)
            _form_cluster(clients, ports)
            yield LocalCluster(ports)
        finally:
            for client in clients:
                client.close()
            for server in servers:
                server.terminate()
            for server in servers:
                server.wait(10)


@pytest.fixture
def redis_url(redis_cluster: LocalCluster) -> Iterator[str]:
    """The cluster, empty before and after the test (the conftest's `settings`
    fixture puts this URL in REDIS_URL)."""
    redis_cluster.flush()
    yield redis_cluster.url
    redis_cluster.flush()


@pytest.fixture
def cluster(redis_url: str) -> Iterator[RedisCluster]:
    client = RedisCluster.from_url(redis_url)
    yield client
    client.close()


def store_on(client: Any, settings: Callable[..., dict[str, Any]]) -> FrontierStore:
    config = FrontierConfig.from_settings(Settings(settings()), "bfs")
    store = FrontierStore.on(client, config)
    store.prepare(time.time())
    return store


def hosts_of_every_shard(per_shard: int) -> list[str]:
    """*per_shard* host names in each of the SHARDS shards."""
    found: dict[int, list[str]] = {shard: [] for shard in range(SHARDS)}
    for i in range(10_000):
        host = f"h{i}.example"
        if len(found[shard_of(host, SHARDS)]) < per_shard:
            found[shard_of(host, SHARDS)].append(host)
    assert all(len(hosts) == per_shard for hosts in found.values())
    return [host for hosts in found.values() for host in hosts]


def dedup(name: str) -> bytes:
    """The Bloom hashes the push script checks for a request named *name*."""
    return bloom_hashes(name.encode(), 80)


def nodes_holding(redis_cluster: LocalCluster, fragment: bytes) -> set[int]:
    """Indices of the nodes that hold a key containing *fragment*."""
    return {
        index
        for index, keys in enumerate(redis_cluster.keys_by_node())
        if any(fragment in key for key in keys)
    }


# --- connecting ------------------------------------------------------------------------

ADDON = {"crawler.addon.Frontier": 0}


def test_a_node_url_gets_the_cluster_client_and_a_single_server_does_not(
    redis_cluster, redis_url_session
):
    for values in ({}, {"REDIS_CLUSTER": True}):  # found out, or said
        settings = {"ADDONS": ADDON, "REDIS_URL": redis_cluster.url, **values}
        crawler = get_crawler(BfsSpider, settings)
        client = CrawlContext.of(crawler).redis.sync_client()
        assert isinstance(client, RedisCluster)
        assert len(client.get_primaries()) == NODES
        client.close()
    single = get_crawler(BfsSpider, {"ADDONS": ADDON, "REDIS_URL": redis_url_session})
    client = CrawlContext.of(single).redis.sync_client()
    assert type(client) is redis_py.Redis
    client.close()


@pytest.mark.parametrize(
    ("old", "new", "cluster", "words"),
    [
        (PASSWORD, "wrong", None, "refused the password"),
        (PASSWORD, "wrong", True, "invalid username-password pair"),
        ("/0", "/3", None, "can only be 0"),  # a cluster has database 0 only
    ],
)
def test_a_wrong_url_of_a_node_is_one_line(redis_cluster, old, new, cluster, words):
    url = redis_cluster.url.replace(old, new)
    with pytest.raises(RedisUnreachableError) as caught:
        connect(url, cluster=cluster)
    message = str(caught.value)
    assert words in message
    assert "\n" not in message
    assert ":***@" in message
    assert "wrong" not in message


def test_an_unreachable_cluster_is_one_line_naming_the_settings():
    url = "redis://:s3cret@127.0.0.1:9/0"
    with pytest.raises(RedisUnreachableError) as caught:
        connect(url, cluster=True)
    message = str(caught.value)
    assert "\n" not in message
    assert "redis://:***@127.0.0.1:9/0" in message
    assert "s3cret" not in message
    assert "REDIS_CLUSTER" in message
    result = run(scrapy_crawl(f"REDIS_URL={url}", "REDIS_CLUSTER=True"))
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1, result.stderr[-3000:]
    assert "s3cret" not in result.stderr
    assert "Traceback" not in result.stderr


# --- the frontier's scripts --------------------------------------------------------------


def test_the_frontier_scripts_run_on_shards_spread_over_the_nodes(
    redis_cluster, cluster, settings
):
    store = store_on(cluster, settings)
    membership = Membership(
        cluster, store.shards.crawl_keys, store.shards.config, node_id=NODE
    )
    now = time.time()
    assert membership.beat(now, NodeReport(pages=0)) == frozenset(
        range(SHARDS)
    )  # claim script
    hosts = hosts_of_every_shard(per_shard=2)
    batch = [
        Pending(shard_of(h, SHARDS), h, level_of(d), dedup(f"{h} {d}"), f"{h} {d}")
        for h in hosts
        for d in (0, 1)
    ]
    flushed = store.flush(batch, [], now)
    assert flushed.new == [True] * len(batch)
    assert store.flush(batch[:3], [], now).new == [False] * 3  # seen in Bloom filters
    # Every shard's keys share one slot; the shards spread over all three nodes.
    for shard in range(SHARDS):
        assert len(nodes_holding(redis_cluster, f"{{s{shard:02d}}}".encode())) == 1
    assert nodes_holding(redis_cluster, b"bfs:{s") == set(range(NODES))
    for index in range(NODES):  # scripts are loaded again where a node lost them
        with contextlib.closing(redis_cluster.node(index)) as node:
            node.script_flush()
    popped = []
    for _ in range(len(batch) + 1):  # one pop too many: nothing is left
        shard = store.shards.summaries.best_shard(range(SHARDS))
        if shard is None:
            break
        lease, entry = store.flush([], [], now, PopOrder(shard, NODE, 0.0)).popped
        popped.append(entry.decode())
        assert store.flush([], [(lease, 0.0)], now).acked == 1
    assert Counter(popped) == Counter(p.entry for p in batch)
    assert store.shards.totals() == (0, 0)
    membership.leave()  # release script
    assert all(cluster.get(store.shards.keys[s].owner) is None for s in range(SHARDS))


# --- whole crawls -------------------------------------------------------------------------


@deferred_f_from_coro_f
@pytest.mark.parametrize("order", ["bfs", "importance"])
async def test_a_crawl_on_the_cluster_fetches_every_page_once(
    redis_cluster, settings, order
):
    with running_site() as site:
        crawler = get_crawler(BfsSpider, settings(FRONTIER_ORDER=order))
        await crawler.crawl_async(seeds=site.seeds[0])
        pages = page_fetches(site)
        expected = bfs_depths(site.spec, [(0, 0)])
    assert pages == Counter(expected.keys())  # each page exactly once
    stats = crawler.stats
    assert stats.get_value("finish_reason") == "finished"
    # Every page's lease acked once, and those of pages reparsed at a shorter
    # depth (depth repair, common outside bfs order) once more.
    reparsed = sum(
        stats.get_value(f"reparse/{source}", 0)
        for source in ("from_memory", "from_store")
    )
    assert stats.get_value("frontier/acked") == len(expected) + reparsed
    by_node = redis_cluster.keys_by_node()
    assert all(key.startswith(b"bfs:") for keys in by_node for key in keys)
    assert all(any(b"{s" in key for key in keys) for keys in by_node)


@deferred_f_from_coro_f
async def test_robots_and_traffic_counters_work_on_the_cluster(cluster, settings):
    robots = {0: "disallow:/p/1.html,/p/2.html", 1: "crawl-delay:0.1"}
    with running_site(hosts=3, pages=12, links=3, robots=robots) as site:
        values = settings(ROBOTSTXT_OBEY=True, ROBOTS_FETCH_TIMEOUT=1.0)
        crawler = get_crawler(BfsSpider, values)
        await crawler.crawl_async(seeds=",".join(site.seeds))
        fetched = page_fetches(site)
        log = site.log()
        robots_fetches = site.robots_fetches()
    assert crawler.stats.get_value("finish_reason") == "finished"
    assert robots_fetches == {site.host(h): 1 for h in range(3)}  # once per host
    assert not set(fetched) & {(0, 1), (0, 2)}
    assert max(fetched.values()) == 1
    stats = crawler.stats.get_stats()
    dropped = stats.get("robots/disallowed", 0) + stats.get(
        "robots/disallowed_links", 0
    )
    assert dropped >= 1  # before queueing when host 0's rules were known, else later
    assert crawler.stats.get_value("robots/crawl_delay_hosts") == 1
    for host in range(3):
        origin = f"http://{site.host(host)}"
        assert cluster.exists(KEYS.robots(origin)) == 1  # shared record
        name = site.host(host).rsplit(":", 1)[0]
        requests = sum(row["host"] == site.host(host) for row in log)
        assert int(cluster.hget(KEYS.traffic(name), "requests")) == requests
        assert cluster.zscore(KEYS.traffic_rank("requests"), name) == requests
    assert crawler.stats.get_value("traffic/flush_errors") is None
    assert crawler.stats.get_value("traffic/rejected_writes") is None


# --- scrapy frontier -----------------------------------------------------------------------


def test_frontier_status_and_reset_work_on_the_cluster(
    redis_cluster, redis_url, cluster, settings
):
    store = store_on(cluster, settings)
    hosts = hosts_of_every_shard(per_shard=1)
    now = time.time()
    store.flush([Pending(shard_of(h, SHARDS), h, 0, "", h) for h in hosts], [], now)
    for shard in range(SHARDS):
        cluster.set(store.shards.keys[shard].owner, NODE, px=30_000)
    shard = store.shards.summaries.best_shard(range(SHARDS))
    assert store.pop(PopOrder(shard, NODE, 0.0), now) is not None
    cluster.set("other:key", "kept")
    status = frontier(redis_url, "status")
    assert status.returncode == 0, status.stderr
    assert f"Queued {len(hosts) - 1}, in flight 1;" in status.stdout
    assert "Shards without a live owner: 0-7" in status.stdout  # no node registered
    reset = frontier(redis_url, "reset", "--yes")
    assert reset.returncode == 0, reset.stderr
    deleted = int(re.search(r"Deleted (\d+) keys", reset.stdout).group(1))
    assert deleted > 3 * SHARDS
    left = set().union(*redis_cluster.keys_by_node())
    assert left == {b"other:key"}  # every node's crawl keys, and nothing else


# --- many nodes ----------------------------------------------------------------------------


def test_two_crawler_processes_share_a_crawl_on_the_cluster(redis_url):
    two_nodes_share_a_crawl(redis_url, pages=16)


# --- the end of the crawl, seen from another node ----------------------------------------


def node_of_shard(
    redis_cluster: LocalCluster, cluster: RedisCluster, shard: int
) -> int:
    """The index of the node that serves *shard*'s slot."""
    port = cluster.get_node_from_key(KEYS.shard(shard).ready).port
    return redis_cluster.ports.index(port)


def test_links_are_queued_before_their_page_lets_go_of_its_lease(
    redis_cluster, cluster, settings
):
    """A page's links live on another node than its lease. That node is slow to take
    writes, as under load: until they are queued, another node that asks whether the
    crawl is over still sees the page in flight, never an empty crawl."""
    store = store_on(cluster, settings)
    Membership(
        cluster, store.shards.crawl_keys, store.shards.config, node_id=NODE
    ).beat(time.time(), NodeReport(pages=0))
    hosts = hosts_of_every_shard(per_shard=1)
    page = hosts[0]
    page_shard = shard_of(page, SHARDS)
    link = next(
        h
        for h in hosts
        if node_of_shard(redis_cluster, cluster, shard_of(h, SHARDS))
        != node_of_shard(redis_cluster, cluster, page_shard)
    )
    now = time.time()
    store.flush([Pending(page_shard, page, 0, dedup(page), page)], [], now)
    lease, _entry = store.pop(PopOrder(page_shard, NODE, 0.0), now)
    slow = node_of_shard(redis_cluster, cluster, shard_of(link, SHARDS))
    links = [Pending(shard_of(link, SHARDS), link, 1, dedup(link), link)]
    other_node = store_on(RedisCluster.from_url(redis_cluster.url), settings)
    with contextlib.closing(redis_cluster.node(slow)) as slow_node:
        slow_node.execute_command("CLIENT", "PAUSE", 5000, "WRITE")
        with ThreadPoolExecutor(1) as pool:
            flushing = pool.submit(store.flush, links, [(lease, 0.0)], now)
            time.sleep(0.5)  # the ack has gone out by now, if it goes out first
            seen = other_node.shards.totals()
            slow_node.execute_command("CLIENT", "UNPAUSE")
            flushed = flushing.result(timeout=10)
    other_node.shards.client.close()
    assert seen != (0, 0)  # the page's lease (its links not yet queued)
    assert (flushed.new, flushed.acked) == ([True], 1)
    assert store.shards.totals() == (1, 0)


def test_a_request_moving_between_shards_is_never_missed(
    redis_cluster, cluster, settings
):
    """One request at a time, each a page whose one link goes to a shard on another
    node: at every moment one request is queued or leased. Read while it moves, the
    crawl's settled totals never show an empty crawl (they may say "moving")."""
    store = store_on(cluster, settings)
    Membership(
        cluster, store.shards.crawl_keys, store.shards.config, node_id=NODE
    ).beat(time.time(), NodeReport(pages=0))
    by_node: dict[int, list[str]] = {}
    for host in hosts_of_every_shard(per_shard=1):
        node = node_of_shard(redis_cluster, cluster, shard_of(host, SHARDS))
        by_node.setdefault(node, []).append(host)
    homes = [hosts[0] for hosts in by_node.values()]
    assert len(homes) >= 2
    reader = store_on(RedisCluster.from_url(redis_cluster.url), settings)
    moves = 300

    def move() -> None:
        now = time.time()
        lease = None
        for step in range(moves):
            host = homes[step % len(homes)]
            name = f"{host} {step}"
            pending = Pending(shard_of(host, SHARDS), host, 0, dedup(name), name)
            acks = [(lease, 0.0)] if lease is not None else []
            store.flush([pending], acks, now)
            lease, _entry = store.pop(PopOrder(pending.shard, NODE, 0.0), now)
        finishing.set()
        # The last ack empties the crawl: only once no read can see it.
        assert reading_done.wait(30)
        store.flush([], [(lease, 0.0)], now)

    finishing, reading_done = threading.Event(), threading.Event()
    seen = []
    with ThreadPoolExecutor(1) as pool:
        moving = pool.submit(move)
        while not finishing.is_set():
            seen.append(reader.shards.settled_totals())
        reading_done.set()
        moving.result()
    reader.shards.client.close()
    assert len(seen) > 10
    assert (0, 0) not in seen


# --- the asyncio client ------------------------------------------------------------------


@deferred_f_from_coro_f
async def test_commands_sent_at_once_by_a_new_asyncio_client_all_succeed(
    redis_cluster, redis_url
):
    """What a node that joins a crawl does: it leases several requests at once, and
    the robots.txt lookup of each is a command of a client that has sent none yet.
    Every one succeeds (each time with a new client; one failure recorded a page
    unparseable, never fetched)."""
    origins = [f"http://127.0.0.{host}:80" for host in range(2, 10)]
    for _attempt in range(60):
        client = async_connect(redis_url, cluster=True)
        try:
            replies = await asyncio.gather(
                *(client.get(KEYS.robots(origin)) for origin in origins),
                return_exceptions=True,
            )
        finally:
            await client.aclose()
        assert replies == [None] * len(origins)
