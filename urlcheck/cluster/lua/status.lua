-- status() -> {now, meta fields (flat), ready, inflight, leases, paused hosts (flat
-- host/until), workers (flat id/info/beat)}
local t = redis.call('TIME')
local now = math.max(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000),
  num(redis.call('GET', K.clock)))
local workers = {}
local beats = redis.call('ZRANGE', K.beats, 0, -1, 'WITHSCORES')
for i = 1, #beats, 2 do
  table.insert(workers, beats[i])
  table.insert(workers, redis.call('HGET', K.workers, beats[i]) or '')
  table.insert(workers, beats[i + 1])
end
return {
  string.format('%d', now),
  redis.call('HGETALL', K.meta),
  redis.call('ZCARD', K.ready),
  redis.call('HLEN', K.inflight),
  redis.call('ZRANGEBYSCORE', K.paused, string.format('%d', now), '+inf', 'WITHSCORES'),
  workers,
}
