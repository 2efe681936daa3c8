-- finish(status, ttl_ms) -> now; KEYS: every fixed key of the job
-- Marks the job done or cancelled and lets its fixed keys expire; per-host state expires on
-- its own, and queues of a finished job are empty (a cancelled job's are left for `clean`).
local now = now_ms()
redis.call('HSET', K.meta, 'status', ARGV[1], 'finished', string.format('%d', now))
local ttl = tonumber(ARGV[2])
if ttl > 0 then
  for _, key in ipairs(KEYS) do redis.call('PEXPIRE', key, ttl) end
end
return now
