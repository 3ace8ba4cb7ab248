"""The analysis split against a real Redis: retries, dead letters and alerts,
a worker killed mid-task, hostile tasks, the pipeline in a crawl, the command."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_f_from_coro_f
from scrapy.utils.test import get_crawler

from crawler.analysis.analysisconfig import AnalysisConfig
from crawler.analysis.loader import AnalyzerLoader
from crawler.analysis.processes import stores_of
from crawler.analysis.tasks import GROUP, AnalysisTask
from crawler.analysis.worker import AnalysisWorker
from crawler.crawlstate.keys import CrawlKeys
from crawler.spiders.bfs import BfsSpider
from crawler.storage.address import StoreAddress
from tests.analyzers import BLOCK_ENV, CALLS
from tests.servers import ROOT, wait_for

if TYPE_CHECKING:
    from pathlib import Path

    import redis as redis_py

pytestmark = pytest.mark.integration

KEYS = CrawlKeys("bfs")
TESTS = "tests.analyzers"


def config_of(tmp_path: Path, **overrides: Any) -> AnalysisConfig:
    values: dict[str, Any] = {
        "default_analyzer": "crawler.analysis.analyzers.TextAnalyzer",
        "max_attempts": 3,
        "claim_timeout": 60.0,
        "alert_url": "",
        "stream_maxlen": 1000,
        "page_store": StoreAddress("file", root=tmp_path / "pages"),
    }
    values.update(overrides)
    return AnalysisConfig(**values)


def worker_of(
    client: redis_py.Redis, config: AnalysisConfig, name: str = "w1"
) -> AnalysisWorker:
    """A worker as ``scrapy analyze`` makes one, on a local page store (nothing
    to close)."""
    stores = stores_of(config, Settings())
    stores.pages.open()
    stores.results.open()
    loader = AnalyzerLoader([TESTS, *config.trusted_modules()], config.analyzers)
    return AnalysisWorker(client, KEYS, config, loader, stores=stores, consumer=name)


def queue(
    client: redis_py.Redis,
    store: Path,
    analyzer: str,
    *,
    name: str = "page",
    body: bytes = b"<html><title>t</title></html>",
) -> AnalysisTask:
    """Store a page and queue its task, as the pipelines do."""
    (store / name).parent.mkdir(parents=True, exist_ok=True)
    (store / name).write_bytes(body)
    task = AnalysisTask(
        url=f"http://127.0.0.2/{name}",
        store_path=name,
        record={"url": f"http://127.0.0.2/{name}", "content_type": "text/html"},
        analyzer=analyzer,
        page=StoreAddress("file", root=store).url_of(name),
        content_type="text/html",
    )
    client.xadd(KEYS.analysis_tasks, task.to_fields())  # type: ignore[arg-type]
    return task


def pending(client: redis_py.Redis) -> int:
    return int(client.xpending(KEYS.analysis_tasks, GROUP)["pending"])


def dead_letters(client: redis_py.Redis) -> list[dict[str, str]]:
    return [
        {k.decode(): v.decode("utf-8", "replace") for k, v in fields.items()}
        for _id, fields in client.xrange(KEYS.analysis_dead)
    ]


def result_of(store: Path, name: str = "page") -> dict[str, Any]:
    return json.loads((store / f"{name}.analysis.json").read_text())


def test_a_task_failing_twice_succeeds_on_its_third_attempt(redis, tmp_path):
    config = config_of(tmp_path)
    task = queue(redis, config.page_store.root, f"{TESTS}.FlakyAnalyzer")
    CALLS.clear()
    handled = worker_of(redis, config).run(idle_exit=0.0)
    assert handled == 3
    assert CALLS["flaky", task.url] == 3
    result = result_of(config.page_store.root)
    assert result["attempts"] == 3
    assert result["result"] == {"length": len(b"<html><title>t</title></html>")}
    assert pending(redis) == 0
    assert dead_letters(redis) == []
    assert redis.xlen(KEYS.analysis_tasks) == 3  # the task and its two retries


def test_a_task_always_failing_is_dead_lettered_and_alerted(
    redis, tmp_path, webhook, caplog
):
    url, received = webhook
    config = config_of(tmp_path, alert_url=url)
    task = queue(redis, config.page_store.root, f"{TESTS}.FailingAnalyzer")
    CALLS.clear()
    with caplog.at_level(logging.WARNING):
        worker_of(redis, config).run(idle_exit=0.0)
    assert CALLS["failing", task.url] == 3  # exactly ANALYSIS_MAX_ATTEMPTS
    [letter] = dead_letters(redis)
    assert letter["attempts"] == "3"
    assert letter["url"] == task.url
    assert "this analyzer always fails" in letter["error"]
    assert pending(redis) == 0
    assert not (config.page_store.root / "page.analysis.json").exists()
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "dead-lettered" in errors[0].getMessage()
    assert wait_for(lambda: received, timeout=5)
    [alert] = received
    assert alert["event"] == "analysis_dead_letter"
    assert alert["url"] == task.url
    assert alert["attempts"] == 3
    assert alert["crawl"] == "bfs"


def test_an_unreachable_webhook_is_logged_and_never_crashes(redis, tmp_path, caplog):
    config = config_of(tmp_path, alert_url="http://127.0.0.1:9/nothing-listens")
    queue(redis, config.page_store.root, f"{TESTS}.FailingAnalyzer")
    with caplog.at_level(logging.ERROR):
        worker_of(redis, config).run(idle_exit=0.0)
    assert len(dead_letters(redis)) == 1
    assert any("alert to" in r.getMessage() for r in caplog.records)


def analyze_command(
    redis_url: str, store: Path, *options: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    command = [
        sys.executable, "-m", "scrapy", "analyze", "--allow", TESTS, *options,
        "-s", f"REDIS_URL={redis_url}", "-s", f"PAGESTORE_URL={store}",
        "-s", "ANALYSIS_CLAIM_TIMEOUT=1.0", "-s", "LOG_LEVEL=INFO",
    ]  # fmt: skip
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_a_task_of_a_killed_worker_is_finished_by_another(redis, redis_url, tmp_path):
    store = tmp_path / "pages"
    queue(redis, store, f"{TESTS}.BlockingAnalyzer")
    marker = tmp_path / "marker"
    marker.mkdir()
    first = analyze_command(
        redis_url, store, "--idle-exit", "60", env={BLOCK_ENV: str(marker)}
    )
    try:
        assert wait_for((marker / "started").exists, timeout=30)
        assert pending(redis) == 1
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=10)
    second = analyze_command(redis_url, store, "--idle-exit", "3")
    output, _ = second.communicate(timeout=60)
    assert second.returncode == 0, output
    result = result_of(store)
    assert result["result"] == {"finished_by": second.pid}
    assert result["attempts"] == 2  # the killed attempt counts
    assert pending(redis) == 0
    assert dead_letters(redis) == []


def test_n_worker_processes_share_the_tasks(redis, redis_url, tmp_path):
    store = tmp_path / "pages"
    names = [f"p{index}" for index in range(8)]
    for name in names:
        queue(redis, store, f"{TESTS}.EchoAnalyzer", name=name)
    command = analyze_command(redis_url, store, "--workers", "2", "--idle-exit", "1")
    output, _ = command.communicate(timeout=60)
    assert command.returncode == 0, output
    pids = {result_of(store, name)["result"]["pid"] for name in names}
    assert command.pid not in pids
    assert 1 <= len(pids) <= 2
    assert pending(redis) == 0


def test_sigterm_stops_the_workers_cleanly(redis, redis_url, tmp_path):
    command = analyze_command(redis_url, tmp_path, "--workers", "2")
    assert wait_for(lambda: redis.exists(KEYS.analysis_tasks), timeout=30)
    command.send_signal(signal.SIGTERM)
    output, _ = command.communicate(timeout=30)
    assert command.returncode == 0, output


def hostile(**changes: str) -> dict[str, str]:
    task = AnalysisTask(
        "http://x/", "page", {"url": "http://x/"}, f"{TESTS}.EchoAnalyzer"
    )
    return {**task.to_fields(), **changes}


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        (hostile(analyzer="os.system"), "not in an allowed module"),
        (hostile(analyzer="antigravity.Fly"), "not in an allowed module"),
        (hostile(analyzer=f"{TESTS}.NotAnAnalyzer"), "analyze method"),
        (hostile(analyzer=f"{TESTS}.not_a_class"), "analyze method"),
        (hostile(analyzer=f"{TESTS}.Missing"), "analyze method"),
        (hostile(analyzer=f"{TESTS}.nope.Missing"), "does not import"),
        (hostile(analyzer="__import__('os')"), "nor a dotted path"),
        (hostile(store_path="../outside"), "not a safe relative path"),
        (hostile(store_path="/etc/passwd"), "not a safe relative path"),
        (hostile(store_path="a/../../outside"), "not a safe relative path"),
        (hostile(store_path="bad\x00path"), "not a safe relative path"),
        (hostile(store_path="link/outside"), "leaves"),
        (hostile(result_path="../result.json"), "not a safe relative path"),
        (hostile(page="file:///etc/passwd"), "is not under"),
        (hostile(page="s3://other-bucket/page"), "is not under"),
        (hostile(analyzer="cat"), "neither in ANALYZERS nor a dotted path"),
        (hostile(record="[1, 2]"), "JSON object"),
        (hostile(record="{not json"), "bad record"),
        (hostile(attempts="-1"), "attempts"),
        (hostile(attempts="many"), "bad record or attempts"),
        (hostile(v="3"), "unknown version"),
        ({"url": "http://x/"}, "missing fields"),
    ],
)
def test_a_hostile_task_is_dead_lettered_at_once(redis, tmp_path, fields, error):
    config = config_of(tmp_path)
    config.page_store.root.mkdir()
    (config.page_store.root / "page").write_bytes(b"page")
    (config.page_store.root / "link").symlink_to(tmp_path)
    (tmp_path / "outside").write_bytes(b"secret")
    redis.xadd(KEYS.analysis_tasks, fields)
    good = queue(redis, config.page_store.root, f"{TESTS}.EchoAnalyzer", name="good")
    worker = worker_of(redis, config)
    assert worker.run(idle_exit=0.0) == 2
    [letter] = dead_letters(redis)
    assert error in letter["error"], letter
    assert letter["attempts"] == "1"
    assert pending(redis) == 0
    assert result_of(config.page_store.root, "good")["url"] == good.url
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside", "pages"]


def test_undecodable_fields_are_dead_lettered(redis, tmp_path):
    config = config_of(tmp_path)
    redis.xadd(KEYS.analysis_tasks, {b"\xff\xfe": b"\xfe", b"url": b"\x80"})
    assert worker_of(redis, config).run(idle_exit=0.0) == 1
    [letter] = dead_letters(redis)
    assert "not UTF-8" in letter["error"]
    assert letter["\\xff\\xfe"] == "\\xfe"


def test_a_result_that_is_not_a_dict_fails_the_attempt(redis, tmp_path):
    config = config_of(tmp_path, max_attempts=2)
    queue(redis, config.page_store.root, f"{TESTS}.BadResultAnalyzer")
    worker_of(redis, config).run(idle_exit=0.0)
    [letter] = dead_letters(redis)
    assert letter["attempts"] == "2"
    assert "not dict" in letter["error"]


def test_a_missing_page_is_retried_then_dead_lettered(redis, tmp_path):
    config = config_of(tmp_path)
    queue(redis, config.page_store.root, f"{TESTS}.EchoAnalyzer")
    (config.page_store.root / "page").unlink()
    worker_of(redis, config).run(idle_exit=0.0)
    [letter] = dead_letters(redis)
    assert letter["attempts"] == "3"
    assert "FileNotFoundError" in letter["error"]


def test_a_deleted_stream_is_created_again(redis, tmp_path):
    config = config_of(tmp_path)
    worker = worker_of(redis, config)
    worker.ensure_group()
    redis.delete(KEYS.analysis_tasks)
    assert worker.read_one(block=0.01) == 0
    queue(redis, config.page_store.root, f"{TESTS}.EchoAnalyzer")
    assert worker.read_one(block=0.01) == 1


class AnalyzedSpider(BfsSpider):
    analysis_rules = [  # noqa: RUF012 (a spider attribute, as Scrapy's are)
        (r"^http://127\.0\.0\.3:", "crawler.analysis.analyzers.OutlinksAnalyzer"),
    ]


@deferred_f_from_coro_f
async def test_the_pipeline_queues_one_task_per_stored_page(
    redis, site, settings, tmp_path
):
    store = tmp_path / "pages"
    crawler = get_crawler(
        AnalyzedSpider,
        settings(
            ANALYSIS_ENABLED=True,
            PAGESTORE_URL=str(store),
            ITEM_PIPELINES={
                "crawler.pipelines.pagestore.PageStorePipeline": 300,
                "crawler.analysis.pipeline.AnalysisPipeline": 500,
            },
            DEPTH_LIMIT=2,
        ),
    )
    await crawler.crawl_async(seeds=site.seeds[0])
    pages = len(site.pages())
    assert pages > 5
    assert crawler.stats.get_value("analysis/queued") == pages
    entries = redis.xrange(KEYS.analysis_tasks)
    tasks = [AnalysisTask.from_fields(fields) for _id, fields in entries]
    assert len({task.url for task in tasks}) == pages
    for task in tasks:
        assert (store / task.store_path).is_file()
        assert task.page == (store / task.store_path).resolve().as_uri()
        assert task.content_type == task.record["content_type"]
        assert "body" not in task.record
        assert task.record["url"] == task.url
        outlinks = task.url.startswith("http://127.0.0.3:")
        assert task.analyzer.endswith(
            "OutlinksAnalyzer" if outlinks else "TextAnalyzer"
        )
    handled = worker_of(redis, config_of(tmp_path)).run(idle_exit=0.0)
    assert handled == pages
    assert dead_letters(redis) == []
    for task in tasks:
        document = json.loads((store / f"{task.store_path}.analysis.json").read_text())
        result = document["result"]
        if task.analyzer.endswith("TextAnalyzer"):
            assert result["title"] == task.record["title"]
            assert result["headings"] == [{"level": 1, "text": task.record["title"]}]
        else:
            assert result["links"] == result["internal"] + result["external"]
            assert result["internal"] > 0


def test_a_task_whose_page_is_another_key_is_dead_lettered(redis, tmp_path):
    config = config_of(tmp_path)
    queue(redis, config.page_store.root, f"{TESTS}.EchoAnalyzer", name="secret")
    redis.xtrim(KEYS.analysis_tasks, maxlen=0)
    fields = hostile(page=config.page_store.url_of("secret"))
    queue(redis, config.page_store.root, f"{TESTS}.EchoAnalyzer")
    redis.xtrim(KEYS.analysis_tasks, maxlen=0)
    redis.xadd(KEYS.analysis_tasks, fields)
    assert worker_of(redis, config).run(idle_exit=0.0) == 1
    [letter] = dead_letters(redis)
    assert "is not store_path 'page'" in letter["error"]
    assert sorted(p.name for p in config.page_store.root.iterdir()) == [
        "page",
        "secret",
    ]
