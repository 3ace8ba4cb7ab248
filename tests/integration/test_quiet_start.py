"""A default `scrapy crawl bfs` is quiet: a few lines at start, no WARNING for a
feature left off, no item dumps, no library DEBUG chatter; a misspelled setting and
scrapy-redis leftovers are named at start with what to set, and the crawl goes on."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from crawler.policy.scrapyredis import SCRAPY_REDIS_REPLACEMENTS
from tests.servers import ROOT, running_site

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from tests.servers import RunningSite

pytestmark = pytest.mark.integration

# Seconds one crawl of the small site may take, start-up included.
CRAWL_TIMEOUT = 120.0
# The start-up budget (issue 22): fewer lines than this before the crawl ends.
START_LINES = 30
# What every crawl here sets: the local site at full speed, one level deep. The
# placeholder USERAGENT_CONTACT stays: it is warned of only at the first host off
# this machine, which a crawl of loopback sites never reaches.
SETTINGS = (
    "POLITENESS_DAY_DELAY=0",
    "POLITENESS_NIGHT_DELAY=0",
    "DEPTH_LIMIT=1",
)


@pytest.fixture
def site() -> Iterator[RunningSite]:
    with running_site(hosts=1, pages=4, links=2, cross=0.0) as running:
        yield running


def scrapy_crawl(
    directory: Path, site: RunningSite, *settings: str
) -> subprocess.CompletedProcess[str]:
    """`scrapy crawl bfs -a seeds=SITE` in *directory* with this project's settings
    (its storage under .crawl/ there, as a user's first run), to its end."""
    command = [sys.executable, "-m", "scrapy", "crawl", "bfs"]
    command += ["-a", f"seeds={site.seeds[0]}"]
    for setting in (*SETTINGS, *settings):
        command += ["-s", setting]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    env |= {"PYTHONPATH": str(ROOT), "SCRAPY_SETTINGS_MODULE": "crawler.settings"}
    done = subprocess.run(
        command,
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=CRAWL_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


def lines_before_closing(log: str) -> list[str]:
    """The log's lines before the spider closes: start-up, and the crawl of pages
    that log nothing at INFO."""
    lines = log.splitlines()
    ends = [i for i, line in enumerate(lines) if "Closing spider" in line]
    assert ends, log
    return lines[: ends[0]]


def test_a_default_crawl_prints_under_30_lines_before_it_ends(
    site: RunningSite, tmp_path: Path
) -> None:
    done = scrapy_crawl(tmp_path, site)
    start = lines_before_closing(done.stderr)
    assert len(start) < START_LINES, "\n".join(start)
    assert site.pages(), "the crawl fetched nothing: the count would mean nothing"


def test_a_default_crawl_logs_no_warning_and_no_item(
    site: RunningSite, tmp_path: Path
) -> None:
    log = scrapy_crawl(tmp_path, site).stderr
    assert [line for line in log.splitlines() if " WARNING: " in line] == []
    assert "Scraped from" not in log
    assert "PageRecord(" not in log
    assert " DEBUG: " not in log


def test_debug_shows_scrapy_listings_but_not_library_chatter(
    site: RunningSite, tmp_path: Path
) -> None:
    log = scrapy_crawl(tmp_path, site, "LOG_LEVEL=DEBUG").stderr
    assert "[scrapy.middleware] DEBUG: Enabled downloader middlewares:" in log
    assert "[scrapy.core.scraper] DEBUG: Scraped from" in log  # DEBUG is DEBUG
    assert "[redis" not in log


def test_library_debug_lines_come_back_when_asked(
    site: RunningSite, tmp_path: Path
) -> None:
    """The control of the test above: redis-py does log at DEBUG in such a crawl."""
    log = scrapy_crawl(
        tmp_path, site, "LOG_LEVEL=DEBUG", "QUIET_LIBRARIES=False"
    ).stderr
    assert "[redis.connection] DEBUG: " in log


def test_a_misspelled_setting_and_scrapy_redis_leftovers_are_named(
    site: RunningSite, tmp_path: Path
) -> None:
    leftovers = [f"{name}=1" for name in SCRAPY_REDIS_REPLACEMENTS]
    done = scrapy_crawl(tmp_path, site, "POLITENESS_DAY_DELEY=3", *leftovers)
    warnings = [line for line in done.stderr.splitlines() if " WARNING: " in line]
    assert (
        "Unknown setting POLITENESS_DAY_DELEY (did you mean POLITENESS_DAY_DELAY?): "
        "ignored"
    ) in "\n".join(warnings)
    for name in SCRAPY_REDIS_REPLACEMENTS:
        said = [
            line for line in warnings if f"WARNING: {name} is a scrapy-redis" in line
        ]
        assert len(said) == 1, (name, warnings)
    assert (
        "SCHEDULER_PERSIST is a scrapy-redis setting, ignored here; instead: "
        "FRONTIER_PERSIST (default True: a rerun resumes; FRONTIER_RESET=True "
        "starts over)"
    ) in done.stderr
    assert site.pages(), "a typo does not stop the crawl"
