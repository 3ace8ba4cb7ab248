"""Worker processes of ``scrapy analyze``: one in the command's own process, or N
children (multiprocessing, spawned) watched by it. SIGTERM or SIGINT stops each
worker after its current task."""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import signal
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scrapy.settings import Settings
from scrapy.utils.log import configure_logging

from crawler.analysis.loader import AnalyzerLoader
from crawler.analysis.worker import AnalysisStores, AnalysisWorker, consumer_name
from crawler.crawlstate.connection import check_reachable, connect
from crawler.crawlstate.keys import CrawlKeys
from crawler.storage.stores import store_at

if TYPE_CHECKING:
    from collections.abc import Iterator

    from scrapy.settings import BaseSettings

    from crawler.analysis.analysisconfig import AnalysisConfig

logger = logging.getLogger(__name__)

# Seconds a stopped child may take to finish its task before it is killed.
STOP_GRACE = 30.0
# Scrapy settings a child configures its logging from.
LOG_SETTINGS = (
    "LOG_ENABLED", "LOG_ENCODING", "LOG_FILE", "LOG_FILE_APPEND", "LOG_FORMAT",
    "LOG_DATEFORMAT", "LOG_LEVEL", "LOG_STDOUT", "LOG_SHORT_NAMES",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    """All a worker process needs (picklable: it crosses to spawned children)."""

    url: str
    cluster: bool | None
    prefix: str
    config: AnalysisConfig
    allowed: tuple[str, ...]
    idle_exit: float | None
    log_settings: dict[str, Any]
    # The settings the stores are opened with (STORE_SETTINGS).
    store_settings: dict[str, Any]
    # Client keyword arguments (REDIS_PARAMS).
    params: dict[str, Any] = field(default_factory=dict)


def run_worker(spec: WorkerSpec) -> int:
    """Run one worker in this process until stopped or idle; return its exit code."""
    stop = threading.Event()
    _on_stop_signals(stop)
    client = connect(spec.url, cluster=spec.cluster, **spec.params)
    try:
        check_reachable(client, spec.url)
        with opened_stores(spec.config, Settings(spec.store_settings)) as stores:
            worker = AnalysisWorker(
                client,
                CrawlKeys(spec.prefix),
                spec.config,
                AnalyzerLoader(spec.allowed, spec.config.analyzers),
                stores=stores,
                consumer=consumer_name(),
            )
            handled = worker.run(idle_exit=spec.idle_exit, stop=stop.is_set)
    finally:
        client.close()
    logger.info("Analysis worker stopped after %(handled)d tasks", {"handled": handled})
    return 0


def stores_of(config: AnalysisConfig, settings: BaseSettings) -> AnalysisStores:
    """The page store and the results store (the same object unless
    ANALYSIS_RESULTS_URL is set), not yet opened; ``ValueError`` for a bad
    address or storage setting."""
    pages = store_at(config.page_store, "PAGESTORE_URL", settings)
    if config.results_store is None:
        return AnalysisStores(pages, pages)
    results = store_at(config.results_store, "ANALYSIS_RESULTS_URL", settings)
    return AnalysisStores(pages, results)


def check_stores(config: AnalysisConfig, settings: BaseSettings) -> None:
    """``ValueError`` in one line when a store cannot be used: the results store
    must be writable; a page store only read is checked if it is a bucket."""
    stores = stores_of(config, settings)
    try:
        stores.results.check()
        if stores.pages is not stores.results and config.page_store.scheme == "s3":
            stores.pages.check()
    finally:
        stores.close()


@contextlib.contextmanager
def opened_stores(
    config: AnalysisConfig, settings: BaseSettings
) -> Iterator[AnalysisStores]:
    """The stores of ``stores_of``, opened, and closed on exit."""
    stores = stores_of(config, settings)
    try:
        stores.pages.open()
        if stores.results is not stores.pages:
            stores.results.open()
        yield stores
    finally:
        stores.close()


def child_main(spec: WorkerSpec) -> None:
    """Entry point of a child process."""
    configure_logging(spec.log_settings)
    raise SystemExit(run_worker(spec))


def run_workers(spec: WorkerSpec, count: int) -> int:
    """Run *count* child workers until they end or a stop signal comes; return 0 if
    every child ended well, else 1."""
    stop = threading.Event()
    _on_stop_signals(stop)
    context = multiprocessing.get_context("spawn")
    children = [
        context.Process(target=child_main, args=(spec,), name=f"analyze-{index}")
        for index in range(count)
    ]
    for child in children:
        child.start()
    while any(child.is_alive() for child in children) and not stop.is_set():
        stop.wait(0.2)
    for child in children:
        if child.is_alive():
            child.terminate()  # SIGTERM: the worker ends its current task
    for child in children:
        child.join(STOP_GRACE)
        if child.is_alive():
            logger.error("Worker %(name)s did not stop: killed", {"name": child.name})
            child.kill()
            child.join()
    # A child stopped by our SIGTERM before it could set its handler ended well too.
    stopped_ok = {0, -signal.SIGTERM} if stop.is_set() else {0}
    return 0 if all(child.exitcode in stopped_ok for child in children) else 1


def _on_stop_signals(stop: threading.Event) -> None:
    def handler(signum: int, _frame: object) -> None:
        logger.info("Stopping on %(signal)s", {"signal": signal.Signals(signum).name})
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
