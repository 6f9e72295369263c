/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * scripts.c - what the Redis store's check script needs of a
 * policy, and how a state is spelled on the server (see check.lua,
 * embedded here at build time).
 *
 * The script holds two transitions.  The one-word policies share one:
 * base = max(state, now); admit iff base + AHEAD - now <= LIMIT; then the
 * state becomes base + INC.  GCRA and the token bucket (gcra.c) admit iff
 * the new TAT is within tau of now, the leaky shaper (leaky.c) iff the
 * current wait is within the queue; both move the state by T * cost.
 * Fixed windows (fixed-window.c) and quotas (quota.c) count in the later
 * of the current window and the state's, which the script keeps as
 * {policy, start, end, count} so that it needs no division and no
 * calendar: the client names the current window.  Sliding logs keep their
 * stamps in order, packed (9 bytes each), which the script bisects and
 * copies as bytes, never parsing them all; sliding
 * windows their ring of buckets, packed too, with its highest tick and the
 * sum of its counts, so that a check reads only the buckets that left the
 * window since (the client naming now's tick, its start and its slot, the
 * script comparing the scaled estimate in limbs).
 * Everything else about a decision is computed by the algorithm itself
 * from the state the script read, on the client.
 */
#include "algo/algo.h"
#include "algo/window.h"
#include "clock.h"
#include "hash/siphash.h"
#include "redis/scripts.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* check.lua defines check(KEYS, ARGV); EVALSHA's script runs it. */
const char tk__redis_check_lua[] =
#include "redis/check-lua.inc"
	TK__REDIS_EVAL_TAIL;

/*
 * Sent by FUNCTION LOAD (with a short header) or SCRIPT LOAD, possibly
 * before AUTH: Redis 7.0.15 and later refuse a bulk string over 16 KB from
 * a client not yet authenticated, with a protocol error where the caller
 * must see -EACCES (NOAUTH).  The build drops the script's comment lines.
 */
_Static_assert(sizeof(tk__redis_check_lua) < 16384 - 256,
	       "the check script must stay below 16 KB");

#define SPAN_MAX (UINT64_C(1) << 62)  /* as leaky.c */
#define COUNT_MAX (UINT64_C(1) << 62) /* as fixed-window.c */
#define PACKED_COUNT_MAX ((UINT64_C(1) << 24) - 1)
#define E9 UINT64_C(1000000000)
#define WORD_LEN 10   /* a one-word state, decode_word() */
#define WINDOW_LEN 37 /* a window's state, decode_window() */

int tk__redis_supported(const struct tk__policy *p)
{
	return p->alg == &tk__gcra || p->alg == &tk__token_bucket ||
	       p->alg == &tk__leaky || p->alg == &tk__fixed_window ||
	       p->alg == &tk__quota || p->alg == &tk__sliding_log ||
	       p->alg == &tk__sliding_window;
}

int tk__redis_usable(const struct tk__policy *p, uint64_t now, uint64_t cost)
{
	static const uint64_t zeros[TK__STATE_WORDS_MAX];
	struct tk_decision d;

	/* A forecast fails as a check would, and writes no state. */
	return p->alg->forecast(p, zeros, now, cost, &d) >= 0;
}

static int is_window(const struct tk__policy *p)
{
	return p->alg == &tk__fixed_window || p->alg == &tk__quota;
}

int tk__redis_needs_now(const struct tk__policy *p)
{
	return is_window(p) || p->alg == &tk__sliding_window;
}

/*
 * What names a windowed policy's windows: a fixed window's width, or a
 * quota's calendar (cadence, offset, week start, period, anchor) hashed,
 * spelled out first so that every host hashes the same bytes.
 */
static uint64_t windows_of(const struct tk__policy *p)
{
	static const uint64_t key[2] = { 0x746872, 0x6f74746c656b6974 };
	char buf[96];
	int n;

	if (p->alg == &tk__fixed_window)
		return p->u.window.window;
	n = snprintf(buf, sizeof(buf), "%d:%ld:%u:%llu:%llu",
		     p->u.quota.cadence, (long)p->u.quota.offset_s,
		     p->u.quota.week_start,
		     (unsigned long long)p->u.quota.period,
		     (unsigned long long)p->u.quota.anchor);
	return tk__siphash(key, buf, (size_t)n);
}

/* Now's window [*start, *end); 0, or the algorithm's -EOVERFLOW. */
static int window_now(const struct tk__policy *p, uint64_t now, uint64_t *start,
		      uint64_t *end)
{
	if (p->alg == &tk__quota)
		return tk__quota_period(p, now, start, end);
	*start = now - now % p->u.window.window;
	*end = *start + p->u.window.window;
	return 0;
}

void tk__redis_span(const struct tk__policy *p, uint64_t now, uint64_t *lo,
		    uint64_t *hi)
{
	uint64_t w;

	*lo = 0;
	*hi = UINT64_MAX;
	if (p->alg == &tk__sliding_window) {
		w = p->u.sliding.width;
		*lo = now - now % w;
		*hi = *lo + w;
	} else if (is_window(p) && window_now(p, now, lo, hi)) {
		/* No window here: no time is taken on trust. */
		*lo = *hi = now;
	}
}

static void put(char *arg, uint64_t v)
{
	snprintf(arg, 24, "%llu", (unsigned long long)v);
}

int tk__redis_check_args(const struct tk__policy *p, uint64_t now,
			 uint64_t cost, char args[7][24])
{
	uint64_t start = 0, end = 0, w;

	put(args[5], 0);
	put(args[6], 0);
	if (p->alg == &tk__sliding_window) {
		w = p->u.sliding.width;
		put(args[0], w);
		put(args[1], p->u.sliding.buckets);
		put(args[2], now / w);
		put(args[3], now - now % w);
		put(args[4], cost);
		put(args[5], p->limit);
		put(args[6], now / w % (p->u.sliding.buckets + 1));
		return 0;
	}
	if (is_window(p)) {
		/* No window (a quota out of 1970..2262): the algorithm's
		 * -EOVERFLOW, so the dimension is not usable. */
		window_now(p, now, &start, &end);
		put(args[0], windows_of(p));
		put(args[1], start);
		put(args[2], end);
		put(args[3], cost);
		put(args[4], p->limit);
		return 0;
	}
	put(args[4], 0);
	if (p->alg == &tk__sliding_log) {
		put(args[0], p->u.window.window);
		put(args[1], p->limit);
		put(args[2], cost);
		put(args[3], 0);
	} else if (p->alg == &tk__leaky) {
		put(args[0], p->u.leaky.t * cost);
		put(args[1], 0);
		put(args[2], p->u.leaky.max_queue);
		put(args[3], p->u.leaky.max_queue +
				     SPAN_MAX / p->u.leaky.t * p->u.leaky.t);
	} else if (p->alg == &tk__gcra || p->alg == &tk__token_bucket) {
		put(args[0], p->u.gcra.t * cost);
		put(args[1], p->u.gcra.t * cost);
		put(args[2], p->u.gcra.tau);
		put(args[3], p->u.gcra.tau);
	} else {
		return -ENOTSUP;
	}
	return 0;
}

int tk__redis_parse_u64(const char *s, size_t len, uint64_t *word)
{
	uint64_t v = 0;
	size_t i;

	if (len == 0 || len > 20)
		return -EPROTO;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9' ||
		    v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return -EPROTO;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*word = v;
	return 0;
}

/*
 * "4:S:w:T0:N0:...:TS:NS" into the ring {T0, N0, ..., TS, NS}, which the
 * algorithm's valid() must accept (each bucket at its tick's index).
 */
static int decode_ring(const struct tk__policy *p, const char *s, size_t len,
		       uint64_t *words, size_t cap)
{
	size_t i = 0, at, n = 0, want = 3 + p->state_words;
	uint64_t f;

	for (;;) {
		for (at = i; i < len && s[i] != ':'; i++)
			;
		if (n == want || tk__redis_parse_u64(s + at, i - at, &f))
			return -EPROTO;
		if ((n == 0 && f != p->alg->id) ||
		    (n == 1 && f != p->u.sliding.buckets) ||
		    (n == 2 && f != p->u.sliding.width))
			return -EPROTO;
		if (n >= 3) {
			if (n - 3 >= cap)
				return -EPROTO;
			words[n - 3] = f;
		}
		n++;
		if (i++ == len)
			break;
	}
	if (n != want || !p->alg->valid(p, p->state_words, words))
		return -EPROTO;
	return 0;
}

#define LOG_MARK (0x80 | 5) /* check.lua's LOGH */
#define LOG_HEAD 3
#define DROP_MARK (0x80 | 0x10 | 5) /* fast.lua's: stamps dropped ahead */
#define DROP_HEAD 14
#define STAMP_LEN 9 /* check.lua's STAMP: hi * 10^9 + lo in 5 and 4 bytes */

/* The @len bytes at @b, big-endian. */
static uint64_t be(const unsigned char *b, int len)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < len; i++)
		v = v << 8 | b[i];
	return v;
}

/*
 * A sliding log as the scripts write it (check.lua, LOGH and STAMP):
 * 0x85, L in 2 bytes, then n <= L stamps of 9 bytes; or (fast.lua) 0x95,
 * L, the count D of stamps dropped in 2 bytes, a copy of the first stamp
 * not dropped (fast.lua's to read), then D stamps that are no longer the
 * log's and its n <= L stamps.  Into {n, T1, ..., Tn},
 * ascending, each a clock reading; never a word past @cap.  The scripts
 * read only the stamps a decision needs: this is where every stamp of a
 * log is checked (but the dropped ones, which decide nothing).
 */
static int decode_log_binary(const struct tk__policy *p, const char *s,
			     size_t len, uint64_t *words, size_t cap)
{
	const unsigned char *b = (const unsigned char *)s;
	size_t head = b[0] == DROP_MARK ? DROP_HEAD : LOG_HEAD;
	uint64_t n, i, hi, lo;

	if (len < head || (len - head) % STAMP_LEN || be(b + 1, 2) != p->limit)
		return -EPROTO;
	n = (len - head) / STAMP_LEN;
	if (head == DROP_HEAD) {
		i = be(b + 3, 2);
		if (i > n)
			return -EPROTO;
		n -= i;
		b += STAMP_LEN * i + (DROP_HEAD - LOG_HEAD);
	}
	if (n > p->limit || n >= cap)
		return -EPROTO;
	for (i = 0; i < n; i++) {
		hi = be(b + LOG_HEAD + STAMP_LEN * i, 5);
		lo = be(b + LOG_HEAD + STAMP_LEN * i + 5, 4);
		/* hi <= 2^63 / 10^9: hi * 10^9 + lo stays below 2^64. */
		if (lo >= E9 || hi > TK__NOW_LIMIT / E9 ||
		    hi * E9 + lo >= TK__NOW_LIMIT ||
		    (i > 0 && hi * E9 + lo < words[i]))
			return -EPROTO;
		words[1 + i] = hi * E9 + lo;
	}
	words[0] = n;
	return p->alg->valid(p, (uint32_t)cap, words) ? 0 : -EPROTO;
}

/* "5:L:T1:...:Tn", as earlier versions wrote it, into {n, T1, ..., Tn}: at most
 * L stamps, ascending, each a clock reading (the algorithm's valid()), and
 * never a word past
 * @cap. */
static int decode_log(const struct tk__policy *p, const char *s, size_t len,
		      uint64_t *words, size_t cap)
{
	size_t i = 0, at, n = 0;
	uint64_t f;

	for (;;) {
		for (at = i; i < len && s[i] != ':'; i++)
			;
		if (tk__redis_parse_u64(s + at, i - at, &f))
			return -EPROTO;
		if (n == 0 && f != p->alg->id)
			return -EPROTO;
		if (n == 1 && f != p->limit)
			return -EPROTO;
		if (n >= 2) {
			if (n - 1 > p->limit || n - 1 >= cap ||
			    f >= TK__NOW_LIMIT || (n > 2 && f < words[n - 2]))
				return -EPROTO;
			words[n - 1] = f;
		}
		n++;
		if (i++ == len)
			break;
	}
	if (n < 2)
		return -EPROTO;
	words[0] = n - 2;
	return p->alg->valid(p, (uint32_t)cap, words) ? 0 : -EPROTO;
}

/*
 * A one-word state as the script writes it (check.lua, MARK and WORD):
 * 0x80 + the algorithm's id, then the word's hi * 10^9 + lo in 5 and 4
 * bytes, big-endian.
 */
static int decode_word(const struct tk__policy *p, const char *s,
		       uint64_t *word)
{
	const unsigned char *b = (const unsigned char *)s;
	uint64_t hi = be(b + 1, 5), lo = be(b + 6, 4);

	if (b[0] != (0x80 | p->alg->id) || lo >= E9 ||
	    hi > (UINT64_MAX - lo) / E9)
		return -EPROTO;
	*word = hi * E9 + lo;
	return 0;
}

#define RING_MARK (0x80 | 4) /* check.lua's SWH */
#define RING_HEAD 28
#define RING_REC 16
#define TOTAL_MAX (UINT64_C(1) << 53) /* a double's exact integers */

/* hi * 10^9 + lo in 5 and 4 bytes at @b, at most @max; -EPROTO else. */
static int be_pair(const unsigned char *b, uint64_t max, uint64_t *v)
{
	uint64_t hi = be(b, 5), lo = be(b + 5, 4);

	if (lo >= E9 || hi > (max - lo) / E9)
		return -EPROTO;
	*v = hi * E9 + lo;
	return 0;
}

/*
 * A sliding window as the script writes it (check.lua, SWH, SWT, REC):
 * 0x84, S, w, X, H, T, then S + 1 buckets {tick, count} into the ring
 * {T0, N0, ..., TS, NS}.  What the script's amortised step relies on is
 * checked here: T the sum of the counts (below 2^53), and with X 0 every
 * count at a tick of H - S .. H.
 */
static int decode_ring_binary(const struct tk__policy *p, const char *s,
			      size_t len, uint64_t *words, size_t cap)
{
	const unsigned char *b = (const unsigned char *)s;
	uint64_t n = p->u.sliding.buckets, w, h, t, sum = 0, i;

	if (len != RING_HEAD + RING_REC * (n + 1) || cap != 2 * (n + 1) ||
	    b[1] != n || be_pair(b + 2, TK__NOW_LIMIT, &w) ||
	    w != p->u.sliding.width || b[11] > 1 ||
	    be_pair(b + 12, TK__NOW_LIMIT, &h) ||
	    (t = be(b + 21, 7)) >= TOTAL_MAX)
		return -EPROTO;
	for (i = 0; i <= n; i++) {
		/* An empty bucket keeps any tick, as the text did. */
		if (be_pair(b + RING_HEAD + RING_REC * i, UINT64_MAX,
			    &words[2 * i]))
			return -EPROTO;
		words[2 * i + 1] = be(b + RING_HEAD + RING_REC * i + 9, 7);
		if (words[2 * i + 1] == 0)
			continue;
		sum += words[2 * i + 1] < TOTAL_MAX ? words[2 * i + 1]
						    : TOTAL_MAX;
		if (b[11] == 0 && (words[2 * i] > h || words[2 * i] + n < h))
			return -EPROTO;
	}
	return sum == t && p->alg->valid(p, (uint32_t)cap, words) ? 0 : -EPROTO;
}

/*
 * A window's state as the script writes it (check.lua, WIN): 0x80 + the
 * algorithm's id, then POLICY, START, END and COUNT, each as hi * 10^9 +
 * lo in 5 and 4 bytes, big-endian, into @f as the text's five fields.
 */
static int decode_window(const char *s, uint64_t f[5])
{
	const unsigned char *b = (const unsigned char *)s;
	int i;

	f[0] = b[0] & 0x7f;
	for (i = 0; i < 4; i++)
		if (be_pair(b + 1 + 9 * i, UINT64_MAX, &f[1 + i]))
			return -EPROTO;
	return 0;
}

int tk__redis_decode(const struct tk__policy *p, const char *s, size_t len,
		     uint64_t *words, size_t cap)
{
	size_t n = 0, want = is_window(p) ? 5 : 2, i = 0, at;
	uint64_t f[5];

	/* A buffer of another size is another policy's: nothing fits. */
	if (cap != p->state_words)
		return -EPROTO;
	if (tk__redis_occ(p))
		return tk__redis_occ_decode(p, s, len, words, cap);
	if (p->alg == &tk__sliding_log)
		return len && ((unsigned char)s[0] == LOG_MARK ||
			       (unsigned char)s[0] == DROP_MARK)
			       ? decode_log_binary(p, s, len, words, cap)
			       : decode_log(p, s, len, words, cap);
	if (p->alg == &tk__sliding_window)
		return len && (unsigned char)s[0] == RING_MARK
			       ? decode_ring_binary(p, s, len, words, cap)
			       : decode_ring(p, s, len, words, cap);
	if (want == 2 && len == WORD_LEN && (unsigned char)s[0] >= 0x80)
		return decode_word(p, s, &words[0]);
	if (want == 5 && len == WINDOW_LEN && (unsigned char)s[0] >= 0x80) {
		if (decode_window(s, f))
			return -EPROTO;
		n = want;
		i = len + 1;
	}
	/* ':'-separated decimal fields, the first the algorithm's id. */
	while (i <= len) {
		for (at = i; i < len && s[i] != ':'; i++)
			;
		if (n == want || tk__redis_parse_u64(s + at, i - at, &f[n++]))
			return -EPROTO;
		if (i++ == len)
			break;
	}
	if (n != want || f[0] != p->alg->id)
		return -EPROTO;
	if (want == 2) {
		words[0] = f[1];
		return 0;
	}
	/* {policy, start, end, count}: this policy's windows, a start below
	 * 2^63 and an end after it, a count the algorithm can hold. */
	if (f[1] != windows_of(p) || f[2] >= TK__NOW_LIMIT || f[3] <= f[2] ||
	    (p->alg == &tk__fixed_window && f[3] - f[2] != f[1]) ||
	    f[4] > (p->word_is_expiry ? PACKED_COUNT_MAX : COUNT_MAX))
		return -EPROTO;
	if (p->word_is_expiry) {
		words[0] = tk__window_pack(f[3], f[4]);
	} else {
		words[0] = f[2];
		words[1] = f[4];
	}
	return 0;
}
