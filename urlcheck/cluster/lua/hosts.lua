-- hosts() -> {down, fast, backed, paces}: what the job met of its hosts, for the coordinator's
-- host report: the hosts given up on ("<since ms>|<evidence json>"), the 429s each answered, the
-- ms each was paused, all as flat hashes; and the learned pace of each host that answered 429
-- ('' when its state expired).
local fast = redis.call('HGETALL', K.fast)
local paces = {}
for i = 1, #fast, 2 do
  table.insert(paces, fast[i])
  table.insert(paces, redis.call('HGET', hkey(fast[i]), 'pace') or '')
end
return {redis.call('HGETALL', K.down), fast, redis.call('HGETALL', K.backed), paces}
