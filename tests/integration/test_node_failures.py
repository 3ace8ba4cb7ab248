"""Crawler processes that are killed, misconfigured or cut off from Redis."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from typing import TYPE_CHECKING

import psutil
import pytest

from tests.servers import ROOT, running_site, wait_for
from tests.site import bfs_depths, page_index

if TYPE_CHECKING:
    from pathlib import Path

    import redis as redis_py

    from tests.servers import RunningSite

pytestmark = pytest.mark.integration

CRAWL_TIMEOUT = 120


def scrapy_crawl(*settings: str, seeds: str = "") -> list[str]:
    command = [sys.executable, "-m", "scrapy", "crawl", "bfs", "-s", "LOG_LEVEL=INFO"]
    command += ["-s", "TELNETCONSOLE_ENABLED=False"]
    for name in ("POLITENESS_DAY_DELAY", "POLITENESS_NIGHT_DELAY", "POLITENESS_JITTER"):
        command += ["-s", f"{name}=0"]  # DOWNLOAD_DELAY alone sets the pace
    command += ["-s", "PAGESTORE_URL=", "-s", "RECORDS_DATABASE_URL="]  # no files
    for setting in settings:
        command += ["-s", setting]
    if seeds:
        command += ["-a", f"seeds={seeds}"]
    return command


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=CRAWL_TIMEOUT,
    )


def page_fetches(site: RunningSite) -> Counter[tuple[int, int]]:
    hosts = {f"127.0.0.{2 + i}:{site.spec.port}": i for i in range(site.spec.hosts)}
    return Counter(
        (hosts[row["host"]], page_index(row["path"], site.spec.pages))
        for row in site.pages()
    )


def leased(redis: redis_py.Redis) -> int:
    return sum(redis.zcard(key) for key in redis.scan_iter(match="bfs:*:leases"))


def kill_and_resume(
    redis: redis_py.Redis, redis_url: str, *extra: str
) -> tuple[Counter[tuple[int, int]], set[tuple[int, int]], str]:
    """Crawl the site (with the *extra* settings), SIGKILL the node a third of the
    way with leases out, resume on another node: the page fetches, the pages
    reachable, and the successor's log."""
    with running_site(hosts=4, pages=40, links=4, latency=0.1) as site:
        settings = [
            f"REDIS_URL={redis_url}",
            "FRONTIER_LEASE_TIMEOUT=3",
            "FRONTIER_MAINTENANCE_INTERVAL=0.5",
            "FRONTIER_NODE_TTL=2",  # the killed node's shards free up soon
            *extra,
        ]
        first = subprocess.Popen(
            scrapy_crawl(*settings, seeds=site.seeds[0]),
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        total = len(bfs_depths(site.spec, [(0, 0)]))
        assert wait_for(
            lambda: len(site.pages()) >= total // 3 and leased(redis) > 0,
            timeout=60,
            interval=0.01,
        )
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        assert len(site.pages()) < total  # killed mid-crawl, with leases out

        # No seeds: resume from Redis. Another node (a name of its own) takes over
        # after FRONTIER_NODE_TTL and FRONTIER_LEASE_TIMEOUT; the killed node itself
        # would take back its leases at once (tests/integration/test_node_resume.py).
        second = run(scrapy_crawl(*settings, "FRONTIER_NODE_NAME=successor"))
        assert second.returncode == 0, second.stderr[-2000:]
        return page_fetches(site), set(bfs_depths(site.spec, [(0, 0)])), second.stderr


def test_a_crawl_killed_with_sigkill_resumes_and_loses_nothing(redis, redis_url):
    fetches, reachable, log = kill_and_resume(redis, redis_url)
    assert set(fetches) == reachable  # nothing lost
    refetched = sum(count - 1 for count in fetches.values())
    assert refetched <= 4  # at most what was in flight: one page a host
    assert "expired leases back" in log


def test_unreachable_redis_stops_start_up_with_one_line(tmp_path):
    result = run(scrapy_crawl("REDIS_URL=redis://:s3cret@127.0.0.1:9/0"))
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1, result.stderr[-3000:]
    assert "redis://:***@127.0.0.1:9/0" in errors[0]
    assert "unreachable" in errors[0]
    assert "s3cret" not in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ("FRONTIER_SHARDS=3", "FRONTIER_SHARDS"),
        ("FRONTIER_DEDUP=cuckoo", "FRONTIER_DEDUP"),
        ("DOWNLOAD_DELAY=-1", "DOWNLOAD_DELAY"),
        ("DEPTH_LIMIT=deep", "DEPTH_LIMIT"),
        ("FRONTIER_SPILL=True", "FRONTIER_SPILL"),  # and no database to spill to
    ],
)
def test_a_bad_setting_stops_start_up_with_one_line(redis_url, setting, named):
    result = run(scrapy_crawl(f"REDIS_URL={redis_url}", setting))
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1, result.stderr[-3000:]
    assert named in errors[0]
    assert "Traceback" not in result.stderr


def embedded_servers(directory: Path) -> list[psutil.Process]:
    """redis-server processes working in *directory* (Redis chdirs to its --dir and
    rewrites its command line, so the working directory is what identifies it)."""
    found = []
    for process in psutil.process_iter(["name", "cwd"]):
        if "redis" in (process.info["name"] or "") and process.info["cwd"] == str(
            directory.resolve()
        ):
            found.append(process)
    return found


def test_the_private_redis_starts_and_stops_with_the_crawl(tmp_path):
    directory = tmp_path / "redis"
    with running_site(hosts=2, pages=10) as site:
        result = run(
            scrapy_crawl(
                "REDIS_URL=",
                f"FRONTIER_EMBEDDED_REDIS_DIR={directory}",
                seeds=site.seeds[0],
            )
        )
        assert result.returncode == 0, result.stderr[-2000:]
        assert len(site.pages()) == 20
    assert "Started a private Redis server" in result.stderr
    assert (directory / "appendonly.aof").exists()  # kept for a resume
    assert embedded_servers(directory) == []  # (the next test shows this can fail)


def test_the_private_redis_dies_with_a_killed_crawler(tmp_path):
    directory = tmp_path / "redis"
    with running_site(hosts=2, pages=40) as site:
        crawler = subprocess.Popen(
            scrapy_crawl(
                "REDIS_URL=",
                f"FRONTIER_EMBEDDED_REDIS_DIR={directory}",
                "DOWNLOAD_DELAY=0.2",
                seeds=site.seeds[0],
            ),
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert wait_for(lambda: embedded_servers(directory), timeout=30)
        assert wait_for(lambda: len(site.pages()) >= 2, timeout=30)
        os.kill(crawler.pid, signal.SIGKILL)
        crawler.wait(10)
        assert wait_for(lambda: not embedded_servers(directory), timeout=15)


def test_without_the_depth_middleware_start_up_stops_with_one_line(
    redis_url, site, redis
):
    middlewares = '{"crawler.frontier.acks.FrontierDepthMiddleware": null}'
    result = run(
        scrapy_crawl(
            f"REDIS_URL={redis_url}",
            f"SPIDER_MIDDLEWARES={middlewares}",
            seeds=site.seeds[0],
        )
    )
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1, result.stderr[-3000:]
    assert "crawler.frontier.acks.FrontierDepthMiddleware is not enabled" in errors[0]
    assert "to SPIDER_MIDDLEWARES" in errors[0]
    assert "Traceback" not in result.stderr
    assert site.pages() == []  # nothing fetched
    assert redis.keys("bfs:*") == []  # nothing written


def test_a_project_dict_of_spider_middlewares_keeps_the_depth_middleware(
    redis_url, site
):
    """-s SPIDER_MIDDLEWARES={} replaces the project's dict: the add-on puts the
    frontier's middleware back, and the crawl runs to its end (Scrapy's list of
    enabled middlewares is at DEBUG: crawler/context/quietlogs.py)."""
    result = run(
        scrapy_crawl(
            f"REDIS_URL={redis_url}",
            "SPIDER_MIDDLEWARES={}",
            "DEPTH_LIMIT=1",
            "LOG_LEVEL=DEBUG",
            seeds=site.seeds[0],
        )
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "crawler.frontier.acks.FrontierDepthMiddleware" in result.stderr
    assert site.pages()  # it crawled
