"""The Lua helpers every frontier script starts with, and the guard before them.

Every script works on the keys of one shard (one Redis Cluster slot): fixed keys come
in KEYS, in the order below; per-host keys are built from the shard's hash-tagged
prefix in ARGV[1]. Every script ends by returning the shard's *summary*: the BFS
score of its best ready host, the time its first waiting host (or held entry) becomes
ready, the lowest level with requests queued or leased, and how many damaged values
it set aside, so the scheduler can pick a shard without asking again.
"""

from __future__ import annotations

# KEYS of every script, in this order (the helpers index them):
# 1 ready, 2 waiting, 3 ready_at, 4 inflight, 5 leases, 6 leased, 7 seq, 8 counters,
# 9 seen, 10 delays, 11 outstanding, 12 owner (the node id that alone may pop),
# 13 held, 14 failed, 15 superseded (queue entries replaced by a shallower copy),
# 16 reparse (queue entries of pages fetched too deep, whose links go again)

HELPERS = """
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
GUARD = """
local checks = {{'INCRBY', KEYS[7], 0}, {'HLEN', KEYS[6]}, {'ZCARD', KEYS[13]},
                {'HLEN', KEYS[14]}, {'SCARD', KEYS[15]}, {'SCARD', KEYS[16]}}
for _, check in ipairs(checks) do
  local reply = redis.pcall(unpack(check))
  if type(reply) == 'table' and reply.err then return redis.error_reply(reply.err) end
end
"""
