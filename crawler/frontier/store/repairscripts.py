"""Lua scripts that repair a shard holding values the crawler did not write.

They run with the helpers of ``crawler.frontier.store.scripthelpers`` (same keys,
same named arguments), so every value they set aside is counted in the summary's
damage count and in the shard's ``bad_entries`` counter. See
``crawler.frontier.store.repair`` for when.
"""

from __future__ import annotations

REPAIR = """
-- KEYS: the shard's keys (see crawler.frontier.store.scripthelpers)
-- args: concurrency, seen_type (the seen filter's type: 'hash', a Bloom layout;
--       'set', exact fingerprints), most_hashes (most hashes a URL comes with)
-- Deletes fixed keys of the wrong type and hash fields that are not numbers, drops
-- leases without a payload and ready or waiting hosts without a usable queue,
-- recounts in-flight requests from the leases, and keeps seq above every lease id.
-- returns: {hosts whose in-flight count was wrong, summary...}
local concurrency = tonumber(args.concurrency)
local types = {{READY, 'zset'}, {WAITING, 'zset'}, {READY_AT, 'hash'},
               {INFLIGHT, 'hash'}, {LEASES, 'zset'}, {LEASED, 'hash'},
               {SEQUENCE, 'string'}, {COUNTERS, 'hash'}, {SEEN, args.seen_type},
               {DELAYS, 'hash'}, {OUTSTANDING, 'hash'}, {OWNER, 'string'},
               {HELD, 'zset'}, {FAILED, 'hash'}, {SUPERSEDED, 'set'}, {REPARSE, 'set'},
               {strategies_key(), 'hash'}, {host_terms_key(), 'hash'},
               {spill_key(), 'hash'}, {spill_out_key(), 'list'},
               {spill_wanted_key(), 'set'}}
for _, key_type in ipairs(types) do
  local key, expected = key_type[1], key_type[2]
  local found = redis.call('TYPE', key)['ok']
  if found ~= 'none' and found ~= expected then
    redis.call('DEL', key)
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
-- Times and delays may be fractions; counts are integers.
local numeric = {{READY_AT, false}, {INFLIGHT, true}, {COUNTERS, true}, {DELAYS, false},
                 {OUTSTANDING, true}}
for _, key_kind in ipairs(numeric) do numeric_fields(key_kind[1], key_kind[2]) end
if args.seen_type == 'hash' then
  numeric_fields(SEEN, true)
  -- A layout field out of range (the caller writes the layout again where missing).
  local layout = redis.call('HGETALL', SEEN)
  for i = 1, #layout, 2 do
    local name, value = string.match(layout[i], '^(%a+):'), tonumber(layout[i + 1])
    local bad = (name == 'bits' or name == 'cap') and value < 1
    bad = bad or (name == 'hashes' and (value < 1 or value > tonumber(args.most_hashes)))
    bad = bad or (name == 'block' and value ~= BLOCK_BITS)
    if layout[i] == 'filters' then
      bad = value < 1 or redis.call('HEXISTS', SEEN, 'bits:' .. (value - 1)) == 0
    end
    if bad then
      redis.call('HDEL', SEEN, layout[i])
      set_aside(false)
    end
  end
  for i = 0, (tonumber(redis.call('HGET', SEEN, 'filters')) or 1) - 1 do
    local found = redis.call('TYPE', bloom_key(i))['ok']
    if found ~= 'none' and found ~= 'string' then
      redis.call('DEL', bloom_key(i))
      set_aside(false)
    end
  end
end

-- Leases: every id in both keys, with a payload this crawler wrote.
local top = 0
for _, id in ipairs(redis.call('ZRANGE', LEASES, 0, -1)) do
  if redis.call('HEXISTS', LEASED, id) == 0 or not tonumber(id) then
    redis.call('ZREM', LEASES, id)
    set_aside(false)
  end
end
local flying = {}
local leased = redis.call('HGETALL', LEASED)
for i = 1, #leased, 2 do
  local id, level, host = leased[i], unpack_lease(leased[i + 1])
  if not level then
    release(id)
  else
    top = math.max(top, tonumber(id) or 0)
    flying[host] = (flying[host] or 0) + 1
    if not redis.call('ZSCORE', LEASES, id) then
      redis.call('ZADD', LEASES, now, id)  -- expired now: the next requeue puts it back
    end
  end
end
local wrong = 0
local counted = redis.call('HGETALL', INFLIGHT)
for i = 1, #counted, 2 do
  if tonumber(counted[i + 1]) ~= flying[counted[i]] then wrong = wrong + 1 end
  flying[counted[i]] = flying[counted[i]] or 0
end
redis.call('DEL', INFLIGHT)
for host, count in pairs(flying) do
  if count > 0 then redis.call('HSET', INFLIGHT, host, count) end
end

local seq = redis.call('GET', SEQUENCE)
if (seq and not string.match(seq, '^%d+$')) or (tonumber(seq) or 0) < top then
  if seq then set_aside(false) end
  redis.call('SET', SEQUENCE, top)
end

for _, host in ipairs(redis.call('ZRANGE', READY, 0, -1)) do
  local score = head_score(host)
  if not score or redis.call('ZSCORE', WAITING, host) then
    redis.call('ZREM', READY, host)
    if not score then set_aside(false) end
  else
    redis.call('ZADD', READY, score, host)
  end
end
for _, host in ipairs(redis.call('ZRANGE', WAITING, 0, -1)) do
  if not head_score(host) then
    redis.call('ZREM', WAITING, host)
    set_aside(false)
  end
end
for host in pairs(flying) do touch(host, concurrency) end
return {wrong, unpack(summary())}
"""

REPAIR_HOSTS = """
-- KEYS: the shard's keys (see crawler.frontier.store.scripthelpers)
-- args: concurrency
-- records: host (one that has a levels key)
-- Sets damaged levels and queues aside and schedules each host that has requests
-- queued but is neither ready, nor waiting, nor busy (a stranded host).
-- returns: {hosts scheduled, {level (of the queue classes), requests queued, ...},
--          summary...}
local concurrency = tonumber(args.concurrency)
local scheduled, counts = 0, {}
for record in records() do
  local host = record.host
  if head_score(host) then
    local lv = levels_key(host)
    for _, class in ipairs(redis.call('ZRANGE', lv, 0, -1)) do
      local length = class_of(class) and read('LLEN', queue_key(host, class))
      if not length or length == 0 then
        redis.call('ZREM', lv, class)
        set_aside(false)
      else
        local level = tostring(level_of(class))
        counts[level] = (counts[level] or 0) + length
      end
    end
    if not redis.call('ZSCORE', READY, host) and not redis.call('ZSCORE', WAITING, host)
      and hnum(INFLIGHT, host, 0) < concurrency then
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
-- records: level, count (requests of that level found queued)
-- Sets the BFS barrier's counts and the queued count to what a scan of every host
-- found, with the entries its queues spilled (FRONTIER_SPILL), if nothing is leased
-- (leased requests count too, and are not in queues).
-- returns: {1 if set, summary...}
if redis.call('ZCARD', LEASES) > 0 then return {0, unpack(summary())} end
local counts, total = {}, 0
local function add(level, count)
  counts[level] = (counts[level] or 0) + count
  total = total + count
end
for found in records() do add(tostring(found.level), tonumber(found.count)) end
local spills = read('HGETALL', spill_key()) or {}
for i = 1, #spills, 2 do
  local class = class_of(string.match(spills[i], '^(%d+) '))
  local count = spill_parse(spills[i + 1])
  if class and count > 0 then add(tostring(level_of(class)), count) end
end
redis.call('DEL', OUTSTANDING)
for level, count in pairs(counts) do redis.call('HSET', OUTSTANDING, level, count) end
redis.call('HSET', COUNTERS, 'queued', total)
return {1, unpack(summary())}
"""
