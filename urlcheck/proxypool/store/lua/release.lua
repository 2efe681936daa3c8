-- End a lease, unless it has expired and been reclaimed. Its answer is read late (pipelined
-- with the caller's next call), so it reports nothing.
-- KEYS: leases active    ARGV: member proxy_id
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 and redis.call('HINCRBY', KEYS[2], ARGV[2], -1) < 0 then
  redis.call('HSET', KEYS[2], ARGV[2], 0)
end
return 0
