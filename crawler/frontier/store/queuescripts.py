"""The frontier's queue scripts: push, pop, ack, requeue, promote and retry.

Queue entries are ``<seq>|<json>``, in a list per host and queue class (a request's
level and priority band, ranked by FRONTIER_ORDER: ``crawler.policy.order``), so
requests of one class go out FIFO. A host's score in ``ready`` is ``rank *
SEQUENCE_LIMIT + seq`` of its head entry. A lease keeps ``<class> <ready_at>
<len(host)> <host><entry>`` so an expired lease can be put back at the head of its
queue, and a lease whose request never reached its host (robots.txt forbade it) can
give the host back its previous ready time. A held
request (retry-later) is ``<class> <len(host)> <host><entry>`` in ``held``, scored
by when it may go again; a request that failed for good is
``<fate> <class> <len(host)> <host><json>`` in ``failed``, by fingerprint. Each runs
after ``crawler.frontier.store.scripthelpers`` (KEYS order and helpers there).
"""

from __future__ import annotations

from crawler.frontier.store.scripthelpers import BLOOM_ADD

PUSH = (
    BLOOM_ADD
    + """
-- KEYS: the shard's keys (see above); KEYS[9] is the seen filter
-- ARGV: tag, order, now, host_concurrency, dedup mode ('bloom'|'exact'), the
--       crawl's lowest depth with requests queued or leased, the deepest depth a
--       provisional request may have (DEPTH_LIMIT), levels per depth, '1' if a
--       page fetched too deep is reparsed (the node has a page store), then groups
--       of 7: host, queue class, dedup ('' = do not filter; exact: fingerprint;
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
  local host, class, hold, key = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 4]), ARGV[i + 6]
  local depth = math.floor(level_of(class) / per_depth)
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
      redis.call('ZADD', KEYS[13], hold, class .. ' ' .. #host .. ' ' .. host .. entry)
      redis.call('HINCRBY', KEYS[8], 'held', 1)
    else
      push_entry(host, class, entry)
      redis.call('HINCRBY', KEYS[8], 'queued', 1)
      touch(host, concurrency)
    end
  end
  flags[#flags + 1] = (new and '1') or (shorter and '2') or '0'
end
return {table.concat(flags), unpack(summary())}
"""
)

POP = """
-- KEYS: the shard's keys (see above)
-- ARGV: tag, order, now, host_concurrency, lease expiry time, default delay,
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
local host, class, entry, reparse
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
    class = redis.call('ZRANGE', levels_key, 0, 0)[1]
    local queue = tag .. 'q:' .. host .. ':' .. class
    entry = redis.call('LPOP', queue)
    if redis.call('LLEN', queue) == 0 then redis.call('ZREM', levels_key, class) end
    local seq = string.match(entry, '^(%d+)|')
    if not (seq and redis.call('SREM', KEYS[15], seq) == 1) then
      local depth = math.floor(level_of(class) / per_depth)
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
    local level = level_of(class)
    if redis.call('HINCRBY', KEYS[11], level, -1) <= 0 then redis.call('HDEL', KEYS[11], level) end
    redis.call('ZREM', KEYS[1], host)
    touch(host, concurrency)
    entry = nil
  end
end
if not entry then return {false, false, 0, unpack(summary())} end
local id = redis.call('INCR', KEYS[7])
local prior = redis.call('HGET', KEYS[3], host) or '0'
redis.call('HSET', KEYS[6], id, class .. ' ' .. prior .. ' ' .. #host .. ' ' .. host .. entry)
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
-- ARGV: tag, order, now, host_concurrency, the host's delay, lease id, fate ('' if
--       none: the request was replaced by a retry), fingerprint (hex; '' unless it
--       failed for good: then it is kept in failed), untouched ('1' if nothing was
--       sent to the host, e.g. robots.txt forbade it: the delay is not spent)
-- returns: {1 if the lease was held (0 if it had expired or was acked), best, wake}
local concurrency, delay, id = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local fate, fingerprint = ARGV[7], ARGV[8]
local class, host, entry, prior = release(id)
if not class then return {0, unpack(summary())} end
local level = level_of(class)
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
  redis.call('HSET', KEYS[14], fingerprint, fate .. ' ' .. class .. ' ' .. #host .. ' ' .. host .. json)
end
return {1, unpack(summary())}
"""

REQUEUE = """
-- KEYS: the shard's keys (see above)
-- ARGV: tag, order, now, host_concurrency, most leases to requeue, then lease ids;
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
  local class, host, entry = release(id)
  if class then
    local queue = tag .. 'q:' .. host .. ':' .. class
    redis.call('LPUSH', queue, entry)
    redis.call('ZADD', tag .. 'lv:' .. host, rank_of(class), class)
    redis.call('HINCRBY', KEYS[8], 'queued', 1)
    touch(host, concurrency)
    count = count + 1
  end
end
return {count, unpack(summary())}
"""

PROMOTE = """
-- KEYS: the shard's keys (see above)
-- ARGV: tag, order, now, most waiting hosts (and held entries) to promote,
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
-- ARGV: tag, order, now, host_concurrency, then fingerprints (hex) of failed requests
-- returns: {requests queued again, best, wake}
local concurrency, count = tonumber(ARGV[4]), 0
for i = 5, #ARGV do
  local payload = redis.call('HGET', KEYS[14], ARGV[i])
  local fate, rest = string.match(payload or '', '^(%S+) (.*)$')
  local class, host, json = unpack_entry(rest or '')
  redis.call('HDEL', KEYS[14], ARGV[i])
  if fate then redis.call('HINCRBY', KEYS[8], 'fate:' .. fate, -1) end
  if host and host ~= '' then
    push_entry(host, class, redis.call('INCR', KEYS[7]) .. '|' .. json)
    redis.call('HINCRBY', KEYS[8], 'queued', 1)
    touch(host, concurrency)
    count = count + 1
  end
end
return {count, unpack(summary())}
"""
