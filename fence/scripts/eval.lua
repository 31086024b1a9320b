-- eval.lua: the caller's script's prelude, after guard.lua (Redis.Eval
-- puts both on one line, in front of the script's first line, so that the
-- line numbers of the script's errors are its own).
--
-- KEYS[1]       the guard key, ARGV[1] the token: guard.lua's
-- KEYS[2..n]    the caller's keys
-- ARGV[2..m]    the caller's arguments
--
-- Reply: the caller's script's.
-- The guard is raised first: the caller's script may write before it
-- fails, and Redis undoes no write of a failed script.
-- The caller's script sees its own keys and arguments as KEYS and ARGV.
fence_raise()
local function fence_rest(t)
  local rest = {}
  for i = 2, #t do
    rest[i - 1] = t[i]
  end
  return rest
end
local KEYS, ARGV = fence_rest(KEYS), fence_rest(ARGV);
