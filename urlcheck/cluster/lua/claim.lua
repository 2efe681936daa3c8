-- claim(prefix, owner, ttl_ms, n, delay_ms, reap_limit)
--   -> {control, status, wait_ms, reaped, dropped, host, token, reaps, entry, ...}
-- Reaps expired leases (their task goes back to the front of its host's queue), then leases up
-- to n ready hosts, one task each. A leased host is never in `ready`: 1 in flight per host.
local owner, ttl, n = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local delay, reap_limit = tonumber(ARGV[5]), tonumber(ARGV[6])
local now = now_ms()

local reaped = 0
local expired = redis.call('ZRANGEBYSCORE', K_LEASES, '-inf', now, 'LIMIT', 0, reap_limit)
for _, host in ipairs(expired) do
  local value = redis.call('HGET', K_INFLIGHT, host)
  redis.call('HDEL', K_INFLIGHT, host)
  redis.call('ZREM', K_LEASES, host)
  if value then
    local _, _, entry = split_lease(value)
    local row = entry_row(entry)
    if not is_done(row) then
      redis.call('LPUSH', qkey(host), entry)
      redis.call('HINCRBY', K_REAPS, row, 1)
    end
  end
  -- The lost request may still be on its way: count it as just finished.
  local h = hkey(host)
  local nxt = math.max(num(redis.call('HGET', h, 'next')), now + delay)
  redis.call('HSET', h, 'next', string.format('%d', nxt))
  make_ready(host, now)
  reaped = reaped + 1
end
if reaped > 0 then count('reaped', reaped) end
redis.call('ZREMRANGEBYSCORE', K_PAUSED, '-inf', now)

local meta = redis.call('HMGET', K_META, 'control', 'status')
local control, status = meta[1] or '', meta[2] or ''
local reply = {control, status, -1, reaped, 0}
if control ~= 'run' then return reply end

local dropped = 0
local hosts = redis.call('ZRANGEBYSCORE', K_READY, '-inf', now, 'LIMIT', 0, n)
for _, host in ipairs(hosts) do
  redis.call('ZREM', K_READY, host)
  local entry
  while true do
    entry = redis.call('LPOP', qkey(host))
    if not entry then break end
    local row = entry_row(entry)
    if not is_done(row) then break end
    -- A re-queued copy of a row another worker already finished.
    redis.call('HDEL', K_REAPS, row)
    dropped = dropped + 1
  end
  if entry then
    local token = tostring(redis.call('INCR', K_SEQ))
    redis.call('HSET', K_INFLIGHT, host, token .. '|' .. owner .. '|' .. entry)
    redis.call('ZADD', K_LEASES, string.format('%d', now + ttl), host)
    redis.call('HSET', hkey(host), 'dispatch', string.format('%d', now))
    redis.call('PEXPIRE', hkey(host), HOST_STATE_TTL_MS)
    local reaps = num(redis.call('HGET', K_REAPS, entry_row(entry)))
    table.insert(reply, host)
    table.insert(reply, token)
    table.insert(reply, reaps)
    table.insert(reply, entry)
  end
end
reply[5] = dropped
if dropped > 0 then count('dropped', dropped) end
local first = redis.call('ZRANGE', K_READY, 0, 0, 'WITHSCORES')
if first[2] then reply[3] = math.max(tonumber(first[2]) - now, 0) end
return reply
