-- redis-check.lua - one check on the Redis store, atomically: read the
-- key's state, decide, write the new state with its TTL.  The client
-- recomputes the decision from the state read here with the algorithm
-- itself and checks that it agrees, so decisions are the local stores'
-- bit for bit.
--
-- KEYS[1]  the key's state.
-- ARGV     ALG NOW GRACE, then the algorithm's arguments; all numbers are
--          decimal integers (ns, units).
-- Returns  {old value or nil, 1, new value} if admitted, {old value or
--          nil, 0} if not; an error reply "TKPROTO ..." for a state of
--          another algorithm or policy, or a value the library did not
--          write.
--
-- One-word policies (ALG 1 gcra, 2 token-bucket, 7 leaky): the value is
-- "ALG:WORD", WORD the TAT or departure time.  ARGV INC AHEAD LIMIT VALID:
-- base = max(WORD, NOW); admitted iff base + AHEAD - NOW <= LIMIT, and
-- WORD becomes base + INC.  gcra: AHEAD = INC = T * cost, LIMIT = tau;
-- leaky: AHEAD = 0, INC = T * cost, LIMIT = max-queue.  A WORD at or past
-- 2^63 + VALID is no check's (the algorithm's valid()): no state.  The
-- state expires at WORD.
--
-- Fixed windows (ALG 3): the value is "3:W:START:COUNT", W the window.
-- ARGV W WS COST LIMIT, WS the window of NOW: start = max(WS, START)
-- (a clock stepped back keeps counting in the later window), count =
-- COUNT if START is that window, else 0; admitted iff count + COST <=
-- LIMIT, and the state becomes {start, count + COST}.  A state of
-- another window is another policy's.  The state expires at start + W.
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

local function max(a, b)
	return cmp(a, b) < 0 and b or a
end

local function proto(why)
	return redis.error_reply('TKPROTO ' .. why)
end

-- Write the new state, to expire GRACE after @expiry (from NOW).
local function store(value, old, now, expiry, grace)
	local ttl = sub(add(expiry, grace), now)
	-- ttl < 2^65 ns, so ms < 2^46: exact.
	local ms = ttl[1] * 1000 + math.floor(ttl[2] / 1000000) + 1
	redis.call('SET', KEYS[1], value, 'PX', ms)
	return { old or false, 1, value }
end

local alg = ARGV[1]
local now, grace = num(ARGV[2]), num(ARGV[3])
local value = redis.call('GET', KEYS[1])

if alg == '3' then
	local w, ws, cost, limit = num(ARGV[4]), num(ARGV[5]), num(ARGV[6]),
		num(ARGV[7])
	if not (now and grace and w and ws and cost and limit) then
		return proto('bad arguments')
	end
	local start, count = ws, { 0, 0 }
	if value then
		local id, vw, vs, vc =
			string.match(value, '^(%d+):(%d+):(%d+):(%d+)$')
		local sw, ss, sc = num(vw), num(vs), num(vc)
		if id ~= alg or not (sw and ss and sc) or cmp(sw, w) ~= 0 then
			return proto('state of another algorithm or policy')
		end
		start = max(ws, ss)
		if cmp(ss, start) == 0 then
			count = sc
		end
	end
	count = add(count, cost)
	if cmp(count, limit) > 0 then
		return { value or false, 0 }
	end
	return store(alg .. ':' .. str(w) .. ':' .. str(start) .. ':' ..
		str(count), value, now, add(start, w), grace)
end

local inc, ahead = num(ARGV[4]), num(ARGV[5])
local limit, valid = num(ARGV[6]), num(ARGV[7])
if not (now and grace and inc and ahead and limit and valid) then
	return proto('bad arguments')
end
local base = now
if value then
	local id, word = string.match(value, '^(%d+):(%d+)$')
	local old = num(word)
	if id ~= alg or not old then
		return proto('state of another algorithm')
	end
	local half = { 9223372036, 854775808 } -- 2^63
	local fits = cmp(old, half) < 0 or cmp(sub(old, half), valid) < 0
	if fits then
		base = max(old, now)
	end
end
if cmp(sub(add(base, ahead), now), limit) > 0 then
	return { value or false, 0 }
end
local new = add(base, inc)
return store(alg .. ':' .. str(new), value, now, new, grace)
