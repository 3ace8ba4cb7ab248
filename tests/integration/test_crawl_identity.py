"""Crawls with an identity: new seeds over another unfinished crawl stop at start
with one line naming it and the ways on; a rerun without seeds resumes it;
FRONTIER_RESET starts over; another FRONTIER_KEY_PREFIX runs beside it; a finished
crawl takes new seeds. The start-up lines say what the crawl is; a running crawl is
found by `scrapy frontier` run in its directory without REDIS_URL."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from crawler.crawlstate.identity import read_identity
from crawler.crawlstate.keys import CrawlKeys
from crawler.crawlstate.running import running_crawl
from tests.integration.test_honest_exits import assert_one_line_stop, scrapy_crawl
from tests.servers import ROOT, running_site, wait_for

if TYPE_CHECKING:
    from pathlib import Path

    import redis as redis_py

pytestmark = pytest.mark.integration

UNFINISHED = ("-s", "CLOSESPIDER_PAGECOUNT=2")


def crawl(
    tmp_path: Path, redis_url: str, *args: str
) -> subprocess.CompletedProcess[str]:
    """`scrapy crawl bfs ARGS` confined to the seeds' hosts, registered under
    *tmp_path*."""
    return scrapy_crawl(
        tmp_path,
        *("-a", "scope=seed-hosts"),
        *("-s", f"FRONTIER_RUNNING_DIR={tmp_path / 'running'}"),
        *args,
        redis_url=redis_url,
    )


def fetched_hosts(site_log: list[dict[str, object]]) -> set[str]:
    return {str(row["host"]).split(":")[0] for row in site_log}


def test_new_seeds_over_an_unfinished_crawl_stop_then_resume_then_renew(
    tmp_path, redis_url, redis: redis_py.Redis
):
    with running_site(hosts=2, pages=10, links=3, cross=0) as site:
        first = crawl(tmp_path, redis_url, "-a", f"seeds={site.seeds[0]}", *UNFINISHED)
        assert first.returncode == 0, first.stderr
        assert "New crawl, started" in first.stderr
        hosts_before = len(site.pages())

        other = crawl(tmp_path, redis_url, "-a", f"seeds={site.seeds[1]}")
        assert_one_line_stop(
            other,
            "another unfinished crawl",
            "'bfs'",
            site.seeds[0],
            "queued",
            "rerun without seeds",
            "FRONTIER_RESET=1",
            "FRONTIER_KEY_PREFIX=NAME",
        )
        assert len(site.pages()) == hosts_before  # nothing fetched
        assert fetched_hosts(site.pages()) == {site.host(0).split(":")[0]}

        resumed = crawl(tmp_path, redis_url)  # no seeds: the crawl there goes on
        assert resumed.returncode == 0, resumed.stderr
        assert "Resumed (started" in resumed.stderr
        assert "'finish_reason': 'finished'" in resumed.stderr

        renewed = crawl(tmp_path, redis_url, "-a", f"seeds={site.seeds[1]}")
        assert renewed.returncode == 0, renewed.stderr
        assert "New seeds over a finished crawl" in renewed.stderr
        assert site.host(1).split(":")[0] in fetched_hosts(site.pages())
    identity = read_identity(redis, CrawlKeys("bfs"))
    assert identity is not None
    assert identity.seeds == (site.seeds[1],)


def test_the_same_seeds_resume_reset_starts_over_a_prefix_runs_beside(
    tmp_path, redis_url, redis: redis_py.Redis
):
    with running_site(hosts=2, pages=10, links=3, cross=0) as site:
        seeds = ("-a", f"seeds={site.seeds[0]}")
        assert crawl(tmp_path, redis_url, *seeds, *UNFINISHED).returncode == 0
        again = crawl(tmp_path, redis_url, *seeds, *UNFINISHED)
        assert again.returncode == 0, again.stderr
        assert "Resumed (started" in again.stderr

        beside = crawl(
            tmp_path,
            redis_url,
            *("-a", f"seeds={site.seeds[1]}", "-s", "FRONTIER_KEY_PREFIX=other"),
        )
        assert beside.returncode == 0, beside.stderr
        assert "Crawl 'other' (spider bfs, key prefix 'other')" in beside.stderr
        bfs = read_identity(redis, CrawlKeys("bfs"))
        assert bfs is not None
        assert bfs.seeds == (site.seeds[0],)  # the unfinished crawl is left be

        reset = crawl(
            tmp_path,
            redis_url,
            *("-a", f"seeds={site.seeds[1]}", "-s", "FRONTIER_RESET=1"),
        )
        assert reset.returncode == 0, reset.stderr
        assert "New crawl, started" in reset.stderr
    identity = read_identity(redis, CrawlKeys("bfs"))
    assert identity is not None
    assert identity.seeds == (site.seeds[1],)


def test_the_start_up_lines_say_what_the_crawl_is(tmp_path, redis_url):
    with running_site(hosts=2, pages=3, links=0, cross=0) as site:
        command = [
            *(sys.executable, "-m", "scrapy", "crawl", "bfs"),
            *("-a", f"seeds={site.seeds[0]},{site.seeds[1]}", "-a", "scope=seed-hosts"),
            *("-s", f"REDIS_URL={redis_url}", "-s", "FRONTIER_RUNNING_DIR="),
            *("-s", "POLITENESS_DAY_DELAY=6", "-s", "POLITENESS_NIGHT_DELAY=3"),
            *("-s", "POLITENESS_JITTER=0", "-s", "DEPTH_LIMIT=4"),
            *("-s", "DOWNLOAD_DELAY=0.01", "-s", "CLOSESPIDER_PAGECOUNT=1"),
            *("-s", "ROBOTSTXT_OBEY=False", "-s", "TELNETCONSOLE_ENABLED=False"),
            *("-s", "RECORDS_DATABASE_URL=", "-s", "PAGESTORE_URL="),
        ]
        result = subprocess.run(
            command, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
        )
    assert result.returncode == 0, result.stderr
    log = result.stderr
    assert (
        "Crawl 'bfs' (spider bfs, key prefix 'bfs') in Redis redis://127.0.0.1:" in log
    )
    assert "(named by the settings)" in log
    assert "New crawl, started" in log
    assert f"Seeds: {site.seeds[0]}, {site.seeds[1]}; scope seed-hosts" in log
    assert "depth limit 4" in log
    assert "6 s by day (08:00-22:00 host time; POLITENESS_DAY_DELAY, -s)" in log
    assert "3 s by night (POLITENESS_NIGHT_DELAY, -s)" in log
    assert "never below 0.01 s (POLITENESS_MIN_DELAY, DOWNLOAD_DELAY in -s)" in log
    # 2 seed hosts x 60 / 6 s by day, x 60 / 3 s by night.
    assert "Expect about 20 pages a minute by day, 40 by night (2 seed hosts" in log


def frontier_command(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`scrapy frontier ARGS` run in the crawl's directory, no Redis named."""
    return subprocess.run(
        [
            *(sys.executable, "-m", "scrapy", "frontier", *args),
            *("-s", f"FRONTIER_RUNNING_DIR={tmp_path / 'running'}"),
            *("-s", f"FRONTIER_EMBEDDED_REDIS_DIR={tmp_path / 'redis'}"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_commands_find_the_running_crawl_and_say_which_redis(tmp_path, redis_url):
    running = tmp_path / "running"
    with running_site(hosts=1, pages=3, links=0) as site:
        command = [
            *(sys.executable, "-m", "scrapy", "crawl", "bfs"),
            *("-a", f"seeds={site.seeds[0]}", "-a", "scope=seed-hosts"),
            *("-s", f"REDIS_URL={redis_url}", "-s", f"FRONTIER_RUNNING_DIR={running}"),
            *("-s", f"FRONTIER_EMBEDDED_REDIS_DIR={tmp_path / 'redis'}"),
            *("-s", "FRONTIER_CLOSE_WHEN_DRAINED=False", "-s", "ROBOTSTXT_OBEY=False"),
            *("-s", "POLITENESS_DAY_DELAY=0", "-s", "POLITENESS_NIGHT_DELAY=0"),
            *("-s", "TELNETCONSOLE_ENABLED=False"),
        ]
        log = (tmp_path / "crawl.log").open("wb")
        process = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log
        )
        try:
            assert wait_for(lambda: running_crawl(running, "bfs") is not None, 60)
            entry = next(running.glob("bfs.*.json"))
            assert entry.stat().st_mode & 0o777 == 0o600
            assert json.loads(entry.read_text())["redis_url"] == redis_url
            source = f"Redis {redis_url} (of the crawl running as pid {process.pid})"
            status = frontier_command(tmp_path, "status").stdout.splitlines()
            assert status[0] == f"Crawl 'bfs' in {source}", status
            retry = frontier_command(tmp_path, "retry", "--failed").stdout
            assert retry.splitlines()[0] == (
                f"0 failed requests of crawl 'bfs' queued again ({source})"
            ), retry
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(60)
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
                log.close()
    assert running_crawl(running, "bfs") is None
    assert not list(running.glob("*.json"))  # removed at close
