"""The URL library's figures (crawler/revisit/duestatus.py) and the Revisits section
of `scrapy frontier status`, on table ``revisits`` rows written here by hand with
next visits chosen around a fixed now: in SQLite, and in PostgreSQL (the suite's
private server, or TEST_POSTGRES_URL)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

import pytest

from crawler.commands.frontier import revisits_section
from crawler.crawlstate.keys import CrawlKeys
from crawler.records.database import RecordsDatabase, RecordsDatabaseError
from crawler.revisit.duestatus import DueStatus, read_due_status
from tests.servers import ROOT
from tests.unit.test_records import (  # noqa: F401 (fixtures)
    database_url,
)

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.integration

NOW = 1_800_000_000.0
HOUR = 3600.0
# Table ``revisits`` as COMMON.md gives it (the same text in both dialects).
REVISITS_TABLE = """
CREATE TABLE revisits (
  url TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  depth INTEGER NOT NULL,
  state TEXT NOT NULL,
  next_visit DOUBLE PRECISION,
  revisit_interval DOUBLE PRECISION NOT NULL,
  first_visit DOUBLE PRECISION NOT NULL,
  last_visit DOUBLE PRECISION NOT NULL,
  last_change DOUBLE PRECISION,
  visits INTEGER NOT NULL,
  checks DOUBLE PRECISION NOT NULL,
  changes DOUBLE PRECISION NOT NULL,
  observed DOUBLE PRECISION NOT NULL,
  failures INTEGER NOT NULL,
  content_hash TEXT,
  etag TEXT,
  last_modified TEXT,
  last_outcome TEXT,
  claimed_until DOUBLE PRECISION NOT NULL DEFAULT 0
)
"""
FIELDS: tuple[str, ...] = (
    "url", "host", "depth", "state", "next_visit", "revisit_interval",
    "first_visit", "last_visit", "visits", "checks", "changes", "observed",
    "failures", "claimed_until",
)  # fmt: skip


def row(
    name: str,
    state: str,
    next_visit: float | None,
    *,
    visits: int = 2,
    last_visit: float = NOW - 24 * HOUR,
    claimed_until: float = 0.0,
) -> tuple[Any, ...]:
    """A library row of http://a.example/<name> (the fields the figures read are
    arguments; the rest are plausible and unread)."""
    return (
        f"http://a.example/{name}", "a.example", 1, state, next_visit, HOUR,
        last_visit - HOUR, last_visit, visits, visits - 1.0, 0.0, HOUR, 0,
        claimed_until,
    )  # fmt: skip


def library(url: str, rows: list[tuple[Any, ...]]) -> None:
    """A records database at *url* (table pages, as a crawl leaves it) whose
    library holds *rows*."""
    database = RecordsDatabase(url).open()
    try:
        with database.transaction() as cursor:
            cursor.execute(REVISITS_TABLE)
    finally:
        database.close()
    add_rows(url, rows)


def add_rows(url: str, rows: list[tuple[Any, ...]]) -> None:
    database = RecordsDatabase(url).open()
    mark = "?" if database.url.dialect == "sqlite" else "%s"
    insert = (
        f"INSERT INTO revisits ({', '.join(FIELDS)}) "  # noqa: S608 (names only)
        f"VALUES ({', '.join([mark] * len(FIELDS))})"
    )
    try:
        with database.transaction() as cursor:
            cursor.executemany(insert, rows)
    finally:
        database.close()


# Due (next_visit <= NOW) and how late: 0, 10, 60 (not overdue: exactly the
# grace), 100 and 1000 s. Median 60, max 1000; overdue (more than 60 s): 2.
ROWS = [
    row("due-0", "active", NOW),
    row("due-10", "active", NOW - 10),
    row("due-60", "active", NOW - 60),
    row("due-100", "active", NOW - 100, claimed_until=NOW + 50),
    row("due-1000", "active", NOW - 1000),
    # Not due: the earliest comes in 30 s. Claimed ahead of time (a claim that
    # has not run out counts whatever the row's time), and one whose claim ran
    # out at NOW exactly (not claimed).
    row("in-30", "active", NOW + 30, claimed_until=NOW + HOUR),
    row("in-500", "active", NOW + 500, claimed_until=NOW),
    # Not revisited: never due, whatever next_visit holds.
    row("gone", "gone", None),
    row("gone-with-a-time", "gone", NOW - 5000),
    row("once", "once", None, visits=1, last_visit=NOW - 10),
    # Revisits in the last hour (visits > 1, last_visit >= NOW - 3600): the
    # boundary counts, a second before it does not, a first visit never does.
    row("revisited-at-boundary", "active", NOW + HOUR, last_visit=NOW - HOUR),
    row("revisited-before", "active", NOW + HOUR, visits=5, last_visit=NOW - HOUR - 1),
    row("visited-once", "active", NOW + HOUR, visits=1, last_visit=NOW - 5),
]


def test_the_figures_of_a_library(database_url):  # noqa: F811
    library(database_url, ROWS)
    assert read_due_status(database_url, now=NOW) == DueStatus(
        now=NOW,
        by_state={"active": 10, "gone": 2, "once": 1},
        due=5,
        overdue=2,
        median_lateness=60.0,
        max_lateness=1000.0,
        claimed=2,
        recent_revisits=1,
        next_due=NOW + 30,
    )


def test_an_even_number_due_has_the_mean_of_the_middle_two(database_url):  # noqa: F811
    rows = [row(f"u{i}", "active", NOW - late) for i, late in enumerate((10, 30))]
    library(database_url, [*rows, row("later", "active", NOW + 7)])
    due = read_due_status(database_url, now=NOW)
    assert due is not None
    assert (due.due, due.overdue) == (2, 0)
    assert (due.median_lateness, due.max_lateness) == (20.0, 30.0)
    assert due.next_due == NOW + 7


def test_nothing_due_has_no_lateness(database_url):  # noqa: F811
    library(database_url, [row("later", "active", NOW + 1), row("x", "gone", None)])
    due = read_due_status(database_url, now=NOW)
    assert due is not None
    assert (due.due, due.overdue, due.median_lateness, due.max_lateness) == (
        0, 0, None, None,
    )  # fmt: skip
    assert due.by_state == {"active": 1, "gone": 1, "once": 0}
    assert due.library == 2


def test_an_empty_library_and_a_state_of_another_version(database_url):  # noqa: F811
    library(database_url, [])
    assert read_due_status(database_url, now=NOW) == DueStatus(
        now=NOW, by_state={"active": 0, "gone": 0, "once": 0}
    )
    add_rows(database_url, [row("x", "paused", NOW - 10)])
    due = read_due_status(database_url, now=NOW)
    assert due is not None
    assert due.by_state == {"active": 0, "gone": 0, "once": 0, "paused": 1}
    assert due.due == 0  # only an active URL is ever due


def test_a_database_without_a_library_has_no_figures(database_url):  # noqa: F811
    RecordsDatabase(database_url).open().close()  # table pages only: revisits off
    assert read_due_status(database_url, now=NOW) is None
    assert revisits_section(database_url, now=NOW) == ""


def test_no_database_has_no_figures(tmp_path: Path) -> None:
    assert read_due_status("", now=NOW) is None
    missing = f"sqlite:///{tmp_path}/none.db"
    assert read_due_status(missing, now=NOW) is None
    assert not (tmp_path / "none.db").exists()  # read-only: nothing created


def test_a_database_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.db").write_bytes(b"not a database at all, " * 100)
    url = f"sqlite:///{tmp_path}/bad.db"
    with pytest.raises(RecordsDatabaseError):
        read_due_status(url, now=NOW)
    section = revisits_section(url, now=NOW)
    assert section.startswith("Revisits: not shown (")
    assert section.count("\n") == 1


def test_the_section_renders_the_figures(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/records.db"
    library(url, ROWS)
    assert revisits_section(url, now=NOW) == (
        f"Revisits (URL library in {url}): 13 URLs (active 10, gone 2, once 1)\n"
        "Due now 5, overdue 2 (due for more than 1m00s); lateness median 1m00s, "
        "max 16m40s\n"
        "Claimed by feeders 2; revisited in the last hour 1\n"
        "Next due: in 30s (2027-01-15 08:00:30 UTC)\n"
    )


def test_the_status_command_shows_the_revisits_section(redis, redis_url, tmp_path):
    redis.hset(CrawlKeys("bfs").meta, "schema_version", "2")  # a crawl that ran
    url = f"sqlite:///{tmp_path}/records.db"
    now = time.time()
    day_ago = now - 24 * HOUR
    library(
        url,
        [
            row("late-10m", "active", now - 600, last_visit=now - 30),
            row("late-2h", "active", now - 2 * HOUR, last_visit=day_ago,
                claimed_until=now + HOUR),
            row("in-3-days", "active", now + 3 * 24 * HOUR + 1800, last_visit=day_ago),
            row("gone", "gone", None, last_visit=day_ago),
        ],
    )  # fmt: skip
    result = frontier_status(redis_url, url)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Crawl 'bfs' in Redis redis://")
    assert lines[1].startswith("Crawl 'bfs': ")
    start = next(i for i, line in enumerate(lines) if line.startswith("Revisits"))
    section = lines[start:]
    assert section[0] == (
        f"Revisits (URL library in {url}): 4 URLs (active 3, gone 1, once 0)"
    )
    # Late by 10 minutes and 2 hours when written, and the command takes seconds.
    assert re.fullmatch(
        r"Due now 2, overdue 2 \(due for more than 1m00s\); lateness median "
        r"1h05m, max 2h00m",
        section[1],
    ), section[1]
    assert section[2] == "Claimed by feeders 1; revisited in the last hour 1"
    assert re.fullmatch(r"Next due: in 3d00h \(.* UTC\)", section[3]), section[3]
    assert len(section) == 4


def test_the_status_command_without_a_library_is_as_before(redis, redis_url, tmp_path):
    redis.hset(CrawlKeys("bfs").meta, "schema_version", "2")
    url = f"sqlite:///{tmp_path}/records.db"
    RecordsDatabase(url).open().close()
    with_pages = frontier_status(redis_url, url)
    without = frontier_status(redis_url, f"sqlite:///{tmp_path}/none.db")
    assert with_pages.returncode == without.returncode == 0
    assert "Revisits" not in with_pages.stdout
    assert with_pages.stdout == without.stdout


def frontier_status(
    redis_url: str, records_url: str
) -> subprocess.CompletedProcess[str]:
    """`scrapy frontier status` in the repository, on the test Redis."""
    options = ["-s", f"REDIS_URL={redis_url}", "-s", "FRONTIER_SHARDS=8"]
    options += ["-s", f"RECORDS_DATABASE_URL={records_url}"]
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "frontier", "status", *options],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
