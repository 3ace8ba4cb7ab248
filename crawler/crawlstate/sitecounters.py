"""The site strategy's evidence in Redis: one hash a host (``CrawlKeys.site``).

Written in batches by the site history middleware (``crawler.spiders.sitehistory``):
counters it adds to (``pages``, ``links``, ``leaving``, ``d<depth>``: pages found at
that link depth) and the strategy in force for the host with why (``strategy``),
read back whole by the same pipeline, and by ``scrapy frontier hosts`` and the
dashboard. Read defensively: a field this crawler did not write counts as absent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crawler.crawlstate.readers import decoded, encoded, whole_count
from crawler.policy.siteclass import MAX_DEPTH, SiteEvidence

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import redis

    from crawler.crawlstate.keys import CrawlKeys

PAGES, LINKS, LEAVING, STRATEGY = "pages", "links", "leaving", "strategy"
DEPTH_PREFIX = "d"
# Largest count read (a hostile value is capped: the records keep BIGINT).
MAX_COUNT = 2**62


def depth_field(depth: int) -> str:
    """The field counting pages found at link depth *depth* (clamped to 0..127)."""
    return f"{DEPTH_PREFIX}{min(max(depth, 0), MAX_DEPTH)}"


def evidence_of(fields: Mapping[bytes, bytes]) -> SiteEvidence:
    """The evidence a host's hash holds (its fields as Redis returned them)."""
    depths: dict[int, int] = {}
    for name, value in fields.items():
        text = name.decode("ascii", "replace")
        digits = text.removeprefix(DEPTH_PREFIX)
        if digits != text and digits.isdigit() and len(digits) <= len(str(MAX_DEPTH)):
            depths[int(digits)] = _count(value)
    return SiteEvidence.of(
        _count(fields.get(PAGES.encode())),
        _count(fields.get(LINKS.encode())),
        _count(fields.get(LEAVING.encode())),
        depths,
    )


def _count(reply: object) -> int:
    return min(max(whole_count(reply), 0), MAX_COUNT)


def read_strategies(
    client: redis.Redis, keys: CrawlKeys, hosts: Sequence[str]
) -> dict[str, str]:
    """The strategy text in force for each of *hosts* (``dfs (auto: ...)``), as the
    crawl last wrote it; ``""`` for a host without one. One round trip; a key that
    is not a hash (someone else's) reads as none."""
    if not hosts:
        return {}
    pipe = client.pipeline(transaction=False)
    for host in hosts:
        pipe.hget(encoded(keys.site(host)), STRATEGY)
    replies = pipe.execute(raise_on_error=False)
    return {
        host: decoded(reply) if isinstance(reply, bytes) else ""
        for host, reply in zip(hosts, replies, strict=True)
    }
