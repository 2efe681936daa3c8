-- Write state changes if nobody else has since the caller's generation; bump it.
-- KEYS: meta states benches proxies out
-- ARGV: gen reg now|'' n_states (id state until in_service)... (site_and_id until)...
local now = clock(ARGV[3])
if (redis.call('HGET', KEYS[1], 'gen') or '0') ~= ARGV[1] then
  return {0, view(ARGV[1], ARGV[2])}
end
local n = tonumber(ARGV[4])
local i = 5
for _ = 1, n do
  local id = ARGV[i]
  if redis.call('HEXISTS', KEYS[4], id) == 1 then
    redis.call('HSET', KEYS[2], id, ARGV[i + 1] .. '\t' .. ARGV[i + 2])
    if ARGV[i + 3] == '1' then
      redis.call('SREM', KEYS[5], id)
    else
      redis.call('SADD', KEYS[5], id)
    end
  end
  i = i + 4
end
while i < #ARGV do
  redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1])
  i = i + 2
end
local benches = redis.call('HGETALL', KEYS[3])
for j = 1, #benches, 2 do
  if tonumber(benches[j + 1]) <= now then redis.call('HDEL', KEYS[3], benches[j]) end
end
return {1, redis.call('HINCRBY', KEYS[1], 'gen', 1)}
