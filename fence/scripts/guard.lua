-- guard.lua: the fence's check, the first part of every fenced script.
--
-- KEYS[1]  the guard key: the highest token seen for the resource, a
--          positive decimal int64 (absent: none yet)
-- ARGV[1]  the write's token, a positive decimal int64
--
-- Replies (only when it refuses; else the script goes on with the write):
--   error "STALETOKEN <highest> <guard key>"  the token is below the
--                                 guard: nothing is written (the guard
--                                 key names the refusal as the guard's,
--                                 not an error of Eval's script)
--   error "ERR ..."               the guard key holds no token
--
-- The check writes nothing: the write's script calls fence_raise, which
-- raises the guard to the token, after its write (a write that fails
-- aborts the script with nothing written), or, for Eval, before the
-- caller's script. Tokens are compared as decimal strings (longer is
-- greater, then byte order), exact for every int64, where Lua's numbers
-- are not.
local fence_token = ARGV[1]
local fence_seen = redis.call('GET', KEYS[1])
if fence_seen then
  if not string.match(fence_seen, '^[1-9][0-9]*$') or #fence_seen > 19 or (#fence_seen == 19 and fence_seen > '9223372036854775807') then
    return redis.error_reply('ERR warden fence: the guard key ' .. KEYS[1] .. ' holds no token')
  end
  if #fence_token < #fence_seen or (#fence_token == #fence_seen and fence_token < fence_seen) then
    return redis.error_reply('STALETOKEN ' .. fence_seen .. ' ' .. KEYS[1])
  end
end
local function fence_raise()
  if fence_seen ~= fence_token then
    redis.call('SET', KEYS[1], fence_token)
  end
end
