-- eval.lua: the caller's script, after guard.lua (Redis.Eval appends the
-- script's text to this one).
--
-- KEYS[1]       the guard key, ARGV[1] the token: guard.lua's
-- KEYS[2..n]    the caller's keys
-- ARGV[2..m]    the caller's arguments
--
-- Reply: the caller's script's.
-- The caller's script sees its own keys and arguments as KEYS and ARGV.
local function fence_rest(t)
  local rest = {}
  for i = 2, #t do
    rest[i - 1] = t[i]
  end
  return rest
end
local KEYS, ARGV = fence_rest(KEYS), fence_rest(ARGV)
