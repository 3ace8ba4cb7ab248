"""Crawls that store their pages in a real S3-compatible server (SeaweedFS,
tests/objectstore.py): every page an object byte for byte, nothing outside the
prefix, nothing lost while the server is away or a node is killed, and no
credential in anything a crawl writes."""

from __future__ import annotations

import io
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from typing import TYPE_CHECKING, Any

import pytest
from scrapy import signals
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler
from warcio.archiveiterator import ArchiveIterator

from crawler.middlewares import warcupload
from crawler.policy.storepath import store_path
from crawler.spiders.bfs import BfsSpider
from tests.nodes import run_nodes
from tests.objectstore import SECRET_KEY, object_store_for_tests
from tests.servers import ROOT, running_site, wait_for
from tests.site import HOSTILE_INDEX

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from crawler.items import PageRecord
    from tests.objectstore import ObjectStoreServer
    from tests.servers import RunningSite

pytestmark = pytest.mark.integration

BUCKET = "pages"
PREFIX = "crawl/one"
CRAWL_TIMEOUT = 180


@pytest.fixture(scope="module")
def object_store() -> Iterator[ObjectStoreServer]:
    with object_store_for_tests() as server:
        server.make_bucket(BUCKET)
        yield server


@pytest.fixture
def bucket(object_store: ObjectStoreServer, request: pytest.FixtureRequest) -> str:
    """A new empty bucket for the test."""
    name = f"t{abs(hash(request.node.nodeid)) % 10**12}-{time.monotonic_ns() % 10**6}"
    object_store.make_bucket(name)
    return name


async def crawl(settings: dict[str, Any], **kwargs: Any) -> tuple[Any, list[Any]]:
    crawler = get_crawler(BfsSpider, settings)
    items: list[PageRecord] = []
    crawler.signals.connect(
        lambda item, **_: items.append(item), signal=signals.item_scraped, weak=False
    )
    await crawler.crawl_async(**kwargs)
    return crawler, items


def served_bodies(site: RunningSite) -> dict[str, bytes]:
    """Each URL the site served a page of (status 200), fetched again here: the
    site's pages are the same on every request."""
    bodies = {}
    for row in site.pages():
        if row["status"] != 200:
            continue
        url = f"http://{row['host']}{row['path']}"
        with urllib.request.urlopen(url, timeout=10) as answer:
            bodies[url] = answer.read()
    return bodies


def expected_objects(bodies: dict[str, bytes], prefix: str) -> dict[str, bytes]:
    return {
        f"{prefix}/{store_path(url).as_posix()}": body for url, body in bodies.items()
    }


@deferred_f_from_coro_f
async def test_every_page_the_site_served_is_an_object_byte_for_byte(
    object_store, bucket, settings
):
    with running_site(hosts=2, pages=15, links=4) as site:
        crawler, items = await crawl(
            settings(**object_store.settings(bucket, PREFIX), BFS_SCOPE="seed-hosts"),
            seeds=site.seeds[0],
        )
        bodies = served_bodies(site)
    assert len(bodies) == len(items) > 10
    assert object_store.objects(bucket) == expected_objects(bodies, PREFIX)
    assert {item.store_path for item in items} == {
        store_path(item.url).as_posix() for item in items
    }
    assert crawler.stats.get_value("pagestore/saved") == len(items)
    assert not crawler.stats.get_value("pagestore/errors")


@deferred_f_from_coro_f
async def test_hostile_urls_stay_under_the_prefix(object_store, bucket, settings):
    with running_site(hosts=1, pages=2, hostile=True) as site:
        _, items = await crawl(
            settings(**object_store.settings(bucket, PREFIX), DEPTH_LIMIT=1),
            seeds=f"http://{site.host(0)}{HOSTILE_INDEX}",
        )
        bodies = served_bodies(site)
    stored = object_store.objects(bucket)
    assert len(items) > 20
    assert all(key.startswith(f"{PREFIX}/http/") for key in stored)
    assert stored == expected_objects(bodies, PREFIX)
    host = site.host(0).replace(":", "_")
    assert f"{PREFIX}/http/{host}/x@/%2E%2E@/%2E%2E@/etc@/passwd" in stored


@deferred_f_from_coro_f
async def test_a_bucket_that_is_not_there_is_made(object_store, settings, caplog):
    name = f"made-{time.monotonic_ns() % 10**9}"
    with running_site(hosts=1, pages=3, links=2) as site:
        _, items = await crawl(
            settings(**object_store.settings(name, PREFIX), BFS_SCOPE="seed-hosts"),
            seeds=site.seeds[0],
        )
    assert len(object_store.objects(name)) == len(items) == 3
    assert f"Made bucket {name}: there was none" in caplog.text


def scrapy_crawl(*settings: str, seeds: str = "") -> list[str]:
    command = [sys.executable, "-m", "scrapy", "crawl", "bfs", "-s", "LOG_LEVEL=INFO"]
    command += ["-s", "TELNETCONSOLE_ENABLED=False", "-s", "BFS_SCOPE=seed-hosts"]
    for name in ("POLITENESS_DAY_DELAY", "POLITENESS_NIGHT_DELAY", "POLITENESS_JITTER"):
        command += ["-s", f"{name}=0"]
    for setting in settings:
        command += ["-s", setting]
    if seeds:
        command += ["-a", f"seeds={seeds}"]
    return command


def node_settings(
    object_store: ObjectStoreServer, bucket: str, redis_url: str, records: Path
) -> list[str]:
    s3 = object_store.settings(bucket, PREFIX)
    return [
        f"REDIS_URL={redis_url}",
        f"RECORDS_DATABASE_URL=sqlite:///{records}",
        *(f"{name}={value}" for name, value in s3.items()),
        "STORAGE_RETRY_ATTEMPTS=2",
        "STORAGE_TIMEOUT=2",
        "FRONTIER_LEASE_TIMEOUT=3",
        "FRONTIER_MAINTENANCE_INTERVAL=0.5",
        "FRONTIER_NODE_TTL=2",
    ]


def record_paths(records: Path) -> dict[str, str | None]:
    with sqlite3.connect(records) as db:
        return dict(db.execute("SELECT url, store_path FROM pages WHERE status = 200"))


def test_two_nodes_store_one_crawl_in_one_bucket(
    object_store, bucket, redis_url, tmp_path
):
    records = tmp_path / "pages.db"
    settings = node_settings(object_store, bucket, redis_url, records)
    settings.append("DOWNLOAD_DELAY=0.3")  # about 9 s: both nodes get hosts
    with running_site(hosts=4, pages=30, links=4, latency=0.05) as site:
        codes, logs = run_nodes(
            ["node0", "node1"], settings, seeds=",".join(site.seeds),
            tmp_path=tmp_path, timeout=CRAWL_TIMEOUT,
        )  # fmt: skip
        assert codes == [0, 0], logs[0][-2000:]
        bodies = served_bodies(site)
    assert object_store.objects(bucket) == expected_objects(bodies, PREFIX)
    assert record_paths(records) == {url: store_path(url).as_posix() for url in bodies}
    with sqlite3.connect(records) as db:
        nodes = {node for (node,) in db.execute("SELECT DISTINCT node FROM pages")}
    assert nodes == {"node0", "node1"}  # both stored pages
    assert not any(SECRET_KEY in log for log in logs)


def test_an_outage_and_a_kill_lose_no_page(object_store, bucket, redis_url, tmp_path):
    """The store goes away mid-crawl; the node waits (its pages unacknowledged),
    is killed with SIGKILL while it waits, and a successor finishes the crawl once
    the store is back: every page the site served is an object, its record names
    it, and no credential is in the logs or the records."""
    records = tmp_path / "pages.db"
    settings = [*node_settings(object_store, bucket, redis_url, records)]
    settings.append("DOWNLOAD_DELAY=0.2")  # about 10 s of crawl: room for an outage
    with running_site(hosts=3, pages=30, links=4, latency=0.05) as site:
        log = (tmp_path / "first.log").open("w")
        first = subprocess.Popen(
            scrapy_crawl(*settings, seeds=",".join(site.seeds)),
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        assert wait_for(lambda: len(object_store.objects(bucket)) >= 10, timeout=60)
        object_store.stop()
        try:
            assert wait_for(
                lambda: "cannot take pages" in (tmp_path / "first.log").read_text(),
                timeout=30,
            )
            time.sleep(3)  # pages wait in the node, unacknowledged
            first.send_signal(signal.SIGKILL)
            first.wait(10)
        finally:
            log.close()
            object_store.start()
        successor = subprocess.run(
            scrapy_crawl(*settings, "FRONTIER_NODE_NAME=successor"),
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=CRAWL_TIMEOUT,
            check=False,
        )
        assert successor.returncode == 0, successor.stderr[-3000:]
        bodies = served_bodies(site)
    assert object_store.objects(bucket) == expected_objects(bodies, PREFIX)
    assert record_paths(records) == {url: store_path(url).as_posix() for url in bodies}
    written = (tmp_path / "first.log").read_text() + successor.stderr
    written += records.read_bytes().decode("latin-1")
    assert SECRET_KEY not in written


def test_wrong_credentials_stop_start_up_with_one_line(object_store, bucket, redis_url):
    s3 = object_store.settings(bucket, PREFIX) | {
        "AWS_SECRET_ACCESS_KEY": "wrong-" + SECRET_KEY
    }
    result = subprocess.run(
        scrapy_crawl(
            f"REDIS_URL={redis_url}",
            *(f"{k}={v}" for k, v in s3.items()),
            "LOG_LEVEL=DEBUG",  # Scrapy's overridden settings listed too
            seeds="http://127.0.0.2:9/",
        ),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=CRAWL_TIMEOUT,
        check=False,
    )
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1, result.stderr[-3000:]
    assert f"s3://{bucket}/{PREFIX}" in errors[0]
    assert "SignatureDoesNotMatch" in errors[0] or "403" in errors[0]
    assert "Overridden settings" in result.stderr
    assert SECRET_KEY not in result.stderr
    assert "Traceback" not in result.stderr


def warc_responses(objects: dict[str, bytes]) -> list[str]:
    """The target URIs of the response records in WARC objects."""
    uris = []
    for body in objects.values():
        for record in ArchiveIterator(io.BytesIO(body)):
            if record.rec_type == "response":
                uris.append(record.rec_headers.get_header("WARC-Target-URI"))
    return uris


@deferred_f_from_coro_f
async def test_warc_files_are_uploaded_whole_as_they_close(
    object_store, bucket, settings, tmp_path
):
    spool = tmp_path / "spool"
    s3 = object_store.settings(bucket, PREFIX)
    with running_site(hosts=1, pages=20, links=4) as site:
        crawler, items = await crawl(
            settings(
                **s3,
                WARC_URL=f"s3://{bucket}/warc",
                WARC_SPOOL_DIR=str(spool),
                WARC_MAX_SIZE=5000,
                BFS_SCOPE="seed-hosts",
            ),
            seeds=site.seeds[0],
        )
    warcs = object_store.objects(bucket, "warc/")
    assert len(warcs) == crawler.stats.get_value("warc/files") > 2  # rolled
    assert crawler.stats.get_value("warc/uploaded") == len(warcs)
    assert all(key.endswith(".warc.gz") for key in warcs)
    assert sorted(set(warc_responses(warcs)) - {f"{site.seeds[0]}robots.txt"}) == (
        sorted(item.url for item in items)
    )
    assert list(spool.iterdir()) == []  # each file deleted once uploaded


@deferred_f_from_coro_f
async def test_warc_files_the_store_could_not_take_go_with_the_next_crawl(
    object_store, bucket, settings, tmp_path, monkeypatch
):
    monkeypatch.setattr(warcupload, "CLOSE_PATIENCE", 3.0)  # not 30 s of outage
    spool = tmp_path / "spool"
    s3 = object_store.settings(bucket, PREFIX) | {
        "PAGESTORE_URL": str(tmp_path / "pages"),
        "WARC_URL": f"s3://{bucket}/warc",
        "WARC_SPOOL_DIR": str(spool),
    }
    values = settings(**s3, BFS_SCOPE="seed-hosts")
    with running_site(hosts=1, pages=5, links=2) as site:
        crawler = get_crawler(BfsSpider, values)
        crawler.signals.connect(
            object_store.stop, signal=signals.spider_idle, weak=False
        )
        try:
            await crawler.crawl_async(seeds=site.seeds[0])
        finally:
            object_store.start()
        left = sorted(path.name for path in spool.iterdir())
        assert len(left) == 1
        assert crawler.stats.get_value("warc/upload_retries") >= 1
        assert object_store.objects(bucket, "warc/") == {}
        await crawl(values, seeds=site.seeds[0])  # the same crawl again: all seen
    assert f"warc/{left[0]}" in object_store.objects(bucket, "warc/")
    assert not (spool / left[0]).exists()
