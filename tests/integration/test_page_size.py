"""A gzip bomb (1 MB that inflates to 1 GiB) is refused after decompression: the
crawler's memory stays under 1 GB and nothing oversized reaches the page store."""

from __future__ import annotations

import contextlib
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration.test_cluster_of_nodes import stat
from tests.integration.test_node_failures import CRAWL_TIMEOUT, scrapy_crawl
from tests.servers import ROOT, running_site
from tests.site import BOMB_INFLATED, bfs_depths

pytestmark = pytest.mark.integration

BOMB = "/trap/gzip-bomb.html"
ONE_GB_KIB = 1_000_000
MAXSIZE = 16 * 1024 * 1024  # the project's DOWNLOAD_MAXSIZE, as documented


def run_with_peak_rss(command: list[str], log: Path) -> tuple[int, int]:
    """Run *command* to its end (killed after CRAWL_TIMEOUT): its exit code and its
    own peak RSS in KiB.

    The peak is the process' high-water mark (VmHWM), read every 20 ms: it only
    grows. Not wait4's ru_maxrss, which also counts the pytest process it was
    forked from (Linux keeps the high-water mark of the memory left at exec).
    """
    with log.open("w") as stderr:
        process = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr
        )
        status = Path(f"/proc/{process.pid}/status")
        peak, deadline = 0, time.monotonic() + CRAWL_TIMEOUT
        while process.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(OSError, ValueError):
                peak = max(peak, _high_water_kib(status.read_text()))
            time.sleep(0.02)
        if process.poll() is None:
            process.kill()
        return process.wait(10), peak


def _high_water_kib(status: str) -> int:
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def test_a_gzip_bomb_is_refused_and_memory_stays_bounded(redis_url, tmp_path):
    store = tmp_path / "pages"
    with running_site(hosts=1, pages=10, links=3) as site:
        host = site.seeds[0].rstrip("/")
        command = [
            *scrapy_crawl(
                f"REDIS_URL={redis_url}",
                f"PAGESTORE_URL={store}",
                f"RECORDS_DATABASE_URL=sqlite:///{tmp_path}/pages.db",
                seeds=f"{host}{BOMB},{site.seeds[0]}",
            ),
            *("-a", "scope=seed-hosts"),
        ]
        code, peak_kib = run_with_peak_rss(command, tmp_path / "crawl.log")
        served = {row["path"]: row["status"] for row in site.pages()}
        pages = len(bfs_depths(site.spec, [(0, 0)]))
    output = (tmp_path / "crawl.log").read_text()
    assert code == 0, output[-3000:]
    assert served[BOMB] == 200  # the site sent all of it
    assert BOMB_INFLATED > 60 * MAXSIZE  # a bomb indeed
    assert stat(output, "sizes/too_large") == 1
    assert peak_kib < ONE_GB_KIB, f"peak RSS {peak_kib} KiB"
    stored = [path for path in store.rglob("*") if path.is_file()]
    assert len(stored) == pages  # every page of the site, and not the bomb
    assert max(path.stat().st_size for path in stored) < MAXSIZE
    assert not any("bomb" in path.name for path in stored)
