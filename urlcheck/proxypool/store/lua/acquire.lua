-- Lease a proxy: the key's session if its proxy is usable (and under its cap if caps are hard:
-- else nothing, the session waits), else the first usable id of the caller's choice under its
-- cap, else the forced (fallback) id, under its cap if caps are hard. A session whose proxy is
-- not usable is lost: with end_lost, it ends and nothing is lent.
-- KEYS: meta states benches proxies out caps active leases sessions session_exp log
-- ARGV: now|'' lease_ttl session_ttl site key|'' token gen reg forced|'' hard_cap(1|0)
--       end_lost(1|0) seen id...
local now = clock(ARGV[1])
local site, key = ARGV[4], ARGV[5]
local hard = ARGV[10] == '1'

-- cap: the id's entry in caps (false: not registered), read once by the caller
local function usable(id, cap)
  if not cap or redis.call('SISMEMBER', KEYS[5], id) == 1 then
    return false
  end
  local until_ = redis.call('HGET', KEYS[3], site .. '\t' .. id)
  return not until_ or tonumber(until_) <= now
end

local function full(id, cap)
  cap = tonumber(cap)
  return cap > 0 and tonumber(redis.call('HGET', KEYS[7], id) or '0') >= cap
end

local chosen, lost, fallback, capped, session = false, 0, 0, 0, false
if key ~= '' then
  session = redis.call('HGET', KEYS[9], key)
  if session then
    local held, expires = string.match(session, '^(.*)\t([^\t]*)$')
    if tonumber(expires) > now then
      local cap = redis.call('HGET', KEYS[6], held)
      if usable(held, cap) then
        if hard and full(held, cap) then
          local v, n = view_news(ARGV[7], ARGV[8], ARGV[12], KEYS[11])
          return {0, '', 0, 0, v, 1, n}
        end
        chosen = held
      else
        lost = 1
        if ARGV[11] == '1' then
          redis.call('HDEL', KEYS[9], key)
          redis.call('ZREM', KEYS[10], key)
          local v, n = view_news(ARGV[7], ARGV[8], ARGV[12], KEYS[11])
          return {0, '', 1, 0, v, 0, n}
        end
      end
    end
  end
end
if not chosen then
  for i = 13, #ARGV do
    local id = ARGV[i]
    local cap = redis.call('HGET', KEYS[6], id)
    if usable(id, cap) and not full(id, cap) then
      chosen = id
      break
    end
  end
  if not chosen and ARGV[9] ~= '' then
    local cap = tonumber(redis.call('HGET', KEYS[6], ARGV[9]) or '-1')
    if cap == 0 or (cap > 0 and (not hard
        or tonumber(redis.call('HGET', KEYS[7], ARGV[9]) or '0') < cap)) then
      chosen, fallback = ARGV[9], 1
    elseif cap > 0 then
      capped = 1
    end
  end
  if key ~= '' and session and (not chosen or fallback == 1) then
    redis.call('HDEL', KEYS[9], key)
    redis.call('ZREM', KEYS[10], key)
  end
end
local lease = 0
if chosen then
  if key ~= '' and fallback == 0 then
    local expires = now + tonumber(ARGV[3])
    redis.call('HSET', KEYS[9], key, chosen .. '\t' .. tostring(expires))
    redis.call('ZADD', KEYS[10], expires, key)
  end
  lease = redis.call('HINCRBY', KEYS[1], 'lease_seq', '1')
  if lease == 1 then
    -- a new or emptied store: ids go on from the time in microseconds, so that a lease lent
    -- before a restart never shares its id with one lent after
    local t = redis.call('TIME')
    lease = tonumber(t[1]) * 1000000 + tonumber(t[2])
    redis.call('HSET', KEYS[1], 'lease_seq', string.format('%d', lease))
  end
  -- (%d: a Lua number past 1e14 would print in exponent form)
  redis.call('ZADD', KEYS[8], now + tonumber(ARGV[2]),
    string.format('%d', lease) .. ':' .. ARGV[6] .. ':' .. chosen)
  -- (a number argument costs the server a printf: '1' is sent as it is)
  redis.call('HINCRBY', KEYS[7], chosen, '1')
end
local v, n = view_news(ARGV[7], ARGV[8], ARGV[12], KEYS[11])
return {lease, chosen or '', lost, fallback, v, capped, n}
