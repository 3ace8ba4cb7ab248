"""Running tests/userproject as its user would: ``scrapy crawl SPIDER -O FILE`` in
the project's directory, with the package importable and the crawl's Redis in
``REDIS_URL``; and what such a crawl should fetch, by the test site's link graph."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter, deque
from typing import TYPE_CHECKING, Any

from tests.servers import ROOT
from tests.site import links_of, url_of

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path

    from tests.servers import RunningSite
    from tests.site import SiteSpec

PROJECT = ROOT / "tests" / "userproject"
# Seconds one crawl may take, start-up and end of crawl included.
CRAWL_TIMEOUT = 120.0
# The add-on's default delays are meant for the Web (seconds a host): the local
# site takes the crawl at full speed, as a user's own test run would set it.
FAST = ("POLITENESS_DAY_DELAY=0", "POLITENESS_NIGHT_DELAY=0", "POLITENESS_JITTER=0")
# What the add-on's DEPTH_LIMIT lets through; each site here is shallower.
DEPTH_LIMIT = 17

Page = tuple[int, int]


def copy_project(directory: Path) -> Path:
    """A copy of tests/userproject in *directory*: what a crawl writes in its
    project (node id locks, page store, records) stays there."""
    return shutil.copytree(
        PROJECT,
        directory / "userproject",
        ignore=shutil.ignore_patterns("__pycache__", ".crawl", "*.jsonl"),
    )


def scrapy_command(
    spider: str, *arguments: str, settings: Iterable[str] = (), output: str = ""
) -> list[str]:
    """``scrapy crawl SPIDER -O OUTPUT`` (default SPIDER.jsonl) with *settings*."""
    output = output or f"{spider}.jsonl"
    command = [sys.executable, "-m", "scrapy", "crawl", spider, "-O", output]
    for setting in ("LOG_LEVEL=INFO", "TELNETCONSOLE_ENABLED=False", *settings):
        command += ["-s", setting]
    for argument in arguments:
        command += ["-a", argument]
    return command


def environment(redis_url: str) -> dict[str, str]:
    """The user's shell: the package importable, the crawl's Redis in REDIS_URL
    (which the project's settings read)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    return env | {"PYTHONPATH": str(ROOT), "REDIS_URL": redis_url}


def crawl(
    project: Path,
    redis_url: str,
    spider: str,
    *arguments: str,
    settings: Iterable[str] = FAST,
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """Run ``scrapy crawl`` in *project* to its end (bounded): the process and the
    items it exported."""
    done = subprocess.run(
        scrapy_command(spider, *arguments, settings=settings),
        cwd=project,
        env=environment(redis_url),
        capture_output=True,
        text=True,
        timeout=CRAWL_TIMEOUT,
        check=False,
    )
    return done, exported(project / f"{spider}.jsonl")


def exported(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line]


def hosts_argument(site: RunningSite, count: int) -> str:
    """``hosts=`` of the spiders: the first *count* hosts of the site."""
    return "hosts=" + ",".join(site.host(index) for index in range(count))


def reachable(
    spec: SiteSpec, hosts: set[int], follows: Callable[[Page], bool] = bool
) -> dict[Page, int]:
    """Depth of every page a crawl from host 0's root reaches through links to
    *hosts* that *follows* accepts, by the site's own link graph."""
    depths = {(0, 0): 0}
    queue = deque(depths)
    while queue:
        page = queue.popleft()
        for target in links_of(spec, *page):
            if target[0] in hosts and follows(target) and target not in depths:
                depths[target] = depths[page] + 1
                queue.append(target)
    assert max(depths.values()) < DEPTH_LIMIT, "the site is too deep for this test"
    return depths


def pages_of(spec: SiteSpec) -> dict[str, Page]:
    """URL -> (host, page) of every page of the site."""
    return {
        url_of(spec, host, page): (host, page)
        for host in range(spec.hosts)
        for page in range(spec.pages)
    }


def title(page: Page) -> str:
    return f"host {page[0]} page {page[1]}"


def by_url(items: list[dict[str, Any]], key: str = "url") -> dict[str, dict[str, Any]]:
    """Items by *key*; each value must come once."""
    found = {item[key]: item for item in items if key in item}
    assert len(found) == sum(key in item for item in items), "an item came twice"
    return found


def succeeded(done: subprocess.CompletedProcess[str]) -> bool:
    """Exit status 0, and no ERROR line but Scrapy's own for a URL it gave up
    retrying (a callback that raised, or a request refused, logs one)."""
    errors = [
        line
        for line in done.stderr.splitlines()
        if " ERROR: " in line and "[scrapy.downloadermiddlewares.retry]" not in line
    ]
    return done.returncode == 0 and not errors


def each_page_once(depths: dict[Page, int]) -> Counter[Page]:
    """Each page once, the start URL too: Scrapy's ``start_urls`` requests are
    ``dont_filter``, yet the frontier filters start requests across the crawl, so
    every node yielding them still fetches each once, and a link back to the start
    page finds it seen."""
    return Counter(depths.keys())


def check_page_items(
    spec: SiteSpec, items: list[dict[str, Any]], fetched: Counter[Page]
) -> None:
    """One item per fetch of the ``pages`` spider, each with its title, its trail of
    titles (meta) as long as its depth, and the page that linked to it (cb_kwargs)."""
    pages = pages_of(spec)
    assert Counter(pages[item["url"]] for item in items) == fetched
    for item in items:
        page = pages[item["url"]]
        assert item["title"] == title(page)
        assert len(item["trail"]) == item["depth"], item  # meta, depth after depth
        if item["parent"] is None:  # a start request
            assert (page, item["trail"]) == ((0, 0), []), item
            continue
        parent = pages[item["parent"]]
        assert page in links_of(spec, *parent), item
        assert item["trail"][-1] == title(parent), item


def start(
    argv: list[str], project: Path, redis_url: str, log: Path
) -> subprocess.Popen[bytes]:
    with log.open("wb") as output:
        return subprocess.Popen(
            argv, cwd=project, env=environment(redis_url), stdout=output, stderr=output
        )


def wait(process: subprocess.Popen[bytes]) -> int | None:
    """The exit status of *process*, killed if it outlives CRAWL_TIMEOUT."""
    try:
        return process.wait(CRAWL_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(CRAWL_TIMEOUT)
        return None
