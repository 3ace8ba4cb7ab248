"""kill -9 at random moments, reruns until done: the records database then holds
exactly one row per distinct page the site served, none missing."""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import time
from typing import TYPE_CHECKING

import pytest

from tests.integration.test_node_failures import run, scrapy_crawl
from tests.servers import ROOT, running_site, wait_for
from tests.site import bfs_depths, url_of

if TYPE_CHECKING:
    from pathlib import Path

    from tests.servers import RunningSite

pytestmark = pytest.mark.integration

KILLS = 5


def crawl_command(redis_url: str, database: Path, site: RunningSite) -> list[str]:
    return [
        *scrapy_crawl(
            f"REDIS_URL={redis_url}",
            f"RECORDS_DATABASE_URL=sqlite:///{database}",
            "DOWNLOAD_DELAY=0.1",
            "FRONTIER_LEASE_TIMEOUT=3",
            "FRONTIER_MAINTENANCE_INTERVAL=0.5",
            "FRONTIER_NODE_TTL=2",
            seeds=",".join(site.seeds),
        ),
        *("-a", "scope=seed-hosts"),
    ]


def served_pages(site: RunningSite) -> list[str]:
    """URLs of the pages the site answered 200 (robots.txt left out)."""
    return [
        f"http://{row['host']}{row['path']}"
        for row in site.pages()
        if row["status"] == 200
    ]


def kill_mid_crawl(command: list[str], site: RunningSite, rng: random.Random) -> None:
    """Start a crawl, let it fetch a few pages, kill -9 it at a random moment."""
    before = len(site.pages())
    process = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for(lambda: len(site.pages()) >= before + 5, timeout=60, interval=0.01)
        time.sleep(rng.uniform(0.0, 1.5))
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(10)


def test_kill_9_loses_no_record(redis_url, tmp_path):
    database = tmp_path / "pages.db"
    rng = random.Random(10)
    with running_site(hosts=4, pages=150, links=4, cross=0.2) as site:
        reachable = {
            url_of(site.spec, host, page)
            for host, page in bfs_depths(site.spec, [(i, 0) for i in range(4)])
        }
        command = crawl_command(redis_url, database, site)
        for _kill in range(KILLS):
            kill_mid_crawl(command, site, rng)
        assert len(set(served_pages(site))) < len(reachable)  # killed mid-crawl
        result = run(command)  # the rerun resumes and finishes
        assert result.returncode == 0, result.stderr[-3000:]
        served = set(served_pages(site))
    with sqlite3.connect(database) as connection:
        rows = connection.execute("SELECT url, status FROM pages").fetchall()
    connection.close()
    urls = [url for url, _status in rows]
    assert served == reachable  # every page, after the kills and the rerun
    assert len(set(urls)) == len(urls)  # one row per URL
    missing = sorted(served - set(urls))
    assert not missing, f"{len(missing)} pages served, not recorded: {missing[:5]}"
    assert set(urls) == served
    assert {status for _url, status in rows} == {200}
