"""The spill worker's scripts (FRONTIER_SPILL): what is due, trimming what was
written, bringing entries back, forgetting a queue that is whole again.

A queue past its head spills its new entries to ``spill_out`` (the push script's
``push_entry``); the worker (``crawler.frontier.spill``) writes them to its database,
then trims them here; a queue that ran low is brought back its next entries, in
order, each at most once (its mark); a queue whose spilled entries all came back is
forgotten once the database no longer holds them; a count that no entry stands for
(spill_out held a value the crawler did not write) is counted out. Each runs after
``crawler.frontier.store.scripthelpers``.
"""

from __future__ import annotations

SPILL_DUE = """
-- KEYS: the shard's keys (see above)
-- args: limit (most queues to name), cursor (HSCAN's over the spill hash; '0' to
--       start): the sweep that finds what the wanted set missed
-- returns: {next cursor, then for each queue due: class, host, spilled, mark,
--          entries in its head}: the wanted ones and, from the sweep, those below
--          half their head and those with nothing left spilled (to forget)
local limit = tonumber(args.limit)
local due, named = {}, {}
-- A queue's field, with its state as the sweep read it (nil: read it here).
local function add(field, state)
  if named[field] then return end
  local class, host = string.match(field, '^(%d+) (.+)$')
  if not class_of(class) then  -- not a field the crawler wrote
    redis.call('HDEL', spill_key(), field)
    redis.call('SREM', spill_wanted_key(), field)
    set_aside(false)
    return
  end
  named[field] = true
  local count, mark
  if state then count, mark = spill_parse(state) else count, mark = spill_state(field) end
  local left = read('LLEN', queue_key(host, class)) or 0
  local wanted = count > 0 and 2 * left < spill_head
  if not wanted and count > 0 then
    redis.call('SREM', spill_wanted_key(), field)
    return
  end
  for _, value in ipairs({class, host, count, mark, left}) do due[#due + 1] = value end
end
for _, field in ipairs(read('SRANDMEMBER', spill_wanted_key(), limit) or {}) do add(field) end
local reply = read('HSCAN', spill_key(), args.cursor, 'COUNT', limit) or {'0', {}}
local fields = reply[2]
for i = 1, #fields, 2 do add(fields[i], fields[i + 1]) end
return {reply[1], unpack(due)}
"""

SPILL_TRIM = """
-- KEYS: the shard's keys (see above)
-- args: count (how many entries of spill_out the worker read and wrote to the
--       database)
-- records: first (the oldest of them, as read)
-- Drops them from spill_out, unless another worker did already (its oldest entry
-- is another one then): every entry is unique (its sequence number).
-- returns: 1 if they were dropped, 0 if not
local first
for item in records() do first = item.first end
if redis.call('LINDEX', spill_out_key(), 0) ~= first then return 0 end
redis.call('LTRIM', spill_out_key(), tonumber(args.count), -1)
return 1
"""

SPILL_REFILL = """
-- KEYS: the shard's keys (see above)
-- args: concurrency, host, class (a spilled queue)
-- records: entry ('<seq>|<json>'): the queue's next spilled entries, from the
--       database, oldest first
-- Queues each entry past the queue's mark while some are counted spilled; the
-- mark moves to the last one taken, so an entry brought back twice (a worker
-- stopped between this and deleting it from the database) is queued once. An
-- entry a shallower copy superseded while it was on disk (depth repair) is dropped
-- here, as the pop script drops one in Redis: queued, in importance order it would
-- take its URL's place in the host's index from the live copy.
-- returns: {entries taken (queued or dropped), the mark, entries still spilled,
--          summary...}
local concurrency, host, class = tonumber(args.concurrency), args.host, args.class
local field = class .. ' ' .. host
local count, mark = spill_state(field)
local taken = 0
for item in records() do
  local seq = tonumber(string.match(item.entry, '^(%d+)|'))
  if not seq then
    set_aside(item.entry)
  elseif seq > mark and count > 0 then
    if redis.call('SREM', SUPERSEDED, seq) == 1 then
      uncount(class, 1)
      redis.call('HINCRBY', COUNTERS, 'superseded', 1)
    else
      queue_entry(host, class, item.entry)
    end
    count, mark, taken = count - 1, seq, taken + 1
  end
end
if taken > 0 then
  redis.call('HSET', spill_key(), field, count .. ' ' .. mark)
  touch(host, concurrency)
end
if count == 0 or 2 * redis.call('LLEN', queue_key(host, class)) >= spill_head then
  redis.call('SREM', spill_wanted_key(), field)
end
return {taken, mark, count, unpack(summary())}
"""

SPILL_FORGET = """
-- KEYS: the shard's keys (see above)
-- args: host, class, mark: a queue with nothing spilled, whose entries up to the
--       mark the database no longer holds
-- Forgets the queue's spill state, unless it spilled again since.
-- returns: 1 if forgotten, 0 if not
local field = args.class .. ' ' .. args.host
local count, mark = spill_state(field)
if count ~= 0 or mark ~= tonumber(args.mark) then return 0 end
redis.call('HDEL', spill_key(), field)
redis.call('SREM', spill_wanted_key(), field)
return 1
"""

SPILL_LOST = """
-- KEYS: the shard's keys (see above)
-- args: host, class, count, mark: a queue the worker found counting *count*
--       entries spilled past *mark*, of which neither the database nor spill_out
--       holds one (spill_out held a value the crawler did not write, dropped)
-- Counts them out of the queue and the BFS barrier, as damage, unless the queue's
-- state changed since it was read (another worker brought entries back): a count
-- no entry stands for would hold the crawl open for ever.
-- returns: 1 if counted out, 0 if not
local field = args.class .. ' ' .. args.host
local count, mark = spill_state(field)
local lost = tonumber(args.count)
if count ~= lost or mark ~= tonumber(args.mark) or not class_of(args.class) then
  return 0
end
redis.call('HSET', spill_key(), field, '0 ' .. mark)
uncount(args.class, lost)
for _ = 1, lost do set_aside(false) end
return 1
"""
