"""The crawl's identity in Redis (``CrawlKeys.identity``): read and written.

One JSON object of the fields of ``crawler.policy.crawlidentity.CrawlIdentity``.
A value this crawler did not write reads as None (no identity): the crawl is then
joined as before identities were kept, and the next start with seeds writes one.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING

from crawler.crawlstate.readers import finite_number, whole_number
from crawler.policy.crawlidentity import CrawlIdentity

if TYPE_CHECKING:
    import redis

    from crawler.crawlstate.keys import CrawlKeys


def read_identity(client: redis.Redis, keys: CrawlKeys) -> CrawlIdentity | None:
    """The identity stored for the crawl, or None."""
    raw = client.get(keys.identity)
    try:
        entry = json.loads(raw) if isinstance(raw, bytes) else None
    except ValueError:
        return None
    return identity_of(entry) if isinstance(entry, dict) else None


def identity_of(entry: dict[str, object]) -> CrawlIdentity | None:
    """The identity a decoded JSON object holds, or None if it is not one."""
    started = finite_number(entry.get("started_at"))
    count = whole_number(entry.get("seed_count"))
    seeds = entry.get("seeds")
    texts = [entry.get(name) for name in ("spider", "scope", "seed_digest")]
    if started is None or count is None or not isinstance(seeds, list):
        return None
    if not all(isinstance(text, str) for text in texts):
        return None
    spider, scope, digest = (str(text) for text in texts)
    return CrawlIdentity(
        spider=spider,
        scope=scope,
        seeds=tuple(str(seed) for seed in seeds),
        seed_count=count,
        seed_digest=digest,
        started_at=started,
        hosts=whole_number(entry.get("hosts")) or 0,
    )


def write_identity(
    client: redis.Redis, keys: CrawlKeys, identity: CrawlIdentity
) -> None:
    """Store *identity*, replacing any there."""
    client.set(keys.identity, json.dumps(asdict(identity)))
