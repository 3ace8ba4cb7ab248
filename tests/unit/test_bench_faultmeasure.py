"""The fault benchmark's figures, from a hand-written site log and records database."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

import pytest

from bench.faultmeasure import measure, reachable
from bench.procs import SiteShape

if TYPE_CHECKING:
    from pathlib import Path

HOST = "127.0.0.2:8080"
REACH = {f"http://{HOST}/", f"http://{HOST}/p/1.html", f"http://{HOST}/p/2.html"}


def entry(path: str, status: int | None) -> dict[str, object]:
    return {"t": 0.0, "host": HOST, "path": path, "status": status, "node": "n1"}


LOG = [
    entry("/robots.txt", 503),
    entry("/robots.txt", 200),
    entry("/", 200),
    entry("/p/1.html", 503),
    entry("/p/1.html", 200),
    entry("/p/1.html", 200),  # a duplicate
    entry("/p/2.html", None),  # never answered: failed
]


def database(path: Path, rows: list[tuple[object, ...]], *, fate: bool) -> Path:
    with sqlite3.connect(path) as connection:
        if fate:
            connection.execute(
                "CREATE TABLE pages (url TEXT PRIMARY KEY, status, error, fate)"
            )
            connection.executemany("INSERT INTO pages VALUES (?, ?, ?, ?)", rows)
        else:
            connection.execute(
                "CREATE TABLE pages (url TEXT PRIMARY KEY, status, error)"
            )
            connection.executemany("INSERT INTO pages VALUES (?, ?, ?)", rows)
    connection.close()
    return path


@pytest.mark.parametrize("fate", [False, True])
def test_fetched_duplicates_rows_and_fates(tmp_path: Path, fate: bool) -> None:
    rows: list[tuple[object, ...]] = [
        (f"http://{HOST}/", 200, None, "fetched"),
        (f"http://{HOST}/p/2.html", 0, "timed out", "timed_out"),
    ]
    if not fate:
        rows = [row[:3] for row in rows]
    found = measure(LOG, database(tmp_path / "p.db", rows, fate=fate), REACH, 8)
    assert found["fetched_of_reachable"] == "2 / 3"
    assert found["duplicates"] == 1
    assert found["rows_of_fetched"] == "1 / 2"  # /p/1.html has no row
    assert found["fetched_without_row"] == 1
    assert (found["failed"], found["failed_with_fate"]) == (1, 1)
    assert found["requests_by_status"]["robots 503"] == 1


def test_without_a_database_nothing_is_recorded(tmp_path: Path) -> None:
    found = measure(LOG, tmp_path / "missing.db", REACH, 0)
    assert found["rows"] == 0
    assert (found["failed"], found["failed_with_fate"]) == (1, 0)


def test_reachable_is_every_page_of_every_host() -> None:
    urls = reachable(SiteShape(hosts=3, pages=7, links=2, cross=0.2), 8080)
    assert len(urls) == 21
    assert "http://127.0.0.4:8080/p/6.html" in urls
