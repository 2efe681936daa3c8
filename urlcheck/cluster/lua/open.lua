-- open(prefix, job, coordinator, hold_ms, place) -> {created, now}
-- place: "<machine>:<JOBDIR>" of the coordinator, so a second one elsewhere can be refused.
-- Creates the job's state when missing (a new job, or a Redis that restarted empty) and the
-- results stream's consumer group, from the stream's start so no committed result is skipped.
local now = now_ms()
local created = 0
if redis.call('HEXISTS', K_META, 'status') == 0 then
  redis.call('HSET', K_META, 'job', ARGV[2], 'status', 'running', 'control', 'run',
    'created', string.format('%d', now), 'fed', 0, 'committed', 0)
  created = 1
  -- Recreated after Redis lost it: requests sent before may still be running, and every host's
  -- times are gone, so nobody is sent anything until they have surely ended.
  local hold = tonumber(ARGV[4])
  if hold > 0 then redis.call('HSET', K_META, 'hold', string.format('%d', now + hold)) end
end
redis.call('PERSIST', K_META)
redis.call('HSET', K_META, 'coordinator', ARGV[3], 'coordinator_place', ARGV[5])
pcall(redis.call, 'XGROUP', 'CREATE', K_RESULTS, 'collect', '0', 'MKSTREAM')
return {created, now}
