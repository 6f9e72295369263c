-- SPDX-License-Identifier: BSD-2-Clause
-- fast.lua - one sliding log's or one sliding window's check on the
-- Redis store without reading the state whole (issue #25: a 4.6 KB log,
-- or a ring of 100 buckets, cost the server more than the rest of a
-- check).  A function library of its own (engine.c), next to
-- check.lua's, with the same states; fast() takes ALG 5 to fastlog()
-- and ALG 4 to fastring().
--
-- Sliding logs: check.lua's (0x85, L in 2 bytes, then the stamps
-- ascending, 9 bytes each), which it reads, and the log it writes
-- itself: 0x95, L, the count D of stamps dropped in 2 bytes, a copy F
-- of the first stamp not dropped (9 bytes: no read of the stamps for
-- it), then the D stamps that left the window and the log's after them.
-- A check that drops stamps writes D and F in place (SETRANGE) instead
-- of the log without them: O(1) where a log whose every check drops a
-- stamp was rewritten whole.  The dropped ones are gone whatever the
-- clock says later, as if cut.  Composites, groups, refunds and peeks
-- (check.lua, and the client's decoder) read both and skip the D
-- stamps; check.lua writes 0x85.  A log of 2L stamps in all, or written
-- out of order, is written again without the dropped ones: amortised,
-- L appends pay for one rewrite.
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
--
-- Sliding windows: check.lua's ring (its sliding(), where the format
-- is), of which a check reads the head {X, H, T} and the buckets
-- whose ticks may have left the window since H (with NOW's: two
-- buckets a check in the steady state), and writes those and the head
-- in place (SETRANGE), the TTL only when H moves: the very bytes
-- check.lua writes.  It takes a ring with X 0 at a tick c at or past H
-- (every count then lies in H - S .. H, so the buckets not read count in
-- full, T less those read); anything else (X 1, a clock stepped back,
-- the text of earlier versions, products past 2^53) is check.lua's.
--
-- KEYS     the ring's key, one.
-- ARGV     check.lua's long form of one key: KIND NOW GRACE 1 4 USABLE
--          w S c START COST LIMIT SLOT; NOW decimal ns or "TIME:LO:HI".
-- Returns  one string: a byte ADMITTED, the counts FULL and OLD of the
--          view (counted in full; the bucket of tick c - S) in 7 bytes
--          each, then NOW in decimal: the client builds the ring of
--          those two buckets and runs the algorithm on it (its decision
--          reads nothing else when no tick lies past c).  {2, NOW}:
--          TIME outside [LO, HI), as check.lua.  3: check.lua decides.
--          The total T, the buckets not read and the ticks of those
--          that left are trusted as written (check.lua, the client's
--          decoder and peeks check them all).

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

-- Texts converted once a library's life, as check.lua's cached(): the
-- arguments that repeat from check to check (a log's W and GRACE; a
-- ring's w, S, GRACE, COST, LIMIT, and within a tick c, START, SLOT and
-- the span) cost a table lookup,
-- where pair() costs the server about 0.7 us.  At most MEMO of them.
local MEMO, memo, held = 4096, {}, 0

-- Keeps @p as what @s means (the memo starts again when full).
local function remember(s, p)
	if held >= MEMO then
		memo, held = {}, 0
	end
	memo[s], held = p, held + 1
	return p
end

-- @s as {hi, lo} (pair()), or false.
local function known(s)
	local p = memo[s]
	if p == nil then
		local hi, lo = pair(s)
		p = remember(s, lo and { hi, lo } or false)
	end
	return p
end

-- "TIME:LO:HI" as {lo hi, lo lo, hi hi, hi lo}, or false.
local function span(s)
	local p = memo[s]
	if p == nil then
		local lo, hi = string.match(s, '^TIME:(%d+):(%d+)$')
		local a, b = known(lo or ''), known(hi or '')
		p = remember(s, a and b and { a[1], a[2], b[1], b[2] } or false)
	end
	return p
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
	local w, g = known(ARGV[7] or ''), known(ARGV[3] or '')
	local limit, cost = tonumber(ARGV[8]), tonumber(ARGV[9])
	if #KEYS ~= 1 or ARGV[4] ~= '1' or ARGV[5] ~= '5' or
		ARGV[6] ~= '1' or not (w and g and limit and cost) or
		limit > 512 or cost > limit or cost % 1 ~= 0 then
		return 3
	end
	local wh, wl, gh, gl = w[1], w[2], g[1], g[2]
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

-- A ring's head past its first 11 bytes {X, H, T}, and a bucket {tick,
-- count}: bucket j (from 0) at byte 29 + 16j.
local SWT, REC = '>BI5I4I7', '>I5I4I7'

-- A bucket's tick; the format of @n buckets {tick as one number, its
-- digits lost, count} (two values where three cost the server more),
-- made once each; an empty bucket (made at the first call: a
-- library's loading code may not call string).
local TICK, COUNTS, Z16 = '>I5I4', {}, nil
local function counts(n)
	local f = COUNTS[n]
	if not f then
		f = '>' .. string.rep('I9I7', n)
		COUNTS[n] = f
	end
	return f
end

-- Buckets @a .. @a + @k - 1 of @s + 1 (from 0, around the ring) of
-- ring @key: read, or written from @put.
local function buckets(key, a, k, s, put)
	local first = math.min(k, s + 1 - a)
	if put then
		redis.call('SETRANGE', key, 28 + 16 * a, put:sub(1, 16 * first))
		if first < k then
			redis.call('SETRANGE', key, 28, put:sub(16 * first + 1))
		end
		return nil
	end
	local v = redis.call('GETRANGE', key, 28 + 16 * a,
		27 + 16 * (a + first))
	if first < k then
		v = v .. redis.call('GETRANGE', key, 28, 27 + 16 * (k - first))
	end
	return v
end

-- TIME's microseconds as the nanoseconds' last nine digits (no format).
local PAD = { '00000', '0000', '000', '00', '0', '' }

local function fastring(KEYS, ARGV)
	local key, nows = KEYS[1], ARGV[2]
	local w, c, st, g = known(ARGV[7] or ''), known(ARGV[9] or ''),
		known(ARGV[10] or ''), known(ARGV[3] or '')
	local sp, co, li, so = known(ARGV[8] or ''), known(ARGV[11] or ''),
		known(ARGV[12] or ''), known(ARGV[13] or '')
	if #KEYS ~= 1 or ARGV[4] ~= '1' or ARGV[6] ~= '1' or
		not (w and c and st and g and sp and co and li and so) or
		sp[1] > 0 or sp[2] < 1 or sp[2] > 100 or so[1] > 0 or
		so[2] > sp[2] or li[1] * E9 + li[2] > 2 ^ 48 or
		co[1] * E9 + co[2] > li[1] * E9 + li[2] then
		return 3
	end
	local wh, wl, ch, cl, gh, gl = w[1], w[2], c[1], c[2], g[1], g[2]
	local s, r = sp[2], so[2]
	local cost, limit = co[1] * E9 + co[2], li[1] * E9 + li[2]
	local nh, nl = pair(nows)
	if not nl then
		local h = span(nows)
		if not h then
			return 3
		end
		if redis.replicate_commands then
			redis.replicate_commands()
		end
		local t = redis.call('TIME')
		nh, nl = tonumber(t[1]), tonumber(t[2]) * 1000
		nows = t[1] .. PAD[#t[2]] .. t[2] .. '000'
		if gt(h[1], h[2], nh, nl) or not gt(h[3], h[4], nh, nl) then
			return { 2, nows }
		end
	end
	-- e = NOW - START, in [0, w) for the arguments to hold.
	local eh, el = minus(nh, nl, st[1], st[2])
	if nh >= HH or eh < 0 or not gt(wh, wl, eh, el) then
		return 3
	end
	local size, len = 28 + 16 * (s + 1), redis.call('STRLEN', key)
	local x, hh, hl, t = 0, ch, cl, 0
	if len == 0 and redis.call('EXISTS', key) == 1 then
		return 3
	elseif len > 0 then
		local tag, bs, vh, vl
		if len ~= size then
			return 3
		end
		tag, bs, vh, vl, x, hh, hl, t = struct.unpack('>BBI5I4' ..
			SWT:sub(2), redis.call('GETRANGE', key, 0, 27))
		if tag ~= 132 or bs ~= s or vh ~= wh or
			vl ~= wl or hl >= E9 or t >= 2 ^ 48 then
			return 3
		end
		if t == 0 then
			x, hh, hl = 0, ch, cl
		end
	end
	-- A tick less c; H at or below it.
	local function d(th, tl)
		return (th - ch) * E9 + tl - cl
	end
	local dh = d(hh, hl)
	if x ~= 0 or dh > 0 then
		return 3
	end
	-- The buckets of ticks c - S down to H - S (around the ring from
	-- slot r + 1 down), and c's (slot r): k of them, a the first slot.
	Z16 = Z16 or string.rep(string.char(0), 16)
	local k = math.min(s, -dh) + 1
	local n1 = math.max(k, 2)
	local a = (r + 2 - n1) % (s + 1)
	local v = len > 0 and buckets(key, a, n1, s) or Z16:rep(n1)
	if #v ~= 16 * n1 then
		return 3
	end
	-- The counts, by one unpack: bucket i from a (from 1) at u[2i];
	-- slot r + 1 at u[2n1], r at u[2n1 - 2].  With X 0 a count in the
	-- bucket of m ticks before c - S is of tick c - S - m (H - S is the
	-- lowest a count has), so only slot r + 1's tick is read: c - S, or
	-- one that left (c - H > S).
	local u = { struct.unpack(counts(n1), v) }
	local old, gone, first, last = 0, 0, n1 - k + 1, n1 - 1
	if u[2 * n1] > 0 then
		local th, tl = struct.unpack(TICK, v, 16 * n1 - 15)
		local y = d(th, tl)
		if tl >= E9 or y > -s then
			return 3
		elseif y == -s then
			old = u[2 * n1]
		else
			last = n1
		end
	end
	-- Buckets first .. last left the window (emptied as they are written).
	for i = first, last do
		gone = gone + u[2 * i]
	end
	local full = t - old - gone
	if full < 0 then
		return 3
	end
	-- Admitted iff (FULL + COST) * w + OLD * (w - e) <= LIMIT * w: with
	-- room = LIMIT - FULL - COST, iff room >= 0 and OLD <= room or
	-- (OLD - room) * w <= OLD * e, exact in doubles below 2^53.
	local room, wd = limit - full - cost, wh * E9 + wl
	local ok = room >= 0
	if ok and old > room then
		if old * wd >= 2 ^ 53 then
			return 3
		end
		ok = (old - room) * wd <= old * (eh * E9 + el)
	end
	local reply = struct.pack('>BI7I7', ok and 1 or 0, full, old) .. nows
	if not ok then
		return reply
	end
	-- c's bucket: this tick's, or a later one in its slot, gets COST.
	local th, tl = struct.unpack(TICK, v, 16 * n1 - 31)
	-- (A count of c - S - 1 there left: a tick below c, so replaced.)
	local n = u[2 * n1 - 2]
	local y = d(th, tl)
	if tl >= E9 or n > t then
		return 3
	elseif y == 0 or (y > 0 and n > 0) then
		n = n + cost
	else
		th, tl, n = ch, cl, cost
	end
	local rec = struct.pack(REC, th, tl, n)
	local head = struct.pack(SWT, 0, ch, cl, t - gone + cost)
	-- The ring expires at (c + 1 + S) * w: exact below 2^53 ns, else a
	-- double within 2^11 ns, one ms more (as check.lua).
	local ttl = (1 + s) * wd - (eh * E9 + el) + gh * E9 + gl
	ttl = ttl < 2 ^ 53 and (ttl - math.fmod(ttl, 1000000)) / 1000000 + 1 or
		math.floor(ttl / 1000000) + 2
	if len == 0 then
		redis.call('SET', key, struct.pack('>BBI5I4', 132, s, wh, wl) ..
			head .. Z16:rep(r) .. rec .. Z16:rep(s - r), 'PX', ttl)
		return reply
	end
	redis.call('SETRANGE', key, 11, head)
	-- The buckets read, those that left emptied, and c's.
	local out = {}
	for i = 1, n1 do
		out[i] = i == n1 - 1 and rec or
			i >= first and i <= last and u[2 * i] > 0 and Z16 or
			v:sub(16 * i - 15, 16 * i)
	end
	buckets(key, a, n1, s, table.concat(out))
	-- Within H's tick the TTL a write at it gave stands.
	if dh < 0 or t == 0 then
		redis.call('PEXPIRE', key, ttl)
	end
	return reply
end

local function fast(KEYS, ARGV)
	if ARGV[5] == '4' then
		return fastring(KEYS, ARGV)
	end
	return fastlog(KEYS, ARGV)
end
