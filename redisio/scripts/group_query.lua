-- Read a group lock: the owner's hold count, or whether any value is held.
-- See group_lib.lua for the layout.
--
-- KEYS[1]  the group's hash
-- ARGV[1]  owner, or "" to ask whether anyone holds any of the values
-- ARGV[2..] the values
--
-- Reply: with an owner, its hold count (the smallest over the values; 0
-- when it does not hold every value); without, 1 when some value is held
-- by anyone, else 0.
local bad = group_values(2)
if bad then return bad end
local key, owner, now = KEYS[1], ARGV[1], group_now()
if owner == '' then
  for i = 2, #ARGV do
    local holder, ends = group_holder(key, ARGV[i])
    if holder and ends and ends >= now then return 1 end
  end
  return 0
end
local least
for i = 2, #ARGV do
  local n = group_holds(key, ARGV[i], owner, now)
  if not n then return 0 end
  if not least or n < least then least = n end
end
return least
