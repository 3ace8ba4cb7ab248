"""Repairing a shard that holds values the crawler did not write.

Three occasions: at start every shard gets the ``REPAIR`` script (key types, numeric
fields, leases, ready and waiting hosts); a script call that fails on a shard gets it
too before it runs again (``ScriptRunner.run``); and a shard that looks stuck (requests
outstanding, yet no host ready at its lowest level, none waiting, nothing leased) has
every host that has requests queued looked at, so a host stranded out of the ready
and waiting sets is scheduled again and the shard's counts are set from what is
queued. Nothing read is ever decoded here: values are only checked for their shape.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from crawler.crawlstate.keys import LEVELS, CrawlKeys
from crawler.frontier.dedup import most_hashes
from crawler.frontier.store.scriptargs import common_args
from crawler.frontier.store.scripts import Call

if TYPE_CHECKING:
    from collections.abc import Iterable

    from redis import Redis

    from crawler.frontier.frontierconfig import FrontierConfig
    from crawler.frontier.store.scriptargs import Scalar, Value
    from crawler.frontier.store.scripts import ScriptRunner

# Hosts one REPAIR_HOSTS call looks at (bounds a call's work).
HOSTS_PER_CALL = 200
# Seconds before a shard that still looks stuck is scanned again.
STUCK_REPAIR_INTERVAL = 30.0
# Seconds before a shard whose counts could not be set (it held leases) is scanned
# again: the end of the crawl waits for its counts.
RECOUNT_RETRY = 1.0


class ShardRepair:
    """Runs the repair scripts; each method returns the values it found damaged."""

    def __init__(
        self,
        client: Redis,
        runner: ScriptRunner,
        config: FrontierConfig,
    ) -> None:
        self._client = client
        self._runner = runner
        self._config = config
        keys = CrawlKeys(config.prefix)
        self._keys = [keys.shard(s) for s in range(config.shards)]
        # When each shard scanned may be scanned again (absent: at once).
        self._due_at: dict[int, float] = {}
        # Shards found damaged whose counts were not set from a scan since.
        self._untrusted: set[int] = set()

    def fixed(self, shards: Iterable[int], now: float) -> list[tuple[int, list[Any]]]:
        """Run REPAIR on *shards*: (shard, reply) pairs; the reply's first element
        is the hosts whose in-flight count was wrong, then the summary."""
        shards = list(shards)
        seen_type = "hash" if self._config.dedup.mode == "bloom" else "set"
        args: dict[str, Scalar] = {
            **common_args(self._config, now),
            "concurrency": self._config.host_concurrency,
            "seen_type": seen_type,
            "most_hashes": most_hashes(self._config.dedup, self._config.shards),
        }
        calls = [Call("repair", self._keys[s], args) for s in shards]
        return list(zip(shards, self._runner.run(calls), strict=True))

    def suspect(self, shard: int) -> None:
        """Damage was found in *shard*: hosts of it may be stranded and its counts
        wrong (a damaged entry set aside, or popped, was never counted), so it is
        due for a scan at once, not STUCK_REPAIR_INTERVAL after its last one, and
        its counts are not trusted until a scan sets them (the end of a crawl is
        decided after such a scan: ``FrontierRuntime.drained``)."""
        self._due_at.pop(shard, None)
        self._untrusted.add(shard)

    @property
    def counts_trusted(self) -> bool:
        """Whether every shard found damaged had its counts set from a scan since."""
        return not self._untrusted

    def due(self, shard: int, now: float) -> bool:
        """Whether *shard* may be scanned now (at most every STUCK_REPAIR_INTERVAL)."""
        return now >= self._due_at.get(shard, 0.0)

    def hosts(
        self, shards: Iterable[int], now: float
    ) -> list[tuple[int, int, list[Any]]]:
        """Schedule the stranded hosts of *shards* (one SCAN of the keyspace) and
        set their counts from their queues: (shard, hosts scheduled, summary)."""
        shards = list(shards)
        found = self._hosts_of(shards)
        return [(s, *self._shard_hosts(s, found.get(s, []), now)) for s in shards]

    def _shard_hosts(
        self, shard: int, hosts: list[bytes], now: float
    ) -> tuple[int, list[Any]]:
        self._due_at[shard] = now + STUCK_REPAIR_INTERVAL
        keys = self._keys[shard]
        base = common_args(self._config, now)
        args = base | {"concurrency": self._config.host_concurrency}
        scheduled, damage, counts = 0, 0, dict[bytes, int]()
        for start in range(0, len(hosts), HOSTS_PER_CALL):
            batch = [{"host": h} for h in hosts[start : start + HOSTS_PER_CALL]]
            (reply,) = self._runner.run([Call("repair_hosts", keys, args, batch)])
            scheduled += reply[0]
            for level, count in zip(reply[1][0::2], reply[1][1::2], strict=True):
                counts[level] = counts.get(level, 0) + int(count)
            damage += int(reply[5])
        found: list[dict[str, Value]] = [
            {"level": level, "count": n} for level, n in counts.items()
        ]
        (reply,) = self._runner.run([Call("repair_counts", keys, base, found)])
        if int(reply[0]):
            self._untrusted.discard(shard)
        else:  # leases held: its counts are set by a scan soon after
            self._due_at[shard] = now + RECOUNT_RETRY
        return scheduled, [*reply[1:4], damage + int(reply[4])]

    def _hosts_of(self, shards: list[int]) -> dict[int, list[bytes]]:
        """The hosts with a levels key in each of *shards*, by shard (one SCAN)."""
        prefixes = {self._keys[s].levels("").encode(): s for s in shards}
        marker = LEVELS.build("", host="").encode()  # b"lv:", from the key model
        if len(shards) == 1:
            pattern = _glob_escape(next(iter(prefixes))) + b"*"
        else:
            prefix = _glob_escape(f"{self._keys[0].prefix}:".encode())
            pattern = prefix + b"*:" + _glob_escape(marker) + b"*"
        found: dict[int, list[bytes]] = {}
        for key in self._client.scan_iter(match=pattern, count=1000):
            head, _, host = key.partition(marker)
            if (shard := prefixes.get(head + marker)) is not None:
                found.setdefault(shard, []).append(host)
        return found


def _glob_escape(text: bytes) -> bytes:
    """*text* as a SCAN pattern that matches only itself."""
    return re.sub(rb"([*?\[\]\\])", rb"\\\1", text)
