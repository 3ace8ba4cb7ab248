"""Lua scripts that repair a shard holding values the crawler did not write.

They run with the helpers of ``crawler.frontier.store.scripthelpers`` (same KEYS, same ARGV
head), so every value they set aside is counted in the summary's damage count and in
the shard's ``bad_entries`` counter. See ``crawler.frontier.store.repair`` for when.
"""

from __future__ import annotations

REPAIR = """
-- KEYS: the shard's keys (see crawler.frontier.store.scripthelpers)
-- ARGV: tag, order, now, host_concurrency, the seen filter's type ('hash': Bloom
--       layout, 'set': exact fingerprints), most hashes a URL comes with (Bloom)
-- Deletes fixed keys of the wrong type and hash fields that are not numbers, drops
-- leases without a payload and ready or waiting hosts without a usable queue,
-- recounts in-flight requests from the leases, and keeps seq above every lease id.
-- returns: {hosts whose in-flight count was wrong, summary...}
local concurrency = tonumber(ARGV[4])
local types = {'zset', 'zset', 'hash', 'hash', 'zset', 'hash', 'string', 'hash',
               ARGV[5], 'hash', 'hash', 'string', 'zset', 'hash', 'set', 'set'}
for i, expected in ipairs(types) do
  local found = redis.call('TYPE', KEYS[i])['ok']
  if found ~= 'none' and found ~= expected then
    redis.call('DEL', KEYS[i])
    set_aside(false)
  end
end

local function numeric_fields(key, integers)
  local fields = redis.call('HGETALL', key)
  for i = 1, #fields, 2 do
    local value = fields[i + 1]
    local good = tonumber(value) and (not integers or string.match(value, '^%-?%d+$'))
    if not good then
      redis.call('HDEL', key, fields[i])
      set_aside(false)
    end
  end
end
for _, i in ipairs({3, 4, 8, 10, 11}) do numeric_fields(KEYS[i], i ~= 3 and i ~= 10) end
if ARGV[5] == 'hash' then
  numeric_fields(KEYS[9], true)
  -- A layout field out of range (the caller writes the layout again where missing).
  local layout = redis.call('HGETALL', KEYS[9])
  for i = 1, #layout, 2 do
    local name, value = string.match(layout[i], '^(%a+):'), tonumber(layout[i + 1])
    local bad = (name == 'bits' or name == 'cap') and value < 1
    bad = bad or (name == 'hashes' and (value < 1 or value > tonumber(ARGV[6])))
    if layout[i] == 'filters' then
      bad = value < 1 or redis.call('HEXISTS', KEYS[9], 'bits:' .. (value - 1)) == 0
    end
    if bad then
      redis.call('HDEL', KEYS[9], layout[i])
      set_aside(false)
    end
  end
  for i = 0, (tonumber(redis.call('HGET', KEYS[9], 'filters')) or 1) - 1 do
    local found = redis.call('TYPE', KEYS[9] .. ':' .. i)['ok']
    if found ~= 'none' and found ~= 'string' then
      redis.call('DEL', KEYS[9] .. ':' .. i)
      set_aside(false)
    end
  end
end

-- Leases: every id in both keys, with a payload this crawler wrote.
local top = 0
for _, id in ipairs(redis.call('ZRANGE', KEYS[5], 0, -1)) do
  if redis.call('HEXISTS', KEYS[6], id) == 0 or not tonumber(id) then
    redis.call('ZREM', KEYS[5], id)
    set_aside(false)
  end
end
local flying = {}
local leased = redis.call('HGETALL', KEYS[6])
for i = 1, #leased, 2 do
  local id, level, host = leased[i], unpack_lease(leased[i + 1])
  if not level then
    release(id)
  else
    top = math.max(top, tonumber(id) or 0)
    flying[host] = (flying[host] or 0) + 1
    if not redis.call('ZSCORE', KEYS[5], id) then
      redis.call('ZADD', KEYS[5], now, id)  -- expired now: the next requeue puts it back
    end
  end
end
local wrong = 0
local counted = redis.call('HGETALL', KEYS[4])
for i = 1, #counted, 2 do
  if tonumber(counted[i + 1]) ~= flying[counted[i]] then wrong = wrong + 1 end
  flying[counted[i]] = flying[counted[i]] or 0
end
redis.call('DEL', KEYS[4])
for host, count in pairs(flying) do
  if count > 0 then redis.call('HSET', KEYS[4], host, count) end
end

local seq = redis.call('GET', KEYS[7])
if (seq and not string.match(seq, '^%d+$')) or (tonumber(seq) or 0) < top then
  if seq then set_aside(false) end
  redis.call('SET', KEYS[7], top)
end

for _, host in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local score = head_score(host)
  if not score or redis.call('ZSCORE', KEYS[2], host) then
    redis.call('ZREM', KEYS[1], host)
    if not score then set_aside(false) end
  else
    redis.call('ZADD', KEYS[1], score, host)
  end
end
for _, host in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  if not head_score(host) then
    redis.call('ZREM', KEYS[2], host)
    set_aside(false)
  end
end
for host in pairs(flying) do touch(host, concurrency) end
return {wrong, unpack(summary())}
"""

REPAIR_HOSTS = """
-- KEYS: the shard's keys (see crawler.frontier.store.scripthelpers)
-- ARGV: tag, order, now, host_concurrency, then hosts that have a levels key
-- Sets damaged levels and queues aside and schedules each host that has requests
-- queued but is neither ready, nor waiting, nor busy (a stranded host).
-- returns: {hosts scheduled, {level (of the queue classes), requests queued, ...},
--          summary...}
local concurrency = tonumber(ARGV[4])
local scheduled, counts = 0, {}
for i = 5, #ARGV do
  local host = ARGV[i]
  if head_score(host) then
    local lv = tag .. 'lv:' .. host
    for _, class in ipairs(redis.call('ZRANGE', lv, 0, -1)) do
      local length = class_of(class) and read('LLEN', tag .. 'q:' .. host .. ':' .. class)
      if not length or length == 0 then
        redis.call('ZREM', lv, class)
        set_aside(false)
      else
        local level = tostring(level_of(class))
        counts[level] = (counts[level] or 0) + length
      end
    end
    if not redis.call('ZSCORE', KEYS[1], host) and not redis.call('ZSCORE', KEYS[2], host)
      and hnum(KEYS[4], host, 0) < concurrency then
      schedule(host)
      scheduled = scheduled + 1
    end
  end
end
local flat = {}
for level, count in pairs(counts) do
  flat[#flat + 1] = level
  flat[#flat + 1] = count
end
return {scheduled, flat, unpack(summary())}
"""

REPAIR_COUNTS = """
-- KEYS: the shard's keys (see crawler.frontier.store.scripthelpers)
-- ARGV: tag, order, now, then pairs: level, requests of that level found queued
-- Sets the BFS barrier's counts and the queued count to what a scan of every host
-- found, if nothing is leased (leased requests count too, and are not in queues).
-- returns: {1 if set, summary...}
if redis.call('ZCARD', KEYS[5]) > 0 then return {0, unpack(summary())} end
redis.call('DEL', KEYS[11])
local total = 0
for i = 4, #ARGV, 2 do
  redis.call('HSET', KEYS[11], ARGV[i], ARGV[i + 1])
  total = total + tonumber(ARGV[i + 1])
end
redis.call('HSET', KEYS[8], 'queued', total)
return {1, unpack(summary())}
"""
