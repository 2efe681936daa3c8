-- complete(host, token, kind, delay_ms, backoff_ms, strikes, row, payload, next_host, owner,
--          ttl_ms, claim_n, reap_limit, pace_event, retry_after, floor, maximum, ease_after,
--          min_step, converged, forget_after, gap_ms)
--   -> {owned, committed, then the reply of claim(owner, ttl_ms, claim_n) when claim_n > 0}
-- KEYS: ..., q:<host> h:<host> of host and next_host
-- kind: result (payload = the results.jsonl line), hop (payload = the next task entry, queued at
-- the front of next_host), retry (payload = the task entry, back at the front of host) or
-- release (a claimed task never sent: it goes back as it was). pace_event: 'fast' (a 429, with
-- its Retry-After in seconds or -1), 'ok' (any other answer) or '' (none), for the host's learned
-- pace, whose rule (settings and constants, urlcheck/politeness/pace.py) follows.
-- Releasing the lease and recording the outcome are one atomic step, so no crash can lose a
-- task between them. A replayed complete finds its token gone and changes nothing but `next`.
local host, token, kind = ARGV[1], ARGV[2], ARGV[3]
local delay, backoff_ms, strikes = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local row, payload, next_host = tonumber(ARGV[7]), ARGV[8], ARGV[9]
local gap = tonumber(ARGV[22])
local now = now_ms()
local pace = {event = ARGV[14], retry_after = tonumber(ARGV[15]), rule = {
  floor = tonumber(ARGV[16]), maximum = tonumber(ARGV[17]), ease_after = tonumber(ARGV[18]),
  min_step = tonumber(ARGV[19]), converged = tonumber(ARGV[20]),
  forget_after = tonumber(ARGV[21])}}

-- host '' commits a result that never had a lease (a row the coordinator judged itself).
local owned = false
if host ~= '' then
  local value = redis.call('HGET', K.inflight, host)
  owned = value ~= false and string.sub(value, 1, #token + 1) == token .. '|'
  local nxt = set_next(host, now, delay, gap, backoff_ms, strikes, pace)
  if owned then
    redis.call('HDEL', K.inflight, host)
    redis.call('ZREM', K.leases, host)
    if not is_done(row) then
      if kind == 'retry' then
        redis.call('LPUSH', qkey(host), payload)
      elseif kind == 'release' then
        local _, _, entry = split_lease(value)
        redis.call('LPUSH', qkey(host), entry)
      end
    end
    if redis.call('LLEN', qkey(host)) > 0 then
      redis.call('ZADD', K.ready, string.format('%d', nxt), host)
    end
  else
    -- The lease was reaped and its task re-queued: that copy redoes any hop or retry, but it must
    -- still wait for this request's gap and back-off.
    redis.call('ZADD', K.ready, 'XX', 'GT', string.format('%d', nxt), host)
  end
end

local committed = 0
if kind == 'result' then
  if redis.call('SETBIT', K.done, row, 1) == 0 then
    redis.call('XADD', K.results, '*', 'row', row, 'line', payload)
    count('committed', 1)
    committed = 1
  end
  redis.call('HDEL', K.reaps, row)
elseif kind == 'hop' and owned and not is_done(row) then
  push(next_host, payload, true, now)
end
local reply = {owned and 1 or 0, committed}
-- The request's download place is free again: lease the next task in the same round trip.
local claim_n = tonumber(ARGV[12])
if claim_n > 0 then
  for _, value in ipairs(claim(ARGV[10], tonumber(ARGV[11]), claim_n, delay,
    tonumber(ARGV[13]), now)) do
    table.insert(reply, value)
  end
end
return reply
