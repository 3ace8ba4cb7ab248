"""What the benchmark reads from its private Redis: activity counters and key sizes.

Round trips are counted by the server as read events (``total_reads_processed``): a
pipeline of any length is one. Commands (``total_commands_processed``) include the
commands run inside Lua scripts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from bench.crawls import FRONTIER_PREFIX, SCRAPY_REDIS_SPIDER

if TYPE_CHECKING:
    import redis

SCAN_COUNT = 1000
# Keys scanned at most when summing the size of a key pattern.
MAX_SCANNED_KEYS = 1_000_000
# The frontier's seen filter: per shard, a HASH of Bloom layouts and fill counters,
# and one bitmap STRING per filter in use.
FRONTIER_SEEN_LAYOUTS = FRONTIER_PREFIX + ":{s*}:seen"
FRONTIER_SEEN_BITMAPS = FRONTIER_PREFIX + ":{s*}:seen:*"


@dataclass(frozen=True)
class Activity:
    """Server counters at one moment."""

    reads: int
    commands: int
    used_memory: int

    def __sub__(self, other: Activity) -> Activity:
        return Activity(
            self.reads - other.reads,
            self.commands - other.commands,
            self.used_memory - other.used_memory,
        )


def activity(client: redis.Redis) -> Activity:
    """The server's read events, commands processed and used memory (one trip)."""
    info = client.info("all")
    return Activity(
        int(info["total_reads_processed"]),
        int(info["total_commands_processed"]),
        int(info["used_memory"]),
    )


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def pattern_bytes(client: redis.Redis, pattern: str) -> tuple[int, int]:
    """MEMORY USAGE (exact: SAMPLES 0) summed over keys matching *pattern*; (bytes,
    keys)."""
    total = keys = 0
    for key in client.scan_iter(match=pattern, count=SCAN_COUNT):
        total += int(client.memory_usage(key, samples=0) or 0)
        keys += 1
        if keys >= MAX_SCANNED_KEYS:
            break
    return total, keys


def dedup_pattern(crawler: str) -> str:
    """The keys of a crawler's seen-URL filter."""
    if crawler == "frontier":
        return FRONTIER_PREFIX + ":{s*}:seen*"
    if crawler == "scrapy-redis":
        return SCRAPY_REDIS_SPIDER + ":dupefilter"
    raise ValueError(f"{crawler!r} keeps no seen-URL filter in Redis")


def dedup_bytes(client: redis.Redis, crawler: str) -> tuple[int, int]:
    """Bytes and keys of *crawler*'s seen-URL filter."""
    return pattern_bytes(client, dedup_pattern(crawler))


def seen_filter(client: redis.Redis, crawler: str) -> dict[str, Any]:
    """*crawler*'s seen-URL filter in parts: ``bytes`` and ``keys`` in all, ``urls``
    it holds, and for the frontier its Bloom layout hashes (``bfs:{sNN}:seen``, with
    the fill counters) apart from its bitmaps (``bfs:{sNN}:seen:<i>``), by filter."""
    if crawler == "scrapy-redis":
        key = SCRAPY_REDIS_SPIDER + ":dupefilter"
        size = int(client.memory_usage(key, samples=0) or 0)
        return {"bytes": size, "keys": int(size > 0), "urls": int(client.scard(key))}
    if crawler != "frontier":
        raise ValueError(f"{crawler!r} keeps no seen-URL filter in Redis")
    layout_bytes, layout_keys, urls = 0, 0, 0
    for key in client.scan_iter(match=FRONTIER_SEEN_LAYOUTS, count=SCAN_COUNT):
        layout_bytes += int(client.memory_usage(key, samples=0) or 0)
        layout_keys += 1
        fields = cast("dict[bytes, bytes]", client.hgetall(key))
        urls += sum(int(v) for k, v in fields.items() if k.startswith(b"count:"))
    filters: dict[str, dict[str, int]] = {}
    shards_past_first: set[bytes] = set()
    for key in client.scan_iter(match=FRONTIER_SEEN_BITMAPS, count=SCAN_COUNT):
        layout, _, index = key.rpartition(b":")
        entry = filters.setdefault(index.decode(), {"keys": 0, "bytes": 0})
        entry["keys"] += 1
        entry["bytes"] += int(client.memory_usage(key, samples=0) or 0)
        if index != b"0":
            shards_past_first.add(layout)
    bitmap_bytes = sum(entry["bytes"] for entry in filters.values())
    bitmap_keys = sum(entry["keys"] for entry in filters.values())
    return {
        "bytes": layout_bytes + bitmap_bytes,
        "keys": layout_keys + bitmap_keys,
        "urls": urls,
        "layout_bytes": layout_bytes,
        "layout_keys": layout_keys,
        "bitmap_bytes": bitmap_bytes,
        "bitmap_keys": bitmap_keys,
        "bitmaps_by_filter": dict(sorted(filters.items(), key=lambda i: int(i[0]))),
        "shards": layout_keys,
        "shards_past_first_filter": len(shards_past_first),
    }


def server_version(client: redis.Redis) -> str:
    return str(client.info("server")["redis_version"])
