"""Honest exits: `scrapy crawl` with no valid seed or a bad spider argument stops at
start with one line and status 1, touching nothing; a refused second crawl on the
same private Redis leaves the running one's lock file alone."""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
import redis as redis_py

from crawler.crawlstate.embedded import EmbeddedRedis, running_url
from tests.servers import ROOT, running_site

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.integration


def crawl_command(
    tmp_path: Path, *args: str, redis_url: str = "", **settings: str
) -> list[str]:
    """`scrapy crawl bfs ARGS`, its storage under *tmp_path*; *settings* (``-s``)
    win over these."""
    options = {
        "REDIS_URL": redis_url,
        "FRONTIER_EMBEDDED_REDIS_DIR": str(tmp_path / "redis"),
        "RECORDS_DATABASE_URL": f"sqlite:///{tmp_path}/pages.db",
        "PAGESTORE_URL": str(tmp_path / "pages"),
        "ROBOTSTXT_OBEY": "False",
        "POLITENESS_DAY_DELAY": "0",
        "POLITENESS_NIGHT_DELAY": "0",
        "TELNETCONSOLE_ENABLED": "False",
    } | settings
    words = [word for k, v in options.items() for word in ("-s", f"{k}={v}")]
    return [sys.executable, "-m", "scrapy", "crawl", "bfs", *args, *words]


def scrapy_crawl(
    tmp_path: Path, *args: str, redis_url: str = "", **settings: str
) -> subprocess.CompletedProcess[str]:
    """`scrapy crawl bfs ARGS` run to its end (bounded)."""
    return subprocess.run(
        crawl_command(tmp_path, *args, redis_url=redis_url, **settings),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def assert_one_line_stop(result: subprocess.CompletedProcess[str], *words: str) -> None:
    """Status 1, no traceback, one ERROR line with *words*: the output's last line."""
    assert result.returncode == 1, result.stderr
    output = result.stdout + result.stderr
    assert "Traceback" not in output
    errors = [line for line in result.stderr.splitlines() if " ERROR: " in line]
    assert len(errors) == 1, errors
    for word in words:
        assert word in errors[0]
    lines = [line for line in output.splitlines() if line.strip()]
    assert lines[-1] == errors[0], lines[-5:]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (
            ["-a", "seeds=not-a-url,ftp://x/"],
            ["no valid seed", "'not-a-url'", "1 more"],
        ),
        (["-a", "seed=http://127.0.0.2:9/"], ["'seed'", "did you mean 'seeds'"]),
        (
            ["-a", "seeds=http://127.0.0.2:9/", "-a", "scope=hosts"],
            ["scope", "'hosts'"],
        ),
        (["-a", "seeds_file=/nonexistent/seeds.txt"], ["seeds_file", "nonexistent"]),
        (
            ["-a", "seeds=http://127.0.0.2:9/", "-s", "BFS_FOLLOW=everything"],
            ["BFS_FOLLOW", "'everything'"],
        ),
        (
            ["-a", "seeds=http://127.0.0.2:9/", "-s", "RENDER_MODE=sometimes"],
            ["RENDER_MODE", "'sometimes'"],
        ),
        (
            ["-a", "seeds=http://127.0.0.2:9/", "-s", "RENDER_CONCURRENCY=0"],
            ["RENDER_CONCURRENCY", ">= 1"],
        ),
        (
            ["-a", "seeds=http://127.0.0.2:9/", "-s", "RENDER_BLOCK=images"],
            ["RENDER_BLOCK", "images"],
        ),
        (
            ["-a", "seeds=http://127.0.0.2:9/", "-s", "FRONTIER_SHARDS=3"],
            ["FRONTIER_SHARDS", "power of two"],
        ),
        (
            ["-a", "seeds=http://127.0.0.2:9/", "-s", "FRONTIER_LOCAL_SEEN_MB=-1"],
            ["FRONTIER_LOCAL_SEEN_MB", "[0, 65536]", "-1"],
        ),
    ],
)
def test_a_bad_start_is_one_line_and_status_1_and_touches_nothing(
    tmp_path, args, words
):
    result = scrapy_crawl(tmp_path, *args)
    assert_one_line_stop(result, *words)
    # No private Redis started, no records database, no page store.
    assert sorted(path.name for path in tmp_path.iterdir()) == []


def test_a_seeds_file_without_a_valid_seed_stops(tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("# nothing here\nmailto:x@y\n")
    result = scrapy_crawl(tmp_path, "-a", f"seeds_file={seeds}")
    assert_one_line_stop(result, "no valid seed", "seeds.txt line 2")


def test_scrapyd_job_argument_is_accepted(tmp_path, redis_url):
    with running_site(hosts=1, pages=3, links=0) as site:
        result = scrapy_crawl(
            tmp_path,
            *("-a", "_job=6487ec79947edab326d6db28a2d86511e8247444"),
            *("-a", f"seeds={site.seeds[0]}"),
            redis_url=redis_url,
        )
        fetched = sorted(row["path"] for row in site.pages())
    assert result.returncode == 0, result.stderr
    assert fetched == ["/", "/p/1.html", "/p/2.html"]
    assert "'finish_reason': 'finished'" in result.stderr


def test_a_refused_second_crawl_leaves_the_lock_file_alone(tmp_path):
    directory = tmp_path / "redis"
    first = EmbeddedRedis(directory).start()  # holds the directory as a crawl does
    try:
        lock = directory / "lock"
        before = lock.read_text()
        assert before == first.url
        result = scrapy_crawl(tmp_path, "-a", "seeds=http://127.0.0.2:9/")
        assert_one_line_stop(result, "another crawl is using the private Redis")
        assert lock.read_text() == before
        assert running_url(directory) == first.url
        client = redis_py.Redis.from_url(first.url)
        try:
            assert client.ping()
        finally:
            client.close()
    finally:
        first.stop()
    second = EmbeddedRedis(directory).start()  # once free, the next one takes it
    try:
        assert (directory / "lock").read_text() == second.url
    finally:
        second.stop()
