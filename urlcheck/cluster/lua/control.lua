-- control(action) -> 1, or 0 when the job has no state in Redis
-- action: run, paused or cancelled; claims and renewals hand it to every worker.
if redis.call('HEXISTS', K.meta, 'status') == 0 then return 0 end
redis.call('HSET', K.meta, 'control', ARGV[1])
return 1
