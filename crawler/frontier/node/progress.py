"""The frontier's progress: the log line (queue size, hosts ready, in flight,
pages/min) and this node's pages done a minute, kept in Redis for the dashboard.

The minute counts are a ring of 60 slots in one hash per node
(``CrawlKeys.pace``): each maintenance round that saw pages done writes the current
minute's slot with one pipelined round trip, so their cost is bounded by the
heartbeat, never paid per page, and the hash never holds more than 120 fields.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from crawler.frontier.store.crawlshards import CrawlShards

logger = logging.getLogger(__name__)

# Minutes of history a node keeps (the ring's slots): the dashboard's last hour.
PACE_MINUTES = 60
# Milliseconds a node's ring outlives its last write (an hour and a minute).
PACE_TTL_MS = (PACE_MINUTES + 1) * 60 * 1000


def pace_fields(minute: int) -> tuple[str, str]:
    """The hash fields of *minute*'s slot: (its minute number, its page count)."""
    slot = minute % PACE_MINUTES
    return f"m{slot}", f"p{slot}"


class Progress:
    """Counts pages done by this node and logs the crawl's state every *interval*."""

    def __init__(self, crawler: Crawler, interval: float) -> None:
        self._crawler = crawler
        self._interval = interval
        self._pages = 0
        self._pages_at_last_log = 0
        self._last_log: float | None = None
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

    def maybe_log(self, shards: CrawlShards, now: float) -> None:
        if self._last_log is None:
            self._last_log = now
            return
        elapsed = now - self._last_log
        if elapsed < self._interval:
            return
        queued, leased = shards.totals()
        rate = (self._pages - self._pages_at_last_log) * 60 / elapsed
        logger.info(
            "Frontier: %(queued)d queued, %(ready)d hosts ready, %(leased)d in flight, "
            "%(rate).0f pages/min on this node",
            {
                "queued": queued,
                "ready": shards.hosts_ready(),
                "leased": leased,
                "rate": rate,
            },
            extra={"spider": self._crawler.spider},
        )
        self._last_log = now
        self._pages_at_last_log = self._pages
