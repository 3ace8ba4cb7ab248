"""The consumer of analysis tasks: one ``AnalysisWorker`` per process.

Each worker reads tasks one at a time in the consumer group ``GROUP`` of the crawl's
task stream, runs the task's analyzer on the stored page, writes the result as JSON
(atomically) and acknowledges the task. A failed attempt acknowledges the entry and
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
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis

from crawler.analysis.alerts import alert
from crawler.analysis.tasks import (
    AnalysisTask,
    BadTaskError,
    error_text,
    shown_fields,
)
from crawler.analysis.taskstream import TaskStream, text

if TYPE_CHECKING:
    from collections.abc import Callable

    from crawler.analysis.analysisconfig import AnalysisConfig
    from crawler.analysis.loader import AnalyzerLoader
    from crawler.crawlstate.keys import CrawlKeys

logger = logging.getLogger(__name__)

# Seconds one XREADGROUP waits for a task (how soon a stop request is seen).
READ_BLOCK = 0.5
# Seconds between two tries to reach Redis while it does not answer.
RETRY_DELAY = 1.0


class AnalysisWorker:
    """Runs the analysis tasks of one crawl as consumer *consumer* (see module)."""

    def __init__(
        self,
        client: redis.Redis,
        keys: CrawlKeys,
        config: AnalysisConfig,
        loader: AnalyzerLoader,
        consumer: str,
    ) -> None:
        self._stream = TaskStream(client, keys, config, consumer)
        self._keys = keys
        self._config = config
        self._loader = loader
        self._claim_every = min(max(config.claim_timeout / 4, 0.1), 5.0)
        self._next_claim = 0.0
        self._group_ready = False
        self._outage = False

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
            self._write(task, entry_id, self._run(task), attempt=tried + 1)
        except BadTaskError as exc:  # will never succeed: no retry
            self._dead_letter(entry_id, task.to_fields(), f"bad task: {exc}", tried + 1)
        except Exception as exc:  # noqa: BLE001 (an analyzer may raise anything)
            self._failed(entry_id, task, error_text(exc), tried + 1)
        else:
            self._stream.ack(entry_id)
            logger.debug("Analyzed %(url)s", {"url": task.url})

    def _run(self, task: AnalysisTask) -> dict[str, Any]:
        analyzer = self._loader.get(task.analyzer)
        page = task.page_file(self._config.store_dir).read_bytes()
        result = analyzer.analyze(page, task.record)
        if not isinstance(result, dict):
            raise TypeError(
                f"{task.analyzer} returned {type(result).__name__}, not dict"
            )
        return result

    def _write(
        self, task: AnalysisTask, entry_id: str, result: dict[str, Any], *, attempt: int
    ) -> None:
        """Write the result file atomically (a temporary file, then a rename)."""
        target = task.result_file(self._config.store_dir)
        document = {
            "url": task.url,
            "analyzer": task.analyzer,
            "task": entry_id,
            "attempts": attempt,
            "analyzed_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "result": result,
        }
        text = json.dumps(document, ensure_ascii=False, allow_nan=False)
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", dir=target.parent, prefix=".", suffix=".tmp",
            delete=False,
        ) as handle:  # fmt: skip
            temporary = Path(handle.name)
            try:
                handle.write(text)
            except BaseException:
                temporary.unlink()
                raise
        temporary.replace(target)

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
