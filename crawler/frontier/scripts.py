"""The frontier's Lua scripts, and the one object that runs them.

Every script works on the keys of one shard (one Redis Cluster slot): fixed keys come
in KEYS, per-host keys are built from the shard's hash-tagged prefix in ARGV[1]. Every
script ends by returning the shard's *summary*: the BFS score of its best ready host,
the time its first waiting host becomes ready, and the lowest level with requests
queued or leased, so the scheduler can pick a shard without asking again.

Queue entries are ``<seq>|<json>``: the sequence number gives FIFO order within a
level. A host's score in ``ready`` is ``level * weight + seq`` of its head entry.
A lease keeps ``<level> <ready_at> <len(host)> <host><entry>`` so an expired lease can
be put back at the head of its queue, and a lease whose request never reached its
host (robots.txt forbade it) can give the host back its previous ready time. A held
request (retry-later) is ``<level> <len(host)> <host><entry>`` in ``held``, scored
by when it may go again; a request that failed for good is
``<fate> <level> <len(host)> <host><json>`` in ``failed``, by fingerprint.
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

-- The shard's summary; its wake time is the first of a waiting host and a held entry.
local function summary()
  local best = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  local wake = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')[2]
  local held = redis.call('ZRANGE', KEYS[13], 0, 0, 'WITHSCORES')[2]
  if held and (not wake or tonumber(held) < tonumber(wake)) then wake = held end
  return {best[2] or false, wake or false, lowest_level(), damaged}
end

-- The queue of pages reparsed from the page store (never a real host name).
local REPARSE_HOST = '~'

local function push_entry(host, level, entry)
  local queue = tag .. 'q:' .. host .. ':' .. level
  if redis.call('RPUSH', queue, entry) == 1 then
    redis.call('ZADD', tag .. 'lv:' .. host, level, level)
  end
  redis.call('HINCRBY', KEYS[11], level, 1)
end

-- '<level> <len(host)> <host><rest>' -> level, host, rest (nil if malformed)
local function unpack_entry(payload)
  local level, length, rest = string.match(payload, '^(%d+) (%d+) (.*)$')
  length = tonumber(length)
  if not level or length > #rest then return nil end
  return level, string.sub(rest, 1, length), string.sub(rest, length + 1)
end

-- A lease's level, host, entry and its host's ready time before the pop; nil if the
-- payload is not one this crawler wrote.
local function unpack_lease(payload)
  local level, prior, rest = string.match(payload, '^(%d+) (%S+) (.*)$')
  if not level then return nil end
  local _, host, entry = unpack_entry(level .. ' ' .. rest)
  if not host then return nil end
  return level, host, entry, tonumber(prior) or 0
end

-- Forget a lease; its level, host, entry and prior ready time if it was held (a
-- damaged one is set aside and forgotten).
local function release(id)
  local payload = redis.call('HGET', KEYS[6], id)
  redis.call('ZREM', KEYS[5], id)
  if not payload then return nil end
  redis.call('HDEL', KEYS[6], id)
  local level, host, entry, prior = unpack_lease(payload)
  if not level then
    set_aside(payload)
    return nil
  end
  if redis.call('HINCRBY', KEYS[4], host, -1) <= 0 then
    redis.call('HDEL', KEYS[4], host)
  end
  return level, host, entry, prior
end

-- Held entries whose time has come go back to the tail of their queues.
local function release_held(limit, concurrency)
  local due = redis.call('ZRANGEBYSCORE', KEYS[13], '-inf', now, 'LIMIT', 0, limit)
  for _, member in ipairs(due) do
    redis.call('ZREM', KEYS[13], member)
    redis.call('HINCRBY', KEYS[8], 'held', -1)
    local level, host, entry = unpack_entry(member)
    local json = entry and string.match(entry, '^%d+|(.*)$')
    if json then
      push_entry(host, level, redis.call('INCR', KEYS[7]) .. '|' .. json)
      redis.call('HINCRBY', KEYS[8], 'queued', 1)
      touch(host, concurrency)
    end
  end
end

-- A failed URL found again as a seed: forget its failure, so it is queued again.
local function revive(fingerprint)
  local payload = redis.call('HGET', KEYS[14], fingerprint)
  if not payload then return false end
  redis.call('HDEL', KEYS[14], fingerprint)
  local fate = string.match(payload, '^(%S+) ')
  if fate then redis.call('HINCRBY', KEYS[8], 'fate:' .. fate, -1) end
  return true
end
"""

# Run before every script but the repair ones: fail before any write if the sequence,
# the lease payloads or the retry-later and depth-repair keys cannot be written (the
# runner repairs the shard and calls again), since failing after an entry left its
# queue or the seen filter loses it.
_GUARD = """
local checks = {{'INCRBY', KEYS[7], 0}, {'HLEN', KEYS[6]}, {'ZCARD', KEYS[13]},
                {'HLEN', KEYS[14]}, {'SCARD', KEYS[15]}, {'SCARD', KEYS[16]}}
for _, check in ipairs(checks) do
  local reply = redis.pcall(unpack(check))
  if type(reply) == 'table' and reply.err then return redis.error_reply(reply.err) end
end
"""

# KEYS of every script, in this order (the helpers index them):
# 1 ready, 2 waiting, 3 ready_at, 4 inflight, 5 leases, 6 leased, 7 seq, 8 counters,
# 9 seen, 10 delays, 11 outstanding, 12 owner (the node id that alone may pop),
# 13 held, 14 failed, 15 superseded (queue entries replaced by a shallower copy),
# 16 reparse (queue entries of pages fetched too deep, whose links go again)

PUSH = """
-- KEYS: the shard's keys (see above); KEYS[9] is the seen filter
-- ARGV: tag, weight, now, host_concurrency, dedup mode ('bloom'|'exact'), the
--       crawl's lowest depth with requests queued or leased, the deepest depth a
--       provisional request may have (DEPTH_LIMIT), levels per depth, '1' if a
--       page fetched too deep is reparsed (the node has a page store), then groups
--       of 7: host, level, dedup ('' = do not filter; exact: fingerprint;
--       bloom: 32-bit big-endian hashes, bit j of a filter is hash j % bits, see
--       crawler/frontier/dedup.py), entry json, hold until (ms; '' = queue now),
--       revive ('' or the fingerprint (hex) of a seed whose failure is forgotten),
--       depth key ('' or a short fingerprint (hex): depth repair, see below)
-- Depth repair: a request pushed deeper than one past the lowest depth still in
-- work may later be found by a shorter path; its depth key is kept in
-- prov:<depth> (key -> its entry's seq, or 'f' once fetched) until that can no
-- longer happen, and provseq:<depth> maps the seq back to the key. Found again
-- shallower, it is queued again at the shallower depth: its deeper copy, if still
-- queued, is marked superseded (KEYS[15]); if it was fetched already, the new copy
-- is marked for a reparse (KEYS[16]) and queued under the pseudo-host '~', which
-- no politeness delay holds back: its links are followed again at their true
-- depths, from the page store (when it lacks the page, the request is queued again
-- under its own host, politely). Without a page store a page is never fetched
-- twice for this: its links keep their depths.
-- returns: {flags as a string: '1' new, '2' new at a shorter depth, '0' seen,
--           best score, wake time}
local concurrency, mode = tonumber(ARGV[4]), ARGV[5]
local floor, deepest, per_depth = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local reparse = ARGV[9] == '1'

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

-- Whether *key* is known at a provisional depth deeper than *depth*: then it is
-- forgotten there, and its queued copy superseded; 'fetched' if it was fetched.
local deepest_known = tonumber(redis.call('HGET', KEYS[8], 'prov_deepest') or '-1')
local function shorten(key, depth)
  for d = depth + 1, math.min(deepest, deepest_known) do
    local seq = redis.call('HGET', tag .. 'prov:' .. d, key)
    if seq then
      redis.call('HDEL', tag .. 'prov:' .. d, key)
      redis.call('HINCRBY', KEYS[8], 'shortened', 1)
      if seq == 'f' then return 'fetched' end
      redis.call('HDEL', tag .. 'provseq:' .. d, seq)
      redis.call('SADD', KEYS[15], seq)
      return 'queued'
    end
  end
  return false
end

local flags = {}
for i = 10, #ARGV, 7 do
  local host, level, hold, key = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 4]), ARGV[i + 6]
  local depth = math.floor(tonumber(level) / per_depth)
  local new = is_new(ARGV[i + 2])
  if type(new) == 'table' then return new end
  if not new and ARGV[i + 5] ~= '' then new = revive(ARGV[i + 5]) end
  local shorter = not new and key ~= '' and shorten(key, depth)
  if new or shorter == 'queued' or (shorter == 'fetched' and reparse) then
    local seq = redis.call('INCR', KEYS[7])
    local entry = seq .. '|' .. ARGV[i + 3]
    if key ~= '' and depth > floor + 1 then
      redis.call('HSET', tag .. 'prov:' .. depth, key, seq)
      redis.call('HSET', tag .. 'provseq:' .. depth, seq, key)
      if depth > deepest_known then
        deepest_known = depth
        redis.call('HSET', KEYS[8], 'prov_deepest', depth)
      end
    end
    if shorter == 'fetched' then  -- reparsed from the page store: no host to wait for
      redis.call('SADD', KEYS[16], seq)
      host = REPARSE_HOST
    end
    if hold and hold > now then
      redis.call('ZADD', KEYS[13], hold, level .. ' ' .. #host .. ' ' .. host .. entry)
      redis.call('HINCRBY', KEYS[8], 'held', 1)
    else
      push_entry(host, level, entry)
      redis.call('HINCRBY', KEYS[8], 'queued', 1)
      touch(host, concurrency)
    end
  end
  flags[#flags + 1] = (new and '1') or (shorter and '2') or '0'
end
return {table.concat(flags), unpack(summary())}
"""

POP = """
-- KEYS: the shard's keys (see above)
-- ARGV: tag, weight, now, host_concurrency, lease expiry time, default delay,
--       most waiting hosts to promote, highest score allowed (the BFS barrier),
--       the popping node's id (it must own the shard: fencing), levels per depth
-- returns: {lease id, entry json, 1 if its links are to be reparsed (depth
--          repair) else 0, summary...}; id and entry false if no host is ready
--          below the barrier; id false and entry 'fenced' if the node does not
--          own the shard
local concurrency, expiry, default_delay = tonumber(ARGV[4]), ARGV[5], ARGV[6]
if redis.call('GET', KEYS[12]) ~= ARGV[9] then
  return {false, 'fenced', 0, unpack(summary())}
end
promote(tonumber(ARGV[7]))
release_held(tonumber(ARGV[7]), concurrency)
-- The head request of the best ready host. A host with nothing usable queued is
-- set aside; a request superseded by a shallower copy of itself (depth repair) is
-- dropped on the way.
local host, level, entry, reparse
local per_depth = tonumber(ARGV[10])
for _ = 1, 1000 do
  local hosts = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[8], 'LIMIT', 0, 1)
  if #hosts == 0 then return {false, false, 0, unpack(summary())} end
  host = hosts[1]
  if not head_score(host) then  -- nothing usable queued
    redis.call('ZREM', KEYS[1], host)
    set_aside(false)
  else
    local levels_key = tag .. 'lv:' .. host
    level = redis.call('ZRANGE', levels_key, 0, 0)[1]
    local queue = tag .. 'q:' .. host .. ':' .. level
    entry = redis.call('LPOP', queue)
    if redis.call('LLEN', queue) == 0 then redis.call('ZREM', levels_key, level) end
    local seq = string.match(entry, '^(%d+)|')
    if not (seq and redis.call('SREM', KEYS[15], seq) == 1) then
      local depth = math.floor(tonumber(level) / per_depth)
      local key = seq and redis.call('HGET', tag .. 'provseq:' .. depth, seq)
      if key then  -- fetched now: a shorter path found later reparses it
        redis.call('HDEL', tag .. 'provseq:' .. depth, seq)
        redis.call('HSET', tag .. 'prov:' .. depth, key, 'f')
      end
      reparse = seq and redis.call('SREM', KEYS[16], seq) == 1
      break
    end
    redis.call('HINCRBY', KEYS[8], 'queued', -1)
    redis.call('HINCRBY', KEYS[8], 'superseded', 1)
    if redis.call('HINCRBY', KEYS[11], level, -1) <= 0 then redis.call('HDEL', KEYS[11], level) end
    redis.call('ZREM', KEYS[1], host)
    touch(host, concurrency)
    entry = nil
  end
end
if not entry then return {false, false, 0, unpack(summary())} end
local id = redis.call('INCR', KEYS[7])
local prior = redis.call('HGET', KEYS[3], host) or '0'
redis.call('HSET', KEYS[6], id, level .. ' ' .. prior .. ' ' .. #host .. ' ' .. host .. entry)
redis.call('ZADD', KEYS[5], expiry, id)
redis.call('HINCRBY', KEYS[4], host, 1)
redis.call('HINCRBY', KEYS[8], 'queued', -1)
local delay = hnum(KEYS[10], host, tonumber(default_delay))
redis.call('HSET', KEYS[3], host, now + delay)
redis.call('ZREM', KEYS[1], host)
touch(host, concurrency)
return {id, string.match(entry, '^%d+|(.*)$'), reparse and 1 or 0, unpack(summary())}
"""

ACK = """
-- KEYS: the shard's keys (see above)
-- ARGV: tag, weight, now, host_concurrency, the host's delay, lease id, fate ('' if
--       none: the request was replaced by a retry), fingerprint (hex; '' unless it
--       failed for good: then it is kept in failed), untouched ('1' if nothing was
--       sent to the host, e.g. robots.txt forbade it: the delay is not spent)
-- returns: {1 if the lease was held (0 if it had expired or was acked), best, wake}
local concurrency, delay, id = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local fate, fingerprint = ARGV[7], ARGV[8]
local level, host, entry, prior = release(id)
if not level then return {0, unpack(summary())} end
if redis.call('HINCRBY', KEYS[11], level, -1) <= 0 then redis.call('HDEL', KEYS[11], level) end
local at
if ARGV[9] == '1' and not redis.call('HGET', KEYS[4], host) then
  at = prior
else
  at = math.max(hnum(KEYS[3], host, 0), now + delay)
  redis.call('HSET', KEYS[10], host, delay)
end
redis.call('HSET', KEYS[3], host, at)
if at > now and redis.call('ZREM', KEYS[1], host) == 1 then
  redis.call('ZADD', KEYS[2], at, host)
end
touch(host, concurrency)
redis.call('HINCRBY', KEYS[8], 'acked', 1)
if fate ~= '' then redis.call('HINCRBY', KEYS[8], 'fate:' .. fate, 1) end
local json = string.match(entry, '^%d+|(.*)$')
if fingerprint ~= '' and json then
  local previous = redis.call('HGET', KEYS[14], fingerprint)
  local old_fate = previous and string.match(previous, '^(%S+) ')
  if old_fate then redis.call('HINCRBY', KEYS[8], 'fate:' .. old_fate, -1) end
  redis.call('HSET', KEYS[14], fingerprint, fate .. ' ' .. level .. ' ' .. #host .. ' ' .. host .. json)
end
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
-- ARGV: tag, weight, now, most waiting hosts (and held entries) to promote,
--       host_concurrency, the crawl's lowest depth with requests queued or leased
--       ('' if unknown): provisional depths it has passed are forgotten
-- returns: {best score, wake time}
promote(tonumber(ARGV[4]))
release_held(tonumber(ARGV[4]), tonumber(ARGV[5]))
local floor = tonumber(ARGV[6])
if floor then
  for d = 0, floor + 1 do
    redis.call('DEL', tag .. 'prov:' .. d, tag .. 'provseq:' .. d)
  end
end
return summary()
"""

RETRY = """
-- KEYS: the shard's keys (see above)
-- ARGV: tag, weight, now, host_concurrency, then fingerprints (hex) of failed requests
-- returns: {requests queued again, best, wake}
local concurrency, count = tonumber(ARGV[4]), 0
for i = 5, #ARGV do
  local payload = redis.call('HGET', KEYS[14], ARGV[i])
  local fate, rest = string.match(payload or '', '^(%S+) (.*)$')
  local level, host, json = unpack_entry(rest or '')
  redis.call('HDEL', KEYS[14], ARGV[i])
  if fate then redis.call('HINCRBY', KEYS[8], 'fate:' .. fate, -1) end
  if host and host ~= '' then
    push_entry(host, level, redis.call('INCR', KEYS[7]) .. '|' .. json)
    redis.call('HINCRBY', KEYS[8], 'queued', 1)
    touch(host, concurrency)
    count = count + 1
  end
end
return {count, unpack(summary())}
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
        "retry": RETRY,
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
        keys.held,
        keys.failed,
        keys.superseded,
        keys.reparse,
    )
