-- Claim proxies for probing, one process at a time: a claim holds until its time is up or its
-- holder ends it. KEYS: one claim key per proxy    ARGV: now|'' ttl token
local now = clock(ARGV[1])
local ttl = tonumber(ARGV[2])
local claimed = {}
for i, key in ipairs(KEYS) do
  local held = redis.call('GET', key)
  if not held or tonumber(string.match(held, '^[^\t]*')) <= now then
    -- the expiry in the value follows the pool's clock; PX only collects forgotten claims
    redis.call('SET', key, tostring(now + ttl) .. '\t' .. ARGV[3], 'PX', math.ceil(ttl * 2000))
    claimed[#claimed + 1] = i
  end
end
return claimed
