"""Redis goes away mid-crawl and comes back: the crawl waits, then ends by itself."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import pytest
import redis as redis_py

from crawler.frontier.embedded import redis_server_binary
from tests.integration.test_node_failures import page_fetches
from tests.servers import ROOT, running_site, stop, wait_for
from tests.site import bfs_depths

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from tests.servers import RunningSite

pytestmark = pytest.mark.integration

# Bound on a whole crawl, outage included.
CRAWL_TIMEOUT = 60
OUTAGE_SECONDS = 8.0
HOSTS = 4
# Requests in flight at once: one per host (FRONTIER_HOST_CONCURRENCY's default),
# the most an outage may make the crawl fetch twice.
IN_FLIGHT = HOSTS
OUTAGE_LOGGER = "[crawler.frontier.outage]"


class RestartableRedis:
    """A redis-server with its append-only file in *directory*, on one port for
    its whole life: stopped, then started again from that file."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port: int = probe.getsockname()[1]
        self._process: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = [
            redis_server_binary(), "--port", str(self.port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "yes", "--appendfsync", "everysec",
            "--dir", str(self.directory),
        ]  # fmt: skip
        self._process = subprocess.Popen(command, stdout=subprocess.DEVNULL, text=True)
        client = redis_py.Redis.from_url(self.url, socket_connect_timeout=0.2)
        try:
            assert wait_for(lambda: _pings(client), timeout=10)
        finally:
            client.close()

    def stop(self) -> None:
        """SIGTERM: Redis writes its append-only file to disk before it exits."""
        if self._process is not None:
            stop(self._process)
            self._process = None


def _pings(client: redis_py.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis_py.ConnectionError:  # still starting (or loading its file)
        return False


def crawl_command(site: RunningSite, redis_url: str) -> list[str]:
    command = [sys.executable, "-m", "scrapy", "crawl", "bfs", "-s", "LOG_LEVEL=INFO"]
    for setting in (
        f"REDIS_URL={redis_url}",
        "TELNETCONSOLE_ENABLED=False",
        "POLITENESS_DAY_DELAY=0.15",
        "POLITENESS_NIGHT_DELAY=0.15",
        "POLITENESS_JITTER=0",
        "PAGESTORE_DIR=",
        "RECORDS_DATABASE_URL=",
        "FRONTIER_MAINTENANCE_INTERVAL=0.5",
        # Shorter than the outage: the node's heartbeat and shard owner keys expire
        # while Redis is away, and it must claim its shards again.
        "FRONTIER_NODE_TTL=3",
        # Longer than the outage: a lease whose pop reply was lost as Redis stopped
        # comes back in bounded time, and no lease of a page in flight expires.
        "FRONTIER_LEASE_TIMEOUT=15",
    ):
        command += ["-s", setting]
    return [*command, "-a", "scope=seed-hosts", "-a", f"seeds={','.join(site.seeds)}"]


def crawl_through(
    tmp_path: Path, fault: Callable[[RestartableRedis, RunningSite], None]
) -> tuple[subprocess.CompletedProcess[str], int, int]:
    """Crawl the site while *fault* happens to its Redis once a third of the pages
    are fetched; the finished crawl, the pages fetched twice, and missing pages."""
    server = RestartableRedis(tmp_path)
    server.start()
    try:
        with running_site(hosts=HOSTS, pages=40, links=4, latency=0.05) as site:
            crawler = subprocess.Popen(
                crawl_command(site, server.url),
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            reachable = bfs_depths(site.spec, [(i, 0) for i in range(HOSTS)])
            try:
                assert wait_for(lambda: len(site.pages()) >= len(reachable) // 3, 30)
                fault(server, site)
                _, stderr = crawler.communicate(timeout=CRAWL_TIMEOUT)
            finally:
                if crawler.poll() is None:
                    crawler.kill()
                    crawler.communicate()
            fetches = page_fetches(site)
    finally:
        server.stop()
    result = subprocess.CompletedProcess(crawler.args, crawler.returncode, "", stderr)
    missing = len(set(reachable) - set(fetches))
    return result, sum(count - 1 for count in fetches.values()), missing


def outage_lines(stderr: str, level: str) -> list[str]:
    return [line for line in stderr.splitlines() if f"{OUTAGE_LOGGER} {level}:" in line]


def redis_complaints(stderr: str) -> list[str]:
    """WARNING and ERROR lines about Redis or connections, the tracker's aside."""
    pattern = re.compile(r"redis|connection", re.IGNORECASE)
    return [
        line
        for line in stderr.splitlines()
        if re.search(r"\] (WARNING|ERROR|CRITICAL):", line)
        and pattern.search(line)
        and OUTAGE_LOGGER not in line
    ]


def test_a_crawl_waits_out_a_redis_restart_and_finishes(tmp_path):
    def restart(server: RestartableRedis, site: RunningSite) -> None:
        server.stop()
        stopped_at = len(site.pages())
        time.sleep(OUTAGE_SECONDS)  # the outage itself
        # Nothing new is fetched without Redis: at most what was in flight.
        assert len(site.pages()) - stopped_at <= IN_FLIGHT
        server.start()  # same port, same append-only file

    result, refetched, missing = crawl_through(tmp_path, restart)
    assert result.returncode == 0, result.stderr[-3000:]
    assert missing == 0, result.stderr[-3000:]
    assert refetched <= IN_FLIGHT
    warnings = outage_lines(result.stderr, "WARNING")
    assert len(warnings) == 1, result.stderr[-3000:]
    assert "Redis is unreachable" in warnings[0]
    infos = outage_lines(result.stderr, "INFO")
    assert len(infos) == 1, result.stderr[-3000:]
    assert re.search(r"after \d+\.\ds away", infos[0])  # says how long it lasted
    assert redis_complaints(result.stderr) == []
    assert "Traceback" not in result.stderr
    assert "'redis/outages': 1" in result.stderr  # the stats dump


def test_a_crawl_rides_out_its_redis_connections_being_killed(tmp_path):
    def kill_connections(server: RestartableRedis, site: RunningSite) -> None:
        client = redis_py.Redis.from_url(server.url)
        killed = 0
        try:
            for _round in range(10):  # over 3 s of crawling
                killed += client.client_kill_filter(_type="normal")
                time.sleep(0.3)
        finally:
            client.close()
        assert killed >= 3  # the crawler's connections were there to kill

    result, refetched, missing = crawl_through(tmp_path, kill_connections)
    assert result.returncode == 0, result.stderr[-3000:]
    assert missing == 0, result.stderr[-3000:]
    assert refetched <= IN_FLIGHT
    # A killed connection is usually reopened at once by the client, with no outage
    # to report; if one is, it is reported once each way.
    warnings = outage_lines(result.stderr, "WARNING")
    assert len(warnings) <= 1, result.stderr[-3000:]
    assert len(outage_lines(result.stderr, "INFO")) == len(warnings)
    assert redis_complaints(result.stderr) == []
    assert "Traceback" not in result.stderr
