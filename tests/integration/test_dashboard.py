"""`scrapy frontier web` and `scrapy frontier status`, run as an operator would: the
dashboard loaded in headless Chromium during a crawl of the local site and after
it, its numbers read from the dumped DOM and checked against `status`."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest

from crawler.crawlstate.keys import CrawlKeys
from tests.servers import ROOT, running_site, wait_for

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.integration

KEYS = CrawlKeys("bfs")
SHARDS = 8
# The dashboard's address (this helper's loopback address).
WEB_HOST = "127.0.0.29"
CHROMIUM = "/usr/bin/chromium"
# Settings of every command and crawl here.
COMMON = {"FRONTIER_SHARDS": SHARDS, "TELNETCONSOLE_ENABLED": False}
CRAWL = {
    **COMMON,
    "FRONTIER_MAINTENANCE_INTERVAL": 0.2,
    "POLITENESS_JITTER": 0,
    "ROBOTSTXT_OBEY": False,
    "RECORDS_DATABASE_URL": "",
    "PAGESTORE_DIR": "",
    "BFS_SCOPE": "seed-hosts",
}


def options(redis_url: str, values: dict[str, Any]) -> list[str]:
    pairs = {**values, "REDIS_URL": redis_url}
    return [word for key, value in pairs.items() for word in ("-s", f"{key}={value}")]


def frontier(redis_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "frontier", *args,
         *options(redis_url, COMMON)],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


@contextlib.contextmanager
def crawling(
    redis_url: str, seeds: list[str], **values: Any
) -> Iterator[subprocess.Popen[bytes]]:
    """`scrapy crawl bfs` in its own process until the block ends (killed by pid
    if it is still running then)."""
    crawl = subprocess.Popen(
        [sys.executable, "-m", "scrapy", "crawl", "bfs",
         *options(redis_url, {**CRAWL, **values}), "-a", f"seeds={','.join(seeds)}"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield crawl
    finally:
        if crawl.poll() is None:
            crawl.terminate()
            try:
                crawl.wait(20)
            except subprocess.TimeoutExpired:
                crawl.kill()
                crawl.wait()


# --- status: what is true ---------------------------------------------------------


def test_a_drained_crawl_whose_node_is_still_alive_is_finished(redis_url):
    """A node kept alive (FRONTIER_CLOSE_WHEN_DRAINED=False) after every page is
    done idles: the crawl is finished, not running (issue 15)."""
    with (
        running_site(hosts=1, pages=6, links=2) as site,
        crawling(redis_url, site.seeds, FRONTIER_CLOSE_WHEN_DRAINED=False) as crawl,
    ):
        assert wait_for(lambda: len(site.pages()) == 6, 60)
        done = re.compile(r"^Done 6: fetched 6\b", re.MULTILINE)
        assert wait_for(lambda: done.search(frontier(redis_url, "status").stdout), 30)
        assert crawl.poll() is None  # the node is alive
        result = frontier(redis_url, "status")
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Crawl 'bfs': finished, 8 shards"), lines
    assert "1 node alive, idle" in lines[0]
    assert any(line.startswith("Queued 0, in flight 0;") for line in lines), lines
