"""Progress a person can read (issue 22): the periodic log line of a crawl whose
URLs wait on an unreachable robots.txt, the line of a second node that owns no
host, and the dashboard of a finished crawl whose node idles, in Chromium."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest

from crawler.defaults.frontier import FRONTIER_DISPATCH
from crawler.policy.dispatch import homes
from crawler.policy.hosts import host_of, shard_key
from crawler.policy.sharding import shard_of
from tests.integration.test_dashboard import browser, crawling, dashboard
from tests.servers import ROOT, running_site, stop, wait_for

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.integration

SHARDS = 64
# Settings of every crawl here: a line every half second, no day/night delays.
QUICK = {
    "FRONTIER_SHARDS": SHARDS,
    "FRONTIER_MAINTENANCE_INTERVAL": 0.25,
    "FRONTIER_LOG_INTERVAL": 0.5,
    "TELNETCONSOLE_ENABLED": False,
    "POLITENESS_JITTER": 0,
    "POLITENESS_DAY_DELAY": 0,
    "POLITENESS_NIGHT_DELAY": 0,
    "RECORDS_DATABASE_URL": "",
    "PAGESTORE_URL": "",
    "BFS_SCOPE": "seed-hosts",
}
LINE = re.compile(
    r"Progress: done (?P<done>\d+) \((?P<failed>\d+) failed for good\), queued "
    r"(?P<queued>\d+), held (?P<held>\d+)(?: \(next due at (?P<due>[^)]*)\))?, in "
    r"flight (?P<in_flight>\d+); (?P<rate>\d+) pages/min in the crawl, "
    r"(?P<node_rate>\d+) on this node; elapsed (?P<elapsed>\S+); time to drain what "
    r"is queued now: (?P<eta>[^;]+)(?:; this node idle: (?P<idle>.*))?$"
)


@contextlib.contextmanager
def node(
    redis_url: str, seeds: list[str], log: Path, **values: Any
) -> Iterator[subprocess.Popen[bytes]]:
    """`scrapy crawl bfs`, its log in *log*, until the block ends (then stopped)."""
    pairs = {**QUICK, **values, "REDIS_URL": redis_url, "LOG_FILE": str(log)}
    words = [w for key, value in pairs.items() for w in ("-s", f"{key}={value}")]
    crawl = subprocess.Popen(
        [sys.executable, "-m", "scrapy", "crawl", "bfs", *words,
         "-a", f"seeds={','.join(seeds)}"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield crawl
    finally:
        if crawl.poll() is None:
            stop(crawl)


def progress_lines(log: Path) -> list[dict[str, str]]:
    """The fields of every progress line logged so far."""
    text = log.read_text(errors="replace") if log.exists() else ""
    return [
        found.groupdict()
        for line in text.splitlines()
        if (found := LINE.search(line)) is not None
    ]


def test_held_urls_are_counted_and_the_waiting_node_says_until_when(
    redis_url, tmp_path
):
    """Host 1's robots.txt never answers: its seed is held for a later try. The line
    counts it held, with its next try, and the node, with nothing else to do,
    says it waits on it."""
    log = tmp_path / "crawl.log"
    robots = {1: "status:503"}
    with (
        running_site(hosts=2, pages=3, links=1, cross=0.0, robots=robots) as site,
        node(
            redis_url,
            site.seeds,
            log,
            ROBOTSTXT_OBEY=True,
            ROBOTS_ERROR_RETRY_DELAY=600,
            RETRY_LATER_DELAYS=600,
            FRONTIER_CLOSE_WHEN_DRAINED=False,
        ),
    ):

        def waiting() -> bool:
            lines = progress_lines(log)
            return bool(lines) and (lines[-1]["idle"] or "").startswith("waiting on")

        assert wait_for(waiting, 90), log.read_text(errors="replace")[-3000:]
        last = progress_lines(log)[-1]
    assert last["done"] == "3"  # host 0's pages
    assert last["failed"] == "0"
    assert (last["queued"], last["held"], last["in_flight"]) == ("0", "1", "0")
    assert re.fullmatch(r"\d\d:\d\d:\d\d UTC, in (9|10)m\d\ds", last["due"] or "")
    assert re.fullmatch(r"\d+s", last["elapsed"])
    # Only the held URL is left, and the rate says nothing of when it is due.
    assert last["eta"].startswith("unknown (")
    assert re.fullmatch(
        r"waiting on held URLs: next retry at \d\d:\d\d:\d\d UTC, in (9|10)m\d\ds",
        last["idle"],
    )


def idle_name(other: str, hosts: list[str]) -> str:
    """A node name that, beside *other*, owns none of the shards of *hosts*."""
    taken = {shard_of(shard_key(host, "host"), SHARDS) for host in hosts}
    for index in range(10_000):
        name = f"idle-{index}"
        weights = {other: 1.0, name: 1.0}  # neither is saturated: none measured
        home = homes(weights, SHARDS, FRONTIER_DISPATCH)
        if all(home[s] == other for s in taken):
            return name
    raise AssertionError("no such name in 10,000")


def test_a_second_node_that_owns_no_host_says_why_it_is_idle(redis_url, tmp_path):
    busy_log, idle_log = tmp_path / "busy.log", tmp_path / "idle.log"
    delays = {"POLITENESS_DAY_DELAY": 0.5, "POLITENESS_NIGHT_DELAY": 0.5}
    with running_site(hosts=2, pages=40, links=2, cross=0.0) as site:
        idle = idle_name("busy", [host_of(seed) for seed in site.seeds])
        with node(redis_url, site.seeds, busy_log, FRONTIER_NODE_NAME="busy", **delays):
            # The second node joins a crawl with work: started first, it would find
            # nothing queued and close at once (a drained crawl ends).
            assert wait_for(site.pages, 60)
            with node(redis_url, [], idle_log, FRONTIER_NODE_NAME=idle, **delays):
                reason = "owns 0 of 2 hosts with work: all are in shards of other nodes"

                def said() -> bool:
                    lines = progress_lines(idle_log)
                    return any(line["idle"] == reason for line in lines)

                assert wait_for(said, 90), idle_log.read_text(errors="replace")[-3000:]
    lines = progress_lines(idle_log)
    assert all(line["node_rate"] == "0" for line in lines)  # it fetched nothing
    assert any(int(line["done"]) > 0 for line in lines)  # while the crawl went on


def test_the_dashboard_shows_a_finished_crawl_as_finished_and_why_a_node_idles(
    redis, redis_url, tmp_path
):
    """The node stays alive once the crawl is done (FRONTIER_CLOSE_WHEN_DRAINED
    False): finished, every URL known done, no shards-without-owner list, and the
    node's row says it has nothing left to do."""
    settings = {"FRONTIER_SHARDS": 8, "FRONTIER_CLOSE_WHEN_DRAINED": False}
    with (
        running_site(hosts=2, pages=6, links=2) as site,
        crawling(redis_url, site.seeds, **settings),
        dashboard(redis_url) as url,
    ):
        assert wait_for(lambda: len(site.pages()) == 12, 60)

        def finished() -> bool:
            page = browser(url, tmp_path)
            return page.css("#state::attr(data-state)").get() == "finished"

        assert wait_for(finished, 60, interval=0.5)
        page = browser(url, tmp_path)
    assert page.css("#progress-bar::attr(data-value)").get() == "1"
    assert page.css("#progress-percent::text").get() == "100%"
    assert page.css("#progress-known::attr(data-value)").get() == "12"
    assert page.css("#eta::text").get() == "nothing queued"
    assert page.css("#orphans-line[hidden]")  # nothing to own: no list
    assert page.css("#nodes td.idle::text").getall() == ["nothing left to do"]
    assert page.css("#hosts-total::attr(data-value)").get() == "0"
