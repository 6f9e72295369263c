-- redis-check.lua - one check of a one-word policy (gcra, token-bucket,
-- leaky) on the Redis store, atomically: read the state, decide, write.
--
-- KEYS[1]  the key's state: "ALG:WORD", WORD the decimal uint64 the
--          algorithm keeps (a TAT or a departure time, ns).
-- ARGV     ALG NOW INC AHEAD LIMIT VALID GRACE, decimal integers (ns):
--          base = max(WORD, NOW); admitted iff base + AHEAD - NOW <= LIMIT,
--          and then WORD becomes base + INC.  gcra: AHEAD = INC = T * cost,
--          LIMIT = tau; leaky: AHEAD = 0, INC = T * cost, LIMIT = max-queue.
--          A WORD at or past 2^63 + VALID is no check's (the algorithm's
--          valid()) and counts as no state.  The TTL is the new WORD plus
--          GRACE, from NOW, in ms rounded up.
-- Returns  {old value or nil, 1, new WORD} if admitted, {old value or nil,
--          0} if not; an error reply "TKPROTO ..." for a state of another
--          algorithm or no state at all.  The client recomputes the decision
--          from the old value with the algorithm itself and checks that it
--          agrees, so decisions are the local stores' bit for bit.
--
-- Lua 5.1 numbers are doubles, exact only below 2^53, and these values
-- reach 2^64.  So every number is a pair {hi, lo} = hi * 10^9 + lo with
-- 0 <= lo < 10^9: parsed by splitting off the last nine digits, and only
-- added, subtracted and compared, which keeps both halves exact.

local E9 = 1000000000

local function num(s)
	if not s or #s == 0 or #s > 20 or s:find('%D') then
		return nil
	end
	if #s <= 9 then
		return { 0, tonumber(s) }
	end
	local n = { tonumber(s:sub(1, #s - 9)), tonumber(s:sub(#s - 8)) }
	-- At most 2^64 - 1 = 18446744073 * 10^9 + 709551615.
	if n[1] > 18446744073 or (n[1] == 18446744073 and n[2] > 709551615) then
		return nil
	end
	return n
end

local function cmp(a, b)
	if a[1] ~= b[1] then
		return a[1] < b[1] and -1 or 1
	end
	if a[2] ~= b[2] then
		return a[2] < b[2] and -1 or 1
	end
	return 0
end

local function add(a, b)
	local hi, lo = a[1] + b[1], a[2] + b[2]
	if lo >= E9 then
		return { hi + 1, lo - E9 }
	end
	return { hi, lo }
end

-- a - b for a >= b.
local function sub(a, b)
	local hi, lo = a[1] - b[1], a[2] - b[2]
	if lo < 0 then
		return { hi - 1, lo + E9 }
	end
	return { hi, lo }
end

local function str(a)
	if a[1] == 0 then
		return string.format('%d', a[2])
	end
	return string.format('%d%09d', a[1], a[2])
end

local alg = ARGV[1]
local now, inc, ahead = num(ARGV[2]), num(ARGV[3]), num(ARGV[4])
local limit, valid, grace = num(ARGV[5]), num(ARGV[6]), num(ARGV[7])
if not (now and inc and ahead and limit and valid and grace) then
	return redis.error_reply('TKPROTO bad arguments')
end

local value = redis.call('GET', KEYS[1])
local base = now
if value then
	local id, word = string.match(value, '^(%d+):(%d+)$')
	local old = num(word)
	if id ~= alg or not old then
		return redis.error_reply('TKPROTO state of another algorithm')
	end
	local half = { 9223372036, 854775808 } -- 2^63
	local fits = cmp(old, half) < 0 or cmp(sub(old, half), valid) < 0
	if fits and cmp(old, now) > 0 then
		base = old
	end
end

if cmp(sub(add(base, ahead), now), limit) > 0 then
	return { value or false, 0 }
end
local new = add(base, inc)
local ttl = sub(add(new, grace), now)
-- ttl < 2^65 ns, so ms < 2^46: exact.
local ms = ttl[1] * 1000 + math.floor(ttl[2] / 1000000) + 1
redis.call('SET', KEYS[1], alg .. ':' .. str(new), 'PX', ms)
return { value or false, 1, str(new) }
