-- SPDX-License-Identifier: BSD-2-Clause
-- fast.lua - one sliding log's check on the Redis store without
-- reading the log whole (issue #25: a 4.6 KB value costs the server
-- more than the rest of a check).  A function library of its own
-- (engine.c), next to check.lua's, with the same state: check.lua's
-- sliding log (0x85, L in 2 bytes, then the stamps ascending, 9 bytes
-- each), so composites, groups, refunds and peeks read what this writes.
--
-- KEYS     the log's key, one.
-- ARGV     check.lua's long form of one key: KIND NOW GRACE 1 5 USABLE
--          W L COST (the rest, if any, unread); NOW "TIME" or decimal ns.
-- Returns  one string: a byte ADMITTED (0 or 1), the live stamps'
--          count C before the check in 2 bytes, the first live stamp F
--          and, on a denial, the stamp K the retry waits for (the k-th
--          live one, k = C + COST - L; else F), 9 bytes each (as
--          stamps), then NOW in decimal; the client (verdict.c) builds
--          the smallest log with the same C, F and K and runs the
--          algorithm on it.  3: a state or an argument this path does not
--          take (the text of earlier versions, a log not as written, a
--          TIME span): check.lua decides it, reading the whole log.
--
-- What it reads: the log's length (STRLEN), its head and first stamp
-- (GETRANGE), its last stamp and K; the whole log (GET) only when its
-- first stamp has left the window, or a check's stamps go before its
-- last (the clock stepped back): those rewrite the log anyway.  A check
-- that admits and drops nothing APPENDs its stamps.  The stamps between
-- those read are not checked here (check.lua's path and the client check
-- every one they read).

local E9 = 1000000000
local LOGH, STAMP = '>BI2', '>I5I4'
-- 2^63 = 9223372036 * 10^9 + 854775808: every stamp lies below.
local HH, HL = 9223372036, 854775808

-- @s (decimal, at most 19 digits) as hi, lo; nil otherwise.
local function pair(s)
	local k = #s
	if k == 0 or k > 19 or s:find('%D') then
		return nil
	elseif k <= 9 then
		return 0, tonumber(s)
	end
	return tonumber(s:sub(1, k - 9)), tonumber(s:sub(k - 8))
end

-- Is (a, b) above (c, d)?
local function gt(a, b, c, d)
	return a > c or (a == c and b > d)
end

-- (a, b) - (c, d) as a pair; negative his stay exact below 2^53.
local function minus(a, b, c, d)
	local hi, lo = a - c, b - d
	if lo < 0 then
		return hi - 1, lo + E9
	end
	return hi, lo
end

local function plus(a, b, c, d)
	local hi, lo = a + c, b + d
	if lo >= E9 then
		return hi + 1, lo - E9
	end
	return hi, lo
end

-- The first of stamps @a .. @n of @v above (th, tl) (n + 1: none).
-- check.lua has the same bisection: two function libraries share no code,
-- and this one must not load check.lua's to read a log.
local function above(v, a, n, th, tl)
	local function up(i)
		local h, l = struct.unpack(STAMP, v, 9 * i - 5)
		return gt(h, l, th, tl)
	end
	if a > n or up(a) then
		return a
	end
	if not up(n) then
		return n + 1
	end
	local b = n
	while b - a > 1 do
		local m = math.floor((a + b) / 2)
		if up(m) then
			b = m
		else
			a = m
		end
	end
	return b
end

-- The reply (see above).
local function answer(ok, c, fh, fl, kh, kl, nows)
	return struct.pack('>BI2', ok, c) .. struct.pack(STAMP, fh, fl) ..
		struct.pack(STAMP, kh, kl) .. nows
end

local function fastlog(KEYS, ARGV)
	local key, nows = KEYS[1], ARGV[2]
	local wh, wl = pair(ARGV[7] or '')
	local gh, gl = pair(ARGV[3] or '')
	local limit, cost = tonumber(ARGV[8]), tonumber(ARGV[9])
	if #KEYS ~= 1 or ARGV[4] ~= '1' or ARGV[5] ~= '5' or
		ARGV[6] ~= '1' or not (wl and gl and limit and cost) or
		limit > 512 or cost > limit or cost % 1 ~= 0 then
		return 3
	end
	local nh, nl
	if nows == 'TIME' then
		if redis.replicate_commands then
			redis.replicate_commands()
		end
		local t = redis.call('TIME')
		nh, nl = tonumber(t[1]), tonumber(t[2]) * 1000
		nows = string.format('%d%09d', nh, nl)
	else
		nh, nl = pair(nows)
		if not nl or nh >= HH then
			return 3
		end
	end
	local head = struct.pack(LOGH, 133, limit)
	local len = redis.call('STRLEN', key)
	local n, fh, fl, lh, ll = 0, nil, nil, nil, nil
	if len == 0 and redis.call('EXISTS', key) == 1 then
		return 3
	elseif len > 0 then
		n = (len - 3) / 9
		if n < 0 or n % 1 ~= 0 or n > limit then
			return 3
		end
		local h = redis.call('GETRANGE', key, 0, 11)
		if string.sub(h, 1, 3) ~= head then
			return 3
		end
		if n > 0 then
			fh, fl = struct.unpack(STAMP, h, 4)
			lh, ll = fh, fl
		end
		if n > 1 then
			lh, ll = struct.unpack(STAMP,
				redis.call('GETRANGE', key, -9, -1))
		end
		if n > 0 and (fl >= E9 or ll >= E9 or
			not gt(HH, HL, lh, ll) or gt(fh, fl, lh, ll)) then
			return 3
		end
	end
	-- Live: the stamps above NOW - W (all while NOW < W).
	local th, tl = -1, 0
	if not gt(wh, wl, nh, nl) then
		th, tl = minus(nh, nl, wh, wl)
	end
	local v, live = nil, 1
	if n > 0 and not gt(fh, fl, th, tl) then
		v = redis.call('GET', key)
		live = above(v, 2, n, th, tl)
		fh, fl = 0, 0
		if live <= n then
			fh, fl = struct.unpack(STAMP, v, 9 * live - 5)
		end
	end
	local c = n - live + 1
	if c + cost > limit then
		local k = live + c + cost - limit - 1
		local kh, kl = fh, fl
		if k == n then
			kh, kl = lh, ll
		elseif k > live then
			kh, kl = struct.unpack(STAMP, v or redis.call('GETRANGE', key,
				9 * k - 6, 9 * k + 2), v and 9 * k - 5 or 1)
		end
		return answer(0, c, fh, fl, kh, kl, nows)
	end
	-- The log expires at its last stamp plus W, NOW's if none is later.
	local eh, el = nh, nl
	if n > 0 and gt(lh, ll, nh, nl) then
		eh, el = lh, ll
	end
	eh, el = plus(eh, el, wh, wl)
	eh, el = plus(eh, el, gh, gl)
	eh, el = minus(eh, el, nh, nl)
	local ms = eh * 1000 + math.floor(el / 1000000) + 1
	local new = string.rep(struct.pack(STAMP, nh, nl), cost)
	if n == 0 then
		redis.call('SET', key, head .. new, 'PX', ms)
	elseif live == 1 and not gt(lh, ll, nh, nl) then
		redis.call('APPEND', key, new)
		redis.call('PEXPIRE', key, ms)
	else
		v = v or redis.call('GET', key)
		local at = above(v, live, n, nh, nl)
		redis.call('SET', key, head .. string.sub(v, 9 * live - 5,
			9 * at - 6) .. new .. string.sub(v, 9 * at - 5), 'PX', ms)
	end
	return answer(1, c, fh or 0, fl or 0, 0, 0, nows)
end
