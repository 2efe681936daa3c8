-- End the leases and sessions past their TTL, a bounded batch per call; bring the caller the
-- fleet's news since its cursor, the lease counts, and the shared state if it is behind.
-- KEYS: meta states benches proxies leases active sessions session_exp log
-- ARGV: now|'' batch seen gen reg
local now = clock(ARGV[1])
local expired = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now, 'LIMIT', 0, ARGV[2])
for _, member in ipairs(expired) do
  local id = string.match(member, '^[^:]*:[^:]*:(.*)$')
  redis.call('ZREM', KEYS[5], member)
  if redis.call('HEXISTS', KEYS[6], id) == 1 and redis.call('HINCRBY', KEYS[6], id, -1) < 0 then
    redis.call('HSET', KEYS[6], id, 0)
  end
end
local ended = redis.call('ZRANGEBYSCORE', KEYS[8], '-inf', now, 'LIMIT', 0, ARGV[2])
for _, key in ipairs(ended) do
  redis.call('HDEL', KEYS[7], key)
  redis.call('ZREM', KEYS[8], key)
end
local v, n = view_news(ARGV[4], ARGV[5], ARGV[3], KEYS[9])
return {expired, n, redis.call('HGETALL', KEYS[6]), v}
