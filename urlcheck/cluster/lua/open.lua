-- open(job, coordinator, hold_ms, place) -> {created, now}
-- place: "<machine>:<JOBDIR>" of the coordinator, so a second one elsewhere can be refused.
-- Creates the job's state when missing (a new job, or a Redis that restarted empty) and the
-- results stream's consumer group, from the stream's start so no committed result is skipped.
local now = now_ms()
local created = 0
if redis.call('HEXISTS', K.meta, 'status') == 0 then
  redis.call('HSET', K.meta, 'job', ARGV[1], 'status', 'running', 'control', 'run',
    'created', string.format('%d', now), 'fed', 0, 'committed', 0)
  created = 1
  -- Recreated after Redis lost it: requests sent before may still be running, and every host's
  -- times are gone, so nobody is sent anything until they have surely ended.
  local hold = tonumber(ARGV[3])
  if hold > 0 then redis.call('HSET', K.meta, 'hold', string.format('%d', now + hold)) end
end
redis.call('PERSIST', K.meta)
redis.call('HSET', K.meta, 'coordinator', ARGV[2], 'coordinator_place', ARGV[4])
pcall(redis.call, 'XGROUP', 'CREATE', K.results, 'collect', '0', 'MKSTREAM')
return {created, now}
