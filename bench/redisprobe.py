"""What the benchmark reads from its private Redis: activity counters and key sizes.

Round trips are counted by the server as read events (``total_reads_processed``): a
pipeline of any length is one. Commands (``total_commands_processed``) include the
commands run inside Lua scripts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench.crawls import FRONTIER_PREFIX, SCRAPY_REDIS_SPIDER

if TYPE_CHECKING:
    import redis

SCAN_COUNT = 1000
# Keys scanned at most when summing the size of a key pattern.
MAX_SCANNED_KEYS = 1_000_000


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


def server_version(client: redis.Redis) -> str:
    return str(client.info("server")["redis_version"])
