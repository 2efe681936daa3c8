-- status(prefix) -> {now, meta fields (flat), ready, inflight, leases, paused hosts (flat
-- host/until), workers (flat id/info/beat)}
local t = redis.call('TIME')
local now = math.max(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000),
  num(redis.call('GET', K_CLOCK)))
local workers = {}
local beats = redis.call('ZRANGE', K_BEATS, 0, -1, 'WITHSCORES')
for i = 1, #beats, 2 do
  table.insert(workers, beats[i])
  table.insert(workers, redis.call('HGET', K_WORKERS, beats[i]) or '')
  table.insert(workers, beats[i + 1])
end
return {
  string.format('%d', now),
  redis.call('HGETALL', K_META),
  redis.call('ZCARD', K_READY),
  redis.call('HLEN', K_INFLIGHT),
  redis.call('ZRANGEBYSCORE', K_PAUSED, string.format('%d', now), '+inf', 'WITHSCORES'),
  workers,
}
