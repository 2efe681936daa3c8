-- claim(prefix, owner, ttl_ms, n, delay_ms, reap_limit) -> see claim() in common.lua
return claim(ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]),
  tonumber(ARGV[6]), now_ms())
