"""`scrapy crawl bfs` tells what happened: a start-up failure is one line, the last
of the output, and status 1 (a malformed REDIS_URL, a directory it cannot write);
a bad seed next to good ones is skipped and the crawl goes on; a crawl that could
fetch nothing exits 3; one Ctrl-C stops it cleanly (0), a second forces it (130)."""

from __future__ import annotations

import queue
import signal
import sqlite3
import subprocess
import threading
import time
from typing import TYPE_CHECKING

import pytest

from crawler.policy.exitcodes import FINISHED, FORCED_SHUTDOWN, NOTHING_FETCHED
from tests.integration.test_honest_exits import (
    assert_one_line_stop,
    crawl_command,
    scrapy_crawl,
)
from tests.integration.test_user_project import closed_port
from tests.servers import ROOT, running_site

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    import redis as redis_py

pytestmark = pytest.mark.integration

# A failed URL is final at once: no later tries, no immediate retries.
NO_RETRIES = {"RETRY_LATER_DELAYS": "", "RETRY_TIMES": "0"}


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("localhost:6379", ["has no scheme: use redis://localhost:6379/0"]),
        ("http://localhost:6379", ["'http'", "use redis://, rediss://"]),
        ("redis://localhost:port", ["bad port"]),
        ("redis://:6379/0", ["names no host"]),
        ("redis://localhost:6379/first", ["database 'first'"]),
    ],
)
def test_a_malformed_redis_url_is_one_line_with_the_fix(tmp_path, url, words):
    result = scrapy_crawl(tmp_path, "-a", "seeds=http://127.0.0.2:9/", redis_url=url)
    assert_one_line_stop(result, f"REDIS_URL {url!r}", *words)
    assert list(tmp_path.iterdir()) == []  # no records database, no page store


def directory_settings(tmp_path: Path, name: str) -> dict[str, str]:
    """*name* set to a place under a file (nothing can be made there)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    inside = blocker / "inside"
    if name == "RECORDS_DATABASE_URL":
        return {name: f"sqlite:///{inside}/pages.db"}
    return {name: str(inside)}


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("PAGESTORE_URL", ["PAGESTORE_URL", "a-file/inside is not writable"]),
        ("WARC_URL", ["WARC_URL", "a-file/inside is not writable"]),
        ("FRONTIER_EMBEDDED_REDIS_DIR", ["FRONTIER_EMBEDDED_REDIS_DIR", "writable"]),
        ("RECORDS_DATABASE_URL", ["RECORDS_DATABASE_URL", "is not writable"]),
    ],
)
def test_a_directory_the_crawl_cannot_write_is_one_line(tmp_path, name, words):
    settings = directory_settings(tmp_path, name)
    result = scrapy_crawl(tmp_path, "-a", "seeds=http://127.0.0.2:9/", **settings)
    assert_one_line_stop(result, *words)


def test_a_page_store_it_cannot_write_stops_before_redis_starts(tmp_path):
    settings = directory_settings(tmp_path, "PAGESTORE_URL")
    result = scrapy_crawl(tmp_path, "-a", "seeds=http://127.0.0.2:9/", **settings)
    assert_one_line_stop(result, "PAGESTORE_URL")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a-file"]


def recorded_urls(tmp_path: Path) -> list[str]:
    connection = sqlite3.connect(tmp_path / "pages.db")
    try:
        return [url for (url,) in connection.execute("SELECT url FROM pages")]
    finally:
        connection.close()


def test_a_bad_seed_beside_a_good_one_is_skipped_and_the_crawl_goes_on(
    tmp_path, redis_url
):
    with running_site(hosts=1, pages=1, links=0) as site:
        good = site.seeds[0]
        result = scrapy_crawl(
            tmp_path, "-a", f"seeds=notaurl,{good}", redis_url=redis_url
        )
    assert result.returncode == FINISHED, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if " ERROR: " in line]
    assert len(errors) == 1, errors
    assert "-a seeds: 'notaurl'" in errors[0]
    assert "skipped" in errors[0]
    assert "'bfs/bad_seeds': 1" in result.stderr
    assert recorded_urls(tmp_path) == [good]


def test_a_bad_line_of_a_seeds_file_is_named_by_its_number(tmp_path, redis_url):
    with running_site(hosts=1, pages=1, links=0) as site:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(f"{site.seeds[0]}\nmailto:x@y\n")
        result = scrapy_crawl(
            tmp_path, "-a", f"seeds_file={seeds}", redis_url=redis_url
        )
    assert result.returncode == FINISHED, result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if " ERROR: " in line]
    assert len(errors) == 1, errors
    assert "seeds.txt line 2" in errors[0]
    assert recorded_urls(tmp_path) == [site.seeds[0]]


def test_a_crawl_that_fetched_nothing_exits_3(tmp_path, redis_url):
    seed = f"http://127.0.0.2:{closed_port()}/"
    result = scrapy_crawl(
        tmp_path, "-a", f"seeds={seed}", redis_url=redis_url, **NO_RETRIES
    )
    assert result.returncode == NOTHING_FETCHED, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert "'finish_reason': 'finished'" in result.stderr


class RunningCrawl:
    """A `scrapy crawl` subprocess whose log lines are read as they come."""

    def __init__(self, command: list[str]) -> None:
        self.process = subprocess.Popen(
            command, cwd=ROOT, stderr=subprocess.PIPE, text=True
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self._queue.put(line)

    def wait_for_line(self, text: str, timeout: float) -> bool:
        """Whether a line with *text* came within *timeout* seconds."""
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            try:
                self.lines.append(self._queue.get(timeout=remaining))
            except queue.Empty:
                return False
        return True

    def finish(self, timeout: float) -> int:
        """The exit status once the process ends (killed after *timeout*), with
        every line of its output read."""
        try:
            self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            self._reader.join(10)
            while not self._queue.empty():
                self.lines.append(self._queue.get())
            assert self.process.stderr is not None
            self.process.stderr.close()
        return self.process.returncode


def interrupted_crawl(
    tmp_path: Path,
    redis: redis_py.Redis,
    answer_after: float,
    interrupt: Callable[[RunningCrawl], None],
) -> tuple[int, list[str]]:
    """A crawl of a site that answers after *answer_after* seconds, *interrupt*-ed
    while its first page is being fetched (leased): its exit status and log."""
    url = redis.connection_pool.connection_kwargs
    redis_url = f"redis://{url['host']}:{url['port']}/{url.get('db', 0)}"
    behave = {0: f"delay:{answer_after}"}
    with running_site(hosts=1, pages=3, links=2, behave=behave) as site:
        command = crawl_command(
            tmp_path, "-a", f"seeds={site.seeds[0]}", redis_url=redis_url
        )
        crawl = RunningCrawl(command)
        try:
            assert wait_for(lambda: any(redis.scan_iter(match="*leases")), 60)
            interrupt(crawl)
        finally:
            status = crawl.finish(answer_after + 60)
    return status, crawl.lines


def wait_for(condition: Callable[[], bool], timeout: float) -> bool:
    """Whether *condition* held within *timeout* seconds (polled)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_one_ctrl_c_stops_the_crawl_cleanly_with_status_0(tmp_path, redis):
    def once(crawl: RunningCrawl) -> None:
        crawl.process.send_signal(signal.SIGINT)

    status, lines = interrupted_crawl(tmp_path, redis, 2, once)
    assert status == FINISHED, lines[-20:]
    assert any("Spider closed (shutdown)" in line for line in lines)


def test_a_second_ctrl_c_forces_the_stop_with_status_130(tmp_path, redis):
    def twice(crawl: RunningCrawl) -> None:
        crawl.process.send_signal(signal.SIGINT)
        assert crawl.wait_for_line("shutting down gracefully", 30)
        crawl.process.send_signal(signal.SIGINT)

    status, lines = interrupted_crawl(tmp_path, redis, 30, twice)
    assert status == FORCED_SHUTDOWN, lines[-20:]
    assert any("forcing unclean shutdown" in line for line in lines)
    assert not any("Spider closed" in line for line in lines)


def assert_stopped_before_crawling(
    result: subprocess.CompletedProcess[str], *words: str
) -> list[str]:
    """Status 1, no traceback, and a line with *words*, the output's last: the
    command stopped before any crawl. The output's lines."""
    assert result.returncode == 1, result.stderr
    output = result.stdout + result.stderr
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if line.strip()]
    for word in words:
        assert word in lines[-1], lines[-5:]
    return lines


def test_an_unknown_spider_is_one_line(tmp_path):
    command = crawl_command(tmp_path)
    command[command.index("bfs")] = "bsf"
    result = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert_stopped_before_crawling(result, "unknown spider 'bsf'", "bfs")


def test_an_unknown_log_level_is_one_line(tmp_path):
    result = scrapy_crawl(tmp_path, "-a", "seeds=http://127.0.0.2:9/", LOG_LEVEL="LOUD")
    lines = assert_stopped_before_crawling(
        result, "LOG_LEVEL 'LOUD' is not a level", "INFO"
    )
    assert len(lines) == 1, lines  # before logging is set up


def test_a_feed_it_cannot_write_is_one_line(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    feed = blocker / "pages.jsonl"
    result = scrapy_crawl(tmp_path, "-a", "seeds=http://127.0.0.2:9/", "-O", str(feed))
    lines = assert_stopped_before_crawling(result, f"cannot write the feed {feed}")
    assert len(lines) == 1, lines  # before logging is set up
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]  # nothing made
