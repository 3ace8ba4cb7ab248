"""The crawl this start means: its identity checked against the one in Redis.

The spider says what it starts (``crawl_seeds`` and ``crawl_scope``, attributes the
``bfs`` spider sets; a spider without them starts no seeds of its own and joins
whatever crawl its keys hold). New seeds over an unfinished crawl are refused in
one line (``CrawlConflictError``); see ``crawler.policy.crawlidentity``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from crawler.crawlstate.clients import masked
from crawler.crawlstate.identity import read_identity, write_identity
from crawler.crawlstate.status import read_status
from crawler.policy.crawlidentity import (
    CrawlIdentity,
    Verdict,
    conflict_message,
    verdict,
)
from crawler.policy.crawlsummary import Counts, utc_text

if TYPE_CHECKING:
    import redis
    from scrapy import Spider

    from crawler.crawlstate.keys import CrawlKeys


class CrawlConflictError(RuntimeError):
    """New seeds over another unfinished crawl (the message says the ways on)."""


@dataclass(frozen=True, slots=True)
class SettledCrawl:
    """The crawl as this start found it, and what it does with it."""

    identity: CrawlIdentity
    verdict: Verdict
    counts: Counts


def declared_identity(spider: Spider, now: float) -> CrawlIdentity:
    """What *spider* starts: its seeds and scope, if it says (the ``bfs`` spider)."""
    seeds = getattr(spider, "crawl_seeds", ())
    scope = getattr(spider, "crawl_scope", "")
    return CrawlIdentity.of(spider.name, str(scope), list(seeds), now)


def settle(
    client: redis.Redis,
    keys: CrawlKeys,
    shards: int,
    given: CrawlIdentity,
    redis_url: str,
) -> SettledCrawl:
    """Check *given* against the crawl there; write it if it is the crawl's new
    identity. Raises ``CrawlConflictError`` for new seeds over an unfinished one."""
    stored = read_identity(client, keys)
    status = read_status(client, keys, shards)
    totals = status.totals()
    counts = Counts(
        queued=status.queued,
        in_flight=status.in_flight,
        held=status.held,
        done=totals.done,
        failed=totals.failed,
    )
    decided = verdict(stored, given, work_left=status.work_left)
    if decided is Verdict.CONFLICT:
        assert stored is not None  # a conflict is with a stored identity
        raise CrawlConflictError(
            conflict_message(
                prefix=keys.prefix,
                redis=masked(redis_url),
                stored=stored,
                started=utc_text(stored.started_at),
                queued=status.queued + status.seeds,
                in_flight=status.in_flight,
                done=totals.done,
            )
        )
    if stored is None or decided is Verdict.RENEW:
        write_identity(client, keys, given)
        return SettledCrawl(given, decided, counts)
    return SettledCrawl(stored, decided, counts)
