"""`scrapy frontier web` and `scrapy frontier status`, run as an operator would: the
dashboard loaded in headless Chromium during a crawl of the local site and after
it, its numbers read from the dumped DOM and checked against `status`."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest
from parsel import Selector

from crawler.crawlstate.keys import CrawlKeys
from tests.integration.test_node_commands import node_cluster  # noqa: F401 (a fixture)
from tests.integration.test_redis_cluster import redis_cluster  # noqa: F401 (a fixture)
from tests.servers import ROOT, running_site, stop, wait_for

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

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
    "PAGESTORE_URL": "",
    "BFS_SCOPE": "seed-hosts",
    "RETRY_LATER_DELAYS": "",  # failures are final at once: the crawl ends
    # No soft-404 probe: it would cost each host one more delay (10 s by day).
    "TRAPS_SOFT_404": False,
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
            stop(crawl)


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
    assert lines[0] == f"Crawl 'bfs' in Redis {redis_url} (named by the settings)"
    assert lines[1].startswith("Crawl 'bfs': finished, 8 shards"), lines
    assert "1 node alive, idle" in lines[1]
    assert any(line.startswith("Queued 0, in flight 0;") for line in lines), lines


# --- the dashboard in a real browser ----------------------------------------------


@contextlib.contextmanager
def dashboard(redis_url: str, *args: str) -> Iterator[str]:
    """`scrapy frontier web` on a free port of WEB_HOST until the block ends; its URL
    (with the #token fragment it prints, if any)."""
    web = subprocess.Popen(
        [sys.executable, "-m", "scrapy", "frontier", "web", "--host", WEB_HOST,
         "--port", "0", *args, *options(redis_url, {**COMMON, "DASHBOARD_REFRESH": 1})],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert web.stdout is not None
        line = web.stdout.readline()
        found = re.search(r" at (http://\S+) ", line)
        assert found, (line, web.poll())
        yield found[1]
    finally:
        web.terminate()
        web.wait(10)
        for stream in (web.stdout, web.stderr):
            if stream is not None:
                stream.close()


def browser(url: str, tmp_path: Path, *, screenshot: Path | None = None) -> Selector:
    """The page at *url* as headless Chromium leaves it once its script has read
    the state (the DOM dumped), saving a screenshot to *screenshot* if given."""
    command = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
        f"--user-data-dir={tmp_path / 'chromium'}", "--window-size=1280,1500",
        "--virtual-time-budget=1500",
    ]  # fmt: skip
    if screenshot is not None:
        subprocess.run(
            [*command, f"--screenshot={screenshot}", url],
            capture_output=True, timeout=60, check=True,
        )  # fmt: skip
    result = subprocess.run(
        [*command, "--dump-dom", url],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    page = Selector(text=result.stdout)
    assert page.xpath("//body/@data-loaded").get() == "1", result.stdout[:2000]
    return page


def dom_numbers(page: Selector) -> dict[str, Any]:
    """What the dashboard shows, read from its elements' ids and data attributes."""
    numbers: dict[str, Any] = {"state": page.css("#state::attr(data-state)").get()}
    for name in TOTALS:
        numbers[name] = int(page.css(f"#total-{name}::attr(data-value)").get(""))
    for name in ("ready", "waiting"):
        numbers[name] = int(page.css(f"#hosts-{name}::attr(data-value)").get(""))
    numbers["by_depth"] = {
        int(row.attrib["data-depth"]): int(row.attrib["data-count"])
        for row in page.css("#by-depth tbody tr")
    }
    numbers["fates"] = {
        row.attrib["data-fate"]: int(row.attrib["data-count"])
        for row in page.css("#fates tbody tr[data-fate]")
    }
    return numbers


TOTALS = ("done", "fetched", "redirected", "failed", "held", "queued", "in-flight",
          "seeds")  # fmt: skip
STATUS_LINES = {
    "state": re.compile(r"^Crawl 'bfs': (?P<state>[a-z ]+), 8 shards", re.MULTILINE),
    "queue": re.compile(
        r"^Queued (?P<queued>\d+), in flight (?P<in_flight>\d+); hosts ready "
        r"(?P<ready>\d+), waiting (?P<waiting>\d+); seeds not yet taken "
        r"(?P<seeds>\d+)$",
        re.MULTILINE,
    ),
    "done": re.compile(
        r"^Done (?P<done>\d+): fetched (?P<fetched>\d+), redirected "
        r"(?P<redirected>\d+); failed (?P<failed>\d+)(?: \((?P<why>[^)]*)\))?; "
        r"held (?P<held>\d+)$",
        re.MULTILINE,
    ),
}


def status_numbers(redis_url: str) -> dict[str, Any]:
    """What `scrapy frontier status` says, parsed from its text."""
    out = frontier(redis_url, "status").stdout
    numbers: dict[str, Any] = {}
    for name, pattern in STATUS_LINES.items():
        found = pattern.search(out)
        assert found, (name, out)
        numbers |= {k: v for k, v in found.groupdict().items() if v is not None}
    numbers = {k: v if k in {"state", "why"} else int(v) for k, v in numbers.items()}
    numbers["in-flight"] = numbers.pop("in_flight")
    why = numbers.pop("why", "")
    numbers["fates"] = {
        fate: int(count) for fate, count in (p.split() for p in why.split(", ") if p)
    }
    table = out.partition("depth  queued+in flight\n")[2]
    numbers["by_depth"] = {
        int(depth): int(count)
        for depth, count in re.findall(
            r"^\s*(\d+)\s+(\d+)$", table.split("Shards")[0], re.MULTILINE
        )
    }
    return numbers


def test_the_dashboard_agrees_with_status_during_and_after_a_crawl(
    redis, redis_url, tmp_path, capsys
):
    """During the crawl the page shows it running, with a count of pages done
    between two `status` runs around it; after, every number is status's."""
    delays = {"POLITENESS_DAY_DELAY": 0.25, "POLITENESS_NIGHT_DELAY": 0.25}
    samples = 0
    with (
        running_site(hosts=3, pages=30, links=4, fates=True) as site,
        crawling(redis_url, site.seeds, **delays) as crawl,
        dashboard(redis_url) as url,
    ):
        # Until the crawl's process has written its meta key, `status` says "no such
        # crawl" (a slow start under load): sampling starts once the crawl exists.
        assert wait_for(lambda: redis.exists(KEYS.meta), 60), "the crawl never started"
        deadline = time.monotonic() + 60
        while crawl.poll() is None and samples < 3 and time.monotonic() < deadline:
            before = status_numbers(redis_url)
            running = tmp_path / "dashboard-running.png"
            shot = None if running.exists() else running
            shown = dom_numbers(browser(url, tmp_path, screenshot=shot))
            after = status_numbers(redis_url)
            if before["state"] == after["state"] == "running" and after["queued"]:
                assert shown["state"] == "running"
                assert before["done"] <= shown["done"] <= after["done"]
                assert shown["fetched"] + shown["failed"] <= shown["done"]
                samples += 1
        assert samples, "the crawl ended before the dashboard could be read"
        assert crawl.wait(90) == 0
        screenshot = tmp_path / "dashboard.png"
        page = browser(url, tmp_path, screenshot=screenshot)
        with capsys.disabled():  # shown in the test output, captured or not
            print(f"\nDashboard screenshots: {running} (during), {screenshot} (after)")
        shown, said = dom_numbers(page), status_numbers(redis_url)
    assert said["state"] == "finished"
    assert said["failed"] > 0  # the fates site's pages fail in several ways
    assert shown == said
    # Pages/min over the last hour: the node's minutes hold the pages it did.
    paced = [
        int(title.removesuffix(" pages/min"))
        for title in page.css("#pace-cluster svg rect title::text").getall()
    ]
    # The pace counts every lease released, a held or retried URL's tries too; done
    # counts URLs with a final fate.
    assert sum(paced) >= said["done"] > 0
    assert not page.css("#pause, #resume")  # read-only: no controls
    if copy := os.environ.get("DASHBOARD_SCREENSHOT"):  # docs/dashboard.png
        shutil.copyfile(running, copy)


def ask(
    url: str, path: str, token: str | None, *, method: str = "POST", host: str = ""
) -> int:
    """The status of a request (POST) of *path* to the dashboard at *url*, with *token* (and
    another Host header than the URL's if *host*)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.netloc, timeout=10)
    try:
        headers = {} if token is None else {"X-Dashboard-Token": token}
        if host:
            headers["Host"] = host
        connection.request(method, path, headers=headers)
        return connection.getresponse().status
    finally:
        connection.close()


def test_controls_need_control_and_the_token(redis, redis_url, tmp_path):
    redis.hset(KEYS.meta, "schema_version", "4")
    redis.rpush(KEYS.seeds, "http://127.0.0.2/")  # work left: pausing shows
    with dashboard(redis_url) as url:
        page = browser(url, tmp_path)
        assert page.css("#state::attr(data-state)").get() == "stopped"
        assert not page.css("#pause, #resume")
        assert ask(url, "/control/pause", "anything-at-all") == 403
        assert ask(url, "/control/pause", None) == 403
    assert not redis.exists(KEYS.control)
    with dashboard(redis_url, "--control", "--token", "0123456789ab") as url:
        assert url.endswith("/#token=0123456789ab")
        page = browser(url, tmp_path)
        assert page.css("#pause")
        assert page.css("#resume")
        assert ask(url, "/control/pause", None) == 403
        assert ask(url, "/control/pause", "0123456789ac") == 403
        assert not redis.exists(KEYS.control)
        rebound = "evil.example:80"  # another site's name pointed at this address
        assert ask(url, "/control/pause", "0123456789ab", host=rebound) == 403
        assert ask(url, "/state.json", None, method="GET", host=rebound) == 403
        assert ask(url, "/state.json", None, method="GET") == 200
        assert not redis.exists(KEYS.control)
        assert ask(url, "/control/pause", "0123456789ab") == 200
        assert redis.hget(KEYS.control, "paused") == b"1"
        page = browser(url, tmp_path)
        assert page.css("#state::attr(data-state)").get() == "paused"
        assert ask(url, "/control/resume", "0123456789ab") == 200
        assert not redis.hexists(KEYS.control, "paused")


def test_a_generated_token_is_printed_in_the_url(redis, redis_url):
    redis.hset(KEYS.meta, "schema_version", "4")
    with dashboard(redis_url, "--control") as url:
        token = url.partition("#token=")[2]
        assert len(token) >= 16
        assert ask(url, "/control/pause", token[:-1]) == 403
        assert ask(url, "/control/pause", token) == 200
    assert redis.hget(KEYS.control, "paused") == b"1"


HOSTILE = [
    "<img src=x onerror=alert(1)>",
    "</script><script>alert(2)</script>",
    '"><b id="total-done" data-value="999">',
]


def test_hostile_host_names_and_node_ids_are_shown_as_text(redis, redis_url, tmp_path):
    redis.hset(KEYS.meta, "schema_version", "4")
    names = [*(host.encode() for host in HOSTILE), b"\xff\xfe<i>"]
    for rank, host in enumerate(names, start=1):
        key = KEYS.traffic("").encode() + host  # the bytes, UTF-8 or not
        counts = {"requests": rank, "4xx": rank, "failures": rank}
        redis.hset(key, mapping={**counts, "reason": host})
        redis.zadd(KEYS.traffic_rank("requests"), {host: rank})
        redis.zadd(KEYS.traffic_rank("failures"), {host: rank})
    entry = {"heartbeat": time.time(), "shards": [0, 1], "pages": 3}
    redis.hset(KEYS.nodes, HOSTILE[0], json.dumps(entry))
    redis.set(KEYS.heartbeat(HOSTILE[0]), "1", px=30_000)
    redis.hset(KEYS.health, HOSTILE[1], "not a record")
    with dashboard(redis_url) as url:
        page = browser(url, tmp_path)
    hosts = page.css("#busiest td.host::text").getall()
    assert hosts == ["\\udcff\\udcfe<i>", *reversed(HOSTILE)]
    assert page.css("#failing td.host::text").getall() == hosts
    requests = page.css("#busiest tbody tr td:nth-child(2)::text").getall()
    assert requests == ["4", "3", "2", "1"]  # each host's own counters were read
    reasons = page.css("#busiest tbody tr td:nth-child(12)::text").getall()
    assert reasons == hosts
    assert page.css("#nodes tbody td::text").get() == HOSTILE[0]
    assert not page.css("img, i, main script")  # no element came from the data
    assert page.css("b::attr(id)").getall() == [  # the page's own <b>s only
        "progress-percent", "total-done", "total-failed", "total-queued",
        "total-in-flight", "hosts-total", "rate-cluster",
    ]  # fmt: skip
    assert page.css("#total-done::attr(data-value)").getall() == ["0"]
    assert page.css("#state::attr(data-state)").get() == "running"  # node starting


@pytest.mark.usefixtures("node_cluster")
def test_the_nodes_panel_shows_each_nodes_capacity_and_load(redis, redis_url, tmp_path):
    redis.hset(KEYS.control, "drain:slow", "1")
    with dashboard(redis_url) as url:
        page = browser(url, tmp_path)
    rows = {
        row.attrib["data-node"]: {
            cell.attrib["data-field"]: cell.css("::text").get()
            for cell in row.css("td[data-field]")
        }
        for row in page.css("#nodes tbody tr")
    }
    assert list(rows) == ["fast", "gone", "junk", "old", "slow"]
    assert rows["fast"] == {
        "weight": "3.50 (measured)", "capacity": "3.50", "concurrency": "16",
        "in-flight": "12", "ready-hosts": "8", "load": "1.25", "doing": "saturated",
        "moves": "2/1",
    }  # fmt: skip
    assert rows["slow"]["capacity"] == "-"  # not measured yet
    assert rows["slow"]["doing"] == "drain asked"
    assert set(rows["old"].values()) == {"-"}  # an entry without issue 24's fields
    fast = page.css("#nodes tbody tr[data-node=fast] td::text").getall()
    assert fast[3] == "5: 0-4"


def test_the_dashboard_reads_a_crawl_on_a_redis_cluster(
    redis_cluster,  # noqa: F811 (the fixture imported above)
    tmp_path,
):
    """Its reads are single-key commands in pipelines: they work on a Cluster."""
    redis_cluster.flush()
    url = redis_cluster.url
    try:
        with running_site(hosts=2, pages=8, links=2) as site:
            with crawling(url, site.seeds) as crawl:
                assert crawl.wait(90) == 0
            with dashboard(url) as page_url:
                shown = dom_numbers(browser(page_url, tmp_path))
            said = status_numbers(url)
    finally:
        redis_cluster.flush()
    assert said["state"] == "finished"
    assert said["fetched"] == 16
    assert shown == said


def test_bad_options_are_one_line(redis_url):
    """Each bad option and setting (tests/unit/test_dashboard_options.py) stops
    `web` the same way: one line, exit status 1."""
    result = frontier(redis_url, "web", "--host", WEB_HOST, "--token", "0123456789ab")
    words = "--token goes with --control"
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("scrapy frontier: ")
    assert words in lines[0]


def test_no_such_crawl_and_the_redis_read_on_the_page_and_in_status(
    redis_url, tmp_path
):
    with dashboard(redis_url) as url:
        page = browser(url, tmp_path)
    assert page.css("#state::attr(data-state)").get() == "no such crawl"
    assert page.css("#prefix::text").get() == "bfs"
    assert page.css("#redis::text").get() == (
        f"; Redis {redis_url} (named by the settings)"
    )
    result = frontier(redis_url, "status")
    assert result.returncode == 1
    assert result.stdout.splitlines()[1].startswith("Crawl 'bfs': no such crawl")


def test_scrapy_frontier_hosts_reads_a_host_name_that_is_not_utf8(redis, redis_url):
    """The readers the dashboard shares with `hosts` pass names as their bytes."""
    host = b"\xff\xfe.example"
    redis.hset(KEYS.traffic("").encode() + host, mapping={"requests": 7, "5xx": 2})
    redis.zadd(KEYS.traffic_rank("requests"), {host: 7})
    redis.hset(KEYS.health, host, '{"e":[],"s":true,"ok":0,"d":0,"p":0}')
    result = frontier(redis_url, "hosts")
    assert result.returncode == 0, result.stderr
    row = result.stdout.splitlines()[1].split()
    assert row[:2] == ["\\udcff\\udcfe.example", "7"]
    assert row[6] == "2"
    assert row[-1] == "slow"
