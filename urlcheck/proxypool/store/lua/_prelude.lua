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

local function view(gen, reg)
  local meta = redis.call('HMGET', KEYS[1], 'gen', 'reg')
  local cur_gen, cur_reg = meta[1] or '0', meta[2] or '0'
  if cur_gen == gen and cur_reg == reg then return {cur_gen, cur_reg} end
  local proxies = {}
  if cur_reg ~= reg then proxies = redis.call('HGETALL', KEYS[4]) end
  return {cur_gen, cur_reg, redis.call('HGETALL', KEYS[2]), redis.call('HGETALL', KEYS[3]),
          proxies}
end
