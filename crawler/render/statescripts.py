"""The Lua scripts of ``RENDER_MODE = auto``'s Redis state: claim a sample slot, count
an outcome, give a slot back, park a page for its host's decision, take parked pages.

Each runs on one host's keys (``crawler.render.state`` calls them, with the KEYS and
ARGV each one's comment lists): the host's render hash (fields ``<field>:<level>``,
``crawler.render.levels``), and for ``park`` and ``take`` its parked pages. A script
is atomic, so a cluster of any size claims exactly ``RENDER_SAMPLE_PAGES`` samples
of a level. A counter read from Redis is a number the crawler could have written,
else 0: nothing read from Redis is evaluated.
"""

from __future__ import annotations

# Lua's view of a counter: a number the crawler could have written, else 0.
_NUMBER = """
local function number(value)
  value = tonumber(value)
  if value == nil or value ~= value or value < 0 or value > 1e12 then return 0 end
  return value
end
"""

CLAIM = (
    _NUMBER
    + """
-- KEYS: [1] the host's render hash
-- ARGV: [1] level ('' the host, or a URL pattern), [2] RENDER_SAMPLE_PAGES,
--       [3] now (s), [4] seconds a claim lasts, [5] RENDER_RECHECK_INTERVAL (0 never)
-- returns: {1 if a sample was granted else 0, the hash (HGETALL)}
local level, now = ARGV[1], tonumber(ARGV[3])
local function get(name) return number(redis.call('HGET', KEYS[1], name .. ':' .. level)) end
local granted = 0
local decision = redis.call('HGET', KEYS[1], 'decision:' .. level)
if decision == 'render' or decision == 'static' then
  local interval = tonumber(ARGV[5])
  if interval > 0 and now - get('decided_at') >= interval then
    redis.call('HSET', KEYS[1], 'decided_at:' .. level, ARGV[3])
    granted = 1
  end
elseif decision ~= 'mixed' then
  local pages, done = tonumber(ARGV[2]), get('paid') + get('static')
  local taken = math.max(get('claimed'), done)
  if taken >= pages and done < pages and now - get('claimed_at') >= tonumber(ARGV[4]) then
    taken = done
  end
  if taken < pages then
    redis.call('HSET', KEYS[1], 'claimed:' .. level, taken + 1, 'claimed_at:' .. level, ARGV[3])
    granted = 1
  end
end
return {granted, redis.call('HGETALL', KEYS[1])}
"""
)

RECORD = (
    _NUMBER
    + """
-- KEYS: [1] the host's render hash
-- ARGV: [1] 'paid' or 'static', [2] links gained, [3...] levels to count it in
-- returns: the hash (HGETALL)
for i = 3, #ARGV do
  local field = ARGV[1] .. ':' .. ARGV[i]
  redis.call('HSET', KEYS[1], field, number(redis.call('HGET', KEYS[1], field)) + 1)
  field = 'links:' .. ARGV[i]
  redis.call('HSET', KEYS[1], field,
    number(redis.call('HGET', KEYS[1], field)) + tonumber(ARGV[2]))
end
return redis.call('HGETALL', KEYS[1])
"""
)

RELEASE = (
    _NUMBER
    + """
-- KEYS: [1] the host's render hash
-- ARGV: [1] the level whose sample claim is given back
-- returns: the claims left
local field = 'claimed:' .. ARGV[1]
local left = math.max(number(redis.call('HGET', KEYS[1], field)) - 1, 0)
redis.call('HSET', KEYS[1], field, left)
return left
"""
)

PARK = """
-- KEYS: [1] the host's render hash, [2] its parked pages
-- ARGV: [1] the page's URL pattern, [2] its field, [3] its queue entry, [4] most parked
-- returns: the decision that applies to the page if there is one ('render',
--   'static'), else 'parked' (kept for the decision) or 'full'
local decision = redis.call('HGET', KEYS[1], 'decision:')
if decision == 'mixed' then
  decision = redis.call('HGET', KEYS[1], 'decision:' .. ARGV[1])
end
if decision == 'render' or decision == 'static' then return decision end
if redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[4]) then return 'full' end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
return 'parked'
"""

TAKE = """
-- KEYS: [1] a host's parked pages
-- ARGV: URL patterns whose pages are taken ('' takes every page)
-- returns: the queue entries taken (and deleted)
local taken, all = {}, redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  for _, pattern in ipairs(ARGV) do
    if pattern == '' or string.sub(all[i], 1, #pattern + 1) == pattern .. ' ' then
      redis.call('HDEL', KEYS[1], all[i])
      table.insert(taken, all[i + 1])
      break
    end
  end
end
return taken
"""

SCRIPTS = {
    "claim": CLAIM,
    "record": RECORD,
    "release": RELEASE,
    "park": PARK,
    "take": TAKE,
}
