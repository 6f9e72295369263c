-- SPDX-License-Identifier: BSD-2-Clause
-- fast.lua - one sliding log's check on the Redis store without
-- reading the log whole (issue #25: a 4.6 KB value costs the server
-- more than the rest of a check).  A function library of its own
-- (engine.c), next to check.lua's, with the same states: check.lua's
-- sliding log (0x85, L in 2 bytes, then the stamps ascending, 9 bytes
-- each), which it reads, and the log it writes itself: 0x95, L, the
-- count D of stamps dropped in 2 bytes, a copy F of the first stamp not
-- dropped (9 bytes: no read of the stamps for it), then the D stamps
-- that left the window and the log's after them.  A check that drops
-- stamps writes D and F in place (SETRANGE) instead of the log without
-- them: O(1) where a log whose every check drops a stamp was rewritten
-- whole.  The dropped ones are gone whatever the clock says later, as
-- if cut.  Composites, groups, refunds and peeks (check.lua, and the
-- client's decoder) read both and skip the D stamps; check.lua writes
-- 0x85.  A log of 2L stamps in all, or written out of order, is
-- written again without the dropped ones: amortised, L appends pay for
-- one rewrite.
--
-- KEYS     the log's key, one.
-- ARGV     check.lua's long form of one key: KIND NOW GRACE 1 5 USABLE
--          W L COST (the rest, if any, unread); NOW "TIME" or decimal ns.
-- Returns  one string: a byte ADMITTED (0 or 1), the live stamps' count
--          C before the check in 2 bytes, the first live stamp F and, on
--          a denial, the stamp K the retry waits for (the k-th live one,
--          k = C + COST - L; else F), 9 bytes each (as stamps), then NOW
--          in decimal; the client (verdict.c) builds the smallest log
--          with the same C, F and K and runs the algorithm on it.  3: a
--          state or an argument this path does not take (the text of
--          earlier versions, a log not as written, a TIME span):
--          check.lua decides it, reading the whole log.
--
-- What it reads: the log's length (STRLEN), its head with its first
-- CH stamps (GETRANGE), its last stamp and K; where F left the window,
-- the CH stamps from it if those lie further on, and the whole log
-- (GET) only when the stamps that left are not all among those, or it
-- is written again.  The stamps between those read are not checked
-- here, nor the head's copy F against its stamp (check.lua's path and
-- the client check every stamp they read, and ignore the copy).

local E9 = 1000000000
local STAMP = '>I5I4'
-- Stamps read with the head; 2L stamps in all at most (with the dropped).
local CH, ALL = 8, 2
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

-- The first of stamps @a .. @n of @v above (th, tl) (n + 1: none),
-- stamp i at byte @o + 9i.  check.lua has the same bisection: two
-- function libraries share no code, and this one must not load
-- check.lua's to read a log.
local function above(v, o, a, n, th, tl)
	local function up(i)
		local h, l = struct.unpack(STAMP, v, o + 9 * i)
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

-- Stamp @i of log @key whose stamp i lies at byte @o + 9i: from @h (the
-- head's read: stamps 1 .. CH), @c (stamps @c0 .. @c0 + CH - 1), else
-- read.
local function stamp(key, h, o, c, c0, i)
	if i <= CH then
		return struct.unpack(STAMP, h, o + 9 * i)
	elseif c and i >= c0 and i < c0 + CH then
		return struct.unpack(STAMP, c, 9 * (i - c0) + 1)
	end
	return struct.unpack(STAMP, redis.call('GETRANGE', key, o + 9 * i - 1,
		o + 9 * i + 7))
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
	-- Stamps 1 .. m in all, d of them dropped, stamp i at byte o + 9i:
	-- in @h (the head's read) up to CH, in @c from c0 to c0 + CH - 1.
	local len = redis.call('STRLEN', key)
	local m, d, o, tag = 0, 0, 6, 149
	local h, c, c0, v = nil, nil, 0, nil
	if len == 0 and redis.call('EXISTS', key) == 1 then
		return 3
	elseif len > 0 then
		h = redis.call('GETRANGE', key, 0, 13 + 9 * CH)
		local l1, l2, d1, d2
		tag, l1, l2, d1, d2 = string.byte(h, 1, 5)
		if not l2 or l1 * 256 + l2 ~= limit then
			return 3
		end
		if tag == 133 then
			o = -5
		elseif tag == 149 and #h >= 14 then
			d = d1 * 256 + d2
		else
			return 3
		end
		m = (len - o - 8) / 9
		if m % 1 ~= 0 or d > m or m - d > limit or m > ALL * limit then
			return 3
		end
	end
	local n, fh, fl, lh, ll = m - d, nil, nil, nil, nil
	if n > 0 then
		-- The first stamp not dropped: its copy in the head (0x95).
		if tag == 133 then
			fh, fl = stamp(key, h, o, c, c0, 1)
		else
			fh, fl = struct.unpack(STAMP, h, 6)
		end
		lh, ll = stamp(key, h, o, c, c0, m)
		if fl >= E9 or ll >= E9 or not gt(HH, HL, lh, ll) or
			gt(fh, fl, lh, ll) then
			return 3
		end
	end
	-- Live: the stamps above NOW - W (all while NOW < W).
	local th, tl = -1, 0
	if not gt(wh, wl, nh, nl) then
		th, tl = minus(nh, nl, wh, wl)
	end
	local live = d + 1
	if n > 0 and not gt(fh, fl, th, tl) then
		-- The first live among the stamps read, else by bisection.
		local top = CH
		live = m + 1
		if d >= CH and gt(lh, ll, th, tl) then
			c0 = d + 1
			c = redis.call('GETRANGE', key, o + 9 * c0 - 1,
				o + 9 * (c0 + CH) - 2)
			top = c0 + CH - 1
		end
		if gt(lh, ll, th, tl) then
			live = d + 2
			while live <= m and live <= top do
				local sh, sl = stamp(key, h, o, c, c0, live)
				if gt(sh, sl, th, tl) then
					break
				end
				live = live + 1
			end
			if live > top and live <= m then
				v = redis.call('GET', key)
				live = above(v, o, live, m, th, tl)
			end
		end
		fh, fl = 0, 0
		if live <= m then
			fh, fl = stamp(key, h, o, c, c0, live)
		end
	end
	local cnt = m - live + 1
	if cnt + cost > limit then
		local k = live + cnt + cost - limit - 1
		local kh, kl = fh, fl
		if k == m then
			kh, kl = lh, ll
		elseif k > live then
			kh, kl = stamp(key, h, o, c, c0, k)
		end
		return answer(0, cnt, fh, fl, kh, kl, nows)
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
	local head = struct.pack('>BI2I2', 149, limit, 0)
	-- Nothing live: a log of the new stamps alone.
	if cnt == 0 then
		m = 0
	end
	if m == 0 then
		redis.call('SET', key, head .. string.sub(new, 1, 9) .. new,
			'PX', ms)
	elseif (tag == 149 and m + cost <= ALL * limit or live == 1) and
		not gt(lh, ll, nh, nl) then
		if live > d + 1 then
			redis.call('SETRANGE', key, 3, struct.pack('>I2', live - 1) ..
				struct.pack(STAMP, fh, fl))
		end
		redis.call('APPEND', key, new)
		redis.call('PEXPIRE', key, ms)
	else
		v = v or redis.call('GET', key)
		local at = above(v, o, live, m, nh, nl)
		local body = string.sub(v, o + 9 * live, o + 9 * at - 1) .. new ..
			string.sub(v, o + 9 * at)
		redis.call('SET', key, head .. string.sub(body, 1, 9) .. body,
			'PX', ms)
	end
	return answer(1, cnt, fh or 0, fl or 0, 0, 0, nows)
end
