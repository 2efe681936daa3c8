-- End a lease, unless it has expired and been reclaimed; append the outcome, if any, to the
-- fleet's log (trimmed to `keep` every 64 entries). Its answer is never read.
-- KEYS: leases active meta log    ARGV: member proxy_id entry|'' keep
-- (Sent whole with every release, comments and indentation stripped: the server hashes the
-- text it is sent twice a call, so it is kept short; numbers go as strings, which the server
-- takes as they are, where it would print a Lua number.)
local call = redis.call
if call('ZREM', KEYS[1], ARGV[1]) == 1 and call('HINCRBY', KEYS[2], ARGV[2], '-1') < 0 then
  call('HSET', KEYS[2], ARGV[2], '0')
end
if ARGV[3] ~= '' then
  call('RPUSH', KEYS[4], ARGV[3])
  if call('HINCRBY', KEYS[3], 'seen', '1') % 64 == 0 then
    call('LTRIM', KEYS[4], -tonumber(ARGV[4]), -1)
  end
end
return 0
