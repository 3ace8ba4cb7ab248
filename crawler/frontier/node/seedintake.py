"""Seeds any client pushes to the crawl's Redis seed list, read by a running node.

An entry is a plain URL (``redis-cli RPUSH bfs:seeds https://c.example/``) or the
JSON object scrapy-redis users push (``{"url": ..., "meta": {...}, "priority": N}``,
optional ``"method"`` and form fields: ``crawler.policy.scope.parse_seed_payload``).
A bad entry is counted in ``frontier/bad_seeds`` and skipped, with one WARNING per
kind of fault; it never stops the heartbeat.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.http import FormRequest

from crawler.context.logonce import OnceLogger
from crawler.crawlstate.damage import retyped
from crawler.frontier.encoding.plainurl import as_is, request_url
from crawler.meta import REVIVE
from crawler.policy.hosts import BadURLError, host_of
from crawler.policy.scope import BadSeedError, SeedPayload, parse_seed_payload

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler

    from crawler.frontier.store.crawlshards import CrawlShards

logger = logging.getLogger(__name__)

# Seeds taken from the crawl's Redis seed list in one LPOP: one round trip a batch,
# and one push script call a shard for its plain seeds (issue 27: 1000 a batch
# spent a third of the push script's time in its per-call work at 64 shards).
SEEDS_PER_BATCH = 5000
# Seconds of a maintenance round spent on seeds: a large backlog (issue 27: 100M
# seeds) is taken at the pace the node can enqueue, not 1000 a heartbeat (200 URLs/s
# at the 5 s FRONTIER_MAINTENANCE_INTERVAL), while the round's other work still runs.
SEEDS_ROUND_SECONDS = 1.0


class SeedIntake:
    def __init__(
        self,
        crawler: Crawler,
        enqueue: Callable[[Request], bool],
        flush: Callable[[], object] | None = None,
        budget: float = SEEDS_ROUND_SECONDS,
        enqueue_urls: Callable[[list[str]], object] | None = None,
    ) -> None:
        self._enqueue = enqueue
        # Plain-URL seeds in bulk, with no Request each (issue 27), to go with
        # the next flush; without it every seed is enqueued as a Request.
        self._enqueue_urls = enqueue_urls
        # Starts writing what enqueue buffered; the next batch is admitted while
        # Redis runs it, and written once it is done (the exchange's write_behind).
        self._flush = flush
        self._budget = budget
        self.backlog = False  # the last take stopped on time with seeds left
        self._once = OnceLogger(logger, crawler)  # one line per kind of bad seed

    def take(self, shards: CrawlShards) -> int:
        """Enqueue the seeds waiting in Redis, SEEDS_PER_BATCH at a time until the
        list is empty or the round's time budget is spent (at least one batch);
        how many entries were read."""
        deadline = time.monotonic() + self._budget
        taken = 0
        entries = self._pop(shards)
        while True:  # bounded: each pass pops a batch; ends on a short one or time
            read = self._take_batch(entries)
            taken += read
            more = read == SEEDS_PER_BATCH and time.monotonic() < deadline
            # The next batch is popped before this one's write starts: Redis runs
            # one command at a time, and popped behind the write it would wait for
            # it, leaving nothing to admit while Redis works.
            entries = self._pop(shards) if more else []
            if read and self._flush is not None:
                try:
                    self._flush()
                except Exception:
                    # The next batch has left Redis: it waits in the buffer, as a
                    # batch whose write failed does, for the next trip that works.
                    self._take_batch(entries)
                    raise
            if not more:
                self.backlog = read == SEEDS_PER_BATCH
                return taken

    def _pop(self, shards: CrawlShards) -> list[bytes]:
        """Up to SEEDS_PER_BATCH seeds, popped in one call."""
        key, client = shards.crawl_keys.seeds, shards.client
        entries: list[bytes] | None = retyped(  # type: ignore[assignment]
            client,
            key,
            "list",
            lambda: client.lpop(key, SEEDS_PER_BATCH),
            shards.damaged,
        )
        return entries or []

    def _take_batch(self, entries: list[bytes]) -> int:
        """Enqueue the seeds of *entries*; how many entries there were."""
        plain: list[str] = []
        for entry in entries:
            if self._enqueue_urls is not None and (url := _plain_url(entry)):
                plain.append(url)
                continue
            if (seed := self._seed(entry)) is None:
                continue
            if self._enqueue_urls is not None and _plain(seed):
                plain.append(seed.url)
            else:
                self._enqueue(_request(seed))
        if plain and self._enqueue_urls is not None:
            self._enqueue_urls(plain)
        return len(entries)

    def _seed(self, entry: bytes) -> SeedPayload | None:
        """The seed *entry* asks for, or None (counted, logged once per kind)."""
        try:
            seed = parse_seed_payload(entry.decode("utf-8"))
            if seed is None:
                return None
            # As Request keeps it; a URL it refuses (a port over 65535) is bad.
            url = request_url(seed.url)
            return seed if url == seed.url else replace(seed, url=url)
        except UnicodeDecodeError:
            self._bad("utf-8", "not UTF-8 text", entry)
        except BadSeedError as exc:
            self._bad(exc.kind, str(exc), entry)
        except ValueError as exc:
            self._bad("url", str(exc)[:200], entry)
        return None

    def _bad(self, kind: str, reason: str, entry: bytes) -> None:
        self._once.event(
            "frontier/bad_seeds",
            "Skipped a seed from Redis (%(reason)s): %(entry)r; further seeds with "
            "this fault (%(kind)s) are only counted in frontier/bad_seeds",
            {"reason": reason, "kind": kind, "entry": entry[:200]},
            key=kind,
        )


def _plain_url(entry: bytes) -> str | None:
    """*entry* as the bulk path takes it, if it is a URL kept as it is (most lines
    of a seed file): what ``_seed`` gives it, without its parse (issue 27). None
    for anything else, which ``_seed`` reads."""
    try:
        url = entry.decode("ascii").strip()  # a URL kept as is is ASCII
    except UnicodeDecodeError:
        return None
    if not as_is(url):
        return None
    try:
        host_of(url)  # a bad label or too long a name: _seed says so
    except BadURLError:
        return None
    return url


def _plain(seed: SeedPayload) -> bool:
    """A seed that is a URL and nothing more (the common case: a line of a seed
    file), which the bulk path queues as ``_request`` would."""
    return not (seed.meta or seed.formdata or seed.priority) and seed.method == "GET"


def _request(seed: SeedPayload) -> Request:
    """The request *seed* asks for: a seed is revived if it failed for good."""
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
