-- renew(owner, ttl_ms, info, host1, token1, ...) -> {control, status, lost host, ...}
-- Extends this worker's leases and records its heartbeat; hosts whose lease it no longer holds
-- (reaped after a stall) come back so the worker can drop their requests before sending.
local owner, ttl, info = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local now = now_ms()
local deadline = string.format('%d', now + ttl)
local meta = redis.call('HMGET', K.meta, 'control', 'status')
local reply = {meta[1] or '', meta[2] or ''}
for i = 4, #ARGV, 2 do
  local host, token = ARGV[i], ARGV[i + 1]
  local value = redis.call('HGET', K.inflight, host)
  if value and string.sub(value, 1, #token + 1) == token .. '|' then
    redis.call('ZADD', K.leases, 'XX', deadline, host)
  else
    table.insert(reply, host)
  end
end
if info ~= '' then
  redis.call('HSET', K.workers, owner, info)
  redis.call('ZADD', K.beats, string.format('%d', now), owner)
end
return reply
