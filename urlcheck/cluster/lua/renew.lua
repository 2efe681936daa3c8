-- renew(prefix, owner, ttl_ms, info, host1, token1, ...) -> {control, status, lost host, ...}
-- Extends this worker's leases and records its heartbeat; hosts whose lease it no longer holds
-- (reaped after a stall) come back so the worker can drop their requests before sending.
local owner, ttl, info = ARGV[2], tonumber(ARGV[3]), ARGV[4]
local now = now_ms()
local deadline = string.format('%d', now + ttl)
local meta = redis.call('HMGET', K_META, 'control', 'status')
local reply = {meta[1] or '', meta[2] or ''}
for i = 5, #ARGV, 2 do
  local host, token = ARGV[i], ARGV[i + 1]
  local value = redis.call('HGET', K_INFLIGHT, host)
  if value and string.sub(value, 1, #token + 1) == token .. '|' then
    redis.call('ZADD', K_LEASES, 'XX', deadline, host)
  else
    table.insert(reply, host)
  end
end
if info ~= '' then
  redis.call('HSET', K_WORKERS, owner, info)
  redis.call('ZADD', K_BEATS, string.format('%d', now), owner)
end
return reply
