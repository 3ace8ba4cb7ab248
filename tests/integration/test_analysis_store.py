"""Analysis from the shared store: pages in a real S3 server (SeaweedFS), results put
beside them or under ANALYSIS_RESULTS_URL, external programs as analyzers, a worker
in another process, hostile tasks naming other buckets, keys or programs."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

import crawler.defaults as project
from crawler.analysis.analysisconfig import AnalysisConfig
from crawler.analysis.loader import AnalyzerLoader
from crawler.analysis.processes import opened_stores
from crawler.analysis.tasks import AnalysisTask
from crawler.analysis.worker import AnalysisWorker
from crawler.spiders.bfs import BfsSpider
from crawler.storage.stores import open_store
from tests.integration.test_analysis import KEYS, TESTS, dead_letters, pending
from tests.objectstore import ACCESS_KEY, SECRET_KEY, object_store_for_tests
from tests.servers import ROOT

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    import redis as redis_py

    from crawler.storage.stores import ObjectStore
    from tests.objectstore import ObjectStoreServer

pytestmark = pytest.mark.integration

BUCKET = "pages"
OTHER = "other"
PREFIX = "crawl"
# A program analyzer: counts the page's bytes and says what it was given, as JSON
# in its result file; every run appends a line to the file in argv[4].
COUNT_SCRIPT = """\
import json, sys
page, result, url, log = sys.argv[1:5]
open(log, "a").write(url + "\\n")
body = open(page, "rb").read()
json.dump({"bytes": len(body), "url": url, "type": sys.argv[5]}, open(result, "w"))
"""


@pytest.fixture(scope="module")
def object_store() -> Iterator[ObjectStoreServer]:
    with object_store_for_tests() as server:
        server.make_bucket(BUCKET)
        server.make_bucket(OTHER)
        yield server


@pytest.fixture
def buckets(object_store: ObjectStoreServer) -> Iterator[ObjectStoreServer]:
    """The test's buckets, emptied after it."""
    yield object_store
    client = object_store.client()
    for bucket in (BUCKET, OTHER):
        for key in object_store.objects(bucket):
            client.delete_object(Bucket=bucket, Key=key)


def s3_settings(server: ObjectStoreServer, **overrides: Any) -> dict[str, Any]:
    """The project's defaults with the page store in the test bucket."""
    values = {k: getattr(project, k) for k in dir(project) if k.isupper()}
    values.update(server.settings(BUCKET, PREFIX), **overrides)
    return values


def analyze_all(client: redis_py.Redis, settings: dict[str, Any]) -> int:
    """Run a worker made from *settings*, as ``scrapy analyze --once`` does in its
    process, until no task is left; how many it handled."""
    config = AnalysisConfig.from_settings(Settings(settings))
    loader = AnalyzerLoader([TESTS, *config.trusted_modules()], config.analyzers)
    with opened_stores(config, Settings(settings)) as stores:
        worker = AnalysisWorker(
            client, KEYS, config, loader, stores=stores, consumer="w1"
        )
        return worker.run(idle_exit=0.0)


def page_store(settings: dict[str, Any]) -> ObjectStore:
    """The page store *settings* name, as the crawl's page store opens it."""
    return open_store(settings["PAGESTORE_URL"], "PAGESTORE_URL", Settings(settings))


def queue_stored(
    client: redis_py.Redis,
    store: ObjectStore,
    analyzer: str,
    key: str,
    body: bytes,
) -> AnalysisTask:
    """Put a page in *store* and queue its task, as the page store and the analysis
    pipeline do."""
    store.put(key, body)
    url = f"http://127.0.0.2/{key}"
    task = AnalysisTask(
        url=url,
        store_path=key,
        record={"url": url, "content_type": "text/html", "title": key},
        analyzer=analyzer,
        page=store.address.url_of(key),
        content_type="text/html",
    )
    client.xadd(KEYS.analysis_tasks, task.to_fields())  # type: ignore[arg-type]
    return task


def test_a_worker_analyzes_pages_in_a_bucket_and_puts_results_beside_them(
    redis, buckets
):
    settings = s3_settings(buckets)
    store = page_store(settings)
    keys = [f"http/127.0.0.2/p{index}.html" for index in range(3)]
    tasks = [
        queue_stored(
            redis,
            store,
            "crawler.analysis.analyzers.TextAnalyzer",
            key,
            f"<html><title>T {key}</title><body><h1>H</h1>x y</body></html>".encode(),
        )
        for key in keys
    ]
    store.close()
    assert tasks[0].page == f"s3://{BUCKET}/{PREFIX}/{keys[0]}"
    assert analyze_all(redis, settings) == 3
    objects = buckets.objects(BUCKET, PREFIX)
    assert sorted(objects) == sorted(
        f"{PREFIX}/{key}{suffix}" for key in keys for suffix in ("", ".analysis.json")
    )
    for task in tasks:
        document = json.loads(objects[f"{PREFIX}/{task.store_path}.analysis.json"])
        assert document["url"] == task.url
        assert document["result"]["title"] == f"T {task.store_path}"
        assert document["result"]["words"] == 3
    assert dead_letters(redis) == []
    assert pending(redis) == 0


def test_results_go_under_analysis_results_url_when_set(redis, buckets):
    settings = s3_settings(buckets, ANALYSIS_RESULTS_URL=f"s3://{OTHER}/results")
    store = page_store(settings)
    task = queue_stored(redis, store, f"{TESTS}.EchoAnalyzer", "a/b.html", b"abc")
    store.close()
    assert analyze_all(redis, settings) == 1
    assert sorted(buckets.objects(BUCKET)) == [f"{PREFIX}/a/b.html"]
    [(key, body)] = buckets.objects(OTHER).items()
    assert key == "results/a/b.html.analysis.json"
    assert json.loads(body)["result"]["length"] == 3
    assert json.loads(body)["url"] == task.url


def test_a_store_outage_is_waited_out_not_counted_as_a_failed_attempt(redis, buckets):
    settings = s3_settings(buckets, STORAGE_RETRY_ATTEMPTS=1, STORAGE_TIMEOUT=2)
    store = page_store(settings)
    task = queue_stored(
        redis, store, "crawler.analysis.analyzers.TextAnalyzer", "http/h/a.html",
        b"<html><title>A</title><body>a b</body></html>",
    )  # fmt: skip
    store.close()
    buckets.stop()
    handled: list[int] = []
    # The worker waits in a thread: the server is started again from this one (its
    # process dies with the thread that started it).
    worker = threading.Thread(
        target=lambda: handled.append(analyze_all(redis, settings))
    )
    worker.start()
    time.sleep(3.0)
    buckets.start()
    worker.join(timeout=60)
    assert handled == [1]
    document = json.loads(
        buckets.objects(BUCKET, PREFIX)[f"{PREFIX}/{task.store_path}.analysis.json"]
    )
    assert document["attempts"] == 1
    assert document["result"]["title"] == "A"
    assert dead_letters(redis) == []
    assert pending(redis) == 0


def program_settings(server: ObjectStoreServer, tmp_path: Path, **spec: Any):
    log = tmp_path / "runs.log"
    script = tmp_path / "count.py"
    script.write_text(COUNT_SCRIPT)
    argv = [sys.executable, str(script), "{page}", "{result}", "{url}", str(log)]
    analyzers = {
        "count": {"argv": [*argv, "{type}"], "timeout": 30},
        "fails": {"argv": [sys.executable, "-c", "import sys; sys.exit(1)"]},
        "slow": {
            "argv": [sys.executable, "-c", "import time; time.sleep(30)"],
            "timeout": 0.5,
        },
        **spec,
    }
    return s3_settings(server, ANALYZERS=analyzers), log


def test_a_program_analyzer_puts_its_json_result_beside_the_page(
    redis, buckets, tmp_path
):
    settings, log = program_settings(buckets, tmp_path)
    store = page_store(settings)
    task = queue_stored(redis, store, "count", "x/page.html", b"12345")
    store.close()
    assert analyze_all(redis, settings) == 1
    document = json.loads(
        buckets.objects(BUCKET)[f"{PREFIX}/x/page.html.analysis.json"]
    )
    assert document["analyzer"] == "count"
    assert document["result"] == {"bytes": 5, "url": task.url, "type": "text/html"}
    assert log.read_text().splitlines() == [task.url]


def test_a_program_output_that_is_not_json_is_stored_raw(redis, buckets, tmp_path):
    settings, _log = program_settings(
        buckets, tmp_path, wc={"argv": ["/usr/bin/wc", "-c", "{page}"], "timeout": 10}
    )
    store = page_store(settings)
    queue_stored(redis, store, "wc", "raw.html", b"a\nb\n")
    store.close()
    assert analyze_all(redis, settings) == 1
    stored = buckets.objects(BUCKET)[f"{PREFIX}/raw.html.analysis.json"]
    assert stored.startswith(b"4 /")  # wc's own line: the byte count, the file
    assert stored.endswith(b"/page\n")


def test_a_program_exiting_1_is_retried_then_dead_lettered_and_alerted(
    redis, buckets, tmp_path, webhook, caplog
):
    url, received = webhook
    settings, _log = program_settings(buckets, tmp_path)
    settings["ANALYSIS_ALERT"] = url
    store = page_store(settings)
    task = queue_stored(redis, store, "fails", "f.html", b"x")
    store.close()
    with caplog.at_level(logging.WARNING):
        handled = analyze_all(redis, settings)
    assert handled == 3  # ANALYSIS_MAX_ATTEMPTS
    [letter] = dead_letters(redis)
    assert letter["attempts"] == "3"
    assert letter["analyzer"] == "fails"
    assert "exited with 1" in letter["error"]
    retried = [r for r in caplog.records if "retried" in r.getMessage()]
    assert len(retried) == 2
    assert [alert["url"] for alert in received] == [task.url]
    assert received[0]["attempts"] == 3
    assert sorted(buckets.objects(BUCKET)) == [f"{PREFIX}/f.html"]


def test_a_program_past_its_timeout_fails_its_attempt(redis, buckets, tmp_path):
    settings, _log = program_settings(buckets, tmp_path)
    settings["ANALYSIS_MAX_ATTEMPTS"] = 1
    store = page_store(settings)
    queue_stored(redis, store, "slow", "s.html", b"x")
    store.close()
    assert analyze_all(redis, settings) == 1
    [letter] = dead_letters(redis)
    assert "past its timeout of 0.5 s" in letter["error"]
    assert letter["attempts"] == "1"


def test_scrapy_analyze_in_another_process_reads_the_bucket(
    redis, redis_url, buckets, tmp_path
):
    settings, log = program_settings(buckets, tmp_path)
    store = page_store(settings)
    tasks = [
        queue_stored(redis, store, analyzer, f"p/{analyzer}.html", b"<title>t</title>")
        for analyzer in ("count", f"{TESTS}.EchoAnalyzer")
    ]
    store.close()
    given = {
        "PAGESTORE_URL": settings["PAGESTORE_URL"],
        "AWS_ENDPOINT_URL": settings["AWS_ENDPOINT_URL"],
        "AWS_REGION_NAME": settings["AWS_REGION_NAME"],
        "REDIS_URL": redis_url,
        "ANALYZERS": json.dumps(settings["ANALYZERS"]),
        "LOG_LEVEL": "INFO",
    }
    command = [
        sys.executable, "-m", "scrapy", "analyze", "--once", "--allow", TESTS,
        *(part for name, value in given.items() for part in ("-s", f"{name}={value}")),
    ]  # fmt: skip
    # The keys come from the environment, as boto3's standard chain reads them.
    keys = {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
    done = subprocess.run(
        command,
        cwd=ROOT,
        env={**os.environ, **keys},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    objects = buckets.objects(BUCKET, PREFIX)
    for task in tasks:
        document = json.loads(objects[f"{PREFIX}/{task.store_path}.analysis.json"])
        assert document["url"] == task.url
        assert document["task"]
    assert log.read_text().splitlines() == [tasks[0].url]
    assert dead_letters(redis) == []
    assert SECRET_KEY not in done.stdout + done.stderr


def test_a_bad_analyzers_setting_stops_scrapy_analyze_in_one_line(redis_url):
    command = [
        sys.executable, "-m", "scrapy", "analyze", "--once",
        "-s", f"REDIS_URL={redis_url}",
        "-s", 'ANALYZERS={"wc": {"argv": ["wc", "{pages}"]}}',
    ]  # fmt: skip
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "scrapy analyze: ANALYZERS['wc']: unknown template {pages} in '{pages}' "
        "(known: page, result, type, url)"
    )


def hostile_fields(store: ObjectStore, **changes: str) -> dict[str, str]:
    task = AnalysisTask(
        "http://x/",
        "page",
        {"url": "http://x/"},
        "count",
        page=store.address.url_of("page"),
        content_type="text/html",
    )
    return {**task.to_fields(), **changes}


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"page": f"s3://{OTHER}/secret"}, "is not under"),
        ({"page": f"s3://{BUCKET}/elsewhere/page"}, "is not under"),
        ({"page": f"s3://{BUCKET}/{PREFIX}/secret"}, "is not store_path"),
        ({"store_path": "../secret"}, "not a safe relative path"),
        ({"store_path": "a/../../secret"}, "not a safe relative path"),
        ({"result_path": "../../other/x"}, "not a safe relative path"),
        ({"analyzer": "rm"}, "neither in ANALYZERS nor a dotted path"),
        ({"analyzer": "/bin/sh"}, "neither in ANALYZERS nor a dotted path"),
        ({"analyzer": "subprocess.run"}, "not in an allowed module"),
    ],
)
def test_a_hostile_task_is_dead_lettered_reading_and_writing_nothing(
    redis, buckets, tmp_path, changes, error
):
    settings, log = program_settings(buckets, tmp_path)
    store = page_store(settings)
    store.put("page", b"page")
    store.put("secret", b"secret")
    buckets.client().put_object(Bucket=OTHER, Key="secret", Body=b"other")
    before = {bucket: buckets.objects(bucket) for bucket in (BUCKET, OTHER)}
    redis.xadd(KEYS.analysis_tasks, hostile_fields(store, **changes))
    store.close()
    assert analyze_all(redis, settings) == 1
    [letter] = dead_letters(redis)
    assert error in letter["error"], letter
    assert letter["attempts"] == "1"
    assert not log.exists()  # no program ran
    assert {bucket: buckets.objects(bucket) for bucket in (BUCKET, OTHER)} == before


@deferred_f_from_coro_f
async def test_a_crawl_into_a_bucket_queues_tasks_a_worker_analyzes_there(
    redis, buckets, site, settings
):
    crawl_settings = settings(
        **buckets.settings(BUCKET, PREFIX),
        ANALYSIS_ENABLED=True,
        ITEM_PIPELINES={
            "crawler.pipelines.pagestore.PageStorePipeline": 300,
            "crawler.analysis.pipeline.AnalysisPipeline": 500,
        },
        DEPTH_LIMIT=1,
    )
    crawler = get_crawler(BfsSpider, crawl_settings)
    await crawler.crawl_async(seeds=site.seeds[0])
    entries = redis.xrange(KEYS.analysis_tasks)
    tasks = [AnalysisTask.from_fields(fields) for _id, fields in entries]
    assert len(tasks) == crawler.stats.get_value("analysis/queued") > 1
    for task in tasks:
        assert task.page == f"s3://{BUCKET}/{PREFIX}/{task.store_path}"
        assert task.content_type == task.record["content_type"]
    assert analyze_all(redis, crawl_settings) == len(tasks)
    assert dead_letters(redis) == []
    objects = buckets.objects(BUCKET, PREFIX)
    for task in tasks:
        document = json.loads(objects[f"{PREFIX}/{task.store_path}.analysis.json"])
        assert document["result"]["title"] == task.record["title"]


def test_a_missing_bucket_stops_scrapy_analyze_in_one_line(redis_url, buckets):
    given = {**buckets.settings("no-such-bucket", PREFIX), "REDIS_URL": redis_url}
    command = [
        sys.executable, "-m", "scrapy", "analyze", "--once",
        *(part for name, value in given.items() for part in ("-s", f"{name}={value}")),
    ]  # fmt: skip
    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("scrapy analyze: s3://no-such-bucket/crawl: "), last
    assert SECRET_KEY not in done.stdout + done.stderr
