-- Prelude of the proxy store's scripts but release (urlcheck/redis/scripts.py): the time, and
-- the shared state for a caller whose copy is behind. KEYS[1] meta, KEYS[2] states, KEYS[3]
-- benches, KEYS[4] proxies in every script that reports it. Times as strings: Redis turns a Lua
-- number reply into an integer.
local function clock(arg)
  local now = tonumber(arg)
  if now then return now end
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end

-- meta's `seen` as `view` read it, for `news` to use rather than read it again
local viewed_seen = false

local function view(gen, reg)
  local meta = redis.call('HMGET', KEYS[1], 'gen', 'reg', 'seen')
  local cur_gen, cur_reg = meta[1] or '0', meta[2] or '0'
  viewed_seen = meta[3] or '0'
  if cur_gen == gen and cur_reg == reg then return {cur_gen, cur_reg} end
  local proxies = {}
  if cur_reg ~= reg then proxies = redis.call('HGETALL', KEYS[4]) end
  return {cur_gen, cur_reg, redis.call('HGETALL', KEYS[2]), redis.call('HGETALL', KEYS[3]),
          proxies}
end

-- The fleet's outcomes since the caller's cursor (`seen`, the count appended so far, in meta),
-- at most 2000 at a time: {seen after them, entries}, or {seen} when there is nothing new. A
-- cursor ahead of the store (one that lost its log) or negative (a process starting) is
-- answered with the store's count and nothing: the caller starts from there.
local function news(cursor, log)
  local seen = tonumber(viewed_seen or redis.call('HGET', KEYS[1], 'seen') or '0')
  cursor = tonumber(cursor)
  if cursor == seen then return {seen} end
  if cursor < 0 or cursor > seen then return {seen, {}} end
  local behind = seen - cursor
  -- the common case, without LLEN: the newest `behind` entries (all the log has, if trimmed)
  if behind <= 2000 then return {seen, redis.call('LRANGE', log, -behind, -1)} end
  local len = redis.call('LLEN', log)
  local from = len - behind
  if from < 0 then from = 0 end
  local to = math.min(len - 1, from + 1999)
  return {seen - (len - 1 - to), redis.call('LRANGE', log, from, to)}
end

-- `view` then `news` (in that order: `news` takes the `seen` that `view` read)
local function view_news(gen, reg, cursor, log)
  local v = view(gen, reg)
  return v, news(cursor, log)
end
