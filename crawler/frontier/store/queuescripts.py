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
after ``crawler.frontier.store.scripthelpers`` (key names, arguments
and helpers there).
"""

from __future__ import annotations

from crawler.frontier.store.scripthelpers import BLOOM_ADD

# Importance order's in-links, for the push and credit scripts (which define
# concurrency and per_depth before it).
IN_LINKS = """
-- Importance order: a URL found again while queued gains its link's credit;
-- once that lifts it to a better band it moves there: its reference leaves its
-- list for the tail of that band's (same level), and its depth repair maps follow
-- the new sequence number. Its entry stays where it is (entries_key).
local function move(host, key, seq0, class0, value, backlinks, links)
  local list0 = queue_key(host, class0)
  redis.call('LREM', list0, 1, seq0 .. '|' .. key)
  if redis.call('LLEN', list0) == 0 then redis.call('ZREM', levels_key(host), class0) end
  local seq = redis.call('INCR', SEQUENCE)
  local class = with_band(class0, importance_band(value))
  if redis.call('RPUSH', queue_key(host, class), seq .. '|' .. key) == 1 then
    redis.call('ZADD', levels_key(host), host_rank(host, class), class)
  end
  index_write(host, key, seq, class, value, backlinks, links)
  redis.call('HINCRBY', COUNTERS, 'moved', 1)
  local depth = math.floor(level_of(class0) / per_depth)
  local pkey = redis.call('HGET', provisional_sequences_key(depth), seq0)
  if pkey then
    redis.call('HDEL', provisional_sequences_key(depth), seq0)
    redis.call('HSET', provisional_sequences_key(depth), seq, pkey)
    redis.call('HSET', provisional_key(depth), pkey, seq)
  end
  touch(host, concurrency)
end

-- Credit a queued URL with in-links (item: credit to its backlink importance,
-- gain to its importance; added: how many in-links, 1 for a push); move it if
-- its band got better.
local function add_credit(host, key, item, added)
  local seq0, class0, value, backlinks, links = index_read(host, key)
  if not seq0 then return end  -- fetched, in flight, held or failed: no order to change
  value = value + (tonumber(item.gain) or 0)
  backlinks = backlinks + (tonumber(item.credit) or 0)
  links = links + added
  if importance_band(value) < tonumber(class0) % BANDS then
    move(host, key, seq0, class0, value, backlinks, links)
  else
    index_write(host, key, seq0, class0, value, backlinks, links)
  end
end

-- The host term: links from other hosts credit the host too, fetched pages
-- included; where hosts are compared, it adds to the host's best URL.
local function add_host_credit(host, item)
  local credit = tonumber(item.host_credit)
  if not (importance and credit and credit > 0) then return end
  redis.call('HINCRBYFLOAT', host_terms_key(), host, credit)
  touch(host, concurrency)
end
"""

PUSH = (
    BLOOM_ADD
    + """
-- KEYS: the shard's keys (see above); SEEN is the seen filter
-- args: concurrency (FRONTIER_HOST_CONCURRENCY), dedup_mode ('bloom'|'exact'),
--       floor (the crawl's lowest depth with requests queued or leased), deepest
--       (the deepest depth a provisional request may have: DEPTH_LIMIT),
--       per_depth (levels per depth), reparse ('1' if a page fetched too deep is
--       reparsed: the node has a page store), host_max_pages (FRONTIER_HOST_MAX_PAGES:
--       most new links queued a host; 0: no limit)
-- records: host, class (queue class), dedup ('' = do not filter; exact:
--       fingerprint; bloom: 32-bit big-endian hashes, bit j of a filter is hash
--       j % bits, see crawler/frontier/dedup.py), entry (json), hold (until, ms;
--       '' = queue now), revive ('' or the fingerprint (hex) of a seed whose failure
--       is forgotten), depth_key ('' or a short fingerprint (hex): depth repair);
--       in importance order: url_key (16 hex digits of the SHA-1 of the URL),
--       importance (the URL's if it is new), credit (what one more in-link adds),
--       strategy ('dfs' if its host is crawled deepest first, else '')
-- Depth repair: a request pushed deeper than one past the lowest depth still in
-- work may later be found by a shorter path; its depth key is kept in
-- provisional_key(depth) (key -> its entry's seq, or 'f' once fetched) until that
-- can no longer happen, and provisional_sequences_key(depth) maps the seq back to
-- the key. Found again
-- shallower, it is queued again at the shallower depth: its deeper copy, if still
-- queued, is marked superseded (SUPERSEDED); if it was fetched already, the new copy
-- is marked for a reparse (REPARSE) and queued under the pseudo-host '~', which
-- no politeness delay holds back: its links are followed again at their true
-- depths, from the page store (when it lacks the page, the request is queued again
-- under its own host, politely). Without a page store a page is never fetched
-- twice for this: its links keep their depths.
-- returns: {flags as a string: '1' new, '2' new at a shorter depth, '0' seen,
--           '3' new but over its host's budget (not queued), best score, wake time}
local concurrency, mode = tonumber(args.concurrency), args.dedup_mode
local floor, deepest = tonumber(args.floor), tonumber(args.deepest)
local per_depth, reparse = tonumber(args.per_depth), args.reparse == '1'
local host_max = tonumber(args.host_max_pages) or 0
"""
    + IN_LINKS
    + """

local function is_new(dedup)
  if dedup == '' then return true end
  if mode == 'exact' then return redis.call('SADD', SEEN, dedup) == 1 end
  return bloom_add(dedup)
end

-- Whether *key* is known at a provisional depth deeper than *depth*: then it is
-- forgotten there, and its queued copy superseded; 'fetched' if it was fetched.
local deepest_known = tonumber(redis.call('HGET', COUNTERS, 'prov_deepest') or '-1')
local function shorten(key, depth)
  for d = depth + 1, math.min(deepest, deepest_known) do
    local seq = redis.call('HGET', provisional_key(d), key)
    if seq then
      redis.call('HDEL', provisional_key(d), key)
      redis.call('HINCRBY', COUNTERS, 'shortened', 1)
      if seq == 'f' then return 'fetched' end
      redis.call('HDEL', provisional_sequences_key(d), seq)
      redis.call('SADD', SUPERSEDED, seq)
      return 'queued'
    end
  end
  return false
end

-- A host's strategy (FRONTIER_SITE_STRATEGY): 'dfs' or '' (breadth-first); when
-- it changes, its queue classes are ranked again.
local function set_strategy(host, strategy)
  local known = redis.call('HGET', strategies_key(), host) or ''
  if known == strategy then return end
  if strategy == 'dfs' then
    redis.call('HSET', strategies_key(), host, 'dfs')
  else
    redis.call('HDEL', strategies_key(), host)
  end
  local lv = levels_key(host)
  for _, class in ipairs(redis.call('ZRANGE', lv, 0, -1)) do
    if class_of(class) then redis.call('ZADD', lv, host_rank(host, class), class) end
  end
  touch(host, concurrency)
end

-- Whether a new link of *host* is over its budget (FRONTIER_HOST_MAX_PAGES); one
-- within it is counted. Requests the seen filter does not see (retries, seeds
-- again) are no new pages.
local function over_budget(host, dedup)
  if host_max <= 0 or dedup == '' then return false end
  if hnum(budgets_key(), host, 0) >= host_max then return true end
  redis.call('HINCRBY', budgets_key(), host, 1)
  return false
end

local flags = {}
local queued = 0  -- entries queued by this call, counted once at its end
local function count_queued()
  if queued > 0 then redis.call('HINCRBY', COUNTERS, 'queued', queued) end
  queued = 0
end
for item in records() do
  local host = item.host
  set_strategy(host, item.strategy)
  local class, key = item.class, item.depth_key
  local hold = tonumber(item.hold)
  local depth = math.floor(level_of(class) / per_depth)
  local new = is_new(item.dedup)
  if type(new) == 'table' then  -- an error reply: the records before stay queued
    count_queued()
    return new
  end
  if not new and item.revive ~= '' then new = revive(item.revive) end
  local over = new and over_budget(host, item.dedup)
  if over then new = false end
  local shorter = not new and not over and key ~= '' and shorten(key, depth)
  local flag = (over and '3') or (new and '1') or (shorter and '2') or '0'
  if new or shorter == 'queued' or (shorter == 'fetched' and reparse) then
    local value, backlinks, links = item.importance, item.backlinks, 1
    if importance and shorter == 'queued' then  -- what the deeper copy had gathered
      local _, _, gathered, from_links, counted = index_read(host, item.url_key)
      if gathered then
        value = gathered + (tonumber(item.gain) or 0)
        backlinks = from_links + (tonumber(item.credit) or 0)
        links = counted + 1
      end
    end
    local seq = redis.call('INCR', SEQUENCE)
    local entry = seq .. '|' .. item.entry
    if key ~= '' and depth > floor + 1 then
      redis.call('HSET', provisional_key(depth), key, seq)
      redis.call('HSET', provisional_sequences_key(depth), seq, key)
      if depth > deepest_known then
        deepest_known = depth
        redis.call('HSET', COUNTERS, 'prov_deepest', depth)
      end
    end
    if shorter == 'fetched' then  -- reparsed from the page store: no host to wait for
      redis.call('SADD', REPARSE, seq)
      entry = seq .. '|' .. with_whole_url(item.entry, host)
      host = REPARSE_HOST
    end
    if hold and hold > now then
      if importance then class = with_band(class, importance_band(value)) end
      redis.call('ZADD', HELD, hold, class .. ' ' .. #host .. ' ' .. host .. entry)
      redis.call('HINCRBY', COUNTERS, 'held', 1)
    else
      local _, first = push_entry(host, class, entry, value, backlinks, links, item.url_key)
      queued = queued + 1
      -- An entry behind others of its class leaves its host where it was (ready,
      -- waiting, or busy): touching it was a third of a seed's script time.
      if first then touch(host, concurrency) end
    end
  elseif importance and not new and not shorter and item.url_key ~= '' then
    add_credit(host, item.url_key, item, 1)
  end
  add_host_credit(item.host, item)
  flags[#flags + 1] = flag
end
count_queued()
return {table.concat(flags), unpack(summary())}
"""
)

CREDIT = IN_LINKS.join(
    (
        """
-- KEYS: the shard's keys (see above)
-- args: concurrency, per_depth (levels per depth)
-- records: host, url_key, credit (to the backlink importance), gain (to the
--       importance), host_credit (to the host's term), links (in-links it stands
--       for): in-links of URLs the node pushed before (importance order)
-- returns: {best score, wake time, ...} (the summary)
local concurrency, per_depth = tonumber(args.concurrency), tonumber(args.per_depth)
""",
        """
for item in records() do
  add_credit(item.host, item.url_key, item, tonumber(item.links) or 1)
  add_host_credit(item.host, item)
end
return summary()
""",
    )
)

POP = """
-- KEYS: the shard's keys (see above)
-- args: concurrency, expiry (the lease's expiry time), default_delay,
--       promote_limit (most waiting hosts to promote), score_limit (highest score
--       allowed: the BFS barrier), node_id (the popping node: it must own the
--       shard, fencing), per_depth (levels per depth)
-- returns: {lease id, entry json, 1 if its links are to be reparsed (depth
--          repair) else 0, its class, its importance, backlink importance and
--          in-links (importance order; false otherwise), its host (its entry's URL
--          may be relative to it), summary...}; id and entry false if no host is
--          ready below the barrier; id false and entry 'fenced' if the node does
--          not own the shard
local concurrency = tonumber(args.concurrency)
local expiry, default_delay = args.expiry, args.default_delay
if redis.call('GET', OWNER) ~= args.node_id then
  return {false, 'fenced', 0, 0, false, false, 0, false, unpack(summary())}
end
promote(tonumber(args.promote_limit))
release_held(tonumber(args.promote_limit), concurrency)
-- The head request of the best ready host. A host with nothing usable queued is
-- set aside; a request superseded by a shallower copy of itself (depth repair) is
-- dropped on the way.
local host, class, entry, reparse, gathered, backlinks, counted
local per_depth = tonumber(args.per_depth)
for _ = 1, 1000 do
  local hosts = redis.call('ZRANGEBYSCORE', READY, '-inf', args.score_limit, 'LIMIT', 0, 1)
  if #hosts == 0 then return {false, false, 0, 0, false, false, 0, false, unpack(summary())} end
  host = hosts[1]
  if not head_score(host) then  -- nothing usable queued
    redis.call('ZREM', READY, host)
    set_aside(false)
  else
    local levels_key = levels_key(host)
    class = redis.call('ZRANGE', levels_key, 0, 0)[1]
    local queue = queue_key(host, class)
    entry = redis.call('LPOP', queue)
    local left = redis.call('LLEN', queue)
    if left == 0 then redis.call('ZREM', levels_key, class) end
    spill_low(host, class, left)
    local seq = string.match(entry, '^(%d+)|')
    local live = not (seq and redis.call('SREM', SUPERSEDED, seq) == 1)
    if live then  -- importance order: the entry from the host's index
      local element = entry
      entry, gathered, backlinks, counted = take_entry(host, element)
      live = entry ~= nil
      if not live then set_aside(element) end  -- a reference to no entry
    end
    if live then
      local depth = math.floor(level_of(class) / per_depth)
      local key = seq and redis.call('HGET', provisional_sequences_key(depth), seq)
      if key then  -- fetched now: a shorter path found later reparses it
        redis.call('HDEL', provisional_sequences_key(depth), seq)
        redis.call('HSET', provisional_key(depth), key, 'f')
      end
      reparse = seq and redis.call('SREM', REPARSE, seq) == 1
      break
    end
    uncount(class, 1)
    redis.call('HINCRBY', COUNTERS, 'superseded', 1)
    redis.call('ZREM', READY, host)
    touch(host, concurrency)
    entry = nil
  end
end
if not entry then return {false, false, 0, 0, false, false, 0, false, unpack(summary())} end
-- Importance order: what the URL gathered, for the node.
local value, from_links, links = false, false, 0
if importance then
  value = string.format('%.6g', gathered or band_floor(class))
  from_links, links = string.format('%.6g', backlinks or gathered or band_floor(class)), counted or 0
end
local id = redis.call('INCR', SEQUENCE)
local prior = redis.call('HGET', READY_AT, host) or '0'
redis.call('HSET', LEASED, id, class .. ' ' .. prior .. ' ' .. #host .. ' ' .. host .. entry)
redis.call('ZADD', LEASES, expiry, id)
redis.call('HINCRBY', INFLIGHT, host, 1)
redis.call('HINCRBY', COUNTERS, 'queued', -1)
local delay = hnum(DELAYS, host, tonumber(default_delay))
redis.call('HSET', READY_AT, host, now + delay)
redis.call('ZREM', READY, host)
touch(host, concurrency)
return {id, string.match(entry, '^%d+|(.*)$'), reparse and 1 or 0, tonumber(class), value,
        from_links, links, host, unpack(summary())}
"""

ACK = """
-- KEYS: the shard's keys (see above)
-- args: concurrency, delay (the host's), lease_id, fate ('' if none: the request
--       was replaced by a retry), fingerprint (hex; '' unless it failed for good:
--       then it is kept in failed), untouched ('1' if nothing was sent to the host,
--       e.g. robots.txt forbade it: the delay is not spent), not_before (ms; 0 if
--       none: the host waits at least until then, its server being busy)
-- returns: {1 if the lease was held (0 if it had expired or was acked), best, wake}
local concurrency, delay = tonumber(args.concurrency), tonumber(args.delay)
local id = args.lease_id
local fate, fingerprint = args.fate, args.fingerprint
local class, host, entry, prior = release(id)
if not class then return {0, unpack(summary())} end
local level = level_of(class)
if redis.call('HINCRBY', OUTSTANDING, level, -1) <= 0 then redis.call('HDEL', OUTSTANDING, level) end
local at
if args.untouched == '1' and not redis.call('HGET', INFLIGHT, host) then
  at = prior
else
  at = math.max(hnum(READY_AT, host, 0), now + delay)
  redis.call('HSET', DELAYS, host, delay)
end
at = math.max(at, tonumber(args.not_before) or 0)
redis.call('HSET', READY_AT, host, at)
if at > now and redis.call('ZREM', READY, host) == 1 then
  redis.call('ZADD', WAITING, at, host)
end
touch(host, concurrency)
redis.call('HINCRBY', COUNTERS, 'acked', 1)
if fate ~= '' then redis.call('HINCRBY', COUNTERS, 'fate:' .. fate, 1) end
local json = string.match(entry, '^%d+|(.*)$')
if fingerprint ~= '' and json then
  local previous = redis.call('HGET', FAILED, fingerprint)
  local old_fate = previous and string.match(previous, '^(%S+) ')
  if old_fate then redis.call('HINCRBY', COUNTERS, 'fate:' .. old_fate, -1) end
  redis.call('HSET', FAILED, fingerprint, fate .. ' ' .. class .. ' ' .. #host .. ' ' .. host .. json)
end
return {1, unpack(summary())}
"""

REQUEUE = """
-- KEYS: the shard's keys (see above)
-- args: concurrency, limit (most leases to requeue)
-- records: id (a lease id); without any, the leases whose expiry time is <= now
-- returns: {leases put back at the head of their queues, best, wake}
local concurrency, limit = tonumber(args.concurrency), tonumber(args.limit)
local ids = {}
for lease in records() do ids[#ids + 1] = lease.id end
if #ids == 0 then
  ids = redis.call('ZRANGEBYSCORE', LEASES, '-inf', now, 'LIMIT', 0, limit)
end
local count = 0
for _, id in ipairs(ids) do
  local class, host, entry = release(id)
  if class then
    queue_entry(host, class, entry, nil, nil, 0, nil, true)  -- at the head
    redis.call('HINCRBY', COUNTERS, 'queued', 1)
    touch(host, concurrency)
    count = count + 1
  end
end
return {count, unpack(summary())}
"""

PROMOTE = """
-- KEYS: the shard's keys (see above)
-- args: limit (most waiting hosts and held entries to promote), concurrency,
--       floor (the crawl's lowest depth with requests queued or leased, '' if
--       unknown): provisional depths it has passed are forgotten
-- returns: {best score, wake time}
promote(tonumber(args.limit))
release_held(tonumber(args.limit), tonumber(args.concurrency))
local floor = tonumber(args.floor)
if floor then
  for d = 0, floor + 1 do
    redis.call('DEL', provisional_key(d), provisional_sequences_key(d))
  end
end
return summary()
"""

FORGET_IDLE = """
-- KEYS: the shard's keys (see above)
-- args: cursor (HSCAN's over READY_AT; '0' to start), limit (fields to look at)
-- Forgets the politeness fields (READY_AT, DELAYS) of hosts that are done for now:
-- their delay has passed, nothing queued, leased, ready or waiting. A host that
-- gets requests again starts with no wait, as its delay has passed anyway.
-- returns: {next cursor ('0': a sweep ended), hosts forgotten}
local reply = redis.call('HSCAN', READY_AT, args.cursor, 'COUNT', tonumber(args.limit))
local fields, forgotten = reply[2], 0
for i = 1, #fields, 2 do
  local host, at = fields[i], tonumber(fields[i + 1])
  if (not at or at <= now) and hnum(INFLIGHT, host, 0) <= 0
    and redis.call('EXISTS', levels_key(host)) == 0
    and not redis.call('ZSCORE', READY, host) and not redis.call('ZSCORE', WAITING, host) then
    redis.call('HDEL', READY_AT, host)
    redis.call('HDEL', DELAYS, host)
    forgotten = forgotten + 1
  end
end
return {reply[1], forgotten}
"""

RETRY = """
-- KEYS: the shard's keys (see above)
-- args: concurrency
-- records: fingerprint (hex) of a failed request
-- returns: {requests queued again, best, wake}
local concurrency, count = tonumber(args.concurrency), 0
for failed in records() do
  local payload = redis.call('HGET', FAILED, failed.fingerprint)
  local fate, rest = string.match(payload or '', '^(%S+) (.*)$')
  local class, host, json = unpack_entry(rest or '')
  redis.call('HDEL', FAILED, failed.fingerprint)
  if fate then redis.call('HINCRBY', COUNTERS, 'fate:' .. fate, -1) end
  if host and host ~= '' then
    push_entry(host, class, redis.call('INCR', SEQUENCE) .. '|' .. json)
    redis.call('HINCRBY', COUNTERS, 'queued', 1)
    touch(host, concurrency)
    count = count + 1
  end
end
return {count, unpack(summary())}
"""
