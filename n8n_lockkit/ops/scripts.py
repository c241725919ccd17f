"""The Lua scripts LockStore runs in Redis: one read of a scope at one instant, and the writes.

Each runs atomically in Redis, on Redis's own clock. Every write first checks that what it
changes is still what was read: a lane that changed hands, or a scope that a caller arrived at,
is left alone. The keys are those of engine v2 (primitives/keys.py); where an older format's
record may stand, the Lua that reads it comes from compat.py.
"""

from n8n_lockkit.ops import compat

# Shared by the scripts below: whether a JSON value is set the way JavaScript reads it
# (cjson decodes null to cjson.null, which Lua takes for true), and a key of the scope.
_LUA_HELPERS = """
local function truthy(value)
  return value ~= nil and value ~= false and value ~= cjson.null and value ~= 0 and value ~= ''
end
local function decoded(raw)
  if not raw then return nil end
  local ok, record = pcall(cjson.decode, raw)
  if ok and type(record) == 'table' then return record end
  return nil
end
local function ticket_key(base, kind, ticket)
  return base .. ':' .. kind .. ':' .. string.format('%d', ticket)
end
"""

# KEYS: ticket, hold_ms, served:0..N-1, meta:0..N-1, then the holder:<t> keys the scan saw.
# ARGV: N, the scope's key base. Returns type, value (strings only) and PTTL of each key; then,
# per lane, the holder records of its head (served + N) and of its last ticket out (served),
# each as ticket (false: none), type, value, PTTL; then Redis's TIME. The lane's head is
# computed here from the `served` read here, so the three are one instant.
SNAPSHOT = (
    _LUA_HELPERS
    + """
local out = {}
local function read(key)
  local kind = redis.call('TYPE', key)['ok']
  local value = false
  if kind == 'string' then value = redis.call('GET', key) end
  out[#out + 1] = kind
  out[#out + 1] = value
  out[#out + 1] = redis.call('PTTL', key)
  return value
end
local values = {}
for i, key in ipairs(KEYS) do values[i] = read(key) end
local function holder(ticket)
  if ticket == nil or ticket < 1 then
    out[#out + 1] = false
    out[#out + 1] = 'none'
    out[#out + 1] = false
    out[#out + 1] = -2
    return
  end
  out[#out + 1] = ticket
  read(ticket_key(ARGV[2], 'holder', ticket))
end
local n = tonumber(ARGV[1])
for k = 0, n - 1 do
  local raw = values[3 + k]
  local served = nil
  if raw and string.match(raw, '^%-?%d+$') then served = tonumber(raw) end
  local first = k
  if k == 0 then first = n end
  holder((served or (first - n)) + n)
  holder(served)
end
local now = redis.call('TIME')
out[#out + 1] = now[1]
out[#out + 1] = now[2]
return out
"""
)

# Release a lane as release.js does, if its record is still the holder that was shown.
# KEYS: meta:<k>, served:<k>, the stats counter, the holder's record (Lane.record_key:
# holder:<t>, or meta:<k> again when the lane's record is the holder's own, compat.py).
# ARGV: lock_id, ticket, the released record, its TTL (s), the stats TTL (s).
# `served` only moves forward: a lane never serves a ticket twice. The holder's record decides;
# the lane's copy, when it is another key, is marked released only when it is that ticket's (or
# absent), so that a later holder's copy is never overwritten.
RELEASE_IF_HOLDER = (
    _LUA_HELPERS
    + """
local ticket = tonumber(ARGV[2])
local record_key = KEYS[4]
if redis.call('TYPE', record_key)['ok'] ~= 'string' then return 'gone' end
local record = decoded(redis.call('GET', record_key))
if record == nil then return 'unreadable' end
if record.lock_id ~= ARGV[1] or tonumber(record.ticket) ~= ticket then return 'other' end
if truthy(record.released) then
  if truthy(record.withdrawn) then return 'withdrawn' end
  return 'released'
end
local served = tonumber(redis.call('GET', KEYS[2]) or '')
if served == nil or served < ticket then redis.call('SET', KEYS[2], ARGV[2]) end
if KEYS[1] ~= record_key then
  local kind = redis.call('TYPE', KEYS[1])['ok']
  local mine = kind == 'none'
  if kind == 'string' then
    local copy = decoded(redis.call('GET', KEYS[1]))
    mine = copy ~= nil and copy.lock_id == ARGV[1] and tonumber(copy.ticket) == ticket
  end
  if mine then redis.call('SET', KEYS[1], ARGV[3], 'EX', ARGV[4]) end
end
redis.call('SET', record_key, ARGV[3], 'EX', ARGV[4])
redis.call('INCR', KEYS[3])
redis.call('EXPIRE', KEYS[3], ARGV[5])
return 'done'
"""
)

# Delete a record that has no TTL if it is still the value that was read. KEYS: meta, stats
# counter. ARGV: the value, the stats TTL. Returns 1 when it deleted.
DELETE_IF_UNCHANGED = """
if redis.call('TYPE', KEYS[1])['ok'] ~= 'string' then return 0 end
if redis.call('GET', KEYS[1]) ~= ARGV[1] or redis.call('PTTL', KEYS[1]) ~= -1 then return 0 end
redis.call('DEL', KEYS[1])
redis.call('INCR', KEYS[2])
redis.call('EXPIRE', KEYS[2], ARGV[2])
return 1
"""

# Forget an idle scope: delete its ticket, hold average, fast-path value and lanes' `served`.
# The fast-path value goes with the ticket: left behind, it would name a last ticket out that
# the restarted tickets reach while an earlier one still holds.
# KEYS: ticket, hold_ms, served:0..N-1, meta:0..N-1, then the gone:<t> marks the scan saw.
# ARGV: N, the ticket the scan read, the quiet time (ms) since the last release, the scope's
# key base, how many tickets around the scan's read to look for marks at, then the tickets of
# the holder:<t> records the scan saw.
#
# Idle: no lane is held, no ticket is in line, and no `gone` mark is left. Lane k
# serves the tickets t = k (mod N), from its first one (k, or N for lane 0) on; `served` is the
# last that left (absent: none yet, i.e. first - N). A ticket that gave up (gone:<t>) has left
# too. So the tickets still in line in lane k are those in (served_k, T], and lane k is empty
# exactly when T - served_k < N. The ticket T is read here, in the same script: an arrival
# INCRs it before anything else, so an arrival at any moment before this script makes its lane
# non-empty, and one after it starts the scope afresh at ticket 1.
#
# Held: the record of a lane's head or of its last ticket out (which may have entered late) is
# there and not released, or the record of the ticket the lane's copy names is, or any
# holder:<t> record the scan saw; or the lane's record holds by itself (compat.py), and an
# unreadable one counts as held.
#
# A `gone` mark keeps the scope: a caller skipped while it stalled (format 3) reads its mark
# when it writes its record late, and withdraws. Deleting the mark, or restarting the tickets
# so that another caller draws its number, would let it hold beside the next round's holder;
# marks live at least keys.GONE_MIN_TTL_SECONDS, and the scope is forgotten once they expired.
FORGET_IF_IDLE = (
    _LUA_HELPERS
    + compat.LUA_IS_FORMAT2_HOLDER
    + """
local n = tonumber(ARGV[1])
local base = ARGV[4]
local raw = redis.call('GET', KEYS[1])
local t = tonumber(raw or '')
if t == nil then return {0, 'no ticket'} end
local function active(ticket)
  if ticket == nil or ticket < 1 then return false end
  local key = ticket_key(base, 'holder', ticket)
  if redis.call('TYPE', key)['ok'] ~= 'string' then return false end
  local record = decoded(redis.call('GET', key))
  return record ~= nil and not truthy(record.released) and record.ticket == ticket
end
local gone = {}
for i = 3 + 2 * n, #KEYS do gone[KEYS[i]] = true end
for k = 0, n - 1 do
  local held = {0, 'lane ' .. k .. ' is held'}
  local first = k
  if k == 0 then first = n end
  local served = tonumber(redis.call('GET', KEYS[3 + k]) or '')
  if served == nil then served = first - n end
  if active(served + n) or active(served) then return held end
  local meta = redis.call('GET', KEYS[3 + n + k])
  if meta then
    local record = decoded(meta)
    if record == nil or is_format2_holder(record) then return held end
    if not truthy(record.released) and type(record.ticket) == 'number'
      and active(record.ticket) then return held end
  end
  while gone[ticket_key(base, 'gone', served + n)] do served = served + n end
  if t - served >= n then
    return {0, 'ticket ' .. string.format('%d', served + n) .. ' is in line in lane ' .. k}
  end
end
for i = 6, #ARGV do
  local ticket = tonumber(ARGV[i])
  if active(ticket) then
    return {0, 'the record of ticket ' .. string.format('%d', ticket) .. ' still holds'}
  end
end
local function mark(ticket)
  return {0, 'ticket ' .. string.format('%d', ticket) .. ' gave up or was skipped: kept until '
    .. 'its mark expires (a caller skipped while it stalled may still wake)'}
end
for i = 3 + 2 * n, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    return mark(tonumber(string.match(KEYS[i], '(%d+)$')))
  end
end
local hold = redis.call('PTTL', KEYS[2])
if hold > 0 and hold > tonumber(ARGV[3]) then return {0, 'released too recently'} end
local read = tonumber(ARGV[2])
local window = tonumber(ARGV[5])
if t - read > window then return {0, 'busy since it was read'} end
-- Marks the scan could not see (written while it ran, or for tickets drawn after it).
for i = math.max(1, read - window + 1), t do
  if redis.call('EXISTS', ticket_key(base, 'gone', i)) == 1 then return mark(i) end
end
for k = 0, n - 1 do redis.call('DEL', KEYS[3 + k]) end
redis.call('DEL', KEYS[1], KEYS[2], base .. ':fast')
return {1, raw}
"""
)
# How many tickets before the scan's read, and after it, the forget script looks for `gone`
# marks at; a scope whose ticket moved on by more than this since the scan is not taken for idle.
FORGET_MARKER_WINDOW = 1000

# Forget a duplicate guard's mark of a success, only if it is still the mark that was shown
# (a success of the key meanwhile wrote a new one, which stays).
# KEYS: the done mark. ARGV: its value as read.
# KEYS[2]: the answer a replaying guard stored with the mark (`--on-duplicate replay`); it goes
# with the mark.
FORGET_DONE_IF_UNCHANGED = """
if redis.call('TYPE', KEYS[1])['ok'] ~= 'string' then return 0 end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
if redis.call('TYPE', KEYS[2])['ok'] == 'string' then redis.call('DEL', KEYS[2]) end
return 1
"""

# One debounce key value's open burst, read at one instant (docs/debounce.md).
# KEYS: its `:seq` and `:watch`. ARGV: its key base, how many tickets back from the last to read
# at most. The open burst begins at the watch's `s` (1 before the key's first waiter looked).
# An event of it is waiting when its record `:ev:<t>` is there and its claims list
# `:claims:<t>` is absent (the event's push is under way) or holds no runner's "r" yet (a
# runner's push takes it, or left it out when it came first). A cut draws a ticket with
# neither. Returns seq (false: none), watch (false: none or not a string), the first ticket
# read, Redis's TIME, then per waiting event its ticket, claim (0: not pushed yet, 1: claimed)
# and `at` (false: unreadable).
DEBOUNCE_BURST = (
    _LUA_HELPERS
    + """
local function text(key)
  if redis.call('TYPE', key)['ok'] ~= 'string' then return false end
  return redis.call('GET', key)
end
local base = ARGV[1]
local seq = text(KEYS[1])
local watch = text(KEYS[2])
local last = tonumber(seq or '')
local first = 1
local w = decoded(watch or nil)
if w ~= nil and tonumber(w.s) then first = tonumber(w.s) end
if last ~= nil then first = math.max(first, last - tonumber(ARGV[2]) + 1) end
local now = redis.call('TIME')
local out = {seq, watch, first, now[1], now[2]}
if last ~= nil then
  for t = first, last do
    local record = text(ticket_key(base, 'ev', t))
    if record then
      local claims = ticket_key(base, 'claims', t)
      local claim = 0
      if redis.call('TYPE', claims)['ok'] == 'list' then
        claim = 1
        for _, mark in ipairs(redis.call('LRANGE', claims, 0, -1)) do
          if mark ~= 'e' then claim = 2 end
        end
      end
      if claim <= 1 then
        local event = decoded(record)
        local at = false
        if event ~= nil and tonumber(event.at) then at = tonumber(event.at) end
        out[#out + 1] = t
        out[#out + 1] = claim
        out[#out + 1] = at
      end
    end
  end
end
return out
"""
)
