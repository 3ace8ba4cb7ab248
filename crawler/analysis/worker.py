"""The consumer of analysis tasks: one ``AnalysisWorker`` per process.

Each worker reads tasks one at a time in the consumer group ``GROUP`` of the crawl's
task stream, reads the page from the page store (a directory or a bucket), runs the
task's analyzer on it, puts the result beside the page (or in the results store)
and acknowledges the task. A failed attempt acknowledges the entry and
adds a copy with ``attempts`` one higher, until ``ANALYSIS_MAX_ATTEMPTS`` attempts
have failed: then the task goes to the dead-letter stream and is alerted. An entry
left pending by a worker that died is claimed (``XAUTOCLAIM``) by another after
``ANALYSIS_CLAIM_TIMEOUT``; each earlier delivery of the entry counts as a failed
attempt. Delivery is at least once: a worker that dies between writing a result and
acknowledging it has its task run again. The stream commands are
``crawler.analysis.taskstream``; this module decides what becomes of each task.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import redis

from crawler.analysis.alerts import alert
from crawler.analysis.programs import RawOutput
from crawler.analysis.tasks import (
    AnalysisTask,
    BadTaskError,
    error_text,
    shown_fields,
)
from crawler.analysis.taskstream import TaskStream, text
from crawler.storage.errors import StoreUnavailableError, UnsafePathError
from crawler.storage.outage import StoreOutage

if TYPE_CHECKING:
    from collections.abc import Callable

    from crawler.analysis.analysisconfig import AnalysisConfig
    from crawler.analysis.loader import AnalyzerLoader
    from crawler.crawlstate.keys import CrawlKeys
    from crawler.storage.stores import ObjectStore

logger = logging.getLogger(__name__)

# Seconds one XREADGROUP waits for a task (how soon a stop request is seen).
READ_BLOCK = 0.5
# Seconds between two tries to reach Redis while it does not answer.
RETRY_DELAY = 1.0


@dataclass(frozen=True, slots=True)
class AnalysisStores:
    """Where a worker reads pages and puts results (the same store, by default)."""

    pages: ObjectStore
    results: ObjectStore

    def close(self) -> None:
        self.pages.close()
        if self.results is not self.pages:
            self.results.close()


class AnalysisWorker:
    """Runs the analysis tasks of one crawl as consumer *consumer* (see module)."""

    def __init__(  # noqa: PLR0913 (each is one part the worker is built from)
        self,
        client: redis.Redis,
        keys: CrawlKeys,
        config: AnalysisConfig,
        loader: AnalyzerLoader,
        *,
        stores: AnalysisStores,
        consumer: str,
    ) -> None:
        self._stream = TaskStream(client, keys, config, consumer)
        self._keys = keys
        self._config = config
        self._loader = loader
        self._stores = stores
        self._claim_every = min(max(config.claim_timeout / 4, 0.1), 5.0)
        self._next_claim = 0.0
        self._group_ready = False
        self._outage = False
        self._store_outage = StoreOutage(
            logger,
            "Page or results store unavailable (%(error)s): retrying every %(most)s s",
            "The store answers again: analysis resumes",
            first=RETRY_DELAY,
            most=RETRY_DELAY,
            ended_level=logging.INFO,
        )
        self._stop: Callable[[], bool] = bool

    @property
    def bad_records(self) -> int:
        """Stream keys of the wrong type deleted (they were not the crawler's)."""
        return self._stream.bad_records

    def ensure_group(self) -> None:
        """Create the stream and the group reading it from the start, if missing."""
        self._stream.ensure_group()

    def run(
        self, *, idle_exit: float | None = None, stop: Callable[[], bool] = bool
    ) -> int:
        """Handle tasks until *stop()* is true, or no task came for *idle_exit*
        seconds; return how many were handled. Redis going away is waited out."""
        handled = 0
        idle_since = time.monotonic()
        self._group_ready = False
        self._stop = stop
        while not stop():
            try:
                got = self._step()
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                self._unreachable(exc)
                continue
            if self._outage:
                logger.info("Redis answers again: analysis resumes")
                self._outage = False
            handled += got
            if got:
                idle_since = time.monotonic()
            elif idle_exit is not None and time.monotonic() - idle_since >= idle_exit:
                break
        return handled

    def _step(self) -> int:
        """Reclaim (when due) or read, and handle; return how many were handled."""
        if not self._group_ready:
            self.ensure_group()
            self._group_ready = True
        if time.monotonic() >= self._next_claim:
            self._next_claim = time.monotonic() + self._claim_every
            if claimed := self.reclaim():
                return claimed
        return self.read_one()

    def _unreachable(self, exc: Exception) -> None:
        if not self._outage:
            logger.error(
                "Redis unreachable (%(error)s): retrying every %(delay)s s",
                {"error": exc, "delay": RETRY_DELAY},
            )
            self._outage = True
        time.sleep(RETRY_DELAY)

    def read_one(self, block: float = READ_BLOCK) -> int:
        """Read and handle at most one new task; return how many were handled."""
        entries = self._stream.read(block)
        for entry_id, fields in entries:
            self.handle(text(entry_id), fields, deliveries=1)
        return len(entries)

    def reclaim(self) -> int:
        """Take over entries pending longer than the claim timeout (their worker
        died) and handle them; return how many were handled."""
        claimed = self._stream.claim()
        for (entry_id, fields), deliveries in claimed:
            self.handle(text(entry_id), fields, deliveries=deliveries)
        return len(claimed)

    def handle(
        self, entry_id: str, raw: dict[bytes, bytes] | None, *, deliveries: int
    ) -> None:
        """Run one entry, delivered *deliveries* times (earlier deliveries died):
        write its result and acknowledge it, or retry or dead-letter it."""
        try:
            task = AnalysisTask.from_fields(raw)
        except BadTaskError as exc:
            self._dead_letter(
                entry_id, shown_fields(raw), f"bad task: {exc}", deliveries
            )
            return
        tried = task.attempts + deliveries - 1
        if tried >= self._config.max_attempts:
            error = (
                f"the worker stopped during the attempt ({task.error or 'no error'})"
            )
            self._dead_letter(entry_id, task.to_fields(), error, tried)
            return
        try:
            done = self._analyzed(task, entry_id, attempt=tried + 1)
        except (BadTaskError, UnsafePathError) as exc:  # will never succeed: no retry
            self._dead_letter(entry_id, task.to_fields(), f"bad task: {exc}", tried + 1)
        except Exception as exc:  # noqa: BLE001 (an analyzer may raise anything)
            self._failed(entry_id, task, error_text(exc), tried + 1)
        else:
            if done:
                self._stream.ack(entry_id)
                logger.debug("Analyzed %(url)s", {"url": task.url})

    def _analyzed(self, task: AnalysisTask, entry_id: str, *, attempt: int) -> bool:
        """Run *task* and put its result; whether it was done. A store that cannot
        answer now is waited out (it is not the analyzer's failure) until it does,
        or until the worker is asked to stop: the task then stays pending, for
        another worker to claim."""
        while not self._stop():
            try:
                self._write(task, entry_id, self._run(task), attempt=attempt)
            except StoreUnavailableError as exc:
                time.sleep(self._store_outage.failed(exc))
                continue
            self._store_outage.answered()
            return True
        return False

    def _run(self, task: AnalysisTask) -> dict[str, Any] | RawOutput:
        self._check_page(task)
        analyzer = self._loader.get(task.analyzer)
        page = self._stores.pages.get(task.store_path)
        result = analyzer.analyze(page, task.analyzed_record())
        if not isinstance(result, dict | RawOutput):
            raise TypeError(
                f"{task.analyzer} returned {type(result).__name__}, not dict"
            )
        return result

    def _check_page(self, task: AnalysisTask) -> None:
        """``BadTaskError`` unless the task's ``page`` (when given) is its
        ``store_path`` in this worker's page store."""
        if not task.page:
            return
        try:
            key = self._stores.pages.address.key_of(task.page)
        except UnsafePathError as exc:
            raise BadTaskError(f"page: {exc}") from None
        if key != task.store_path:
            raise BadTaskError(
                f"page {task.page[:200]!r} is not store_path {task.store_path!r}"
            )

    def _write(
        self,
        task: AnalysisTask,
        entry_id: str,
        result: dict[str, Any] | RawOutput,
        *,
        attempt: int,
    ) -> None:
        """Put the result in the results store (whole or not at all): a program's
        output that is not a JSON object as it is, else the result document."""
        if isinstance(result, RawOutput):
            self._stores.results.put(task.result_key, result.body)
            return
        document = {
            "url": task.url,
            "analyzer": task.analyzer,
            "task": entry_id,
            "attempts": attempt,
            "analyzed_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "result": result,
        }
        body = json.dumps(document, ensure_ascii=False, allow_nan=False)
        self._stores.results.put(task.result_key, body.encode())

    def _failed(
        self, entry_id: str, task: AnalysisTask, error: str, tried: int
    ) -> None:
        """Attempt *tried* failed: retry the task (a new entry), or dead-letter it."""
        if tried >= self._config.max_attempts:
            self._dead_letter(entry_id, task.to_fields(), error, tried)
            return
        logger.warning(
            "Analysis of %(url)s failed (attempt %(tried)d of %(max)d), retried: "
            "%(error)s",
            {"url": task.url, "tried": tried, "max": self._config.max_attempts,
             "error": error},
        )  # fmt: skip
        self._stream.replace(
            entry_id, replace(task, attempts=tried, error=error).to_fields()
        )

    def _dead_letter(
        self, entry_id: str, fields: dict[str, str], error: str, attempts: int
    ) -> None:
        """Move the entry to the dead-letter stream and alert."""
        failed_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        letter = {
            **fields,
            "task_id": entry_id,
            "error": error,
            "attempts": str(attempts),
            "failed_at": failed_at,
            "consumer": self._stream.consumer,
        }
        dead_id = self._stream.bury(entry_id, letter)
        alert(
            self._config.alert_url,
            {
                "event": "analysis_dead_letter",
                "crawl": self._keys.prefix,
                "task_id": entry_id,
                "dead_id": dead_id,
                "url": fields.get("url", "?"),
                "analyzer": fields.get("analyzer", "?"),
                "attempts": attempts,
                "error": error,
                "failed_at": failed_at,
            },
        )


def consumer_name() -> str:
    """``<host name>-<pid>``: unique per worker process."""
    return f"{os.uname().nodename}-{os.getpid()}"
