-- control(prefix, action) -> 1, or 0 when the job has no state in Redis
-- action: run, paused or cancelled; claims and renewals hand it to every worker.
if redis.call('HEXISTS', K_META, 'status') == 0 then return 0 end
redis.call('HSET', K_META, 'control', ARGV[2])
return 1
