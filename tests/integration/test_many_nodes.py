"""Several crawler processes on one Redis, and Redis servers that want a password."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections import Counter
from typing import TYPE_CHECKING

import pytest
import redis as redis_py

from crawler.crawlstate.embedded import redis_server_binary
from crawler.crawlstate.keys import CrawlKeys
from tests.integration.test_node_failures import page_fetches, run, scrapy_crawl
from tests.servers import ROOT, running_site, wait_for
from tests.site import bfs_depths

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.integration


def test_two_nodes_share_a_crawl_without_fetching_a_page_twice(redis_url):
    two_nodes_share_a_crawl(redis_url, pages=20)


def two_nodes_share_a_crawl(redis_url: str, pages: int) -> None:
    """Two crawler processes, the second joining a running crawl: every page once,
    the delay kept across both, and both did some of the work.

    The crawl must outlast the second node's start-up (3-4 s on a busy machine):
    12 hosts at one fetch per *delay* each fetch at most 30 pages a second.
    """
    delay = 0.4
    # 12 hosts: rendezvous hashing leaves the joining node no host 1 time in 2000.
    with running_site(hosts=12, pages=pages, links=4) as site:
        settings = [
            f"REDIS_URL={redis_url}",
            f"DOWNLOAD_DELAY={delay}",
            "FRONTIER_MAINTENANCE_INTERVAL=0.3",
            "FRONTIER_NODE_TTL=2",
        ]
        nodes = []
        for seeds in (site.seeds[0], ""):  # the second node joins a running crawl
            nodes.append(
                subprocess.Popen(
                    scrapy_crawl(*settings, seeds=seeds),
                    cwd=ROOT,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
            assert wait_for(lambda: len(site.pages()) >= 3, timeout=60)
        outputs = [node.communicate(timeout=120)[1] for node in nodes]
        assert [node.returncode for node in nodes] == [0, 0], outputs[0][-2000:]
        fetches = page_fetches(site)
        gaps = site.gaps_by_host()
    assert fetches == Counter(bfs_depths(site.spec, [(0, 0)]).keys())
    assert min(min(g) for g in gaps.values()) >= delay  # across both nodes
    dequeued = [stat_value(output, "frontier/dequeued") for output in outputs]
    assert all(count > 0 for count in dequeued), dequeued  # both nodes worked


def stat_value(log: str, key: str) -> int:
    for line in log.splitlines():
        if f"'{key}':" in line:
            return int(line.split(":")[-1].strip(" ,}"))
    return 0


@pytest.fixture
def redis_with_password(tmp_path: Path) -> Iterator[str]:
    """A private redis-server that requires the password 'pa55'."""
    port = free_port()
    server = subprocess.Popen(
        [redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1",
         "--requirepass", "pa55", "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    client = redis_py.Redis(port=port, password="pa55")  # noqa: S106 (a test server)
    try:
        assert wait_for(lambda: pings(client), timeout=10)
        yield f"redis://:pa55@127.0.0.1:{port}/0"
    finally:
        client.close()
        server.terminate()
        server.wait(10)


def pings(client: redis_py.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis_py.ConnectionError:
        return False


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_crawl_uses_a_redis_url_with_a_password(redis_with_password):
    with running_site(hosts=2, pages=10) as site:
        result = run(
            scrapy_crawl(f"REDIS_URL={redis_with_password}", seeds=site.seeds[0])
        )
        assert result.returncode == 0, result.stderr[-2000:]
        assert len(site.pages()) == 20


def test_a_wrong_password_stops_start_up_with_one_line(redis_with_password):
    url = redis_with_password.replace("pa55", "wrong")
    result = run(scrapy_crawl(f"REDIS_URL={url}"))
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1, result.stderr[-2000:]
    assert "***" in errors[0]
    assert "wrong" not in result.stderr
    assert "Traceback" not in result.stderr


def test_a_node_that_finds_no_work_waits_while_another_node_is_alive(redis_url):
    """Nodes started together: one brings the seeds, the others must not close
    before it has pushed them."""
    client = redis_py.Redis.from_url(redis_url)
    keys = CrawlKeys("bfs")
    client.set(keys.heartbeat("seeder"), "1", px=5_000)  # alive, no seeds yet
    client.hset(keys.nodes, "seeder", json.dumps({"id": "seeder", "heartbeat": 0}))
    with running_site(hosts=12, pages=8, links=4) as site:
        settings = [
            f"REDIS_URL={redis_url}",
            "FRONTIER_MAINTENANCE_INTERVAL=0.3",
            "FRONTIER_NODE_TTL=10",
        ]
        early = subprocess.Popen(
            scrapy_crawl(*settings),  # no seeds, nothing queued
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(3)
        assert early.poll() is None, "the node closed while another one was alive"
        client.rpush(keys.seeds, site.seeds[0])  # what the seeding node does
        _, log = early.communicate(timeout=120)
        fetches = page_fetches(site)
    client.close()
    assert early.returncode == 0, log[-2000:]
    assert fetches == Counter(bfs_depths(site.spec, [(0, 0)]).keys())


def test_a_lone_node_with_nothing_to_do_closes_at_once(redis_url):
    """The control for the test above: with no other node alive, no waiting."""
    started = time.monotonic()
    alone = run(
        scrapy_crawl(f"REDIS_URL={redis_url}", "FRONTIER_NODE_TTL=30", seeds="")
    )
    assert alone.returncode == 0, alone.stderr[-2000:]
    assert time.monotonic() - started < 30  # did not wait out FRONTIER_NODE_TTL
