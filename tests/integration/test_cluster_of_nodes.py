"""A cluster of crawler processes on one Redis: one node per host at any time, a
killed node's shards taken over, a joining node given a share, every node exiting
when the crawl is done; and the pop script's fencing under contention."""

from __future__ import annotations

import ast
import contextlib
import itertools
import json
import re
import signal
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest
import redis as redis_py
from scrapy.settings import Settings

from crawler.crawlstate.keys import CrawlKeys
from crawler.defaults.frontier import FRONTIER_DISPATCH
from crawler.frontier.frontierconfig import FrontierConfig
from crawler.frontier.node.handover import read_loans
from crawler.frontier.store.store import FrontierStore, Pending, PopOrder
from crawler.policy.dispatch import homes
from crawler.policy.order import level_of
from tests.integration.test_node_failures import page_fetches, scrapy_crawl
from tests.servers import ROOT, running_site, wait_for
from tests.site import bfs_depths

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path
    from typing import IO

    from tests.servers import RunningSite

pytestmark = pytest.mark.integration

PREFIX = "bfs"
SHARDS = 64
DELAY = 0.5  # between two fetches of a host, whichever nodes make them
HOSTS = 30  # odds that a node of three gets no host: 3 * (2/3) ** 30 < 1e-5
PAGES = 20  # a host takes PAGES x DELAY = 10 s at least: time to kill and join
SURVIVORS = ("n1", "n3", "n4")  # n2 is killed, n4 joins after that
# Time a request popped before an ownership change may take to reach the site.
IN_FLIGHT = 1.0
# Bounds of every wait, in seconds.
START_TIMEOUT = 60.0
EXIT_TIMEOUT = 180.0
CLUSTER_SETTINGS = (
    f"DOWNLOAD_DELAY={DELAY}",
    "FRONTIER_MAINTENANCE_INTERVAL=0.3",
    "FRONTIER_NODE_WEIGHT=1",
    "FRONTIER_NODE_TTL=2",
    "FRONTIER_LEASE_TIMEOUT=3",
    f"FRONTIER_SHARDS={SHARDS}",
    "ROBOTSTXT_OBEY=False",  # a robots.txt wait would hold requests popped earlier
)


@dataclass
class Node:
    """One `scrapy crawl bfs` process, named by the X-Crawler-Node header it sends."""

    label: str
    process: subprocess.Popen[bytes]
    log: IO[bytes]
    log_path: Path

    def output(self) -> str:
        self.log.flush()
        return self.log_path.read_text("utf-8", "replace")


@dataclass
class Cluster:
    """The nodes of one crawl, started and stopped by the test."""

    redis_url: str
    directory: Path
    nodes: dict[str, Node] = field(default_factory=dict)

    def start(self, label: str, seeds: str = "", extra: tuple[str, ...] = ()) -> Node:
        headers = json.dumps({"X-Crawler-Node": label})
        command = scrapy_crawl(
            f"REDIS_URL={self.redis_url}",
            *CLUSTER_SETTINGS,
            f"DEFAULT_REQUEST_HEADERS={headers}",
            # Each node plays a machine of its own: a joining node must not take the
            # id (and so the shards) a killed node freed in this directory.
            f"FRONTIER_NODE_NAME={label}",
            *extra,
            seeds=seeds,
        )
        path = self.directory / f"{label}.log"
        log = path.open("wb")
        process = subprocess.Popen(
            command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
        )
        self.nodes[label] = Node(label, process, log, path)
        return self.nodes[label]

    def wait_all(self, timeout: float) -> bool:
        """Wait for every node to exit by itself; whether all did in *timeout*."""
        deadline = time.monotonic() + timeout
        for node in self.nodes.values():
            try:
                node.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                return False
        return True

    def stop(self) -> None:
        """Kill whatever still runs (a failed test), reap it, close the logs."""
        for node in self.nodes.values():
            if node.process.poll() is None:
                node.process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                node.process.wait(10)
            node.log.close()


@contextlib.contextmanager
def cluster(redis_url: str, directory: Path) -> Iterator[Cluster]:
    nodes = Cluster(redis_url, directory)
    try:
        yield nodes
    finally:
        nodes.stop()


def node_ids(redis: redis_py.Redis, nodes: list[Node]) -> dict[str, str]:
    """Label -> node id of the *nodes* registered and alive in Redis now."""
    keys = CrawlKeys(PREFIX)
    by_pid = {node.process.pid: node.label for node in nodes}
    found = {}
    for node_id, entry in redis.hgetall(keys.nodes).items():
        label = by_pid.get(json.loads(entry)["pid"])
        if label is not None and redis.exists(keys.heartbeat(node_id.decode())):
            found[label] = node_id.decode()
    return found


def owners(redis: redis_py.Redis) -> list[str | None]:
    """The node id holding each shard's owner key (None: free)."""
    keys = CrawlKeys(PREFIX)
    values = redis.mget([keys.shard(s).owner for s in range(SHARDS)])
    return [v.decode() if v is not None else None for v in values]


def settled(redis: redis_py.Redis, nodes: list[Node]) -> bool:
    """Whether every one of *nodes* is alive and holds exactly its share: the shards
    whose home it is (equal weights: FRONTIER_NODE_WEIGHT=1 on every node), but
    those lent to another live node (moved to its free capacity)."""
    ids = node_ids(redis, nodes)
    if len(ids) != len(nodes):
        return False
    live = set(ids.values())
    home = homes(dict.fromkeys(live, 1.0), SHARDS, FRONTIER_DISPATCH)
    loans = read_loans(redis, CrawlKeys(PREFIX), SHARDS)
    expected = [
        loans[s].node if s in loans and loans[s].node in live else home[s]
        for s in range(SHARDS)
    ]
    return owners(redis) == expected


def leases_of(redis: redis_py.Redis, node_id: str) -> int:
    """Requests leased from the shards *node_id* owns."""
    keys = CrawlKeys(PREFIX)
    mine = [s for s, owner in enumerate(owners(redis)) if owner == node_id]
    return sum(int(redis.zcard(keys.shard(s).leases)) for s in mine)


def stat(output: str, key: str) -> Any:
    """A value of the stats Scrapy dumps at the end, from a node's log (None: absent)."""
    found = re.search(rf"'{re.escape(key)}': ([^,\n}}]+)", output)
    return None if found is None else ast.literal_eval(found.group(1))


@dataclass(frozen=True)
class Crawl:
    """What the scenario saw: the site's log, the nodes' logs and exits, and when
    the first three settled, when n2 was killed and its leases then."""

    pages: list[dict[str, Any]]
    outputs: dict[str, str]
    exits: dict[str, int | None]
    settled_at: float
    killed_at: float
    orphaned: int

    def by_host(self) -> dict[str, list[tuple[float, str]]]:
        """Each host's page fetches as (arrival time, node label), in time order."""
        by_host: dict[str, list[tuple[float, str]]] = {}
        for row in self.pages:
            by_host.setdefault(row["host"], []).append((row["t"], row["node"]))
        return {host: sorted(rows) for host, rows in by_host.items()}

    def first_fetcher(self) -> dict[tuple[str, str], str]:
        """The node that first fetched each page, by (host, path)."""
        first: dict[tuple[str, str], str] = {}
        for row in sorted(self.pages, key=lambda row: row["t"]):
            first.setdefault((row["host"], row["path"]), row["node"])
        return first


def handovers(rows: list[tuple[float, str]]) -> list[tuple[float, str, str]]:
    """(time, from, to) wherever two fetches in a row of a host came from two nodes."""
    return [
        (t, before, after)
        for (_, before), (t, after) in itertools.pairwise(rows)
        if before != after
    ]


def crawl_with_a_kill_and_a_join(
    redis: redis_py.Redis, nodes: Cluster, site: RunningSite
) -> Crawl:
    """n1 starts the crawl, n2 and n3 join; once they settled n2 is SIGKILLed with
    requests in flight and n4 joins; then every node left must exit by itself."""
    total = len(bfs_depths(site.spec, [(0, 0)]))
    # A node with nothing to do exits: the others join once the crawl runs.
    first = [nodes.start("n1", seeds=site.seeds[0])]
    assert wait_for(site.pages, START_TIMEOUT)
    first += [nodes.start("n2"), nodes.start("n3")]
    assert wait_for(lambda: settled(redis, first), START_TIMEOUT, 0.02)
    settled_at = time.time()
    n2 = node_ids(redis, first)["n2"]
    assert wait_for(
        lambda: {r["node"] for r in site.pages()} >= {"n1", "n2", "n3"},
        START_TIMEOUT,
    )
    assert wait_for(  # a fifth of the way or more, with requests in flight on n2
        lambda: len(site.pages()) >= total // 5 and leases_of(redis, n2),
        START_TIMEOUT,
        0.005,
    )
    nodes.nodes["n2"].process.send_signal(signal.SIGKILL)
    nodes.nodes["n2"].process.wait(10)
    killed_at = time.time()
    orphaned = leases_of(redis, n2)  # its owner keys outlive it by a TTL
    assert len(site.pages()) < total  # killed mid-crawl
    nodes.start("n4")
    assert nodes.wait_all(EXIT_TIMEOUT), "the nodes did not exit by themselves"
    return Crawl(
        site.pages(),
        {label: node.output() for label, node in nodes.nodes.items()},
        {label: node.process.returncode for label, node in nodes.nodes.items()},
        settled_at,
        killed_at,
        orphaned,
    )


def test_a_cluster_hands_hosts_over_on_a_kill_and_a_join_and_loses_nothing(
    redis, redis_url, tmp_path
):
    with (
        running_site(hosts=HOSTS, pages=PAGES, links=4, latency=0.05) as site,
        cluster(redis_url, tmp_path) as nodes,
    ):
        crawl = crawl_with_a_kill_and_a_join(redis, nodes, site)
        fetches = page_fetches(site)
    for label in SURVIVORS:
        assert crawl.exits[label] == 0, crawl.outputs[label][-3000:]
        assert stat(crawl.outputs[label], "finish_reason") == "finished", label
    assert set(fetches) == set(bfs_depths(site.spec, [(0, 0)]))  # nothing lost
    assert_only_the_killed_nodes_requests_were_fetched_again(crawl, fetches)
    assert_one_node_a_host_at_a_time(crawl)
    # Takeover: hosts the killed node was crawling were finished by others.
    by_host = crawl.by_host()
    killed_hosts = {h for h, rows in by_host.items() if any(n == "n2" for _, n in rows)}
    taken_over = {h for h in killed_hosts if by_host[h][-1][0] > crawl.killed_at}
    assert taken_over, "n2 was killed after its hosts were done: not mid-crawl"
    # The node that joined took a share and worked on it.
    assert any(n == "n4" for rows in by_host.values() for _, n in rows)
    assert stat(crawl.outputs["n4"], "frontier/dequeued")


def assert_only_the_killed_nodes_requests_were_fetched_again(
    crawl: Crawl, fetches: Counter[tuple[int, int]]
) -> None:
    """Refetched: only pages n2 had in flight (leased) when killed, each once."""
    refetched = {page: count - 1 for page, count in fetches.items() if count > 1}
    assert sum(refetched.values()) <= crawl.orphaned, refetched
    assert all(count == 1 for count in refetched.values()), refetched
    twice = Counter((row["host"], row["path"]) for row in crawl.pages)
    first = crawl.first_fetcher()
    assert {first[page] for page, count in twice.items() if count > 1} <= {"n2"}
    recovered = sum(
        stat(crawl.outputs[label], "frontier/leases_recovered") or 0
        for label in SURVIVORS
    )
    assert recovered >= crawl.orphaned  # put back by the survivors


def assert_one_node_a_host_at_a_time(crawl: Crawl) -> None:
    """Fetches of a host are never closer than the delay, whichever nodes make them,
    and a host changes node only with the membership: at most 4 times (n2 and n3
    joining n1, the kill, the join), and once the first three settled, only away
    from the killed node (after the kill) or to the node that joined."""
    for host, rows in crawl.by_host().items():
        gaps = [b[0] - a[0] for a, b in itertools.pairwise(rows)]
        assert min(gaps, default=DELAY) >= DELAY, host
        assert len(handovers(rows)) <= 4, (host, handovers(rows))
        late = handovers([r for r in rows if r[0] >= crawl.settled_at + IN_FLIGHT])
        assert len(late) <= 2, (host, late)
        for t, before, after in late:
            assert before == "n2" or after == "n4", (host, late)
            assert before != "n2" or t > crawl.killed_at, (host, late)


# --- fencing under contention -------------------------------------------------------

# KEYS[1]: a shard's owner key, KEYS[2]: its sequence. ARGV[1]: the new owner.
# Sets the owner and returns the sequence then: every lease id above it and up to
# the next flip's value was popped while ARGV[1] held the key.
FLIP = """
redis.call('SET', KEYS[1], ARGV[1])
return tonumber(redis.call('GET', KEYS[2]) or '0')
"""
CONTENDERS = ("a", "b")
REQUESTS = 1500


def contender_store(redis_url: str) -> FrontierStore:
    settings = Settings()
    settings.setmodule("crawler.defaults")
    settings.update({"FRONTIER_SHARDS": 1, "FRONTIER_HOST_CONCURRENCY": 8})
    config = FrontierConfig.from_settings(settings, "fencing")
    return FrontierStore.on(redis_py.Redis.from_url(redis_url), config)


def pop_until_drained(
    store: FrontierStore,
    node: str,
    popped: list[tuple[int, str, bytes]],
    fenced: list[int],
) -> None:
    """Pop (and ack at once) as node *node* until the shard is empty (bounded)."""
    for _ in range(20 * REQUESTS):
        if store.shards.totals() == (0, 0):
            return
        flushed = store.flush([], [], time.time(), PopOrder(0, node, 0.0))
        if flushed.fenced:
            fenced.append(1)
            continue
        if flushed.popped is not None:
            lease, entry = flushed.popped
            popped.append((int(lease.lease_id), node, entry))
            store.flush([], [(lease, 0.0)], time.time())


def flip_owner(
    redis: redis_py.Redis, store: FrontierStore, flips: list[tuple[int, str]],
    stop: threading.Event,
) -> None:  # fmt: skip
    """Give the shard to a, b, a, ... every millisecond or so until *stop*."""
    flip = redis.register_script(FLIP)
    keys = [store.shards.keys[0].owner, store.shards.keys[0].sequence]
    while not stop.is_set():
        owner = CONTENDERS[len(flips) % 2]
        flips.append((int(flip(keys=keys, args=[owner])), owner))
        time.sleep(0.001)


@dataclass
class Contention:
    """What the poppers and the flipper did: (lease id, node, entry) of each pop,
    how many pops were fenced, and (sequence then, owner) of each flip."""

    popped: list[tuple[int, str, bytes]] = field(default_factory=list)
    fenced: list[int] = field(default_factory=list)
    flips: list[tuple[int, str]] = field(default_factory=list)


def contend(redis: redis_py.Redis, setup: FrontierStore, redis_url: str) -> Contention:
    """Both contenders pop until the shard is drained while the owner flips."""
    seen = Contention()
    stores = {node: contender_store(redis_url) for node in CONTENDERS}
    stop = threading.Event()
    flipper = threading.Thread(target=flip_owner, args=(redis, setup, seen.flips, stop))
    poppers = [
        threading.Thread(
            target=pop_until_drained, args=(store, node, seen.popped, seen.fenced)
        )
        for node, store in stores.items()
    ]
    flipper.start()
    for thread in poppers:
        thread.start()
    for thread in poppers:
        thread.join(60)
    stop.set()
    flipper.join(10)
    for store in stores.values():
        store.shards.client.close()
    assert not any(thread.is_alive() for thread in (flipper, *poppers))
    return seen


def test_only_the_owner_of_the_moment_pops_while_ownership_flips(redis, redis_url):
    setup = contender_store(redis_url)
    setup.prepare(time.time())
    batch = [
        Pending(0, f"h{i % 40}", level_of(0), "", f'{{"v":1,"u":"r{i}"}}')
        for i in range(REQUESTS)
    ]
    setup.flush(batch, [], time.time())
    try:
        seen = contend(redis, setup, redis_url)
    finally:
        setup.shards.client.close()
    entries = Counter(entry for _, _, entry in seen.popped)
    assert len(entries) == REQUESTS  # every request popped...
    assert set(entries.values()) == {1}  # ...once
    assert {node for _, node, _ in seen.popped} == set(CONTENDERS)
    for lease_id, node, _ in seen.popped:
        holder = [owner for seq, owner in seen.flips if seq < lease_id][-1]
        assert node == holder, (lease_id, node, holder)
    assert seen.fenced, "no pop was refused: the owner did not flip under the poppers"
