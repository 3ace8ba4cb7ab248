"""ServerGateMiddleware: a leased request goes out only through its server's gate.

With ``POLITENESS_KEY = ip`` (or ``domain``) the names that share a server share one
request in flight and one delay, whichever shards and nodes they are on
(``crawler.frontier.servergates`` says how the gate works). Placed before the robots
middleware, so a robots.txt fetched for the request goes out under the same gate.
A request that finds the gate taken goes back to the frontier unchanged, and its
host waits until the gate can be free (``politeness/server_busy``). Without Redis
the gate is not asked (``politeness/server_gate_errors``): the crawl goes on per
host name rather than stop.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Literal

from scrapy.exceptions import NotConfigured

from crawler.context.asyncclient import LazyAsyncClient
from crawler.context.crawl import CrawlContext
from crawler.context.logonce import OnceLogger
from crawler.context.outage import REDIS_ERRORS, is_outage
from crawler.context.startup import StartupFailure
from crawler.crawlstate.keys import CrawlKeys
from crawler.dns.resolver import addresses_of
from crawler.frontier.servergates import Busy, ServerGates
from crawler.meta import (
    LEASE,
    REPARSE,
    REQUEUED,
    ROBOTS_FETCH,
    SERVER_BUSY_UNTIL,
    SERVER_GATE,
)
from crawler.policy.hosts import BadURLError, host_of
from crawler.policy.servers import politeness_key, server_of
from crawler.policy.typedsettings import get_float

if TYPE_CHECKING:
    from typing import Self

    from scrapy import Request
    from scrapy.crawler import Crawler

    from crawler.policy.servers import PolitenessKey

logger = logging.getLogger(__name__)

TAKEN: Literal["taken"] = "taken"


class ServerGateMiddleware:
    def __init__(self, crawler: Crawler, key: PolitenessKey, hold: float) -> None:
        assert crawler.spider is not None
        self._crawler = crawler
        self._key = key
        self._hold = hold  # FRONTIER_LEASE_TIMEOUT: a gate outlives no lease
        self._gates = ServerGates(CrawlKeys.of(crawler.settings, crawler.spider.name))
        self._once = OnceLogger(logger, crawler)
        self._redis = LazyAsyncClient(crawler)
        self._gate = CrawlContext.of(crawler).outage.gate("the server gates")
        assert crawler.stats is not None
        self._stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self | StartupFailure:
        try:
            key = politeness_key(crawler.settings)
            hold = get_float(crawler.settings, "FRONTIER_LEASE_TIMEOUT", above=0)
        except ValueError as exc:
            return StartupFailure(crawler, f"Bad setting: {exc}")
        if key == "host":
            raise NotConfigured  # the frontier spaces each host: nothing to add
        return cls(crawler, key, hold)

    async def process_request(self, request: Request) -> Request | None:
        meta = request.meta
        lease = meta.get(LEASE)
        if not isinstance(lease, str) or meta.get(ROBOTS_FETCH) or meta.get(REPARSE):
            return None  # not the frontier's, or answered from the page store
        try:
            host = host_of(request.url)
        except BadURLError:
            return None  # the download fails on its own
        server = server_of(host, self._key, await self._addresses(host))
        now = time.time()
        taken = await self._take(server, lease, now)
        if taken == TAKEN:
            meta[SERVER_GATE] = [server, lease]
        if not isinstance(taken, Busy):
            return None  # through the gate, or Redis did not answer it
        if taken.free_at is not None:
            return self._busy(request, server, taken.free_at)
        # In flight: the holder's delay starts when its download ends, after now.
        delay = CrawlContext.of(self._crawler).delays.delay_for(host, now=now)
        return self._busy(request, server, now + delay)

    async def _take(
        self, server: str, lease: str, now: float
    ) -> Busy | Literal["taken"] | None:
        """``TAKEN`` if *lease* took *server*'s gate, why not if another has it,
        None if Redis did not answer (the request goes out per host name alone)."""
        if not self._gate.ready(now):
            self._stats.inc_value("politeness/server_gate_errors")
            return None
        try:
            busy = await self._gates.take(
                self._redis(), server, holder=lease, now=now, expiry=now + self._hold
            )
        except REDIS_ERRORS as exc:
            self._gate_failed(exc, now)
            return None
        self._gate.succeeded()
        return TAKEN if busy is None else busy

    async def _addresses(self, host: str) -> tuple[str, ...]:
        return await addresses_of(host) if self._key == "ip" else ()

    def _busy(self, request: Request, server: str, until: float) -> Request:
        """*request* again, to be queued unchanged; its host waits until *until*."""
        self._once.event(
            "politeness/server_busy",
            "%(url)s went back to the frontier: its server %(server)s is busy "
            "(POLITENESS_KEY=%(key)s); further ones are counted in "
            "politeness/server_busy",
            {"url": request.url, "server": server, "key": self._key},
            level=logging.INFO,
        )
        request.meta[SERVER_BUSY_UNTIL] = until  # read by the lease's ack
        requeued = request.meta.get(REQUEUED, 0)
        meta = {
            k: v
            for k, v in request.meta.items()
            if k not in (SERVER_BUSY_UNTIL, SERVER_GATE)
        }
        meta[REQUEUED] = (requeued if isinstance(requeued, int) else 0) + 1
        return request.replace(dont_filter=True, meta=meta)

    def _gate_failed(self, error: Exception, now: float) -> None:
        """An outage is the crawl's to report (one line for every component);
        anything else is logged here once. Either way the request goes out."""
        if is_outage(error):
            self._stats.inc_value("politeness/server_gate_errors")
            self._gate.failed(error, now)
            return
        self._once.event(
            "politeness/server_gate_errors",
            "Could not ask Redis for a server's gate (%(error)s): requests go out "
            "per host name until it answers; further ones are counted in "
            "politeness/server_gate_errors",
            {"error": error},
        )
