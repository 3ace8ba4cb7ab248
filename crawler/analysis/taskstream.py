"""The crawl's analysis streams in Redis, as one worker reads and writes them.

Tasks are entries of ``CrawlKeys.analysis_tasks``, read in the consumer group
``GROUP``; an entry left pending by a worker that died is claimed (``XAUTOCLAIM``)
by another after the claim timeout. A retried task is a new entry (added, then the
old one acknowledged, in one round trip); a task given up goes to
``CrawlKeys.analysis_dead``. A stream key the crawler did not write (of another
type) is deleted, logged and counted in ``bad_records``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, cast

import redis

from crawler.analysis.tasks import GROUP
from crawler.crawlstate.damage import delete_if_wrong_type, retyped

if TYPE_CHECKING:
    from crawler.analysis.analysisconfig import AnalysisConfig
    from crawler.crawlstate.keys import CrawlKeys

logger = logging.getLogger(__name__)

# A stream entry as redis-py reads it: id and fields (None if it was trimmed).
Entry = tuple[bytes, "dict[bytes, bytes] | None"]

# Entries one XAUTOCLAIM takes over.
CLAIM_BATCH = 10


class TaskStream:
    """The task and dead-letter streams of one crawl, for consumer *consumer*."""

    def __init__(
        self,
        client: redis.Redis,
        keys: CrawlKeys,
        config: AnalysisConfig,
        consumer: str,
    ) -> None:
        self._client = client
        self._keys = keys
        self._config = config
        self.consumer = consumer
        self._claim_cursor = "0-0"
        self.bad_records = 0  # stream keys of the wrong type deleted

    def ensure_group(self) -> None:
        """Create the stream and the group reading it from the start, if missing."""
        try:
            self._client.xgroup_create(
                self._keys.analysis_tasks, GROUP, id="0", mkstream=True
            )
        except redis.ResponseError as exc:
            if "BUSYGROUP" in str(exc):
                return
            key = self._keys.analysis_tasks
            if not delete_if_wrong_type(self._client, key, "stream", self._damaged):
                raise
            self.ensure_group()

    def read(self, block: float) -> list[Entry]:
        """At most one new entry, waiting up to *block* seconds for it. A stream
        deleted meanwhile (a reset) is made again, and nothing is read."""
        try:
            answer = self._client.xreadgroup(
                GROUP,
                self.consumer,
                {self._keys.analysis_tasks: ">"},
                count=1,
                block=max(1, int(block * 1000)),
            )
        except redis.ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            self.ensure_group()
            return []
        streams = cast("list[tuple[bytes, list[Entry]]]", answer or [])
        return [entry for _stream, entries in streams for entry in entries]

    def claim(self) -> list[tuple[Entry, int]]:
        """Entries pending longer than the claim timeout (their worker died), each
        with how many times it was delivered, this time included."""
        try:
            answer = self._client.xautoclaim(
                self._keys.analysis_tasks,
                GROUP,
                self.consumer,
                min_idle_time=int(self._config.claim_timeout * 1000),
                start_id=self._claim_cursor,
                count=CLAIM_BATCH,
            )
        except redis.ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            return []
        self._claim_cursor = text(answer[0])
        claimed = [(entry_id, fields) for entry_id, fields in answer[1] if entry_id]
        return [(entry, self._deliveries(entry[0])) for entry in claimed]

    def _deliveries(self, entry_id: bytes) -> int:
        pending = self._client.xpending_range(
            self._keys.analysis_tasks, GROUP, min=entry_id, max=entry_id, count=1
        )
        return int(pending[0]["times_delivered"]) if pending else 1

    def ack(self, entry_id: str) -> None:
        self._client.xack(self._keys.analysis_tasks, GROUP, entry_id)

    def replace(self, entry_id: str, fields: dict[str, str]) -> None:
        """Add *fields* as a new task and acknowledge *entry_id* (one round trip)."""
        pipe = self._client.pipeline(transaction=False)
        pipe.xadd(
            self._keys.analysis_tasks,
            fields,  # type: ignore[arg-type]
            maxlen=self._config.stream_maxlen,
            approximate=True,
        )
        pipe.xack(self._keys.analysis_tasks, GROUP, entry_id)
        pipe.execute()

    def bury(self, entry_id: str, letter: dict[str, str]) -> str:
        """Add *letter* to the dead-letter stream (made again if it was not one),
        then acknowledge *entry_id*: never lost, at worst twice. The letter's id."""
        key = self._keys.analysis_dead
        dead_id = retyped(
            self._client,
            key,
            "stream",
            lambda: self._client.xadd(
                key,
                letter,  # type: ignore[arg-type]
                maxlen=self._config.stream_maxlen,
                approximate=True,
            ),
            self._damaged,
        )
        self.ack(entry_id)
        return text(cast("Any", dead_id))

    def _damaged(self, count: int, what: str) -> None:
        """A stream key the crawler did not write was deleted: logged, counted."""
        self.bad_records += count
        logger.warning(
            "Deleted analysis state the crawler did not write: %(what)s", {"what": what}
        )


def text(value: bytes | str) -> str:
    """A stream id or field as text."""
    return value.decode() if isinstance(value, bytes) else value
