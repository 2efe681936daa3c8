-- push(front, host1, entry1, host2, entry2, ...) -> rows queued; KEYS: ..., q:<host> h:<host>
-- front=0: new rows from the CSV (marked in `fed`); front=1: hops and retries, sent first.
local now = now_ms()
local front = ARGV[1] == '1'
local queued = 0
for i = 2, #ARGV, 2 do
  local host, entry = ARGV[i], ARGV[i + 1]
  local row = entry_row(entry)
  if not is_done(row) then
    if not front and redis.call('SETBIT', K.fed, row, 1) == 0 then
      count('fed', 1)
    end
    push(host, entry, front, now)
    queued = queued + 1
  end
end
return queued
