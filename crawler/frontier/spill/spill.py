"""One shard's spill, out and back: entries past a queue's head go from Redis to the
database, and come back, in order, when the queue runs low.

Nothing is lost and nothing is queued twice, whatever stops in between:

- **Out.** The push script appends a queue's entries past its head to the shard's
  ``spill_out`` list, and counts them in the queue's spill state. ``write_out`` reads
  the oldest, writes them to the database (a row already there is left alone), then
  trims them from ``spill_out`` only if its oldest entry is still the one it read: a
  stop before the trim writes them again harmlessly; two workers on one shard (a
  shard changing hands) trim once.
- **Back.** Entries leave ``spill_out`` oldest first, so the database holds the
  oldest spilled entries of every queue. ``bring_back`` reads a low queue's next
  rows after its mark (the sequence number of the last entry brought back); the
  refill script queues those past the mark and moves it; then the rows up to the
  mark are deleted. A stop before the delete leaves rows the mark already passed:
  never queued again, deleted next time.
- **Done.** A queue with nothing spilled keeps its state (the mark) until the rows
  up to it are deleted; only then is it forgotten (``spill_forget``).
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from crawler.crawlstate.keys import CrawlKeys
from crawler.crawlstate.readers import decoded
from crawler.frontier.store.scriptargs import common_args
from crawler.frontier.store.scripts import Call

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from redis import Redis

    from crawler.frontier.frontierconfig import FrontierConfig
    from crawler.frontier.spill.table import Row, SpillTable
    from crawler.frontier.store.scriptargs import Scalar, Value
    from crawler.frontier.store.scripts import ScriptRunner

logger = logging.getLogger(__name__)

# Entries of spill_out written to the database in one batch, and most batches a
# shard's round writes (so one busy shard does not hold back the others).
WRITE_BATCH = 2000
WRITE_BATCHES = 25
# Most queues a shard's round brings entries back to or forgets (and fields of the
# spill hash its sweep looks at).
DUE_LIMIT = 200

# A spill_out entry: '<class> <len(host)> <host><seq>|<json>'.
_OUT = re.compile(rb"(\d+) (\d+) (.*)", re.DOTALL)


@dataclass(slots=True)
class SpillCounts:
    """What a round did: entries written to the database, brought back to Redis,
    queues forgotten, and entries of spill_out that could not be read."""

    written: int = 0
    brought_back: int = 0
    forgotten: int = 0
    damaged: int = 0

    def add(self, other: SpillCounts) -> None:
        self.written += other.written
        self.brought_back += other.brought_back
        self.forgotten += other.forgotten
        self.damaged += other.damaged


class Spill:
    """Moves a crawl's spilled entries between Redis and the spill table."""

    def __init__(
        self,
        client: Redis,
        scripts: ScriptRunner,
        table: SpillTable,
        config: FrontierConfig,
        refilled: Callable[[int, Sequence[Any]], None] = lambda shard, summary: None,
    ) -> None:
        self._client = client
        self._scripts = scripts
        self._table = table
        self._config = config
        self._keys = CrawlKeys(config.prefix)
        # Called with a shard and its summary after entries came back to it.
        self._refilled = refilled
        self._cursors: dict[int, str] = {}  # each shard's sweep of its spill hash

    def _run(
        self,
        script: str,
        shard: int,
        args: Mapping[str, Scalar],
        records: Sequence[Mapping[str, Value]] = (),
    ) -> Any:
        """The reply of one spill script on *shard*, with the common arguments."""
        named = {**common_args(self._config, time.time()), **args}
        (reply,) = self._scripts.run(
            [Call(script, self._keys.shard(shard), named, records)]
        )
        return reply

    def round(self, shard: int) -> SpillCounts:
        """Write out what *shard* spilled, then bring back what its queues want."""
        counts = self.write_out(shard)
        counts.add(self.bring_back(shard))
        return counts

    def write_out(self, shard: int) -> SpillCounts:
        """Write *shard*'s ``spill_out`` to the database, batch by batch."""
        counts = SpillCounts()
        keys = self._keys.shard(shard)
        for _ in range(WRITE_BATCHES):
            items = cast(
                "list[bytes]", self._client.lrange(keys.spill_out, 0, WRITE_BATCH - 1)
            )
            if not items:
                break
            rows = [row for row in map(spilled_row, items) if row is not None]
            counts.damaged += len(items) - len(rows)
            self._table.add(shard, rows)
            count = {"count": len(items)}
            trimmed = self._run("spill_trim", shard, count, [{"first": items[0]}])
            if not trimmed:  # another worker wrote and trimmed them
                break
            counts.written += len(rows)
            if len(items) < WRITE_BATCH:
                break
        if counts.damaged:
            logger.warning(
                "Spill: %(count)d entries of %(key)s could not be read: dropped",
                {"count": counts.damaged, "key": keys.spill_out},
            )
        return counts

    def bring_back(self, shard: int) -> SpillCounts:
        """Bring back the next entries of *shard*'s queues that ran low; forget the
        queues with nothing spilled left."""
        counts = SpillCounts()
        cursor = self._cursors.get(shard, "0")
        reply = self._run("spill_due", shard, {"limit": DUE_LIMIT, "cursor": cursor})
        self._cursors[shard] = decoded(reply[0])
        due = reply[1:]
        for i in range(0, len(due) - 4, 5):
            queue_class, host = int(due[i]), decoded(due[i + 1])
            spilled, mark, left = int(due[i + 2]), int(due[i + 3]), int(due[i + 4])
            if spilled:
                counts.brought_back += self._refill(
                    shard, host, queue_class, (spilled, mark, left)
                )
            else:
                counts.forgotten += self._forget(shard, host, queue_class, mark)
        return counts

    def _refill(
        self, shard: int, host: str, queue_class: int, state: tuple[int, int, int]
    ) -> int:
        """Bring back one queue's next entries, up to its head; how many. *state*:
        its entries spilled, its mark and the entries in its head, as read."""
        spilled, mark, left = state
        # Read before the database: an entry that left spill_out by then is there.
        waiting_out = self._client.llen(self._keys.shard(shard).spill_out)
        wanted = max(self._config.spill_head - left, 1)
        rows = self._table.next(shard, host, queue_class, mark, wanted)
        if not rows:
            if not waiting_out:  # counted, yet nowhere
                self._count_out(shard, host, queue_class, spilled, mark)
            return 0  # else still in spill_out: written next round
        records = [{"entry": f"{seq}|{entry}"} for seq, entry in rows]
        queue: dict[str, Scalar] = {"host": host, "class": queue_class}
        concurrency = self._config.host_concurrency
        reply = self._run(
            "spill_refill", shard, {**queue, "concurrency": concurrency}, records
        )
        queued, mark, spilled = int(reply[0]), int(reply[1]), int(reply[2])
        self._table.drop(shard, host, queue_class, mark)
        self._refilled(shard, reply[3:])
        if not spilled:  # its rows up to the mark are gone: forget its state
            self._run("spill_forget", shard, {**queue, "mark": mark})
        return queued

    def _count_out(
        self, shard: int, host: str, queue_class: int, spilled: int, mark: int
    ) -> None:
        """A queue counts *spilled* entries that neither the database nor spill_out
        holds (dropped from spill_out as damaged): count them out, unless the
        queue changed since it was read, so the crawl can end."""
        lost: dict[str, Scalar] = {
            "host": host,
            "class": queue_class,
            "count": spilled,
            "mark": mark,
        }
        counted_out = self._run("spill_lost", shard, lost)
        if counted_out:
            logger.warning(
                "Spill: %(count)d entries of %(host)s's queue %(queue)d were counted "
                "but lost (damaged in spill_out): counted out",
                {"count": spilled, "host": host, "queue": queue_class},
            )

    def _forget(self, shard: int, host: str, queue_class: int, mark: int) -> int:
        """Delete a queue's rows up to its mark, then its spill state, unless it
        spilled again since; 1 if forgotten."""
        self._table.drop(shard, host, queue_class, mark)
        queue: dict[str, Scalar] = {"host": host, "class": queue_class, "mark": mark}
        forgotten = self._run("spill_forget", shard, queue)
        return int(forgotten)


def spilled_row(item: bytes) -> Row | None:
    """The row of a ``spill_out`` entry; None if it is not one the crawler wrote."""
    match = _OUT.fullmatch(item)
    if match is None:
        return None
    length, rest = int(match[2]), match[3]
    if length > len(rest):
        return None
    seq, bar, entry = rest[length:].partition(b"|")
    if not bar or not seq.isdigit():
        return None
    try:
        return rest[:length].decode(), int(match[1]), int(seq), entry.decode()
    except UnicodeDecodeError:
        return None
