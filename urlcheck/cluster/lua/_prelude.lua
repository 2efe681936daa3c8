-- Prelude of every frontier script (urlcheck/redis/scripts.py). KEYS are the job's keys the
-- script touches, each "uc:{<job>}:<name>" (one hash tag: one Redis Cluster slot), named here by
-- what follows that prefix: K.meta, K.ready, ... for the job's fixed keys (the script's own
-- list is in urlcheck/cluster/scripts.py), q:<host> and h:<host> for the hosts the caller names.
-- A script may find more hosts in Redis (a claim's ready hosts and expired leases): their keys
-- are built from the same prefix, in the same slot.
local PREFIX = string.match(KEYS[1], '^[^{]*{[^}]*}:')
local K = {}
for _, key in ipairs(KEYS) do K[string.sub(key, #PREFIX + 1)] = key end
-- h:<host> outlives its queue so a back-off or a learned delay survives an empty spell.
local HOST_STATE_TTL_MS = 3600000

local function qkey(host) return PREFIX .. 'q:' .. host end
local function hkey(host) return PREFIX .. 'h:' .. host end

-- Milliseconds from the server's clock, never going backwards within the job.
local function now_ms()
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local last = tonumber(redis.call('GET', K.clock) or '0')
  if now <= last then return last end
  redis.call('SET', K.clock, string.format('%d', now))
  return now
end

local function num(value) return tonumber(value or '0') or 0 end

-- Counters live in `meta` only while the job exists: a stray call after Redis lost the job
-- must not make it look open.
local function count(field, n)
  if redis.call('HEXISTS', K.meta, 'status') == 1 then redis.call('HINCRBY', K.meta, field, n) end
end

-- A queue entry is "<row>|<task json>"; a lease value is "<token>|<owner>|<entry>".
local function entry_row(entry)
  local bar = string.find(entry, '|', 1, true)
  return tonumber(string.sub(entry, 1, bar - 1))
end

local function split_lease(value)
  local a = string.find(value, '|', 1, true)
  local b = string.find(value, '|', a + 1, true)
  return string.sub(value, 1, a - 1), string.sub(value, a + 1, b - 1), string.sub(value, b + 1)
end

local function is_done(row) return redis.call('GETBIT', K.done, row) == 1 end

-- A host is in `ready` exactly when it has queued work and no lease; its score is the first
-- moment it may be sent to again.
local function make_ready(host, now)
  if redis.call('HEXISTS', K.inflight, host) == 1 then return end
  if redis.call('LLEN', qkey(host)) == 0 then return end
  local at = math.max(now, num(redis.call('HGET', hkey(host), 'next')))
  redis.call('ZADD', K.ready, 'NX', string.format('%d', at), host)
end

local function push(host, entry, front, now)
  if front then
    redis.call('LPUSH', qkey(host), entry)
  else
    redis.call('RPUSH', qkey(host), entry)
  end
  make_ready(host, now)
end

-- The learned pace, urlcheck/politeness/pace.py's rule on the host's answers from every process, in ms:
-- a 429 ('fast') doubles the delay (at least to `min_step`) or goes back to the last good one, and
-- takes a short Retry-After as the pace; `ease_after` clean answers in a row ('ok') ease it back
-- halfway to the largest delay that drew a 429, or halve it once that 429 is forgotten.
-- In seconds, with the same arithmetic as pace.py so both give the same delays to the bit; the
-- rule's settings and constants come from pace.py with each call (`rule`, see complete.lua).
-- Fields of h:<host>: pace, pbad, pgood, pclean, ppat (the 429s are counted for the job in
-- `fast`, by set_next). Returns the pace (0: none).
local function fmt(x) return string.format('%.17g', x) end

local function pace_step(h, event, retry_after, rule)
  local f = redis.call('HMGET', h, 'pace', 'pbad', 'pgood', 'pclean', 'ppat')
  local d = tonumber(f[1])
  local floor = rule.floor
  if event ~= 'fast' and event ~= 'ok' then return d or 0 end
  if event == 'ok' and (d == nil or d <= floor) then return d or 0 end
  local maximum = math.max(rule.maximum, floor)
  local bad, good = tonumber(f[2]), tonumber(f[3])
  local clean, patience = num(f[4]), num(f[5])
  if event == 'fast' then
    d = d or floor
    clean, patience = 0, 0
    bad = math.max(bad or 0, d)
    local new
    if good ~= nil and good > d then new = good else new = math.max(d * 2, rule.min_step) end
    if retry_after >= 0 and retry_after <= maximum then new = math.max(new, retry_after) end
    d = math.min(new, maximum)
  else
    clean = clean + 1
    if clean >= rule.ease_after then
      clean = 0
      good = d
      local hold = false
      if bad ~= nil and good - bad <= rule.converged * good then
        patience = patience + 1
        if patience < rule.forget_after then
          hold = true
        else
          bad, patience = nil, 0
        end
      end
      if not hold then
        local lower = bad == nil and good / 2 or (bad + good) / 2
        d = math.max(floor, lower)
      end
    end
  end
  redis.call('HSET', h, 'pace', fmt(d), 'pclean', clean, 'ppat', patience)
  if bad ~= nil then redis.call('HSET', h, 'pbad', fmt(bad)) else redis.call('HDEL', h, 'pbad') end
  if good ~= nil then redis.call('HSET', h, 'pgood', fmt(good)) end
  return d
end

-- The gap rule: the next request to a host starts no earlier than `delay` after the previous
-- one's dispatch, `gap` after the end of its download, and not before a back-off ends. Both are
-- the completing process's (`delay`: DOWNLOAD_DELAY, AutoThrottle, Crawl-delay; `gap`:
-- DOWNLOAD_DELAY, Crawl-delay), raised to the host's learned pace, which `pace` (the answer's
-- event, and the rule in seconds) updates first.
local function set_next(host, now, delay, gap, backoff_ms, strikes, pace)
  local h = hkey(host)
  if redis.call('HEXISTS', K.down, host) == 1 then
    -- Given up on for the job: no process sends it another request, so its other rows,
    -- recorded without one, wait for no gap, back-off or pace.
    redis.call('HSET', h, 'done', string.format('%d', now), 'next', string.format('%d', now))
    redis.call('PEXPIRE', h, HOST_STATE_TTL_MS)
    return now
  end
  local dispatch = num(redis.call('HGET', h, 'dispatch'))
  local until_ = num(redis.call('HGET', h, 'until'))
  if backoff_ms > 0 then
    local was = math.max(until_, now)
    until_ = math.max(until_, now + backoff_ms)
    -- for the job's host report: the time the host was paused, overlaps counted once
    if until_ > was then redis.call('HINCRBY', K.backed, host, until_ - was) end
    redis.call('HSET', h, 'until', string.format('%d', until_), 'strikes', strikes)
    redis.call('ZADD', K.paused, string.format('%d', until_), host)
  end
  if pace.event == 'fast' then redis.call('HINCRBY', K.fast, host, 1) end
  local learned = pace_step(h, pace.event, pace.retry_after, pace.rule)
  local learned_ms = math.floor(learned * 1000 + 0.5)
  delay = math.max(delay, learned_ms)
  local nxt = math.max(dispatch + delay, now + math.max(gap, learned_ms), until_)
  redis.call('HSET', h, 'done', string.format('%d', now), 'next', string.format('%d', nxt),
    'delay', string.format('%d', delay))
  redis.call('PEXPIRE', h, math.max(until_ - now, 0) + HOST_STATE_TTL_MS)
  return nxt
end

-- Reaps expired leases (their task goes back to the front of its host's queue), then leases up
-- to n ready hosts, one task each. A leased host is never in `ready`: 1 in flight per host.
-- Returns {control, status, wait_ms, reaped, dropped, host, token, reaps, entry, struck, down,
-- ...}.
local function claim(owner, ttl, n, delay, reap_limit, now)
  local reaped = 0
  local expired = redis.call('ZRANGEBYSCORE', K.leases, '-inf', now, 'LIMIT', 0, reap_limit)
  for _, host in ipairs(expired) do
    local value = redis.call('HGET', K.inflight, host)
    redis.call('HDEL', K.inflight, host)
    redis.call('ZREM', K.leases, host)
    if value then
      local _, _, entry = split_lease(value)
      local row = entry_row(entry)
      if not is_done(row) then
        redis.call('LPUSH', qkey(host), entry)
        redis.call('HINCRBY', K.reaps, row, 1)
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
  redis.call('ZREMRANGEBYSCORE', K.paused, '-inf', now)

  local meta = redis.call('HMGET', K.meta, 'control', 'status', 'hold')
  local control, status = meta[1] or '', meta[2] or ''
  local reply = {control, status, -1, reaped, 0}
  if control ~= 'run' then return reply end
  local hold = num(meta[3])
  if now < hold then
    reply[3] = hold - now
    return reply
  end

  local dropped = 0
  local hosts = redis.call('ZRANGEBYSCORE', K.ready, '-inf', now, 'LIMIT', 0, n)
  for _, host in ipairs(hosts) do
    redis.call('ZREM', K.ready, host)
    local entry
    while true do
      entry = redis.call('LPOP', qkey(host))
      if not entry then break end
      local row = entry_row(entry)
      if not is_done(row) then break end
      -- A re-queued copy of a row another worker already finished.
      redis.call('HDEL', K.reaps, row)
      dropped = dropped + 1
    end
    if entry then
      local token = tostring(redis.call('INCR', K.seq))
      redis.call('HSET', K.inflight, host, token .. '|' .. owner .. '|' .. entry)
      redis.call('ZADD', K.leases, string.format('%d', now + ttl), host)
      redis.call('HSET', hkey(host), 'dispatch', string.format('%d', now))
      redis.call('PEXPIRE', hkey(host), HOST_STATE_TTL_MS)
      local reaps = num(redis.call('HGET', K.reaps, entry_row(entry)))
      table.insert(reply, host)
      table.insert(reply, token)
      table.insert(reply, reaps)
      table.insert(reply, entry)
      -- The host circuit: whether the host's count in a row is open (an answer must clear it),
      -- and the evidence when the host was given up on (the task is recorded, not sent).
      table.insert(reply, redis.call('HEXISTS', K.strikes, host))
      table.insert(reply, redis.call('HGET', K.down, host) or '')
    end
  end
  reply[5] = dropped
  if dropped > 0 then count('dropped', dropped) end
  local first = redis.call('ZRANGE', K.ready, 0, 0, 'WITHSCORES')
  if first[2] then reply[3] = math.max(tonumber(first[2]) - now, 0) end
  return reply
end
