-- finish(prefix, status, ttl_ms) -> now
-- Marks the job done or cancelled and lets its fixed keys expire; per-host state expires on
-- its own, and queues of a finished job are empty (a cancelled job's are left for `clean`).
local now = now_ms()
redis.call('HSET', K_META, 'status', ARGV[2], 'finished', string.format('%d', now))
local ttl = tonumber(ARGV[3])
if ttl > 0 then
  for _, key in ipairs(KEYS) do redis.call('PEXPIRE', key, ttl) end
end
return now
