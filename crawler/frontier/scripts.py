"""The frontier's Lua scripts, and the one object that runs them.

Every script works on the keys of one shard (one Redis Cluster slot): fixed keys come
in KEYS, per-host keys are built from the shard's hash-tagged prefix in ARGV[1]. Every
script ends by returning the shard's *summary*: the BFS score of its best ready host,
the time its first waiting host becomes ready, and the lowest level with requests
queued or leased, so the scheduler can pick a shard without asking again.

Queue entries are ``<seq>|<json>``: the sequence number gives FIFO order within a
level. A host's score in ``ready`` is ``level * weight + seq`` of its head entry.
A lease keeps ``<level> <len(host)> <host><entry>`` so an expired lease can be put
back at the head of its queue.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar, cast

from redis.cluster import ClusterPipeline, RedisCluster
from redis.exceptions import NoScriptError, ResponseError

from crawler.frontier.repairscripts import REPAIR, REPAIR_COUNTS, REPAIR_HOSTS

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from redis import Redis
    from redis.client import Pipeline
    from redis.commands.core import Script
    from redis.typing import EncodableT, KeyT

    from crawler.frontier.keys import Keys

_HELPERS = """
local tag, weight, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
-- Values this call found damaged (not written by the crawler) and set aside.
local damaged = 0

-- Count a damaged value; queue entries are kept, capped, in the shard's damaged list.
local function set_aside(value)
  damaged = damaged + 1
  redis.pcall('HINCRBY', KEYS[8], 'bad_entries', 1)
  if value then
    redis.pcall('LPUSH', tag .. 'damaged', value)
    redis.pcall('LTRIM', tag .. 'damaged', 0, 999)
  end
end

-- The reply of a read, or nil (and the key deleted) if the key has the wrong type.
local function read(command, key, ...)
  local reply = redis.pcall(command, key, ...)
  if type(reply) == 'table' and reply.err then
    redis.call('DEL', key)
    set_aside(false)
    return nil
  end
  return reply
end

-- Take a queue's damaged head entry out of the crawl's counts, then out of the way.
local function drop_head(queue, lv, level, entry)
  redis.call('LPOP', queue)
  if redis.call('LLEN', queue) == 0 then redis.call('ZREM', lv, level) end
  if (tonumber(redis.pcall('HINCRBY', KEYS[11], level, -1)) or 0) <= 0 then
    redis.pcall('HDEL', KEYS[11], level)
  end
  redis.pcall('HINCRBY', KEYS[8], 'queued', -1)
  set_aside(entry)
end

-- The BFS score of the host's head request; nil if nothing usable is queued.
-- Damaged levels, queues and entries met on the way are set aside (bounded).
local function head_score(host)
  local lv = tag .. 'lv:' .. host
  for _ = 1, 1000 do
    local levels = read('ZRANGE', lv, 0, 0)
    if not levels or #levels == 0 then return nil end
    local level, queue = tonumber(levels[1]), tag .. 'q:' .. host .. ':' .. levels[1]
    local entry = level and read('LINDEX', queue, 0)
    if not entry then
      redis.call('ZREM', lv, levels[1])
      if not level then set_aside(false) end
    else
      local seq = tonumber(string.match(entry, '^(%d+)|'))
      if seq and seq < weight then return level * weight + seq end
      drop_head(queue, lv, levels[1], entry)
    end
  end
  return nil
end

-- A number stored in a hash field, or *default* if it is missing or not a number.
local function hnum(key, field, default)
  return tonumber(redis.call('HGET', key, field)) or default
end

-- Put a host that is neither ready nor waiting where its queue and delay say.
local function schedule(host)
  local score = head_score(host)
  if not score then return end
  local at = hnum(KEYS[3], host, 0)
  if at > now then
    redis.call('ZADD', KEYS[2], at, host)
  else
    redis.call('ZADD', KEYS[1], score, host)
  end
end

-- After a host's queue or in-flight count changed: keep its place right.
local function touch(host, concurrency)
  if redis.call('ZSCORE', KEYS[2], host) then return end
  if redis.call('ZSCORE', KEYS[1], host) then
    local score = head_score(host)
    if score then
      redis.call('ZADD', KEYS[1], 'XX', score, host)
    else
      redis.call('ZREM', KEYS[1], host)
    end
  elseif hnum(KEYS[4], host, 0) < concurrency then
    schedule(host)
  end
end

local function promote(limit)
  local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, limit)
  for _, host in ipairs(due) do
    redis.call('ZREM', KEYS[2], host)
    local score = head_score(host)
    if score then redis.call('ZADD', KEYS[1], score, host) end
  end
end

-- The lowest level with requests queued or leased: the BFS barrier's input.
-- A field that is not a level, or whose count is not positive, is not one.
local function lowest_level()
  local low = false
  local fields = redis.call('HGETALL', KEYS[11])
  for i = 1, #fields, 2 do
    local level, count = tonumber(fields[i]), tonumber(fields[i + 1])
    if level and count and count > 0 and (not low or level < low) then low = level end
  end
  return low
end

local function summary()
  local best = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  local wake = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  return {best[2] or false, wake[2] or false, lowest_level(), damaged}
end

local function push_entry(host, level, entry)
  local queue = tag .. 'q:' .. host .. ':' .. level
  if redis.call('RPUSH', queue, entry) == 1 then
    redis.call('ZADD', tag .. 'lv:' .. host, level, level)
  end
  redis.call('HINCRBY', KEYS[11], level, 1)
end

-- A lease's level, host and entry; nil if the payload is not one this crawler wrote.
local function unpack_lease(payload)
  local level, length, rest = string.match(payload, '^(%d+) (%d+) (.*)$')
  length = tonumber(length)
  if not level or length > #rest then return nil end
  return level, string.sub(rest, 1, length), string.sub(rest, length + 1)
end

-- Forget a lease; its level, host and entry if it was held (a damaged one is
-- set aside and forgotten).
local function release(id)
  local payload = redis.call('HGET', KEYS[6], id)
  redis.call('ZREM', KEYS[5], id)
  if not payload then return nil end
  redis.call('HDEL', KEYS[6], id)
  local level, host, entry = unpack_lease(payload)
  if not level then
    set_aside(payload)
    return nil
  end
  if redis.call('HINCRBY', KEYS[4], host, -1) <= 0 then
    redis.call('HDEL', KEYS[4], host)
  end
  return level, host, entry
end
"""

# Run before every script but the repair ones: fail before any write if the sequence
# or the lease payloads cannot be written (the runner repairs the shard and calls
# again), since failing after an entry left its queue or the seen filter loses it.
_GUARD = """
for _, check in ipairs({{'INCRBY', KEYS[7], 0}, {'HLEN', KEYS[6]}}) do
  local reply = redis.pcall(unpack(check))
  if type(reply) == 'table' and reply.err then return redis.error_reply(reply.err) end
end
"""

# KEYS of every script, in this order (the helpers index them):
# 1 ready, 2 waiting, 3 ready_at, 4 inflight, 5 leases, 6 leased, 7 seq, 8 counters,
# 9 seen, 10 delays, 11 outstanding, 12 owner (the node id that alone may pop)

PUSH = """
-- KEYS: the shard's keys (see above); KEYS[9] is the seen filter
-- ARGV: tag, weight, now, host_concurrency, dedup mode ('bloom'|'exact'), then groups
--       of 4: host, level, dedup ('' = do not filter; exact: fingerprint;
--       bloom: 32-bit big-endian hashes, bit j of a filter is hash j % bits, see
--       crawler/frontier/dedup.py), entry json
-- returns: {accepted flags as a string of '1'/'0', best score, wake time}
local concurrency, mode = tonumber(ARGV[4]), ARGV[5]

local function bloom_add(hashes)
  local seen = KEYS[9]
  local filters = tonumber(redis.call('HGET', seen, 'filters') or '0')
  if filters == 0 then return redis.error_reply('frontier: no Bloom layout') end
  for i = 0, filters - 1 do
    local layout = redis.call('HMGET', seen, 'bits:' .. i, 'hashes:' .. i)
    local bits, found = tonumber(layout[1]), true
    for j = 0, tonumber(layout[2]) - 1 do
      local hash = struct.unpack('>I4', hashes, 4 * j + 1)
      if redis.call('GETBIT', seen .. ':' .. i, hash % bits) == 0 then
        found = false
        break
      end
    end
    if found then return false end
  end
  local last = filters - 1
  local layout = redis.call('HMGET', seen, 'bits:' .. last, 'hashes:' .. last, 'cap:' .. last)
  local bits, key = tonumber(layout[1]), seen .. ':' .. last
  if not (bits and bits > 0 and 4 * (tonumber(layout[2]) or 0) <= #hashes) then
    return redis.error_reply('frontier: damaged Bloom layout')  -- before any write
  end
  -- Created at full length at once: grown bit by bit, Redis would keep up to
  -- twice the memory.
  if redis.call('EXISTS', key) == 0 then redis.call('SETBIT', key, bits - 1, 0) end
  for j = 0, tonumber(layout[2]) - 1 do
    redis.call('SETBIT', key, struct.unpack('>I4', hashes, 4 * j + 1) % bits, 1)
  end
  local count = redis.call('HINCRBY', seen, 'count:' .. last, 1)
  if count >= tonumber(layout[3]) and redis.call('HEXISTS', seen, 'bits:' .. filters) == 1 then
    redis.call('HSET', seen, 'filters', filters + 1)
  end
  return true
end

local function is_new(dedup)
  if dedup == '' then return true end
  if mode == 'exact' then return redis.call('SADD', KEYS[9], dedup) == 1 end
  return bloom_add(dedup)
end

local flags = {}
for i = 6, #ARGV, 4 do
  local host, level = ARGV[i], ARGV[i + 1]
  local new = is_new(ARGV[i + 2])
  if type(new) == 'table' then return new end
  if new then
    push_entry(host, level, redis.call('INCR', KEYS[7]) .. '|' .. ARGV[i + 3])
    redis.call('HINCRBY', KEYS[8], 'queued', 1)
    touch(host, concurrency)
  end
  flags[#flags + 1] = new and '1' or '0'
end
return {table.concat(flags), unpack(summary())}
"""

POP = """
-- KEYS: the shard's keys (see above)
-- ARGV: tag, weight, now, host_concurrency, lease expiry time, default delay,
--       most waiting hosts to promote, highest score allowed (the BFS barrier),
--       the popping node's id (it must own the shard: fencing)
-- returns: {lease id, entry json, summary...}; id and entry false if no host is
--          ready below the barrier; id false and entry 'fenced' if the node does
--          not own the shard
local concurrency, expiry, default_delay = tonumber(ARGV[4]), ARGV[5], ARGV[6]
if redis.call('GET', KEYS[12]) ~= ARGV[9] then
  return {false, 'fenced', unpack(summary())}
end
promote(tonumber(ARGV[7]))
local hosts = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[8], 'LIMIT', 0, 1)
while #hosts > 0 and not head_score(hosts[1]) do  -- nothing usable queued
  redis.call('ZREM', KEYS[1], hosts[1])
  set_aside(false)
  hosts = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[8], 'LIMIT', 0, 1)
end
if #hosts == 0 then return {false, false, unpack(summary())} end
local host = hosts[1]
local levels_key = tag .. 'lv:' .. host
local level = redis.call('ZRANGE', levels_key, 0, 0)[1]
local queue = tag .. 'q:' .. host .. ':' .. level
local entry = redis.call('LPOP', queue)
if redis.call('LLEN', queue) == 0 then redis.call('ZREM', levels_key, level) end
local id = redis.call('INCR', KEYS[7])
redis.call('HSET', KEYS[6], id, level .. ' ' .. #host .. ' ' .. host .. entry)
redis.call('ZADD', KEYS[5], expiry, id)
redis.call('HINCRBY', KEYS[4], host, 1)
redis.call('HINCRBY', KEYS[8], 'queued', -1)
local delay = hnum(KEYS[10], host, tonumber(default_delay))
redis.call('HSET', KEYS[3], host, now + delay)
redis.call('ZREM', KEYS[1], host)
touch(host, concurrency)
return {id, string.match(entry, '^%d+|(.*)$'), unpack(summary())}
"""

ACK = """
-- KEYS: the shard's keys (see above)
-- ARGV: tag, weight, now, host_concurrency, the host's delay, lease id
-- returns: {1 if the lease was held (0 if it had expired or was acked), best, wake}
local concurrency, delay, id = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local level, host = release(id)
if not level then return {0, unpack(summary())} end
if redis.call('HINCRBY', KEYS[11], level, -1) <= 0 then redis.call('HDEL', KEYS[11], level) end
local at = math.max(hnum(KEYS[3], host, 0), now + delay)
redis.call('HSET', KEYS[3], host, at)
redis.call('HSET', KEYS[10], host, delay)
if at > now and redis.call('ZREM', KEYS[1], host) == 1 then
  redis.call('ZADD', KEYS[2], at, host)
end
touch(host, concurrency)
redis.call('HINCRBY', KEYS[8], 'acked', 1)
return {1, unpack(summary())}
"""

REQUEUE = """
-- KEYS: the shard's keys (see above)
-- ARGV: tag, weight, now, host_concurrency, most leases to requeue, then lease ids;
--       without ids, the leases whose expiry time is <= now
-- returns: {leases put back at the head of their queues, best, wake}
local concurrency, limit = tonumber(ARGV[4]), tonumber(ARGV[5])
local ids = {}
for i = 6, #ARGV do ids[#ids + 1] = ARGV[i] end
if #ids == 0 then
  ids = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now, 'LIMIT', 0, limit)
end
local count = 0
for _, id in ipairs(ids) do
  local level, host, entry = release(id)
  if level then
    local queue = tag .. 'q:' .. host .. ':' .. level
    redis.call('LPUSH', queue, entry)
    redis.call('ZADD', tag .. 'lv:' .. host, level, level)
    redis.call('HINCRBY', KEYS[8], 'queued', 1)
    touch(host, concurrency)
    count = count + 1
  end
end
return {count, unpack(summary())}
"""

PROMOTE = """
-- KEYS: the shard's keys (see above)
-- ARGV: tag, weight, now, most waiting hosts to promote
-- returns: {best score, wake time}
promote(tonumber(ARGV[4]))
return summary()
"""


@dataclass(frozen=True, slots=True)
class Call:
    """One script call: which script, on which shard, with what arguments."""

    script: str
    keys: Keys
    args: Sequence[str | int | float | bytes]


class ScriptRunner:
    """Runs script calls in one round trip; reloads scripts after a SCRIPT FLUSH.

    Scripts are called by SHA. redis-py's ``Script`` objects would send a
    ``SCRIPT EXISTS`` before every pipeline; instead a ``NOSCRIPT`` answer reloads the
    scripts and re-runs only the calls that failed, in order.
    """

    SOURCES: ClassVar[dict[str, str]] = {
        "push": PUSH,
        "pop": POP,
        "ack": ACK,
        "requeue": REQUEUE,
        "promote": PROMOTE,
        "repair": REPAIR,
        "repair_hosts": REPAIR_HOSTS,
        "repair_counts": REPAIR_COUNTS,
    }

    def __init__(self, client: Redis) -> None:
        self._client = client
        self._sha: dict[str, str] = {}

    def load(self) -> None:
        for name, source in self.SOURCES.items():
            guard = "" if name.startswith("repair") else _GUARD
            self._sha[name] = self._client.script_load(_HELPERS + guard + source)

    def run(
        self, calls: Sequence[Call], repair: Callable[[Call], None] | None = None
    ) -> list[Any]:
        """The replies of *calls*, run in order in one pipeline.

        A call that fails with any other error (a script error on a damaged value, a
        key of the wrong type) does not fail the others: *repair* is called once for
        its shard (with the call) and the call runs once more. Raises the first error left then.
        """
        if not self._sha:
            self.load()
        results = self._execute(calls)
        failed = self._failed(results, NoScriptError)
        if failed:
            self.load()
            self._rerun(calls, results, failed)
        failed = self._failed(results, ResponseError)
        if failed and repair is not None:
            for index in {calls[i].keys: i for i in failed}.values():
                repair(calls[index])
            self._rerun(calls, results, failed)
        for result in results:
            if isinstance(result, ResponseError):
                raise result
        return results

    @staticmethod
    def _failed(results: list[Any], kind: type[Exception]) -> list[int]:
        return [i for i, result in enumerate(results) if isinstance(result, kind)]

    def _rerun(
        self, calls: Sequence[Call], results: list[Any], failed: list[int]
    ) -> None:
        """Run the calls at indexes *failed* again, in order; their replies replace."""
        for index, result in zip(
            failed, self._execute([calls[i] for i in failed]), strict=True
        ):
            results[index] = result

    def _execute(self, calls: Sequence[Call]) -> list[Any]:
        pipe = self._client.pipeline(transaction=False)
        for call in calls:
            keys = _shard_keys(call.keys)
            pipe.evalsha(
                self._sha[call.script],
                len(keys),
                *keys,
                call.keys.tag,
                *call.args,
            )
        return list(pipe.execute(raise_on_error=False))


class ClusterScriptRunner(ScriptRunner):
    """A ``ScriptRunner`` for a Redis Cluster: each call goes to the node that serves
    its shard's slot. ``SCRIPT LOAD`` reaches every primary."""

    def __init__(self, client: RedisCluster) -> None:
        super().__init__(cast("Redis", client))
        self._cluster = client

    def _execute(self, calls: Sequence[Call]) -> list[Any]:
        pipe = self._cluster.pipeline(transaction=False)  # type: ignore[no-untyped-call]
        for call in calls:
            keys = _shard_keys(call.keys)
            args = (call.keys.tag, *call.args)
            queue_on_slot(pipe, "EVALSHA", self._sha[call.script], keys, args)
        return list(pipe.execute(raise_on_error=False))


def script_runner(client: Redis) -> ScriptRunner:
    """The runner of the frontier's scripts on *client*, a single server or a Cluster."""
    if isinstance(client, RedisCluster):
        return ClusterScriptRunner(client)
    return ScriptRunner(client)


def queue_script(
    pipe: Pipeline,
    script: Script,
    keys: Sequence[KeyT],
    args: Sequence[EncodableT],
) -> None:
    """Queue a call of *script* (``register_script``) in *pipe*, a single server's
    pipeline or a Cluster's. On a Cluster the source goes with ``EVAL``, so no node
    needs it loaded (for the few calls of a heartbeat, not for the frontier's)."""
    if isinstance(pipe, ClusterPipeline):
        queue_on_slot(pipe, "EVAL", script.script, keys, args)
    else:
        script(keys=keys, args=args, client=pipe)


def queue_on_slot(
    pipe: ClusterPipeline,
    command: str,
    script: str | bytes,
    keys: Sequence[KeyT],
    args: Sequence[EncodableT],
) -> None:
    """Queue ``EVAL`` or ``EVALSHA`` of *script* in a Cluster pipeline, sent to the
    primary of its keys' slot (all of *keys* share it).

    redis-py refuses ``pipe.evalsha`` in a Cluster pipeline, and sent by name an
    EVALSHA costs a ``COMMAND GETKEYS`` round trip to find its keys; here the first
    key names the node, as redis-py's own multi-slot commands do. A node that lost
    the slot answers MOVED, and redis-py sends the call again where it belongs.
    """
    # redis-py's cluster classes are not typed.
    node = pipe.get_node_from_key(keys[0])  # type: ignore[no-untyped-call]
    pipe.execute_command(  # type: ignore[no-untyped-call]
        command, script, len(keys), *keys, *args, target_nodes=node
    )


@lru_cache(maxsize=4096)
def _shard_keys(keys: Keys) -> tuple[str, ...]:
    """The KEYS of a shard's scripts, built once per shard: every call passes them."""
    return (
        keys.ready,
        keys.waiting,
        keys.ready_at,
        keys.inflight,
        keys.leases,
        keys.leased,
        keys.sequence,
        keys.counters,
        keys.seen,
        keys.delays,
        keys.outstanding,
        keys.owner,
    )
