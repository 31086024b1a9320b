-- The loop of a batch script (see redisio/batch.go): the script in front
-- of it defines call(k, a), one hot script's text reading its keys at
-- KEYS[k+1..k+@NK@] and its arguments at ARGV[a+1..a+@NA@].
--
-- KEYS     every call's @NK@ keys, call after call
-- ARGV[1]  how many calls (integer, at least 1)
-- ARGV     then every call's @NA@ arguments, call after call
--
-- Reply: one element a call, in order: its script's reply, or its error
-- (a reply of redis.error_reply, or a Lua error, which ends that call
-- alone, its writes before the error kept as its own script's would be).
-- Errors before any call when the counts do not match the keys and
-- arguments given.
local n = tonumber(ARGV[1])
if not n or n < 1 or n % 1 ~= 0 or #KEYS ~= n * @NK@ or #ARGV ~= 1 + n * @NA@ then
  return redis.error_reply('ERR warden: a batch with ' .. #KEYS .. ' keys and ' .. #ARGV ..
    ' arguments for ' .. tostring(ARGV[1]) .. ' calls of @NK@ keys and @NA@ arguments')
end
local out = {}
for i = 1, n do
  local ok, r = pcall(call, (i - 1) * @NK@, 1 + (i - 1) * @NA@)
  if not ok then
    if type(r) == 'table' and r.err then r = {err = r.err} else r = {err = tostring(r)} end
  elseif r == nil then
    r = false
  end
  out[i] = r
end
return out
