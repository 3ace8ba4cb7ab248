"""A node killed with kill -9 and restarted in place takes back its shards and its
dead leases at once, not after FRONTIER_NODE_TTL / FRONTIER_LEASE_TIMEOUT."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import time
from typing import TYPE_CHECKING

import pytest

from tests.integration.test_node_failures import (
    CRAWL_TIMEOUT,
    leased,
    page_fetches,
    scrapy_crawl,
)
from tests.servers import ROOT, running_site, wait_for
from tests.site import bfs_depths

if TYPE_CHECKING:
    import redis as redis_py

pytestmark = pytest.mark.integration

# Far longer than the test may take: only the resume can bring shards and leases back.
SETTINGS = (
    "FRONTIER_NODE_TTL=600",
    "FRONTIER_LEASE_TIMEOUT=600",
    "FRONTIER_MAINTENANCE_INTERVAL=0.5",
)


def owners(redis: redis_py.Redis) -> set[bytes]:
    return {redis.get(key) for key in redis.scan_iter(match="bfs:*:owner")}


def leases(redis: redis_py.Redis) -> set[tuple[bytes, bytes]]:
    return {
        (key, member)
        for key in redis.scan_iter(match="bfs:*:leases")
        for member in redis.zrange(key, 0, -1)
    }


def kill_holding_leases(
    process: subprocess.Popen[bytes], redis: redis_py.Redis
) -> set[tuple[bytes, bytes]]:
    """kill -9 *process* at a moment it holds leases, and those leases.

    Its hosts may all be waiting out their delays, leasing nothing for a moment:
    the node is frozen (SIGSTOP) to read its leases, and let go again until it
    holds some (at most 100 tries).
    """
    for _ in range(100):
        process.send_signal(signal.SIGSTOP)
        held = leases(redis)
        if held:
            process.send_signal(signal.SIGKILL)
            process.wait(10)
            return held
        process.send_signal(signal.SIGCONT)
        time.sleep(0.02)
    raise AssertionError("the node never held a lease when frozen")


@pytest.mark.parametrize("name", ["", "alpha"], ids=["same-directory", "same-name"])
def test_a_node_restarted_after_kill_9_resumes_at_once(
    redis, redis_url, tmp_path, name
):
    settings = (*SETTINGS, f"FRONTIER_NODE_NAME={name}")
    with running_site(hosts=4, pages=40, links=4, latency=0.1) as site:
        command = scrapy_crawl(f"REDIS_URL={redis_url}", *settings, seeds=site.seeds[0])
        first = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        assert wait_for(lambda: len(site.pages()) >= 20 and leased(redis), 60, 0.01)
        dead_leases = kill_holding_leases(first, redis)
        (node,) = owners(redis)
        log = tmp_path / "second.log"
        with log.open("w") as stderr:
            started = time.monotonic()
            second = subprocess.Popen(
                scrapy_crawl(f"REDIS_URL={redis_url}", *settings),
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
            # Back within seconds (start-up included), far from the 600 s timeouts.
            assert wait_for(lambda: not dead_leases & leases(redis), 30)
            resumed_after = time.monotonic() - started
            assert owners(redis) == {node}  # the same id took its shards back
            assert second.wait(CRAWL_TIMEOUT) == 0
        fetches = page_fetches(site)
    assert resumed_after < 30
    pattern = (
        re.escape(name)
        if name
        else rf"{re.escape(socket.gethostname())}-[0-9a-f]{{8}}-\d+"
    )
    assert re.fullmatch(pattern, node.decode())
    assert set(fetches) == set(bfs_depths(site.spec, [(0, 0)]))  # nothing lost
    text = log.read_text()
    assert f"Node {node.decode()} resumed" in text, text[-3000:]
    assert leased(redis) == 0
