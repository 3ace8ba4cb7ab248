"""The frontier's progress: the log line (done, failed, queued, held, in flight,
pages/min of the crawl and of this node, elapsed, the estimate of the time to drain
what is queued now, and why this node is idle; worded by ``crawler.policy.progress``)
and this node's pages done a minute, kept in Redis for the dashboard.

Rates count over the last ``RATE_WINDOW`` seconds of the line's own samples: the
crawl's from its done count (every node's acks), this node's from its own acks.

The minute counts are a ring of 60 slots in one hash per node
(``CrawlKeys.pace``): each maintenance round that saw pages done writes the current
minute's slot with one pipelined round trip, so their cost is bounded by the
heartbeat, never paid per page, and the hash never holds more than 120 fields.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from crawler.crawlstate.status import read_status
from crawler.policy.progress import Figures, per_minute, progress_line

if TYPE_CHECKING:
    from collections.abc import Collection

    from scrapy.crawler import Crawler

    from crawler.crawlstate.status import CrawlStatus
    from crawler.frontier.store.crawlshards import CrawlShards

logger = logging.getLogger(__name__)

# Minutes of history a node keeps (the ring's slots): the dashboard's last hour.
PACE_MINUTES = 60
# Milliseconds a node's ring outlives its last write (an hour and a minute).
PACE_TTL_MS = (PACE_MINUTES + 1) * 60 * 1000
# Seconds of samples the progress line's rates are counted over.
RATE_WINDOW = 60.0


def pace_fields(minute: int) -> tuple[str, str]:
    """The hash fields of *minute*'s slot: (its minute number, its page count)."""
    slot = minute % PACE_MINUTES
    return f"m{slot}", f"p{slot}"


class Progress:
    """Counts pages done by this node and logs the crawl's progress every
    *interval* (``FRONTIER_LOG_INTERVAL``), at the heartbeat that passes it."""

    def __init__(self, crawler: Crawler, interval: float) -> None:
        self._crawler = crawler
        self._interval = interval
        self._pages = 0
        self._last_log: float | None = None
        self._samples: deque[Sample] = deque()
        self._pages_paced = 0
        self._minute = -1
        self._minute_pages = 0

    def acked(self, count: int) -> None:
        self._pages += count

    def record_pace(self, shards: CrawlShards, node_id: str, now: float) -> None:
        """Write this minute's pages done by *node_id* if any were done since the
        last write: one round trip, at most once a maintenance round. Pages are
        counted in the minute of the round that sees them."""
        added = self._pages - self._pages_paced
        if not added:
            return
        minute = int(now // 60)
        if minute != self._minute:
            self._minute, self._minute_pages = minute, 0
        self._minute_pages += added
        self._pages_paced = self._pages
        keys = shards.crawl_keys
        minute_field, pages_field = pace_fields(minute)
        pipe = shards.client.pipeline(transaction=False)
        pipe.hset(
            keys.pace(node_id),
            mapping={minute_field: minute, pages_field: self._minute_pages},
        )
        pipe.pexpire(keys.pace(node_id), PACE_TTL_MS)
        pipe.zadd(keys.pace_nodes, {node_id: now})
        pipe.zremrangebyscore(keys.pace_nodes, "-inf", now - PACE_TTL_MS / 1000)
        pipe.execute()

    def maybe_log(
        self, shards: CrawlShards, owned: Collection[int], now: float
    ) -> None:
        """Log the progress line if *interval* has passed since the last one: the
        crawl's status read in two round trips (``read_status``), never per page.
        The first call only takes the first sample the rates count from."""
        if self._last_log is not None and now - self._last_log < self._interval:
            return
        first = self._last_log is None
        self._last_log = now
        status = read_status(shards.client, shards.crawl_keys, shards.config.shards)
        figures = self._figures(status, sorted(owned), now)
        if first:
            return
        logger.info(
            "%(line)s",
            {"line": progress_line(figures, now=now)},
            extra={"spider": self._crawler.spider},
        )

    def _figures(self, status: CrawlStatus, owned: list[int], now: float) -> Figures:
        """This round's figures; the rates over the last RATE_WINDOW seconds."""
        totals = status.totals()
        left = totals.queued + totals.held + totals.in_flight
        sample = Sample(now, totals.done, self._pages, left)
        while self._samples and now - self._samples[0].at > RATE_WINDOW:
            self._samples.popleft()
        oldest = self._samples[0] if self._samples else sample
        self._samples.append(sample)
        seconds = now - oldest.at
        return Figures(
            done=totals.done,
            failed=totals.failed,
            queued=totals.queued,
            held=totals.held,
            in_flight=totals.in_flight,
            next_held=status.next_held,
            crawl_rate=per_minute(sample.done - oldest.done, seconds),
            node_rate=per_minute(sample.node_done - oldest.node_done, seconds),
            elapsed=None if status.started is None else now - status.started,
            growing=sample.left > oldest.left,
            idle=status.idle_reason(owned, now=now),
        )


@dataclass(frozen=True, slots=True)
class Sample:
    """The counts at one progress round: the crawl's done, this node's, and what
    is left (queued, held, in flight)."""

    at: float
    done: int
    node_done: int
    left: int
