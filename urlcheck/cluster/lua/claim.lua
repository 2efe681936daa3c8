-- claim(owner, ttl_ms, n, delay_ms, reap_limit) -> see claim() in _prelude.lua
return claim(ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]),
  tonumber(ARGV[5]), now_ms())
