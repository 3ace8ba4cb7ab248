"""Learnt delays (``crawler.policy.backoff``) in the crawl state, so that every node,
and a node that takes a host over or starts again, keeps what the host taught.

Each shard keeps a hash of its hosts' records (``Keys.backoffs``). The heartbeat
writes what changed since the last one and reads the records of the shards the node
gains; a throttle is rare, so this costs a command a heartbeat at most, not one a
fetch. A record that cannot be read is deleted and counted, never trusted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from redis.exceptions import ResponseError

from crawler.context.outage import REDIS_ERRORS
from crawler.crawlstate.damage import delete_if_wrong_type
from crawler.policy.backoff import Learnt, decode, encode
from crawler.policy.hosts import shard_key
from crawler.policy.sharding import shard_of

if TYPE_CHECKING:
    from collections.abc import Callable, Collection

    from redis import Redis

    from crawler.context.hostdelays import HostDelays
    from crawler.crawlstate.keys import CrawlKeys
    from crawler.frontier.frontierconfig import FrontierConfig


def share(
    client: Redis,
    keys: CrawlKeys,
    config: FrontierConfig,
    delays: HostDelays,
    *,
    damaged: Callable[[int, str], None],
) -> int:
    """Write the learnt delays changed since the last call; how many. If Redis
    fails they are kept for the next heartbeat, and the error raised; a key of the
    wrong type is deleted and reported to *damaged* (count, what)."""
    changed = delays.unshared()
    if not changed:
        return 0
    pipe = client.pipeline(transaction=False)
    written = []
    for host, learnt in changed.items():
        shard = shard_of(shard_key(host, config.shard_by), config.shards)
        key = keys.shard(shard).backoffs
        written.append(key)
        if learnt is None:
            pipe.hdel(key, host)
        else:
            pipe.hset(key, host, encode(learnt))
    try:
        answers = pipe.execute(raise_on_error=False)
    except REDIS_ERRORS:
        delays.unshare_failed(changed)
        raise
    for key in {k for k, a in zip(written, answers, strict=True) if _failed(a)}:
        delete_if_wrong_type(client, key, "hash", damaged)
    return len(changed)


def adopt(
    client: Redis,
    keys: CrawlKeys,
    shards: Collection[int],
    delays: HostDelays,
    *,
    damaged: Callable[[int, str], None],
) -> int:
    """Read the learnt delays of *shards* (just gained) into *delays*; how many.
    Damaged records are deleted and reported to *damaged* (count, what)."""
    if not shards:
        return 0
    ordered = sorted(shards)
    pipe = client.pipeline(transaction=False)
    for shard in ordered:
        pipe.hgetall(keys.shard(shard).backoffs)
    found: dict[str, Learnt] = {}
    bad: dict[str, list[bytes]] = {}
    backoff = delays.config.backoff
    for shard, records in zip(ordered, pipe.execute(raise_on_error=False), strict=True):
        if _failed(records):
            delete_if_wrong_type(client, keys.shard(shard).backoffs, "hash", damaged)
            continue
        for raw_host, raw in records.items():
            learnt = decode(raw, backoff)
            host = raw_host.decode("utf-8", "replace")
            if learnt is None:
                bad.setdefault(keys.shard(shard).backoffs, []).append(raw_host)
            else:
                found[host] = learnt
    if bad:
        pipe = client.pipeline(transaction=False)
        for key, hosts in bad.items():
            pipe.hdel(key, *hosts)
        pipe.execute()
        damaged(sum(len(hosts) for hosts in bad.values()), "learnt delay records")
    delays.adopt(found)
    return len(found)


def _failed(answer: object) -> bool:
    """A pipelined command's answer that is an error (a key of the wrong type)."""
    return isinstance(answer, ResponseError)
