-- SPDX-License-Identifier: BSD-2-Clause
-- check.lua - one check on the Redis store, atomically: read the
-- states of a check's keys (one per dimension of a composite or group),
-- decide, write the new states with their TTLs.  The client recomputes
-- the decision from the states read here with the algorithms themselves
-- and checks that they agree, so decisions are the local stores' bit for
-- bit.
--
-- KEYS     the states, one per dimension.
-- ARGV     KIND NOW GRACE N (NOW "TIME": the server's clock; "TIME:LO:HI":
--          the server's clock if it lies in [LO, HI), the span in which
--          the arguments, computed at an estimate of it, hold), then for
--          each of the N dimensions ALG USABLE
--          and seven arguments of its algorithm (unused ones 0); all numbers are decimal
--          integers (ns, units).  KIND "all": admitted iff every dimension
--          admits, and then every state is written; "any": admitted iff
--          one does, and the states of those that admit are written.
--          USABLE 0: the dimension can never admit this cost (-ERANGE),
--          so it counts as not admitting.  A check of one key that can
--          admit, of ALG 1, 2, 3, 6 or 7, may come short: NOW GRACE ALG
--          and the ALG's arguments but the trailing zeros (7 or 8 in all).
-- Returns  {admitted 0 or 1, the N old values (nil: none), the N new
--          values (nil: not written), NOW} (the fast paths: that as one
--          string, fast()); {2, NOW} when NOW "TIME:LO:HI"
--          lies outside [LO, HI) (nothing read or written: the client
--          sends the check again at that NOW); an error reply "TKPROTO ..." for a
--          state of another algorithm or policy, or a value the library
--          did not write.
--
-- One-word policies (ALG 1 gcra, 2 token-bucket, 7 leaky): the value is
-- WORD, the TAT or departure time, in 10 bytes (MARK and WORD below: one
-- struct call reads or writes it); the text "ALG:WORD" of earlier
-- versions is read too, and written again in 10 bytes.  Arguments INC AHEAD LIMIT
-- VALID -: base = max(WORD, NOW); admitted iff base + AHEAD - NOW <=
-- LIMIT, and WORD becomes base + INC.  gcra: AHEAD = INC = T * cost,
-- LIMIT = tau; leaky: AHEAD = 0, INC = T * cost, LIMIT = max-queue.  A
-- WORD at or past 2^63 + VALID is no check's (the algorithm's valid()):
-- no state.  The state expires at WORD.
--
-- Windows (ALG 3 fixed-window, 6 quota): the value is {ALG, POLICY,
-- START, END, COUNT}, POLICY naming the policy's windows (the width of
-- a fixed window, a fingerprint of a quota's calendar), in 37 bytes
-- (WIN below: one struct call reads or writes it); the text
-- "ALG:POLICY:START:END:COUNT" of earlier versions is read too, and
-- written again in 37 bytes.
-- Arguments POLICY WS WE COST LIMIT, [WS, WE) the window of NOW: the
-- state's window counts if it is later (a clock stepped back never
-- reopens a window early), else NOW's, with the state's COUNT if it is
-- that window, else 0; admitted iff count + COST <= LIMIT, and the state
-- becomes that window with count + COST.  A state of another POLICY is
-- another policy's.  The state expires at the window's end (GRACE
-- added, as every state's), which a write in the same window keeps.
--
-- Sliding logs (ALG 5): the value is binary, 3 + 9n bytes: a byte 133
-- (0x80 + 5), L in 2 bytes, then the n <= L stamps of the units counted,
-- ascending, each as WORD's hi and lo (5 and 4 bytes, big-endian;
-- struct '>BI2' then n times '>I5I4'); the text "5:L:T1:...:Tn" of
-- earlier versions is read too (parsed once, checked stamp by stamp),
-- and written again in binary.  Arguments W L COST - -: the stamps with
-- T + W > NOW are live; admitted iff live + COST <= L, and the state
-- becomes the live stamps with COST stamps of NOW inserted in order.  A
-- check reads only the stamps it needs (bisections, O(log L) struct
-- calls) and copies the rest as bytes: no stamp is parsed.  A state of
-- another L is another policy's.  It expires at its last stamp plus W.
-- A log fast.lua wrote (0x95: 149, L, a count D of stamps dropped, a
-- stamp, the D stamps, then the log's) is read as the log without the D
-- stamps (undrop()).
--
-- Sliding windows (ALG 4): the value is binary, 28 + 16(S + 1) bytes: a
-- byte 132 (0x80 + 4), S in 1 byte, w (hi, lo as WORD), X in 1 byte, the
-- high tick H (hi, lo) and the total T of the counts in 7 bytes, then the
-- ring of S + 1 buckets {tick (hi, lo), count in 7 bytes} (struct SWH,
-- SWT and REC below); the text "4:S:w:T0:N0:...:TS:NS" of earlier
-- versions is read too (parsed once) and written again in binary.
-- Arguments w S c START COST LIMIT SLOT, with c = floor(NOW / w), START
-- = c * w and SLOT = c mod (S + 1): buckets of ticks c - S + 1 and later
-- count in full, the bucket of tick c - S for (w - e) / w of its count, e
-- = NOW - START; admitted iff (full + COST) * w + old * (w - e) <= LIMIT
-- * w (products below 2^111, compared in limbs of 10^7), and then the
-- buckets that count nothing are emptied and COST is added to the bucket
-- of tick c (or to a later one in its slot).  A check reads only the
-- buckets whose ticks left the window since H and NOW's (sliding()): no
-- bucket is parsed.  A state of another S or w is another policy's.  It
-- expires at (H + 1 + S) * w.  fast.lua decides one ring's check alone
-- (X 0, c at or past H) in place, writing these very bytes.
--
-- Refund (xslot.c: an all() over keys of several cluster slots
-- that one slot refused gives back what the others consumed):
-- ARGV "refund" N, then for each of the N KEYS: PRE (the state the
-- consume read, "" for none), POST (the state it wrote), COST, NOW (the
-- time it decided at) and SLOT (a sliding window's bucket, as its check
-- argument; 0 otherwise).  A key whose state is still POST gets PRE back
-- (compare-and-restore: exactly as if the consume had not been).  A key
-- written since keeps those writes, and loses only what this consume
-- added, where that is exact because counts commute and admission only
-- grows as they shrink: a window (ALG 3, 6) still in POST's window (the
-- same START: a later window holds none of this check's units) with COST
-- or more gets COST back from its count; a sliding log (ALG 5) of
-- POST's limit (binary, as written now) loses COST of its stamps equal
-- to NOW (the ones the consume added, or others' of the same time: the same log), if COST of
-- them are still there; a sliding window (ALG 4, binary) of POST's buckets
-- whose bucket SLOT still holds POST's tick (a bucket reused for a later
-- tick holds none of this check's units) with COST or more gets COST
-- back from it.  A
-- state left counting nothing is deleted (no state: the same decisions).
-- Any other state is left as it is (the consume stays: fewer admitted,
-- never more).  Returns, per key, 1 restored, 2 given back, 0 left.
--
-- Lua 5.1 numbers are doubles, exact only below 2^53, and these values
-- reach 2^64.  So every number is a pair {hi, lo} = hi * 10^9 + lo with
-- 0 <= lo < 10^9: parsed by splitting off the last nine digits, and only
-- added, subtracted and compared, which keeps both halves exact.

-- The library calls these most: as locals they are both shorter, which
-- keeps the script under its 16 KB, and cheaper than a global's lookup.
-- check() sets them on its first call: a function library's load sees
-- no string or struct.
local ssub, pk, upk, tn, smatch, sfmt, sbyte, floor

local E9 = 1000000000
-- What a state of another algorithm or policy (or none written) gets,
-- and arguments no client sends.
local OTHER, BAD = 'state of another algorithm or policy', 'bad arguments'

local function num(s)
	if not s or #s == 0 or #s > 20 or s:find('%D') then
		return nil
	end
	if #s <= 9 then
		return { 0, tn(s) }
	end
	local n = { tn(s:sub(1, #s - 9)), tn(s:sub(#s - 8)) }
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
		return sfmt('%d', a[2])
	end
	return sfmt('%d%09d', a[1], a[2])
end

local function max(a, b)
	return cmp(a, b) < 0 and b or a
end

-- 2^63: every time in a state lies below it.
local HALF = { 9223372036, 854775808 }

-- A one-word state as written: 10 bytes, struct WORD {MARK[ALG], hi,
-- lo} (hi * 10^9 + lo); read also as the text "ALG:WORD" of earlier
-- versions.
local MARK, WORD = { ['1'] = 129, ['2'] = 130, ['7'] = 135 }, '>BI5I4'

-- The one-word state @value of @alg as a pair; nil: not one.
local function word_of(alg, value)
	if #value == 10 and sbyte(value) >= 128 then
		local m, hi, lo = upk(WORD, value)
		return m == MARK[alg] and lo < E9 and num(str({ hi, lo })) or nil
	end
	local id, word = smatch(value, '^(%d+):(%d+)$')
	return id == alg and num(word) or nil
end

-- A dimension's decision on @value (nil: none): admitted, the new value,
-- and when that expires; or nil and why the state is not this policy's.
local function one_word(alg, value, now, arg)
	local inc, ahead, limit, valid = arg[1], arg[2], arg[3], arg[4]
	local base = now
	if value then
		local old = word_of(alg, value)
		if not old then
			return nil, 'state of another algorithm'
		end
		if cmp(old, HALF) < 0 or cmp(sub(old, HALF), valid) < 0 then
			base = max(old, now)
		end
	end
	if cmp(sub(add(base, ahead), now), limit) > 0 then
		return false
	end
	local new = add(base, inc)
	return true, pk(WORD, MARK[alg], new[1], new[2]), new
end

-- A window as written: WIN {MARK, POLICY, START, END, COUNT}, MARK 0x80
-- + ALG (alg:byte() + 80), each number a pair as WORD's: 37 bytes, the
-- first 28 its window's HEAD, the same for every check in it.
local WIN = '>BI5I4I5I4I5I4I5I4'

-- The number hi * 10^9 + lo of a WIN field as num() parses one (at most
-- 2^64 - 1); false for lo of 10^9 or more, which no pair holds.
local function pairnum(hi, lo)
	return lo < E9 and num(str({ hi, lo }))
end

-- The fields ALG POLICY START END COUNT of window state @v, binary or
-- text (numbers as pairs, false or nil where not one).
local function fields(v)
	if #v == 37 and v:byte() >= 128 then
		local m, a, b, c, d, e, f, g, h = upk(WIN, v)
		return tostring(m - 128), pairnum(a, b), pairnum(c, d),
			pairnum(e, f), pairnum(g, h)
	end
	local id, vp, vs, ve, vc =
		smatch(v, '^(%d+):(%d+):(%d+):(%d+):(%d+)$')
	return id, num(vp), num(vs), num(ve), num(vc)
end

local function window(alg, value, now, arg)
	local policy, start, stop, cost, limit = arg[1], arg[2], arg[3], arg[4],
		arg[5]
	local count = { 0, 0 }
	if value then
		local id, sp, ss, se, sc = fields(value)
		if id ~= alg or not (sp and ss and se and sc) or
			cmp(sp, policy) ~= 0 or cmp(ss, HALF) >= 0 or
			cmp(se, ss) <= 0 or
			(alg == '3' and cmp(sub(se, ss), sp) ~= 0) then
			return nil, OTHER
		end
		if cmp(ss, start) > 0 then
			start, stop = ss, se
		end
		if cmp(ss, start) == 0 then
			count = sc
		end
	end
	count = add(count, cost)
	if cmp(count, limit) > 0 then
		return false
	end
	return true, pk(WIN, alg:byte() + 80, policy[1], policy[2],
		start[1], start[2], stop[1], stop[2], count[1], count[2]), stop
end

-- A sliding log as written: LOGH {133 (0x80 + 5), L}, then its stamps
-- ascending, each STAMP {hi, lo} (hi * 10^9 + lo, as WORD): stamp i
-- (from 1) at byte 9i - 5, so 3 + 9n bytes for n stamps.
local LOGH, STAMP = '>BI2', '>I5I4'

local function stamp(v, i)
	return upk(STAMP, v, 9 * i - 5)
end

-- The first of stamps @a .. @n of log @v above the pair @t (n + 1: none),
-- by bisection (the stamps ascend); the first and the last are looked at
-- first, which settles a log whose stamps are all live or all past.
local function above(v, a, n, t)
	local function gt(i)
		local hi, lo = stamp(v, i)
		return hi > t[1] or (hi == t[1] and lo > t[2])
	end
	if a > n or gt(a) then
		return a
	end
	if not gt(n) then
		return n + 1
	end
	local b = n
	while b - a > 1 do
		local m = floor((a + b) / 2)
		if gt(m) then
			b = m
		else
			a = m
		end
	end
	return b
end

-- A log in the text of earlier versions, "5:L:T1:...:Tn", as written now;
-- nil: not a log of @limit (at most L stamps, ascending, below 2^63).
local function log_text(value, limit)
	local id, l, rest = smatch(value, '^(%d+):(%d+)(.*)$')
	if id ~= '5' or not num(l) or cmp(num(l), limit) ~= 0 or
		string.gsub(rest, ':%d+', '') ~= '' then
		return nil
	end
	local out, last = { pk(LOGH, 133, limit[2]) }, nil
	for t in string.gmatch(rest, ':(%d+)') do
		local v = num(t)
		if not v or #out > limit[2] or cmp(v, HALF) >= 0 or
			(last and cmp(v, last) < 0) then
			return nil
		end
		out[#out + 1], last = pk(STAMP, v[1], v[2]), v
	end
	return table.concat(out)
end

-- A log as fast.lua writes it: 149 (0x95), L, the count D of stamps
-- dropped (2 bytes), a copy of the first stamp not dropped, then the D
-- stamps and the rest; as written here.
-- More dropped than there are: '', no log.  (Too short: a Lua error.)
local function undrop(v)
	if v and sbyte(v) == 149 then
		local o = 15 + 9 * upk('>I2', v, 4)
		return o > #v + 1 and '' or pk('B', 133) .. ssub(v, 2, 3) .. ssub(v, o)
	end
	return v
end

-- Only the stamps a decision needs are read: the first and last (which
-- must be below 2^63, in order) and a bisection's; the client checks the
-- whole log it gets back (scripts.c) and refuses one out of order.
local function log(alg, value, now, arg)
	local w, limit, cost = arg[1], arg[2], arg[3]
	local head = pk(LOGH, 133, limit[2])
	local v, n = head, 0
	value = undrop(value)
	if value then
		v = sbyte(value) == 133 and value or log_text(value, limit)
	end
	if v then
		n = (#v - 3) / 9
	end
	if not v or n % 1 ~= 0 or n > limit[2] or ssub(v, 1, 3) ~= head then
		return nil, OTHER
	end
	if n > 0 then
		local fh, fl = stamp(v, 1)
		local lh, ll = stamp(v, n)
		if fl >= E9 or ll >= E9 or cmp({ lh, ll }, HALF) >= 0 or
			cmp({ fh, fl }, { lh, ll }) > 0 then
			return nil, OTHER
		end
	end
	-- Live: stamps above NOW - W (all of them while NOW < W).
	local live = 1
	if cmp(now, w) >= 0 then
		live = above(v, 1, n, sub(now, w))
	end
	-- Counts and costs are at most L <= 512: plain numbers.
	if n - live + 1 + cost[2] > limit[2] or cost[1] ~= 0 then
		return false
	end
	local at, last = above(v, live, n, now), now
	if at <= n then
		local hi, lo = stamp(v, n)
		last = { hi, lo }
	end
	return true, head .. ssub(v, 9 * live - 5, 9 * at - 6) ..
		string.rep(pk(STAMP, now[1], now[2]), cost[2]) ..
		ssub(v, 9 * at - 5), add(last, w)
end

-- Numbers of any size as arrays of base 10^7 limbs, least significant
-- first: products of two limbs stay below 2^53.
local L7 = 10000000

local function big(s)
	local b, i = {}, #s
	while i > 0 do
		b[#b + 1] = tn(s:sub(math.max(1, i - 6), i))
		i = i - 7
	end
	return b
end

local function bigmul(a, b)
	local r = {}
	for i = 1, #a + #b do
		r[i] = 0
	end
	for i = 1, #a do
		local carry = 0
		for j = 1, #b do
			local t = r[i + j - 1] + a[i] * b[j] + carry
			carry = floor(t / L7)
			r[i + j - 1] = t - carry * L7
		end
		local k = i + #b
		while carry > 0 do
			local t = r[k] + carry
			carry = floor(t / L7)
			r[k] = t - carry * L7
			k = k + 1
		end
	end
	return r
end

local function bigcmp(a, b)
	for i = math.max(#a, #b), 1, -1 do
		local x, y = a[i] or 0, b[i] or 0
		if x ~= y then
			return x < y and -1 or 1
		end
	end
	return 0
end

-- A sliding window as written: SWH {132 (0x80 + 4), S, w}, SWT {X, H,
-- T} (28 bytes), then the S + 1 buckets, REC {tick, count}, bucket j
-- (from 0) at byte 29 + 16j.
local SWH, SWT, REC = '>BBI5I4', '>BI5I4I7', '>I5I4I7'
-- @n zero bytes (a library's loading code may not call string).
local function zeros(n)
	return string.rep(string.char(0), n)
end

-- @v as a sliding window of @s buckets of width @w, as written now; nil:
-- not one.  The text of earlier versions is parsed once (counts at most
-- 2^48, as valid()), and marked X = 1: its ticks are looked at all once.
local function ring(v, s, w)
	local head, len = pk(SWH, 132, s, w[1], w[2]), 28 + 16 * (s + 1)
	if not v then
		return head .. zeros(len - 11)
	end
	if sbyte(v) == 132 then
		return #v == len and ssub(v, 1, 11) == head and v or nil
	end
	local id, vs, vw, rest = smatch(v, '^(%d+):(%d+):(%d+)(.*)$')
	if id ~= '4' or not (num(vs) and num(vw)) or
		cmp(num(vs), { 0, s }) ~= 0 or cmp(num(vw), w) ~= 0 or
		string.gsub(rest, ':%d+:%d+', '') ~= '' then
		return nil
	end
	local out, t = { head, '' }, 0
	for a, b in string.gmatch(rest, ':(%d+):(%d+)') do
		local x, n = num(a), num(b)
		if not (x and n) or cmp(n, { 281474, 976710656 }) > 0 then
			return nil
		end
		n = n[1] * E9 + n[2]
		out[#out + 1], t = pk(REC, x[1], x[2], n), t + n
	end
	if #out ~= s + 3 then
		return nil
	end
	out[2] = pk(SWT, 1, 0, 0, t)
	return table.concat(out)
end

-- @v with its bucket at byte @o replaced by @rec.
local function put_rec(v, o, rec)
	return ssub(v, 1, o - 1) .. rec .. ssub(v, o + 16)
end

-- X 0: every bucket with a count holds a tick of H - S .. H, and T is
-- the sum of the counts.  So at tick c >= H only the buckets of ticks
-- H - S .. c - S can count in part or nothing (at most S + 1, and as
-- many as the ticks gone by since H: amortised O(1)), and none at c < H;
-- the rest count in full, T less those.  X 1 (a clock stepped back by
-- more than the window, or text): every bucket is looked at, and X
-- becomes 0 again when the counts lie within S ticks of the highest.
local function sliding(value, now, arg, grace)
	local w, s, c, cost, limit = arg[1], arg[2], arg[3], arg[5], arg[6]
	-- S <= 100 and SLOT <= S (the client's); NOW in tick c.
	local r, e = arg[7][2], cmp(now, arg[4]) >= 0 and sub(now, arg[4])
	if not e or cmp(e, w) >= 0 then
		return nil, BAD
	end
	s = s[2]
	local v = ring(value, s, w)
	if not v then
		return nil, OTHER
	end
	-- A tick less c: exact within 10^9 ticks, and its sign always.
	local function d(hi, lo)
		return (hi - c[1]) * E9 + lo - c[2]
	end
	local x, hh, hl, t = upk(SWT, v, 12)
	if t == 0 then
		x, hh, hl = 0, c[1], c[2]
	end
	local dh, old, gone = d(hh, hl), 0, 0
	local k = x == 1 and s + 1 or math.max(0, math.min(s, -dh) + 1)
	for m = 0, k - 1 do
		local o = 29 + 16 * ((r + 1 - m) % (s + 1))
		local th, tl, n = upk(REC, v, o)
		local y = d(th, tl)
		if n > 0 and y == -s then
			old = old + n
		elseif n > 0 and y < -s then
			gone = gone + n
			v = put_rec(v, o, zeros(16))
		end
	end
	-- Admitted iff (full + COST) * w + old * (w - e) <= LIMIT * w: with
	-- room = LIMIT - full - COST, iff room >= 0 and old <= room or
	-- (old - room) * w <= old * e (products below 2^111: limbs).
	local cn = cost[1] * E9 + cost[2]
	local room = limit[1] * E9 + limit[2] - (t - old - gone + cn)
	if room < 0 or (old > room and bigcmp(bigmul(big(sfmt('%d',
		old - room)), big(str(w))), bigmul(big(sfmt('%d', old)),
		big(str(e)))) > 0) then
		return false
	end
	local o = 29 + 16 * r
	local th, tl, n = upk(REC, v, o)
	local y = d(th, tl)
	if y == 0 or (y > 0 and n > 0) then
		n = n + cn
	else
		th, tl, n, y = c[1], c[2], cn, 0
	end
	v, t = put_rec(v, o, pk(REC, th, tl, n)), t - gone + cn
	if x == 0 and dh <= 0 then
		hh, hl = c[1], c[2]
	elseif x == 0 and y == 0 and n > 0 and dh > s then
		x = 1
	end
	if x == 1 then
		hh, hl, x = c[1], c[2], 0
		for j = 0, 2 * s + 1 do
			th, tl, n = upk(REC, v, 29 + 16 * (j % (s + 1)))
			y = (th - hh) * E9 + tl - hl
			if n > 0 and j <= s and y > 0 then
				hh, hl = th, tl
			elseif n > 0 and j > s and y < -s then
				x = 1
			end
		end
	end
	-- The state expires at (H + 1 + S) * w.  A TTL below 2^53 ns is
	-- exact; one above is a double within 2^11 ns, one more ms.
	local ttl = (d(hh, hl) + 1 + s) * (w[1] * E9 + w[2]) -
		(e[1] * E9 + e[2]) + grace[1] * E9 + grace[2]
	ttl = ttl < 2 ^ 53 and (ttl - math.fmod(ttl, 1000000)) / 1000000 + 1 or
		floor(ttl / 1000000) + 2
	return true, ssub(v, 1, 11) .. pk(SWT, x, hh, hl, t) ..
		ssub(v, 29), ttl
end

-- Fast paths for the one-word and window policies (issue #25: every
-- string operation costs the server a tenth of a microsecond or more):
-- - Numbers are plain doubles or two locals hi, lo (hi * 10^9 + lo),
--   never tables; decisions are taken on differences from NOW, exact
--   while below 2^53.
-- - A one-word state is 10 bytes (one_word()), read and written by one
--   struct call each; a window state in NOW's window is its HEAD, made
--   once a window from the arguments the client names (head_of()), and
--   its count, read and written by one struct call each.
-- - A fast path answers nil for anything else (a value of 10^14 or more,
--   a time at or past 2^63, a state spelt otherwise than the library
--   writes it, of another window or policy), and the general code
--   decides: it stays the one reference for every edge.
-- - Measured per call on the server's CPU (Redis 7.0): tonumber() 0.15
--   us, string.sub 0.08, string.format 0.23, a pattern match 0.26,
--   struct.pack or unpack 0.11, TIME 0.65, GET 0.3, SET PX 1.2 (0.8
--   with the TTL as text, 0.5 with KEEPTTL), a function call 0.02.  So
--   arguments that repeat (GRACE, INC, LIMIT, COST, a window, a span)
--   are converted once (cnum(), head_of(), cached()).

-- @s below 10^15 as a number; nil otherwise.
local function small(s)
	if #s > 15 then
		return nil
	end
	return tn(s)
end

-- @s below 10^19 as hi, lo; nil otherwise.
local function pair(s)
	local k = #s
	if k <= 9 then
		return 0, tn(s)
	elseif k > 19 then
		return nil
	end
	return tn(s:sub(1, k - 9)), tn(s:sub(k - 8))
end

-- f(@s) of an argument that repeats from check to check: a table lookup
-- costs a tenth of a conversion.  A function library keeps the tables
-- from call to call; each is emptied at 256 entries.
local memo = {}
local function cached(f, s)
	local m = memo[f]
	if not m or m.n == 256 then
		m = { n = 0 }
		memo[f] = m
	end
	local v = m[s]
	if v == nil then
		v = { f(s) }
		m[s], m.n = v, m.n + 1
	end
	return v[1], v[2]
end

-- cached(small, @s) at half the cost (0.05 us): GRACE, INC, AHEAD,
-- LIMIT and COST come with every check.
local known, nknown = {}, 0
local function cnum(s)
	local v = known[s]
	if v then
		return v
	end
	v = small(s)
	if v then
		if nknown == 256 then
			known, nknown = {}, 0
		end
		known[s], nknown = v, nknown + 1
	end
	return v
end

-- The TTL in ms of a state @t ns past NOW (0 <= t < 2^53), GRACE
-- included: floor(t / 10^6) + 1, as the general code (math.fmod is
-- exact, the floor of a quotient is not); as text, which SET takes for
-- 0.25 us less than a number (Redis formats a number with %.17g), and
-- which repeats (a window's end, a TAT just ahead of NOW).
local function fast_ms(t)
	return cached(tostring, (t - math.fmod(t, 1000000)) / 1000000 + 1)
end

-- one_word() for arguments INC AHEAD LIMIT below 10^15 and a WORD
-- below 2^63 within 46 days of NOW.
local function fast_word(alg, value, ARGV, at, nhi, nlo, g)
	-- known[], as cnum() would answer, without a call on a hit (as
	-- in fast_window() and fast()).
	local x, y, z = ARGV[at + 3], ARGV[at + 4], ARGV[at + 5]
	local inc, ahead, limit = known[x] or cnum(x), known[y] or cnum(y),
		known[z] or cnum(z)
	local mark = MARK[alg]
	if not (inc and ahead and limit) then
		return nil
	end
	-- base - NOW: below 4 * 10^15 + 10^9, so base + AHEAD - NOW,
	-- NOW's nanoseconds + base - NOW + INC and the TTL stay below 2^53.
	local b = 0
	if value then
		if #value ~= 10 then
			return nil
		end
		local m, ohi, olo = upk(WORD, value)
		local dh = ohi - nhi
		if m ~= mark or olo >= E9 or ohi >= 9223372036 or
			dh >= 4000000 or dh <= -4000000 then
			return nil
		end
		local d = dh * E9 + (olo - nlo)
		if d > 0 then
			b = d
		end
	end
	if b + ahead > limit then
		return false
	end
	local s = nlo + b + inc
	local lo = math.fmod(s, E9)
	-- The state expires at base + INC, b + INC past NOW.
	return true, pk(WORD, mark, nhi + (s - lo) / E9, lo),
		fast_ms(b + inc + g)
end

-- The HEAD of a state of the window [@ws, @we) of @alg and policy @p
-- (WIN's first 28 bytes), and @we as hi, lo; made once a window.
local heads, nheads = {}, 0
local function head_of(alg, p, ws, we)
	local h = heads[ws]
	if h and h[1] == p and h[2] == we and h[3] == alg then
		return h[4], h[5], h[6]
	end
	local a, s, e = num(p), num(ws), num(we)
	if not (a and s and e) then
		return nil
	end
	if nheads == 256 then
		heads, nheads = {}, 0
	end
	h = { p, we, alg, pk(WIN, alg:byte() + 80, a[1], a[2], s[1],
		s[2], e[1], e[2], 0, 0):sub(1, 28), e[1], e[2] }
	heads[ws], nheads = h, nheads + 1
	return h[4], h[5], h[6]
end

-- window() for COST and LIMIT below 10^15, a count below 10^14, a state
-- in NOW's window (or none) ending within 46 days of NOW.  With @keep,
-- a state in NOW's window is written again keeping its TTL (ms nil:
-- SET KEEPTTL, 0.3 us less than PX, Redis 6 and later): a write in the
-- window set it to END + GRACE, as this one would.
local function fast_window(alg, value, ARGV, at, nhi, nlo, g, keep)
	local x, y = ARGV[at + 6], ARGV[at + 7]
	local cost, limit = known[x] or cnum(x), known[y] or cnum(y)
	local head, ehi, elo = head_of(alg, ARGV[at + 3], ARGV[at + 4],
		ARGV[at + 5])
	-- Below 2^63 as a window of the state must be: a window ending
	-- below 9223372036 * 10^9 starts there too.
	if not (cost and limit and head) or ehi >= 9223372036 then
		return nil
	end
	local count = 0
	if value then
		if #value ~= 37 or value:sub(1, 28) ~= head then
			return nil
		end
		local hi, lo = upk(STAMP, value, 29)
		if hi >= 100000 or lo >= E9 then
			return nil
		end
		count = hi * E9 + lo
	end
	count = count + cost
	if count > limit then
		return false
	end
	local dh = ehi - nhi
	if dh < -1 or dh >= 4000000 or count >= 1e14 then
		return nil
	end
	local t = dh * E9 + (elo - nlo) + g
	if t < 0 then
		return nil
	end
	local lo = math.fmod(count, E9)
	return true, head .. pk(STAMP, (count - lo) / E9, lo),
		not (keep and value and redis.REDIS_VERSION_NUM) and fast_ms(t)
		or nil
end

-- "TIME:LO:HI" as the four halves of LO and HI; nil: another text.
local function span(arg)
	local lo, hi = smatch(arg, '^TIME:(%d+):(%d+)$')
	if not lo then
		return nil
	end
	local lh, ll = pair(lo)
	local hh, hl = pair(hi)
	return lh and hh and { lh, ll, hh, hl }
end

local PAD, replicated = { '00000', '0000', '000', '00', '0', '' }, false

-- NOW for fast(): hi, lo and its text in four pieces (the reply
-- concatenates them with the rest: one string less); or {2, NOW}
-- outside the span of "TIME:LO:HI"; or nil (the general code decides).
local function fast_now(arg)
	local nhi, nlo, s = nil, nil, false
	if arg ~= 'TIME' then
		nhi, nlo = pair(arg)
		if nlo then
			return nhi, nlo, arg, '', '', ''
		end
		s = cached(span, arg)
		if s == nil then
			return nil
		end
	end
	-- Once a function library's life (a no-op since Redis 7), at every
	-- call of a script.
	if not replicated and redis.replicate_commands then
		redis.replicate_commands()
		replicated = true
	end
	local t = redis.call('TIME')
	local a, b, c = t[1], PAD[#t[2]], t[2]
	nhi, nlo = tn(a), tn(c) * 1000
	if s and (nhi < s[1] or (nhi == s[1] and nlo < s[2]) or
		nhi > s[3] or (nhi == s[3] and nlo >= s[4])) then
		return { 2, a .. b .. c .. '000' }
	end
	return nhi, nlo, a, b, c, '000'
end

-- A check of one dimension of those above, whole: the reply, or nil to
-- leave it to the general code.  ARGV: the short form.
local function fast(KEYS, ARGV)
	local alg, g = ARGV[3], known[ARGV[2]] or cnum(ARGV[2])
	local one = MARK[alg]
	if not (one or alg == '3' or alg == '6') or not g then
		return nil
	end
	local nhi, nlo, a, b, c, d = fast_now(ARGV[1])
	if not nlo then
		return nhi
	end
	local old = redis.call('GET', KEYS[1])
	local ok, new, ms
	if one then
		ok, new, ms = fast_word(alg, old, ARGV, 1, nhi, nlo, g)
	else
		ok, new, ms = fast_window(alg, old, ARGV, 1, nhi, nlo, g, 1)
	end
	if ok == nil then
		return nil
	end
	-- One string (verdict.c, tk__redis_reply_expand()): cheaper to send
	-- than the array {ADMITTED, OLD, NEW, NOW} it stands for.
	old = old or ''
	if ok then
		if ms then
			redis.call('SET', KEYS[1], new, 'PX', ms)
		else
			redis.call('SET', KEYS[1], new, 'KEEPTTL')
		end
		return string.char(1, #old, #new) .. old .. new .. a .. b .. c .. d
	end
	return string.char(0, #old, 0) .. old .. a .. b .. c .. d
end

local function proto(why)
	return redis.error_reply('TKPROTO ' .. why)
end

-- @cur less @cost stamps of @at, if it is a log of @post's limit.
local function unlog(cur, post, cost, at)
	cur = undrop(cur)
	local n = (#cur - 3) / 9
	if ssub(cur, 1, 3) ~= ssub(post, 1, 3) or n % 1 ~= 0 or
		not at or cost[1] ~= 0 or cost[2] == 0 then
		return nil
	end
	-- The COST stamps before the first above AT must be AT's; fewer: this
	-- check's are gone (the log lost and written again), and those left
	-- are another check's.
	local j = above(cur, 1, n, at)
	local i = j - cost[2]
	if i < 1 then
		return nil
	end
	local hi, lo = stamp(cur, i)
	if hi ~= at[1] or lo ~= at[2] then
		return nil
	end
	if n == cost[2] then
		return ''
	end
	return ssub(cur, 1, 9 * i - 6) .. ssub(cur, 9 * j - 5)
end

-- @cur less @cost units in bucket @slot (0-based), if it is a sliding
-- window of @post's buckets and that bucket still holds @post's tick.
local function unslide(cur, post, cost, slot)
	local o = slot and slot[1] == 0 and 29 + 16 * slot[2]
	if not o or #cur ~= #post or o + 15 > #cur or
		ssub(cur, 1, 11) ~= ssub(post, 1, 11) or
		ssub(cur, o, o + 8) ~= ssub(post, o, o + 8) then
		return nil
	end
	local x, hh, hl, t = upk(SWT, cur, 12)
	local _, _, n = upk(REC, cur, o)
	local cn = cost[1] * E9 + cost[2]
	if n < cn or t < cn then
		return nil
	elseif t == cn then
		return ''
	end
	local rec = n == cn and zeros(16) or
		ssub(cur, o, o + 8) .. pk('>I7', n - cn)
	return put_rec(ssub(cur, 1, 11) .. pk(SWT, x, hh, hl,
		t - cn) .. ssub(cur, 29), o, rec)
end

-- @cur less @cost units, if @cur is a window state of @post's window
-- (or a log, or a sliding window, above).  '': nothing left.
local function undo(cur, post, cost, at, slot)
	if sbyte(cur) == 133 or sbyte(cur) == 149 then
		return unlog(cur, post, cost, at)
	end
	if sbyte(cur) == 132 then
		return unslide(cur, post, cost, slot)
	end
	-- A window as written (WIN): ALG, POLICY and START (POST's window:
	-- a later one holds none of this check's units) as POST's.
	local ca, cp, cs, ce, count = fields(cur)
	if #post ~= 37 or cur:sub(1, 19) ~= post:sub(1, 19) or
		(ca ~= '3' and ca ~= '6') or not (cp and cs and ce and count) then
		return nil
	end
	-- Below COST, the units counted are not all this check's (the
	-- state lost and written again): taking them could give back
	-- another check's.
	if cmp(count, cost) < 0 then
		return nil
	elseif cmp(count, cost) == 0 then
		return ''
	end
	count = sub(count, cost)
	return cur:sub(1, 28) .. pk(STAMP, count[1], count[2])
end

-- Write @value keeping the key's TTL (no KEEPTTL before Redis 6).
local function put(key, value)
	local ttl = redis.call('PTTL', key)
	if ttl > 0 then
		redis.call('SET', key, value, 'PX', ttl)
	else
		redis.call('SET', key, value)
	end
end

local function refund(KEYS, ARGV)
	local rn = tn(ARGV[2])
	if not rn or rn ~= #KEYS or #ARGV ~= 2 + 5 * rn then
		return proto(BAD)
	end
	local done = {}
	for i = 1, rn do
		local k = 5 * i - 2
		local pre, post = ARGV[k], ARGV[k + 1]
		local cost, at = num(ARGV[k + 2]), num(ARGV[k + 3])
		local cur = redis.call('GET', KEYS[i])
		local back = cur and cost and cur ~= post and
			undo(cur, post, cost, at, num(ARGV[k + 4]))
		done[i] = 0
		if cur == post and pre == '' then
			redis.call('DEL', KEYS[i])
			done[i] = 1
		elseif cur == post then
			put(KEYS[i], pre)
			done[i] = 1
		elseif back == '' then
			redis.call('DEL', KEYS[i])
			done[i] = 2
		elseif back then
			put(KEYS[i], back)
			done[i] = 2
		end
	end
	return done
end

-- The script: a function of a library loaded by FUNCTION LOAD (the
-- helpers above are made once, when it loads), or the end of the
-- script EVALSHA runs (scripts.c).
local function check(KEYS, ARGV)
	if not pk then
		ssub, pk, upk, tn = string.sub, struct.pack, struct.unpack, tonumber
		smatch, sfmt, sbyte = string.match, string.format, string.byte
		floor = math.floor
	end
	if ARGV[1] == 'refund' then
		return refund(KEYS, ARGV)
	end
	if #ARGV <= 8 then
		local r = fast(KEYS, ARGV)
		if r then
			return r
		end
		ARGV = { 'all', ARGV[1], ARGV[2], '1', ARGV[3], '1', ARGV[4],
			ARGV[5], ARGV[6], ARGV[7], ARGV[8] or '0', '0', '0' }
	end
	local kind, now, grace, n = ARGV[1], nil,
		cached(num, ARGV[3]), tn(ARGV[4])
	local g = ARGV[3] and cnum(ARGV[3])
	local lo, hi = smatch(ARGV[2], '^TIME:(%d+):(%d+)$')
	local span = lo ~= nil
	if ARGV[2] == 'TIME' or span then
		-- Before Redis 5, a script writes after TIME only so replicated.
		if redis.replicate_commands then
			redis.replicate_commands()
		end
		local t = redis.call('TIME')
		now = num(t[1] .. sfmt('%09d', tn(t[2]) * 1000))
		lo, hi = num(lo), num(hi)
	else
		now = num(ARGV[2])
	end
	if not (now and grace and n) or n ~= #KEYS or #ARGV ~= 4 + 9 * n or
		(span and not (lo and hi)) then
		return proto(BAD)
	end
	-- The arguments hold from LO to HI: decide at TIME only within.
	if span and (cmp(now, lo) < 0 or cmp(now, hi) >= 0) then
		return { 2, str(now) }
	end
	local old, admits, new, ms = {}, {}, {}, {}
	local yes, no = 0, 0
	for i = 1, n do
		local at = 4 + 9 * (i - 1)
		local alg, usable = ARGV[at + 1], ARGV[at + 2]
		local ok, why, expiry
		old[i] = redis.call('GET', KEYS[i])
		if g and (alg == '1' or alg == '2' or alg == '7') then
			ok, why, ms[i] = fast_word(alg, old[i], ARGV, at, now[1],
				now[2], g)
		elseif g and (alg == '3' or alg == '6') then
			ok, why, ms[i] = fast_window(alg, old[i], ARGV, at, now[1],
				now[2], g)
		end
		if ok == nil then
			local arg = {}
			for j = 1, 7 do
				arg[j] = cached(num, ARGV[at + 2 + j])
				if not arg[j] then
					return proto(BAD)
				end
			end
			if alg == '3' or alg == '6' then
				ok, why, expiry = window(alg, old[i], now, arg)
			elseif alg == '5' then
				ok, why, expiry = log(alg, old[i], now, arg)
			elseif alg == '4' then
				ok, why, ms[i] = sliding(old[i], now, arg, grace)
			else
				ok, why, expiry = one_word(alg, old[i], now, arg)
			end
			if ok == nil then
				return proto(why)
			end
			if ok and alg ~= '4' then
				local ttl = sub(add(expiry, grace), now)
				-- ttl < 2^65 ns, so ms < 2^46: exact.
				ms[i] = ttl[1] * 1000 + floor(ttl[2] / 1000000) + 1
			end
		end
		admits[i] = ok and usable == '1'
		new[i] = why
		if admits[i] then
			yes = yes + 1
		else
			no = no + 1
		end
	end

	local admitted = (kind == 'all' and no == 0) or (kind == 'any' and yes > 0)
	local reply = { admitted and 1 or 0 }
	for i = 1, n do
		reply[1 + i] = old[i] or false
		reply[1 + n + i] = false
		if admitted and admits[i] then
			redis.call('SET', KEYS[i], new[i], 'PX', ms[i])
			reply[1 + n + i] = new[i]
		end
	end
	reply[2 + 2 * n] = str(now)
	return reply
end
