"""Content signals on a whole crawl of the local site: host 0's robots.txt states
Content-Signal and Content-Usage lines, some pages of both hosts send Content-Usage
or Content-Signal headers. Every page that was served with signals has them, by
source, in its row of the records database (SQLite and PostgreSQL) and in the item
feed, and `scrapy pages --signal` finds exactly those pages; every other page has
none. The expected signals are written out here from the file and the headers the
site serves, never read from the crawler."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.utils.defer import deferred_f_from_coro_f

from tests.integration.test_records import crawl, pages, rows_of
from tests.servers import running_site
from tests.unit.test_records import (  # noqa: F401 (fixtures)
    database_url,
)

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.integration

ROBOTS = """\
# Content signals for everyone; our bot has no group of its own.
User-agent: *
Content-Signal: search=yes, ai-train=no
Content-Usage: /p/ train-ai=n
Content-Usage: /p/2.html train-ai=y
Allow: /
Disallow: /p/5.html

User-agent: otherbot
Content-Signal: search=no
Disallow: /
"""
HEADERS = {
    0: ["3|Content-Usage: search=y"],
    1: [
        "1|Content-Usage: train-ai=n, x-future=maybe",
        "2|Content-Signal: AI-Train=No",
        "3|Content-Usage: Train-AI=n",  # upper case: no Dictionary, skipped
    ],
}
ROBOTS_SIGNAL = {"robots:content-signal": {"search": "yes", "ai-train": "no"}}
# Host 0's pages but /p/5.html (disallowed: never fetched), host 1's six pages.
EXPECTED: dict[tuple[int, str], dict[str, dict[str, str]] | None] = {
    (0, "/"): ROBOTS_SIGNAL,
    (0, "/p/1.html"): {**ROBOTS_SIGNAL, "robots:content-usage": {"train-ai": "n"}},
    (0, "/p/2.html"): {**ROBOTS_SIGNAL, "robots:content-usage": {"train-ai": "y"}},
    (0, "/p/3.html"): {
        **ROBOTS_SIGNAL,
        "robots:content-usage": {"train-ai": "n"},
        "header:content-usage": {"search": "y"},
    },
    (0, "/p/4.html"): {**ROBOTS_SIGNAL, "robots:content-usage": {"train-ai": "n"}},
    (1, "/"): None,
    (1, "/p/1.html"): {"header:content-usage": {"train-ai": "n", "x-future": "maybe"}},
    (1, "/p/2.html"): {"header:content-signal": {"ai-train": "no"}},
    (1, "/p/3.html"): None,
    (1, "/p/4.html"): None,
    (1, "/p/5.html"): None,
}


def listed(database: str, *args: str) -> list[str]:
    """The URLs `scrapy pages ARGS --format jsonl` lists."""
    result = pages(database, *args, "--all-crawls", "--format", "jsonl")
    assert result.returncode == 0, result.stderr
    return [json.loads(line)["url"] for line in result.stdout.splitlines()]


@deferred_f_from_coro_f
async def test_every_page_served_with_signals_has_them_recorded(
    settings,
    tmp_path: Path,
    database_url: str,  # noqa: F811
):
    robots_file = tmp_path / "robots.txt"
    robots_file.write_text(ROBOTS)
    feed = tmp_path / "items.jsonl"
    with running_site(
        hosts=2, pages=6, links=2, robots={0: f"file:{robots_file}"}, headers=HEADERS
    ) as site:
        crawler = await crawl(
            settings(
                ROBOTSTXT_OBEY=True,
                RECORDS_DATABASE_URL=database_url,
                FEEDS={str(feed): {"format": "jsonlines"}},
            ),
            seeds=",".join(site.seeds[:2]),
            scope="seed-hosts",
        )
        roots = site.seeds[:2]
    expected = {
        roots[host].rstrip("/") + path: signals
        for (host, path), signals in EXPECTED.items()
    }
    rows = rows_of(database_url)
    items: dict[str, Any] = {
        item["url"]: item for item in map(json.loads, feed.read_text().splitlines())
    }
    # /p/5.html is never fetched. A link to it queued before host 0's rules were
    # known (from host 1, crawled at the same time) is recorded as refused, with
    # no signals: none apply to a page that cannot be crawled (attach-05 3.1).
    forbidden = roots[0] + "p/5.html"
    for found in (rows, items):
        if forbidden in found:
            refused = found.pop(forbidden)
            assert (refused["fate"], refused["content_signals"]) == (
                "robots_disallowed",
                None,
            )
    assert sorted(rows) == sorted(expected)
    recorded = {
        url: json.loads(row["content_signals"]) if row["content_signals"] else None
        for url, row in rows.items()
    }
    assert recorded == expected
    assert {url: item["content_signals"] for url, item in items.items()} == expected

    stats = crawler.stats
    assert stats.get_value("signals/pages") == sum(1 for s in expected.values() if s)
    assert stats.get_value("signals/robots_lines") == 3  # the * group's lines
    assert stats.get_value("signals/skipped") == 1  # host 1's /p/3.html

    def having(key: str, value: str | None) -> list[str]:
        return sorted(
            url
            for url, signals in expected.items()
            if signals
            and any(
                key in values and value in (None, values[key])
                for values in signals.values()
            )
        )

    assert listed(database_url, "--signal", "ai-train=no") == having("ai-train", "no")
    assert listed(database_url, "--signal", "train-ai=n") == having("train-ai", "n")
    assert listed(database_url, "--signal", "x-future") == having("x-future", None)
    assert listed(database_url, "--signal", "train-ai=n", "--signal", "search=y") == [
        roots[0] + "p/3.html"
    ]
    assert listed(database_url, "--signal", "search=no") == []  # otherbot's only
    table = pages(database_url, "--all-crawls", "--signal", "train-ai=y").stdout
    header, line = table.splitlines()
    assert header.split()[-1] == "content_signals"
    assert line.startswith(roots[0] + "p/2.html")
    assert line.endswith(
        "robots:content-signal ai-train=no,search=yes; robots:content-usage train-ai=y"
    )
