"""Seeds any client pushes to the crawl's Redis seed list, read by a running node.

An entry is a plain URL (``redis-cli RPUSH bfs:seeds https://c.example/``) or the
JSON object scrapy-redis users push (``{"url": ..., "meta": {...}, "priority": N}``,
optional ``"method"`` and form fields: ``crawler.policy.scope.parse_seed_payload``).
A bad entry is counted in ``frontier/bad_seeds`` and skipped, with one WARNING per
kind of fault; it never stops the heartbeat.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.http import FormRequest

from crawler.context.logonce import OnceLogger
from crawler.crawlstate.damage import retyped
from crawler.meta import REVIVE
from crawler.policy.scope import BadSeedError, parse_seed_payload

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler

    from crawler.frontier.store.crawlshards import CrawlShards

logger = logging.getLogger(__name__)

# Seeds taken from the crawl's Redis seed list per maintenance round.
SEEDS_PER_ROUND = 1000


class SeedIntake:
    def __init__(self, crawler: Crawler, enqueue: Callable[[Request], bool]) -> None:
        self._enqueue = enqueue
        self._once = OnceLogger(logger, crawler)  # one line per kind of bad seed

    def take(self, shards: CrawlShards) -> int:
        """Enqueue the seeds waiting in Redis (at most SEEDS_PER_ROUND); how many
        entries were read."""
        key, client = shards.crawl_keys.seeds, shards.client
        entries: list[bytes] | None = retyped(  # type: ignore[assignment]
            client,
            key,
            "list",
            lambda: client.lpop(key, SEEDS_PER_ROUND),
            shards.damaged,
        )
        for entry in entries or ():
            if (request := self._request(entry)) is not None:
                self._enqueue(request)
        return len(entries or ())

    def _request(self, entry: bytes) -> Request | None:
        """The request *entry* asks for, or None (counted, logged once per kind)."""
        try:
            seed = parse_seed_payload(entry.decode("utf-8"))
        except UnicodeDecodeError:
            self._bad("utf-8", "not UTF-8 text", entry)
            return None
        except BadSeedError as exc:
            self._bad(exc.kind, str(exc), entry)
            return None
        if seed is None:
            return None
        meta = {**seed.meta, REVIVE: True}
        if seed.formdata:  # as scrapy-redis sends them
            return FormRequest(
                seed.url,
                method=seed.method,
                formdata=seed.formdata,
                meta=meta,
                priority=seed.priority,
            )
        return Request(seed.url, method=seed.method, meta=meta, priority=seed.priority)

    def _bad(self, kind: str, reason: str, entry: bytes) -> None:
        self._once.event(
            "frontier/bad_seeds",
            "Skipped a seed from Redis (%(reason)s): %(entry)r; further seeds with "
            "this fault (%(kind)s) are only counted in frontier/bad_seeds",
            {"reason": reason, "kind": kind, "entry": entry[:200]},
            key=kind,
        )
