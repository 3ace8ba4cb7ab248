"""One gate per server (``POLITENESS_KEY = ip | domain``), shared by every node.

The frontier spaces the fetches of each host name; names that share a server
(``crawler.policy.servers``) may sit in any shards, on any nodes. So before a leased
request goes out, ``ServerGateMiddleware`` takes its server's gate in Redis
(``CrawlKeys.server_gate``): one lease in flight per server, and none before the
delay of the last one has passed. The lease's ack hands the gate back (``Exchange``),
free from the end of that download plus its host's delay. A gate held by a node that
died frees itself when the lease would expire, as the lease does.

A request that finds the gate taken does not wait in the downloader, where it would
hold a slot other servers could use: it goes back to the frontier unchanged, and
its host waits until the gate can be free (the ack's ``not_before``). While the gate
is in flight that is at least the asking host's delay from now, since the holder's
delay only starts when its download ends.

Each gate is one key, so the scripts work on a Redis Cluster too. Times are the
nodes' clocks, as the frontier's ready times are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from crawler.context.outage import REDIS_ERRORS
from crawler.frontier.store.roundtrip import ms

if TYPE_CHECKING:
    from collections.abc import Sequence

    import redis
    import redis.asyncio

    from crawler.crawlstate.keys import CrawlKeys

# A gate is "<until ms> <holder>"; holder "-" means done, waiting out its delay.
# KEYS[1]: the gate; ARGV: holder (a lease), now (ms), hold (ms: when the holder's
# lease expires). Returns 0 if the holder has the gate, the time (ms) it frees if
# it is waiting out a delay, -1 if another lease holds it.
TAKE = """
local value = redis.call('GET', KEYS[1])
local now = tonumber(ARGV[2])
if value then
  local until_ms, holder = string.match(value, '^(%d+) (%S+)$')
  until_ms = tonumber(until_ms)
  if until_ms and until_ms > now and holder ~= ARGV[1] then
    if holder == '-' then return until_ms end
    return -1
  end
end
redis.call('SET', KEYS[1], ARGV[3] .. ' ' .. ARGV[1], 'PXAT', ARGV[3])
return 0
"""

# KEYS[1]: the gate; ARGV: holder, until (ms). The holder's gate is free at *until*
# (the key expires then); a gate another lease holds now is left alone.
RELEASE = """
local value = redis.call('GET', KEYS[1])
if not value or string.match(value, ' (%S+)$') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2] .. ' -', 'PXAT', ARGV[2])
return 1
"""

# Taken: the request may go. In flight: another lease fetches from the server now.
TAKEN, IN_FLIGHT = 0, -1


class Busy(NamedTuple):
    """A gate another lease has: in flight (its delay not begun, so it is free no
    sooner than a delay from now), or waiting out its delay until *free_at*."""

    in_flight: bool
    free_at: float | None


class Release(NamedTuple):
    """A gate to hand back: its server, the lease that holds it, and when it frees."""

    server: str
    holder: str
    until: float


class ServerGates:
    """The crawl's server gates: taken before a fetch, released with its ack."""

    def __init__(self, keys: CrawlKeys) -> None:
        self._keys = keys

    async def take(
        self,
        client: redis.asyncio.Redis,
        server: str,
        *,
        holder: str,
        now: float,
        expiry: float,
    ) -> Busy | None:
        """Take *server*'s gate for the lease *holder* until at most *expiry*; None
        if taken, else why not."""
        answer = int(
            await client.eval(
                TAKE, 1, self._keys.server_gate(server), holder, ms(now), ms(expiry)
            )
        )
        if answer == TAKEN:
            return None
        if answer == IN_FLIGHT:
            return Busy(in_flight=True, free_at=None)
        return Busy(in_flight=False, free_at=answer / 1000)

    def release(self, client: redis.Redis, releases: Sequence[Release]) -> None:
        """Hand back the gates of leases done, in one round trip (raises if Redis
        fails; a gate not handed back frees itself when its lease would expire)."""
        if not releases:
            return
        pipe = client.pipeline(transaction=False)
        for server, holder, until in releases:
            pipe.eval(RELEASE, 1, self._keys.server_gate(server), holder, ms(until))
        pipe.execute()


class GateReturns:
    """The gates of this node's leases done, handed back after their acks' trip.

    A hand-back that fails (Redis away) is kept for the next trip: the ack itself is
    what must not be lost, and a gate never handed back frees itself when its lease
    would have expired.
    """

    def __init__(self, gates: ServerGates, client: redis.Redis) -> None:
        self._gates = gates
        self._client = client
        self._pending: list[Release] = []

    def add(self, release: Release) -> None:
        self._pending.append(release)

    def send(self) -> None:
        """Hand back what is pending; kept if Redis fails."""
        pending, self._pending = self._pending, []
        try:
            self._gates.release(self._client, pending)
        except REDIS_ERRORS:
            self._pending = pending + self._pending
