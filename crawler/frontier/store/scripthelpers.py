"""The Lua helpers every frontier script starts with, and the guard before them.

Every script works on the keys of one shard (one Redis Cluster slot), named as
``crawler.frontier.store.scriptkeys`` renders them from the key model: the fixed
keys (``READY``, ``COUNTERS``...) come in KEYS, per-host and per-depth keys are
built from the shard's hash-tagged prefix, ``tag`` (``queue_key(host, class)``).
Arguments are named (``crawler.frontier.store.scriptargs``): ``args.order`` is the
crawl's FRONTIER_ORDER, ``args.now`` the time (ms).
Every script ends by returning the shard's *summary*: the score of its best ready
host (rank, then sequence: ``crawler.policy.order``), the time its first waiting
host (or held entry) becomes ready, the lowest level with requests queued or
leased, and how many damaged values it set aside, so the scheduler can pick a shard
without asking again.
"""

from __future__ import annotations

from crawler.frontier.dedup import BLOCK_BITS
from crawler.frontier.store.scriptargs import LUA_ARGUMENTS
from crawler.frontier.store.scriptkeys import lua_keys
from crawler.policy.importance import BAND_OF_ONE, BAND_TOLERANCE, BANDS_PER_OCTAVE
from crawler.policy.order import LEVELS, PRIORITY_BANDS, SEQUENCE_LIMIT

# The order's constants, from crawler.policy.order and crawler.policy.importance,
# and a blocked Bloom filter's block (crawler.frontier.dedup): one source for Python
# and Lua.
CONSTANTS = f"""
local SEQUENCE_LIMIT, BANDS, LEVELS = {SEQUENCE_LIMIT}, {PRIORITY_BANDS}, {LEVELS}
local BAND_OF_ONE, BANDS_PER_OCTAVE = {BAND_OF_ONE}, {BANDS_PER_OCTAVE}
local BAND_TOLERANCE = {BAND_TOLERANCE!r}
local BLOCK_BITS = {BLOCK_BITS}
"""

HELPERS = (
    CONSTANTS
    + LUA_ARGUMENTS
    + lua_keys()
    + """
-- A request's queue class (its level and priority band, see crawler.policy.order):
-- the class of a stored value this crawler wrote, or nil; its level; its rank in
-- FRONTIER_ORDER ('bfs': level, then priority; 'priority': the other way round).
local function class_of(text)
  local class = string.match(text or '', '^%d+$') and tonumber(text)
  if class and class < LEVELS * BANDS then return class end
  return nil
end
local function level_of(class)
  return math.floor(tonumber(class) / BANDS)
end
local function rank_of(class)
  class = tonumber(class)
  if order == 'priority' or order == 'importance' then
    return (class % BANDS) * LEVELS + level_of(class)
  end
  return class
end

-- Where a class ranks among its host's classes (the host's levels key): as
-- rank_of, except on a host crawled deepest first (FRONTIER_SITE_STRATEGY = dfs),
-- where deeper levels go first. Across hosts a host's best request ranks by
-- rank_of alone (head_score).
local function host_rank(host, class)
  if redis.call('HGET', strategies_key(), host) ~= 'dfs' then return rank_of(class) end
  class = tonumber(class)
  local band, deep = class % BANDS, (LEVELS - 1) - level_of(class)
  if order == 'priority' or order == 'importance' then return band * LEVELS + deep end
  return deep * BANDS + band
end

-- The band an importance ranks in (crawler.policy.importance.band_of).
local function importance_band(value)
  value = tonumber(value)
  if not value or not (value > 0) then return BANDS - 1 end
  local octaves = BANDS_PER_OCTAVE * math.log(value) / math.log(2) + BAND_TOLERANCE
  return math.min(math.max(BAND_OF_ONE - math.floor(octaves), 0), BANDS - 1)
end

-- Where a host's best request ranks against other hosts': its rank, except in
-- importance order, where its host term (a share of the credits of links from
-- other hosts into the host) adds to the importance of its band.
local function host_score_rank(host, class)
  if order ~= 'importance' then return rank_of(class) end
  local term = tonumber(redis.call('HGET', host_terms_key(), host))
  if not term or not (term > 0) then return rank_of(class) end
  class = tonumber(class)
  local value = 2 ^ ((BAND_OF_ONE - class % BANDS) / BANDS_PER_OCTAVE) + term
  return importance_band(value) * LEVELS + level_of(class)
end

-- Values this call found damaged (not written by the crawler) and set aside.
local damaged = 0

-- Count a damaged value; queue entries are kept, capped, in the shard's damaged list.
local function set_aside(value)
  damaged = damaged + 1
  redis.pcall('HINCRBY', COUNTERS, 'bad_entries', 1)
  if value then
    redis.pcall('LPUSH', damaged_key(), value)
    redis.pcall('LTRIM', damaged_key(), 0, 999)
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
local function drop_head(queue, lv, class, entry)
  redis.call('LPOP', queue)
  if redis.call('LLEN', queue) == 0 then redis.call('ZREM', lv, class) end
  local level = level_of(class)
  if (tonumber(redis.pcall('HINCRBY', OUTSTANDING, level, -1)) or 0) <= 0 then
    redis.pcall('HDEL', OUTSTANDING, level)
  end
  redis.pcall('HINCRBY', COUNTERS, 'queued', -1)
  set_aside(entry)
end

-- The score of the host's head request (rank, then seq, clamped: see
-- crawler.policy.order); nil if nothing usable is queued. Damaged classes, queues
-- and entries met on the way are set aside (bounded).
local function head_score(host)
  local lv = levels_key(host)
  for _ = 1, 1000 do
    local classes = read('ZRANGE', lv, 0, 0)
    if not classes or #classes == 0 then return nil end
    local class, queue = class_of(classes[1]), queue_key(host, classes[1])
    local entry = class and read('LINDEX', queue, 0)
    if not entry then
      redis.call('ZREM', lv, classes[1])
      if not class then set_aside(false) end
    else
      local seq = tonumber(string.match(entry, '^(%d+)|'))
      if seq then
        return host_score_rank(host, class) * SEQUENCE_LIMIT + math.min(seq, SEQUENCE_LIMIT - 1)
      end
      drop_head(queue, lv, classes[1], entry)
    end
  end
  return nil
end

-- A number stored in a hash field, or *default* if it is missing or not a number.
local function hnum(key, field, default)
  return tonumber(redis.call('HGET', key, field)) or default
end

-- Take *n* queued requests of *class* out of the crawl's counts (queued, and the
-- BFS barrier's at their level): they were dropped, never to be popped.
local function uncount(class, n)
  redis.call('HINCRBY', COUNTERS, 'queued', -n)
  local level = level_of(class)
  if redis.call('HINCRBY', OUTSTANDING, level, -n) <= 0 then
    redis.call('HDEL', OUTSTANDING, level)
  end
end

-- Put a host that is neither ready nor waiting where its queue and delay say.
local function schedule(host)
  local score = head_score(host)
  if not score then return end
  local at = hnum(READY_AT, host, 0)
  if at > now then
    redis.call('ZADD', WAITING, at, host)
  else
    redis.call('ZADD', READY, score, host)
  end
end

-- After a host's queue or in-flight count changed: keep its place right.
local function touch(host, concurrency)
  if redis.call('ZSCORE', WAITING, host) then return end
  if redis.call('ZSCORE', READY, host) then
    local score = head_score(host)
    if score then
      redis.call('ZADD', READY, 'XX', score, host)
    else
      redis.call('ZREM', READY, host)
    end
  elseif hnum(INFLIGHT, host, 0) < concurrency then
    schedule(host)
  end
end

local function promote(limit)
  local due = redis.call('ZRANGEBYSCORE', WAITING, '-inf', now, 'LIMIT', 0, limit)
  for _, host in ipairs(due) do
    redis.call('ZREM', WAITING, host)
    local score = head_score(host)
    if score then redis.call('ZADD', READY, score, host) end
  end
end

-- The lowest level with requests queued or leased: the BFS barrier's input.
-- A field that is not a level, or whose count is not positive, is not one.
local function lowest_level()
  local low = false
  local fields = redis.call('HGETALL', OUTSTANDING)
  for i = 1, #fields, 2 do
    local level, count = tonumber(fields[i]), tonumber(fields[i + 1])
    if level and count and count > 0 and (not low or level < low) then low = level end
  end
  return low
end

-- The shard's summary; its wake time is the first of a waiting host and a held entry.
local function summary()
  local best = redis.call('ZRANGE', READY, 0, 0, 'WITHSCORES')
  local wake = redis.call('ZRANGE', WAITING, 0, 0, 'WITHSCORES')[2]
  local held = redis.call('ZRANGE', HELD, 0, 0, 'WITHSCORES')[2]
  if held and (not wake or tonumber(held) < tonumber(wake)) then wake = held end
  return {best[2] or false, wake or false, lowest_level(), damaged}
end

-- The queue of pages reparsed from the page store (never a real host name).
local REPARSE_HOST = '~'

-- Importance order (crawler.policy.importance): a class's band is its URL's
-- importance band, and each queued URL of a host is indexed in importance_key(host)
-- by its URL key: '<seq> <class> <importance> <in-links>' of its live copy.
local importance = order == 'importance'
local function band_floor(class)
  return 2 ^ ((BAND_OF_ONE - tonumber(class) % BANDS) / BANDS_PER_OCTAVE)
end
local function with_band(class, band)
  return level_of(class) * BANDS + band
end
-- A version-4 entry's URL made whole: one relative to its queue's *host* ('/p',
-- ':8080/p'; '~/p' for https) gets its scheme and host back (as
-- crawler.frontier.encoding.codec does); a whole one is kept.
local function whole_url(url, host)
  local first = string.sub(url, 1, 1)
  if first == '/' or first == ':' then return 'http://' .. host .. url end
  if first == '~' then return 'https://' .. host .. string.sub(url, 2) end
  return url
end
-- A version-4 entry's JSON with its URL made whole, to be queued under another
-- host (REPARSE_HOST); other entries as they are.
local function with_whole_url(json, host)
  local url, rest = string.match(json, '^%[4,"([^"]*)"(.*)$')
  if not url then return json end
  return '[4,"' .. whole_url(url, host) .. '"' .. rest
end
-- The URL key of a queue entry ('<seq>|<json>') of *host*'s queue: as the node
-- computes it (crawler.frontier.importance.url_key); nil if the entry is not one
-- we wrote.
local function url_key_of(entry, host)
  local json = string.match(entry, '^%d+|(.*)$')
  local ok, decoded = pcall(cjson.decode, json or '')
  if not ok or type(decoded) ~= 'table' then return nil end
  local url = decoded.u
  if decoded[1] == 4 and type(decoded[2]) == 'string' then url = whole_url(decoded[2], host) end
  if type(url) ~= 'string' then return nil end
  return string.sub(redis.sha1hex(url), 1, 16)
end
-- A queued URL in its host's index: '<seq> <class> <importance> <backlinks>
-- <in-links>' (its queue list holds '<seq>|<key>', its entry is in entries_key):
-- seq, class, importance, backlinks, in-links; nil if it is not indexed (or not as
-- this crawler writes it).
local function index_read(host, key)
  local text = read('HGET', importance_key(host), key)
  local seq, class, value, backlinks, links =
    string.match(text or '', '^(%d+) (%d+) (%S+) (%S+) (%d+)$')
  if not seq or not class_of(class) or not tonumber(value) then return nil end
  return seq, class, tonumber(value), tonumber(backlinks) or 0, tonumber(links)
end
local function index_write(host, key, seq, class, value, backlinks, links)
  local text = seq .. ' ' .. class .. ' ' .. string.format('%.5g', value) .. ' ' ..
    string.format('%.5g', backlinks) .. ' ' .. links
  if not read('HSET', importance_key(host), key, text) then  -- not a hash: set aside
    redis.call('HSET', importance_key(host), key, text)
  end
end
local function entry_write(host, key, json)
  if not read('HSET', entries_key(host), key, json) then  -- not a hash: set aside
    redis.call('HSET', entries_key(host), key, json)
  end
end

-- Put *entry* ('<seq>|<json>') in its class's list, at the tail (the head if
-- *at_head*); the class ranks in the host's levels key. In importance order the
-- class takes the band of *value* (its importance; the floor of its class's band
-- when not known: a lease put back, a held request released), the entry goes to
-- the host's index under *key* (its URL key; read from the entry if not given)
-- with *backlinks* and *links* (in-links), and the list holds '<seq>|<key>'. The
-- class it went to, and whether its list was empty before (else the host's place
-- does not change: its head is where it was).
local function queue_entry(host, class, entry, value, backlinks, links, key, at_head)
  local element = entry
  if importance then
    value = tonumber(value) or band_floor(class)
    class = with_band(class, importance_band(value))
    local seq, json = string.match(entry, '^(%d+)|(.*)$')
    if not key or key == '' then key = url_key_of(entry, host) end
    if key and seq then
      index_write(host, key, seq, class, value, tonumber(backlinks) or value, links or 0)
      entry_write(host, key, json)
      element = seq .. '|' .. key
    end
  end
  local first = redis.call(at_head and 'LPUSH' or 'RPUSH', queue_key(host, class), element) == 1
  if first then redis.call('ZADD', levels_key(host), host_rank(host, class), class) end
  return class, first
end

-- FRONTIER_SPILL (spill_head > 0): a queue keeps at most spill_head entries in
-- Redis. Past that, its new entries, and every one after them while any waits, go
-- to spill_out as '<class> <len(host)> <host><entry>'; the spill worker
-- (crawler/frontier/spill/) writes them to its database and brings them back in
-- order as the queue runs low. The queue's state in the spill hash: how many wait,
-- and the sequence number of the last one brought back (its mark).
local function spill_parse(text)
  local count, mark = string.match(text or '', '^(%d+) (%d+)$')
  return tonumber(count) or 0, tonumber(mark) or 0
end
local function spill_state(field)
  return spill_parse(read('HGET', spill_key(), field))
end
-- Whether *entry* of *host*'s *class* queue went to the spill rather than the queue.
local function spilled(host, class, entry)
  if spill_head <= 0 or host == REPARSE_HOST then return false end
  local field = class .. ' ' .. host
  local count, mark = spill_state(field)
  if count == 0 and (read('LLEN', queue_key(host, class)) or 0) < spill_head then
    return false
  end
  redis.call('RPUSH', spill_out_key(), class .. ' ' .. #host .. ' ' .. host .. entry)
  redis.call('HSET', spill_key(), field, (count + 1) .. ' ' .. mark)
  return true
end
-- After a pop left *left* entries in *host*'s *class* queue: a spilled queue below
-- half its head is wanted back.
local function spill_low(host, class, left)
  if spill_head <= 0 or 2 * left >= spill_head then return end
  local field = class .. ' ' .. host
  if read('HEXISTS', spill_key(), field) == 1 then
    redis.call('SADD', spill_wanted_key(), field)
  end
end

-- Queue *entry* (see queue_entry), or spill it; the BFS barrier counts it at its
-- level either way. Its class, and whether its host's place may have changed (it
-- started a list: touch the host). In importance order a spilled entry keeps its
-- band, not its in-links: it comes back at its band's floor. Its URL leaves the
-- host's index then: the index names a URL's live copy, and a deeper copy this one
-- superseded (depth repair) must not take in-links, whose move would give it a new
-- sequence number and so revive it.
local function push_entry(host, class, entry, value, backlinks, links, key)
  local banded = class
  if importance then
    banded = with_band(class, importance_band(tonumber(value) or band_floor(class)))
  end
  local first = false
  if spilled(host, banded, entry) then
    class = banded
    if importance then
      if not key or key == '' then key = url_key_of(entry, host) end
      if key then
        redis.call('HDEL', importance_key(host), key)
        redis.call('HDEL', entries_key(host), key)
      end
    end
  else
    class, first = queue_entry(host, class, entry, value, backlinks, links, key)
  end
  redis.call('HINCRBY', OUTSTANDING, level_of(class), 1)
  return class, first
end

-- The entry ('<seq>|<json>') of a popped list element, and, in importance order,
-- its importance, backlinks and in-links, out of the host's index; nil if the
-- element is not the URL's live copy (a reference the index does not hold).
local function take_entry(host, element)
  if not importance then return element end
  local seq, key = string.match(element, '^(%d+)|(%x+)$')
  if not seq then return element end  -- an entry queued whole (not a reference)
  local live, _, value, backlinks, links = index_read(host, key)
  local json = read('HGET', entries_key(host), key)
  if live ~= seq or not json then return nil end
  redis.call('HDEL', importance_key(host), key)
  redis.call('HDEL', entries_key(host), key)
  return seq .. '|' .. json, value, backlinks, links
end

-- '<class> <len(host)> <host><rest>' -> class, host, rest (nil if malformed)
local function unpack_entry(payload)
  local class, length, rest = string.match(payload, '^(%d+) (%d+) (.*)$')
  length = tonumber(length)
  if not class_of(class) or length > #rest then return nil end
  return class, string.sub(rest, 1, length), string.sub(rest, length + 1)
end

-- A lease's class, host, entry and its host's ready time before the pop; nil if the
-- payload is not one this crawler wrote.
local function unpack_lease(payload)
  local class, prior, rest = string.match(payload, '^(%d+) (%S+) (.*)$')
  if not class then return nil end
  local _, host, entry = unpack_entry(class .. ' ' .. rest)
  if not host then return nil end
  return class, host, entry, tonumber(prior) or 0
end

-- Forget a lease; its class, host, entry and prior ready time if it was held (a
-- damaged one is set aside and forgotten).
local function release(id)
  local payload = redis.call('HGET', LEASED, id)
  redis.call('ZREM', LEASES, id)
  if not payload then return nil end
  redis.call('HDEL', LEASED, id)
  local class, host, entry, prior = unpack_lease(payload)
  if not class then
    set_aside(payload)
    return nil
  end
  if redis.call('HINCRBY', INFLIGHT, host, -1) <= 0 then
    redis.call('HDEL', INFLIGHT, host)
  end
  return class, host, entry, prior
end

-- Held entries whose time has come go back to the tail of their queues.
local function release_held(limit, concurrency)
  local due = redis.call('ZRANGEBYSCORE', HELD, '-inf', now, 'LIMIT', 0, limit)
  for _, member in ipairs(due) do
    redis.call('ZREM', HELD, member)
    redis.call('HINCRBY', COUNTERS, 'held', -1)
    local class, host, entry = unpack_entry(member)
    local json = entry and string.match(entry, '^%d+|(.*)$')
    if json then
      push_entry(host, class, redis.call('INCR', SEQUENCE) .. '|' .. json)
      redis.call('HINCRBY', COUNTERS, 'queued', 1)
      touch(host, concurrency)
    end
  end
end

-- A failed URL found again as a seed: forget its failure, so it is queued again.
local function revive(fingerprint)
  local payload = redis.call('HGET', FAILED, fingerprint)
  if not payload then return false end
  redis.call('HDEL', FAILED, fingerprint)
  local fate = string.match(payload, '^(%S+) ')
  if fate then redis.call('HINCRBY', COUNTERS, 'fate:' .. fate, -1) end
  return true
end
"""
)

# The push script's Bloom filter check-and-add (the layouts: crawler/frontier/dedup.py).
BLOOM_ADD = """
-- The seen filter's layout, read once a call (issue 27: twice a URL was a tenth of
-- the push script's time): how many filters are in use, and each one's bits,
-- hashes, capacity and block (0: a plain filter; written once, when the shard's
-- filter is made); whether the last filter's key exists.
local bloom_filters, bloom_layouts, bloom_made = nil, {}, {}
local function bloom_layout(i)
  local layout = bloom_layouts[i]
  if not layout then
    local found = redis.call('HMGET', SEEN, 'bits:' .. i, 'hashes:' .. i, 'cap:' .. i,
                             'block:' .. i)
    layout = {tonumber(found[1]), tonumber(found[2]), tonumber(found[3]),
              tonumber(found[4]) or 0}
    bloom_layouts[i] = layout
  end
  return layout[1], layout[2], layout[3], layout[4]
end

-- A URL's 32-bit hashes (big-endian), the first *count*.
local function bloom_words(hashes, count)
  local words = {struct.unpack('>' .. string.rep('I4', count), hashes)}
  words[count + 1] = nil  -- the position struct.unpack returns after them
  return words
end

-- Whether a filter's layout can be used with *hashes*: a plain one takes a hash a
-- bit, a blocked one one more, for its block.
local function bloom_usable(i, hashes)
  local bits, count, _, block = bloom_layout(i)
  if not (bits and bits > 0 and count and count > 0) then return false end
  if block == 0 then return 4 * count <= #hashes end
  return block == BLOCK_BITS and bits % block == 0 and 4 * (count + 1) <= #hashes
end
-- The answer to a layout that cannot be used (given before any write).
local function bloom_damaged()
  return redis.error_reply('frontier: damaged Bloom layout')
end

-- Whether every bit of a URL (its *hashes*) is set in filter *i*; with *add*, they
-- are set. A plain filter's bits are h_j % bits, one GETBIT and SETBIT each; a
-- blocked filter's lie in block h_0 % blocks, read and written whole.
local function bloom_check(i, hashes, add)
  local bits, count, _, block = bloom_layout(i)
  local key = bloom_key(i)
  if block == 0 then
    local words = bloom_words(hashes, count)
    for _, word in ipairs(words) do
      if redis.call('GETBIT', key, word % bits) == 0 then
        if add then
          for _, bit_of in ipairs(words) do redis.call('SETBIT', key, bit_of % bits, 1) end
        end
        return false
      end
    end
    return true
  end
  local words = bloom_words(hashes, count + 1)
  local size = block / 8
  local start = (words[1] % (bits / block)) * size
  local bytes = {string.byte(redis.call('GETRANGE', key, start, start + size - 1), 1, -1)}
  local found = true
  for j = 2, count + 1 do
    local position = words[j] % block
    local index, mask = math.floor(position / 8) + 1, bit.lshift(1, 7 - position % 8)
    local byte = bytes[index] or 0
    if bit.band(byte, mask) == 0 then
      found = false
      bytes[index] = bit.bor(byte, mask)
    end
  end
  if add and not found then
    for index = 1, size do bytes[index] = bytes[index] or 0 end
    redis.call('SETRANGE', key, start, string.char(unpack(bytes)))
  end
  return found
end

-- Add a URL's hashes to the last filter of the seen filter (SEEN) unless a
-- filter has every bit set already: whether it was new (an error reply if the
-- layout is damaged, before any write).
local function bloom_add(hashes)
  bloom_filters = bloom_filters or tonumber(redis.call('HGET', SEEN, 'filters') or '0')
  local filters = bloom_filters
  if filters == 0 then return redis.error_reply('frontier: no Bloom layout') end
  local last = filters - 1
  for i = 0, last do
    if not bloom_usable(i, hashes) then return bloom_damaged() end
  end
  local bits, _, cap = bloom_layout(last)
  if not cap then return bloom_damaged() end
  for i = 0, last - 1 do  -- the full filters before the last: only looked in
    if bloom_check(i, hashes, false) then return false end
  end
  local key = bloom_key(last)
  if not bloom_made[last] then
    -- Created at full length at once: grown bit by bit, Redis would keep up to
    -- twice the memory.
    if redis.call('EXISTS', key) == 0 then redis.call('SETBIT', key, bits - 1, 0) end
    bloom_made[last] = true
  end
  if bloom_check(last, hashes, true) then return false end
  local added = redis.call('HINCRBY', SEEN, 'count:' .. last, 1)
  if added >= cap and redis.call('HEXISTS', SEEN, 'bits:' .. filters) == 1 then
    redis.call('HSET', SEEN, 'filters', filters + 1)
    bloom_filters = filters + 1
  end
  return true
end
"""

# Run before every script but the repair ones: fail before any write if the sequence,
# the lease payloads or the retry-later and depth-repair keys cannot be written (the
# runner repairs the shard and calls again), since failing after an entry left its
# queue or the seen filter loses it.
GUARD = """
local checks = {{'INCRBY', SEQUENCE, 0}, {'HLEN', LEASED}, {'ZCARD', HELD},
                {'HLEN', FAILED}, {'SCARD', SUPERSEDED}, {'SCARD', REPARSE},
                {'HLEN', strategies_key()}, {'HLEN', host_terms_key()}}
for _, check in ipairs(checks) do
  local reply = redis.pcall(unpack(check))
  if type(reply) == 'table' and reply.err then return redis.error_reply(reply.err) end
end
"""
