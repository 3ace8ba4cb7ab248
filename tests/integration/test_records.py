"""The records pipeline and `scrapy pages`, on whole crawls of the local site, with
SQLite in tmp_path and PostgreSQL (the suite's private server, or TEST_POSTGRES_URL)."""

from __future__ import annotations

import asyncio
import csv
import hashlib
import io
import json
import multiprocessing
import sqlite3
import subprocess
import sys
import urllib.request
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.context.startup import STARTUP_FAILED
from crawler.pipelines.records import RecordsPipeline
from crawler.records.database import RecordsDatabase
from crawler.records.schema import row_of
from crawler.spiders.bfs import BfsSpider
from tests.servers import ROOT, running_site
from tests.site import bfs_depths, url_of
from tests.unit.test_records import (  # noqa: F401 (fixtures)
    database_url,
    record,
)

if TYPE_CHECKING:
    from tests.servers import RunningSite

pytestmark = pytest.mark.integration


async def crawl(settings: dict[str, Any], **kwargs: Any) -> Any:
    crawler = get_crawler(BfsSpider, settings)
    await crawler.crawl_async(**kwargs)
    return crawler


def rows_of(url: str) -> dict[str, dict[str, Any]]:
    database = RecordsDatabase(url).open(create=False)
    try:
        return {row["url"]: row for row in database.query()}
    finally:
        database.close()


def fetched_urls(site: RunningSite) -> list[str]:
    return [f"http://{row['host']}{row['path']}" for row in site.pages()]


def body_of(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310 (loopback)
        body: bytes = response.read()
    return body


def pages(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            *("-m", "scrapy", "pages"),
            *("-s", f"RECORDS_DATABASE_URL={url}"),
            *args,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@deferred_f_from_coro_f
async def test_every_fetched_page_has_one_row(site, settings, database_url):  # noqa: F811
    crawler = await crawl(
        settings(RECORDS_DATABASE_URL=database_url, FRONTIER_BFS_LOOKAHEAD=0),
        seeds=site.seeds[0],
    )
    rows = rows_of(database_url)
    fetched = fetched_urls(site)
    assert sorted(rows) == sorted(fetched)  # one row per fetch, none twice
    assert crawler.stats.get_value("records/written") == len(fetched)
    assert crawler.stats.get_value("records/errors") is None
    depths = bfs_depths(site.spec, [(0, 0)])
    for (host, page), depth in depths.items():
        row = rows[url_of(site.spec, host, page)]
        body = body_of(row["url"])
        assert row["status"] == 200
        assert row["title"] == f"host {host} page {page}"
        assert row["depth"] == depth
        assert row["length"] == len(body)
        assert row["content_hash"] == hashlib.sha256(body).hexdigest()
        assert row["host"] == f"127.0.0.{2 + host}"
        assert row["content_type"].startswith("text/html")
        assert row["error"] is None
        assert row["store_path"] is None  # PAGESTORE_URL is empty
        assert row["fetched_at"].endswith("+00:00")


@deferred_f_from_coro_f
async def test_a_refetch_updates_rows_in_place(site, settings, tmp_path):
    url = f"sqlite:///{tmp_path}/pages.db"
    await crawl(settings(RECORDS_DATABASE_URL=url, DEPTH_LIMIT=1), seeds=site.seeds[0])
    first = rows_of(url)
    await crawl(
        settings(RECORDS_DATABASE_URL=url, DEPTH_LIMIT=1, FRONTIER_RESET=True),
        seeds=site.seeds[0],
    )
    second = rows_of(url)
    assert len(fetched_urls(site)) == 2 * len(first)  # every page fetched again
    assert second.keys() == first.keys()
    for page, row in second.items():
        assert row["fetched_at"] > first[page]["fetched_at"]
        assert row["length"] == first[page]["length"]


@deferred_f_from_coro_f
async def test_a_page_that_failed_is_recorded_with_its_error(site, settings, tmp_path):
    url = f"sqlite:///{tmp_path}/pages.db"
    refused = "http://127.0.0.2:1/gone.html"
    await crawl(
        settings(RECORDS_DATABASE_URL=url, DEPTH_LIMIT=1, RETRY_TIMES=0),
        seeds=f"{site.seeds[1]},{refused}",
    )
    rows = rows_of(url)
    assert rows.keys() == {*fetched_urls(site), refused}
    failed = rows[refused]
    assert failed["status"] == 0
    assert "refused" in failed["error"].lower()
    assert failed["length"] == 0
    assert failed["title"] is None
    assert failed["host"] == "127.0.0.2"
    assert rows[site.seeds[1]]["status"] == 200


@deferred_f_from_coro_f
async def test_batches_are_written_at_their_size_and_at_close(site, settings, tmp_path):
    url = f"sqlite:///{tmp_path}/pages.db"
    crawler = await crawl(
        settings(RECORDS_DATABASE_URL=url, RECORDS_BATCH_SIZE=7), seeds=site.seeds[0]
    )
    assert len(rows_of(url)) == len(fetched_urls(site))
    assert crawler.stats.get_value("records/written") == len(fetched_urls(site))


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("mysql://db/pages", ["RECORDS_DATABASE_URL must be"]),
        ("postgresql://postgres:s3cret@127.0.0.1:1/x", ["cannot open", "127.0.0.1"]),
    ],
)
@deferred_f_from_coro_f
async def test_a_database_that_cannot_open_stops_the_crawl_in_one_line(
    site, settings, caplog, url, words
):
    crawler = await crawl(settings(RECORDS_DATABASE_URL=url), seeds=site.seeds[0])
    assert crawler.stats.get_value("finish_reason") == STARTUP_FAILED
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1, errors
    assert all(word in errors[0] for word in words)
    assert "s3cret" not in caplog.text
    assert "Traceback" not in caplog.text


@deferred_f_from_coro_f
async def test_a_failed_write_is_retried_and_the_item_waits_for_it(tmp_path, caplog):
    """The table vanishes under the pipeline: the write fails, is counted and logged
    once, and process_item returns only after a later try reconnected, created the
    table again and committed the row."""
    url = f"sqlite:///{tmp_path}/pages.db"
    crawler = get_crawler(
        BfsSpider, {"RECORDS_DATABASE_URL": url, "RECORDS_BATCH_SIZE": 2}
    )
    pipeline = RecordsPipeline.from_crawler(crawler)
    assert isinstance(pipeline, RecordsPipeline)
    await pipeline.open_spider()
    with sqlite3.connect(tmp_path / "pages.db") as other:
        other.execute("DROP TABLE pages")
    other.close()
    await pipeline.process_item(record("http://a.example/1"))
    assert crawler.stats.get_value("records/errors") == 1
    assert "pages wait for their records" in caplog.text
    assert sorted(rows_of(url)) == ["http://a.example/1"]  # committed on return
    await pipeline.process_item(record("http://a.example/2"))
    assert sorted(rows_of(url)) == ["http://a.example/1", "http://a.example/2"]
    await pipeline.close_spider()
    assert crawler.stats.get_value("records/written") == 2
    assert crawler.stats.get_value("records/dropped") is None


@deferred_f_from_coro_f
async def test_rows_arriving_during_a_write_share_the_next_transaction(tmp_path):
    """Group commit: 25 items at once with batches of 10 take 3 or 4 transactions
    (the first write takes the first item alone), each item returns committed."""
    url = f"sqlite:///{tmp_path}/pages.db"
    crawler = get_crawler(
        BfsSpider, {"RECORDS_DATABASE_URL": url, "RECORDS_BATCH_SIZE": 10}
    )
    pipeline = RecordsPipeline.from_crawler(crawler)
    assert isinstance(pipeline, RecordsPipeline)
    await pipeline.open_spider()
    assert pipeline._database is not None
    transactions = []
    upsert = pipeline._database.upsert

    def counted(rows):
        transactions.append(len(rows))
        return upsert(rows)

    pipeline._database.upsert = counted  # type: ignore[method-assign]
    urls = [f"http://a.example/{i}" for i in range(25)]
    await asyncio.gather(*(pipeline.process_item(record(u)) for u in urls))
    assert sorted(rows_of(url)) == sorted(urls)
    assert sum(transactions) == 25
    assert max(transactions) <= 10
    assert len(transactions) <= 4, transactions
    await pipeline.close_spider()


def test_no_database_url_means_no_pipeline():
    crawler = get_crawler(BfsSpider, {"RECORDS_DATABASE_URL": ""})
    with pytest.raises(NotConfigured):
        RecordsPipeline.from_crawler(crawler)


@deferred_f_from_coro_f
async def test_the_pages_command_filters_and_exports(settings, database_url):  # noqa: F811
    with running_site(hosts=2, pages=12, links=3) as site:
        await crawl(
            settings(RECORDS_DATABASE_URL=database_url, RETRY_TIMES=0),
            seeds=f"{site.seeds[0]},http://127.0.0.3:1/",
        )
    rows = rows_of(database_url)
    host1 = [u for u, r in rows.items() if r["host"] == "127.0.0.3" and r["status"]]
    assert host1

    result = pages(database_url, "--host", "127.0.0.3", "--format", "json")
    assert result.returncode == 0, result.stderr
    exported = json.loads(result.stdout)
    assert exported == [rows[u] for u in sorted(rows) if rows[u]["host"] == "127.0.0.3"]

    result = pages(database_url, "--status", "0", "--format", "jsonl")
    assert [json.loads(line) for line in result.stdout.splitlines()] == [
        rows["http://127.0.0.3:1/"]
    ]
    assert rows["http://127.0.0.3:1/"]["fate"] == "network_error"
    for args in (["--failed"], ["--fate", "network_error"]):
        result = pages(database_url, *args, "--format", "jsonl")
        assert [json.loads(line)["url"] for line in result.stdout.splitlines()] == [
            "http://127.0.0.3:1/"
        ]

    result = pages(database_url, "--title", "PAGE 1", "--format", "csv")
    parsed = list(csv.DictReader(io.StringIO(result.stdout)))
    expected = sorted(u for u, r in rows.items() if "page 1" in (r["title"] or ""))
    assert [row["url"] for row in parsed] == expected
    assert all(row["status"] == "200" for row in parsed)
    by_url = {row["url"]: row for row in parsed}
    for u in expected:
        assert by_url[u]["title"] == rows[u]["title"]
        assert int(by_url[u]["length"]) == rows[u]["length"]

    result = pages(database_url, "--host", "127.0.0.2", "--limit", "3")
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "url",
        "status",
        "fate",
        "depth",
        "importance",
        "inlinks",
        "length",
        "title",
        "fetched_at",
        "content_signals",
    ]
    assert len(lines) == 4
    assert lines[1].startswith(site.seeds[0])


def test_the_pages_command_writes_a_file(tmp_path):
    url = f"sqlite:///{tmp_path}/pages.db"
    database = RecordsDatabase(url).open()
    database.upsert([row_of(record(f"http://a.example/{i}")) for i in range(3)])
    database.close()
    target = tmp_path / "out.json"
    result = pages(url, "--format", "json", "-o", str(target))
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert [row["url"] for row in json.loads(target.read_text())] == [
        f"http://a.example/{i}" for i in range(3)
    ]


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("", ["RECORDS_DATABASE_URL is empty"]),
        ("sqlite:///{tmp}/missing.db", ["no records database at"]),
        ("mysql://u:s3cret@db/x", ["RECORDS_DATABASE_URL must be"]),
    ],
)
def test_the_pages_command_fails_in_one_line(tmp_path, url, words):
    result = pages(url.format(tmp=tmp_path))
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("scrapy pages: ")
    assert all(word in result.stderr for word in words)
    assert "s3cret" not in result.stderr
    assert not (tmp_path / "missing.db").exists()


def _open_when_all_are_ready(
    url: str, ready: Any, answers: Any
) -> None:  # pragma: no cover (runs in a child process)
    ready.wait()
    try:
        RecordsDatabase(url).open().close()
        answers.put("ok")
    except Exception as exc:  # noqa: BLE001 (the parent asserts on it)
        answers.put(repr(exc))


def test_nodes_creating_one_sqlite_database_at_once_all_open_it(tmp_path):
    """Two nodes of a crawl started together create the same SQLite file: switching
    it to WAL may meet the other's schema write, which SQLite does not wait for (it
    made a node of tests/integration/test_user_project.py fail at start-up)."""
    context = multiprocessing.get_context("fork")
    failures = []
    for round_ in range(20):
        url = f"sqlite:///{tmp_path / f'{round_}.db'}"
        ready, answers = context.Barrier(6), context.Queue()
        processes = [
            context.Process(target=_open_when_all_are_ready, args=(url, ready, answers))
            for _ in range(6)
        ]
        for process in processes:
            process.start()
        failures += [
            a for a in (answers.get(timeout=30) for _ in processes) if a != "ok"
        ]
        for process in processes:
            process.join(timeout=30)
    assert failures == []


@deferred_f_from_coro_f
async def test_rows_name_their_crawl_and_pages_shows_one_crawl(settings, tmp_path):
    url = f"sqlite:///{tmp_path}/pages.db"
    with running_site(hosts=2, pages=3, links=2, cross=0) as site:
        for prefix, seed in (("bfs", site.seeds[0]), ("other", site.seeds[1])):
            await crawl(
                settings(RECORDS_DATABASE_URL=url, FRONTIER_KEY_PREFIX=prefix),
                seeds=seed,
                scope="seed-hosts",
            )
    rows = rows_of(url)
    crawls = {(row["host"], row["crawl"]) for row in rows.values()}
    assert crawls == {("127.0.0.2", "bfs"), ("127.0.0.3", "other")}

    def urls(*args: str) -> tuple[list[str], str]:
        result = pages(url, "--format", "jsonl", *args)
        assert result.returncode == 0, result.stderr
        return [
            json.loads(line)["url"] for line in result.stdout.splitlines()
        ], result.stderr

    shown, said = urls()  # the project's crawl: bfs
    assert shown == sorted(u for u, r in rows.items() if r["crawl"] == "bfs")
    assert "rows of crawl 'bfs' (and of no known crawl)" in said
    shown, said = urls("--crawl", "other")
    assert shown == sorted(u for u, r in rows.items() if r["crawl"] == "other")
    assert "rows of crawl 'other' in sqlite:///" in said
    shown, said = urls("--all-crawls")
    assert shown == sorted(rows)
    assert "rows of every crawl" in said
