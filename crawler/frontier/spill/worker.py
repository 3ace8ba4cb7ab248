"""The spill worker: a thread that runs the spill's rounds for the node's shards.

Off the reactor, since database calls block. Every FRONTIER_SPILL_INTERVAL it
writes out and brings back each shard the node owns (``Spill.round``). Redis or the
database going away is waited out: the round ends, the next one tries again (the
database reconnected); nothing is lost, as nothing leaves Redis before the database
has it. What a round did reaches the node through *report*, on its own thread.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import TYPE_CHECKING

from crawler.context.database import DRIVER_ERRORS, first_line
from crawler.context.outage import REDIS_ERRORS
from crawler.frontier.spill.spill import Spill, SpillCounts
from crawler.frontier.spill.table import DATABASE_ERRORS, SpillTable
from crawler.frontier.store.scripts import script_runner

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from redis import Redis

    from crawler.frontier.frontierconfig import FrontierConfig

logger = logging.getLogger(__name__)

# Seconds a stopping node waits for a round under way.
STOP_TIMEOUT = 30.0


class SpillWorker:
    """Runs the spill of the shards *owned* returns, on a thread of its own."""

    def __init__(
        self,
        client: Redis,
        config: FrontierConfig,
        owned: Callable[[], frozenset[int]],
        report: Callable[[SpillCounts], None],
        refilled: Callable[[int, Sequence[Any]], None],
    ) -> None:
        self._client = client
        self._config = config
        self._owned = owned
        self._report = report
        self._table = SpillTable(config.spill_database_url, config.prefix)
        self._spill = Spill(
            client, script_runner(client), self._table, config, refilled
        )
        self._stopping = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="frontier-spill", daemon=True
        )
        self._failing = False  # a round failed: logged once until one succeeds

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """End the rounds, waiting for the one under way; close the database."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(STOP_TIMEOUT)
        self._table.close()
        self._client.close()

    def _run(self) -> None:
        while not self._stopping.wait(self._config.spill_interval):
            self.round()

    def round(self) -> SpillCounts:
        """One round over the node's shards; what it did (reported too)."""
        counts = SpillCounts()
        try:
            if not self._table.is_open:
                self._table.open()
            for shard in sorted(self._owned()):
                if self._stopping.is_set():
                    break
                counts.add(self._spill.round(shard))
        except Exception as exc:  # noqa: BLE001 (a stopped thread would strand the spill)
            self._failed(exc)
        else:
            if self._failing:
                logger.info("Spill: rounds work again")
            self._failing = False
        if counts.written or counts.brought_back or counts.forgotten or counts.damaged:
            self._report(counts)
        return counts

    def _failed(self, error: Exception) -> None:
        """Log the first failure of a run of them (a bug with its traceback);
        reconnect the database next round."""
        if isinstance(error, DATABASE_ERRORS):
            with contextlib.suppress(*DRIVER_ERRORS):
                self._table.close()
        if not self._failing:
            expected = isinstance(error, (*REDIS_ERRORS, *DATABASE_ERRORS))
            logger.log(
                logging.WARNING if expected else logging.ERROR,
                "Spill: a round failed (%(error)s); the next tries again in %(interval)gs",
                {"error": first_line(error), "interval": self._config.spill_interval},
                exc_info=None if expected else error,
            )
        self._failing = True
