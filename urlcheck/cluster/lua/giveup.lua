-- giveup(host, evidence) -> {new, "<since ms>|<evidence>"}; KEYS: ..., h:<host>
-- The host circuit gives `host` up for the whole job, unless a process did already: the first
-- evidence stands, timed by the server's clock. Its back-off pause ends at once, as in one
-- process: its rows are recorded without requests and need no more waiting.
local host, evidence = ARGV[1], ARGV[2]
local standing = redis.call('HGET', K.down, host)
if standing then return {0, standing} end
local now = now_ms()
local value = string.format('%d', now) .. '|' .. evidence
redis.call('HSET', K.down, host, value)
redis.call('HDEL', K.strikes, host)
local h = hkey(host)
if redis.call('HEXISTS', h, 'until') == 1 then
  local left = num(redis.call('HGET', h, 'until')) - now
  if left > 0 then redis.call('HINCRBY', K.backed, host, -left) end
  redis.call('HSET', h, 'until', 0, 'next', string.format('%d', now))
end
redis.call('ZREM', K.paused, host)
redis.call('ZADD', K.ready, 'XX', 'LT', string.format('%d', now), host)
return {1, value}
