-- Argument checks and helpers shared by warden's scripts; redisio
-- prepends this file to each script's source, so every check runs before
-- the script's first write. The hot path's acquire.lua and unlock.lua go
-- without it: they write their checks out, as defining these helpers
-- costs every call.

-- ms: v is a whole number of milliseconds, 1 .. 2^53, compared as text
-- (Lua numbers are doubles).
local function ms(v)
  if type(v) ~= 'string' or not string.match(v, '^[1-9]%d*$') or string.len(v) > 16
      or (string.len(v) == 16 and v > '9007199254740992') then
    return false
  end
  return true
end

-- int: v is an integer, -2^53 .. 2^53, compared as text: also what a
-- counter's stored value must be for INCRBY (no leading zeros, no "-0")
-- and for Lua's numbers (exact up to 2^53).
local function int(v)
  if type(v) ~= 'string' then return false end
  local digits = v
  if string.sub(v, 1, 1) == '-' then digits = string.sub(v, 2) end
  if digits == '0' then return v == '0' end
  return ms(digits)
end

-- whole: v is a whole number, 0 .. 2^53, compared as text (a count).
local function whole(v)
  return v == '0' or ms(v)
end

-- text: v is a non-empty string.
local function text(v)
  return type(v) == 'string' and v ~= ''
end

-- pubcmd: v names a publish command warden sends messages with.
local function pubcmd(v)
  return v == 'publish' or v == 'spublish'
end

-- pubcmd_or_none: v is a publish command, or "none": the lock's waiters
-- poll (the spin lock) and its scripts publish nothing.
local function pubcmd_or_none(v)
  return pubcmd(v) or v == 'none'
end

-- notify publishes msg on channel with cmd, unless cmd is "none".
local function notify(cmd, channel, msg)
  if cmd ~= 'none' then redis.call(cmd, channel, msg) end
end

-- dec renders an integral Lua number as decimal text (tostring would switch
-- to exponent notation above 10^14).
local function dec(n)
  return string.format('%d', n)
end

-- An unlock record (warden_unlock:{name}:<token>..., see unlock.lua, which
-- has these steps written out) holds "<seq> <result> <len(owner)>
-- <owner><requestID>" of the last unlock applied under its token.
-- unlock_tail is the record's part after the result for owner and req.
local function unlock_tail(owner, req)
  return ' ' .. #owner .. ' ' .. owner .. req
end

-- unlock_seen returns the first result of this unlock when the record at
-- key is its own (a retry: the same sequence number seq; a resend: the
-- same tail), -2 when a later unlock under the token was applied (this is
-- a late copy of an older one), and nil when the unlock is new.
local function unlock_seen(key, seq, tail)
  local rec = redis.call('get', key)
  if not rec then return nil end
  local rseq, rres, rrest = string.match(rec, '^(%d+) (%d+)(.*)$')
  if not rseq then return nil end
  if rseq == seq or rrest == tail then return tonumber(rres) end
  if tonumber(rseq) > tonumber(seq) then return -2 end
  return nil
end

-- unlock_write makes the record at key the applied unlock's, result n,
-- for ttl ms.
local function unlock_write(key, seq, n, tail, ttl)
  redis.call('set', key, seq .. ' ' .. dec(n) .. tail, 'px', ttl)
end

-- replayed looks up a counting write's latch at key: when it holds the
-- result "<tag>:<n>" of this request ID's first run, it returns true and n;
-- when the ID was used by another kind of operation, true and an error
-- reply; when the request is new, false.
local function replayed(key, tag)
  local seen = redis.call('get', key)
  if not seen then return false end
  local first = string.match(seen, '^' .. string.gsub(tag, '%-', '%%-') .. ':(%-?%d+)$')
  if first then return true, tonumber(first) end
  return true, redis.error_reply('ERR warden: request id already used by another operation')
end

-- record keeps a counting write's result n in its latch at key for ttl ms,
-- as "<tag>:<n>", what replayed returns for a repeat of the request.
local function record(key, tag, n, ttl)
  redis.call('set', key, tag .. ':' .. dec(n), 'px', ttl)
end
