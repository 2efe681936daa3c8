-- End a lease, unless it has expired and been reclaimed.
-- KEYS: meta states benches proxies leases active    ARGV: member proxy_id gen reg
local ended = redis.call('ZREM', KEYS[5], ARGV[1])
if ended == 1 and redis.call('HINCRBY', KEYS[6], ARGV[2], -1) < 0 then
  redis.call('HSET', KEYS[6], ARGV[2], 0)
end
return {ended, view(ARGV[3], ARGV[4])}
