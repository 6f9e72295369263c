/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_redis_hostile.c - hostile or corrupt states on a real
 * redis-server (tests/kit/redis-kit.c): values written straight into the
 * keys the Redis store uses, for every encoding (one word, windows,
 * sliding windows' rings, sliding logs): too many fields, too few, huge
 * numbers, non-digits, another algorithm's id, another limit, unsorted
 * stamps; a one-word state's 10 bytes (and its text of earlier
 * versions, still read).  A check, a peek and a batch of each must fail
 * with -EPROTO and nothing else (no crash, no write past a buffer: run
 * it under AddressSanitizer), and a reset must clear the key.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <throttlekit.h>

#include "algo/algo.h"
#include "store/store-key.h"
#include "redis/store.h"
#include "asserts.h"
#include "redis-kit.h"
#include "hostile-kit.h"

#define T0 (UINT64_C(1700000000) * SEC)
#define STAMP "1700000000000000000"

static struct redis_kit kit;

static void need_server(void)
{
	hostile_kit_need(&kit);
}

static int stop_server(void **state)
{
	(void)state;
	redis_kit_destroy(&kit);
	return 0;
}

/* "5:L" and @n stamps 1 ms apart, ascending to @last, into @buf. */
static const char *log_at(char *buf, size_t len, unsigned int limit,
			  unsigned int n, uint64_t last)
{
	size_t at = (size_t)snprintf(buf, len, "5:%u", limit);
	unsigned int i;

	for (i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(
			buf + at, len - at, ":%llu",
			(unsigned long long)(last - (n - i) * MS));
	return buf;
}

/* The same, stamped just before T0: live. */
static const char *log_of(char *buf, size_t len, unsigned int limit,
			  unsigned int n)
{
	return log_at(buf, len, limit, n, T0);
}

/* The ring of a sliding window of @buckets buckets: "4:S:w" and @fields
 * numbers. */
static const char *ring_of(char *buf, size_t len, unsigned int buckets,
			   unsigned long long width, unsigned int fields,
			   const char *each)
{
	size_t at = (size_t)snprintf(buf, len, "4:%u:%llu", buckets, width);
	unsigned int i;

	for (i = 0; i < fields && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, ":%s", each);
	return buf;
}

/* Far more stamps than the limit: the decoder's buffer holds L + 1. */
static void test_log_too_many(void **state)
{
	char v[4096];

	(void)state;
	need_server();
	assert_hostile("sliding-log:3/10s", -1, log_of(v, sizeof(v), 3, 40));
	assert_hostile("sliding-log:3/10s", -1, log_of(v, sizeof(v), 3, 4));
	/* Stamps long gone, or still to come. */
	assert_hostile("sliding-log:3/10s", -1,
		       log_at(v, sizeof(v), 3, 40, T0 - 3600 * SEC));
	assert_hostile("sliding-log:3/10s", -1,
		       log_at(v, sizeof(v), 3, 40, T0 + 3600 * SEC));
	assert_hostile("sliding-log:1/10s", -1, log_of(v, sizeof(v), 1, 2));
	assert_hostile("sliding-log:512/10s", -1,
		       log_of(v, sizeof(v), 512, 513));
	assert_hostile("all(gcra:5/s,sliding-log:3/10s)", 1,
		       log_of(v, sizeof(v), 3, 40));
	assert_hostile("any(sliding-log:2/10s,sliding-log:3/10s)", 0,
		       log_of(v, sizeof(v), 2, 40));
}

static void test_log_malformed(void **state)
{
	static const char *const bad[] = {
		"5",
		"5:",
		"5:3:",
		"5:3::" STAMP,
		"5:4:" STAMP,
		"5:2:" STAMP,
		"5:18446744073709551619:" STAMP,
		"5:3:99999999999999999999999",
		"5:3:9223372036854775808",
		"5:3:17x",
		"5:3:" STAMP ":1",
		"5:3:-1",
		"5:3: 1",
		"1:3:" STAMP,
		"7:3",
		"junk",
		"",
	};
	(void)state;
	need_server();
	assert_each("sliding-log:3/10s", bad, sizeof(bad) / sizeof(bad[0]));
}

/*
 * A sliding log as the script writes it (lib/redis/check.lua, LOGH and
 * STAMP): 0x85, @limit in 2 bytes, then each of @n stamps as hi and lo
 * (hi * 10^9 + lo) in 5 and 4 bytes, big-endian.  Its length.
 */
static size_t log_bytes(char *buf, unsigned int limit, const uint64_t *t,
			size_t n)
{
	uint64_t hi, lo;
	size_t i, at = 3;
	int k;

	buf[0] = (char)0x85;
	buf[1] = (char)(limit >> 8);
	buf[2] = (char)limit;
	for (i = 0; i < n; i++, at += 9) {
		hi = t[i] / 1000000000;
		lo = t[i] % 1000000000;
		for (k = 0; k < 5; k++)
			buf[at + (size_t)k] = (char)(hi >> (8 * (4 - k)));
		for (k = 0; k < 4; k++)
			buf[at + 5 + (size_t)k] = (char)(lo >> (8 * (3 - k)));
	}
	return at;
}

/* The binary log: a wrong limit, length, count, stamp or order. */
static void test_log_binary(void **state)
{
	const uint64_t up[4] = { T0 - 4 * MS, T0 - 3 * MS, T0 - 2 * MS,
				 T0 - MS };
	const uint64_t down[3] = { T0 - MS, T0 - 3 * MS, T0 - 2 * MS };
	/* Still to come by either clock (server_time=1: the server's). */
	const uint64_t later = T0 + UINT64_C(100000000) * SEC;
	const uint64_t mid[3] = { later - 3 * MS, later - MS, later - 2 * MS };
	const uint64_t past[1] = { UINT64_C(1) << 63 };
	const char *lg = "sliding-log:3/10s";
	char v[64] = { 0 };
	size_t n;

	(void)state;
	need_server();
	/* Another limit's, more stamps than L, a byte short or over. */
	assert_hostile_bytes("sliding-log:2/10s", -1, v,
			     log_bytes(v, 3, up, 2));
	assert_hostile_bytes(lg, -1, v, log_bytes(v, 3, up, 4));
	assert_hostile_bytes(lg, -1, v, log_bytes(v, 3, up, 2) - 1);
	assert_hostile_bytes(lg, -1, v, log_bytes(v, 3, up, 2) + 1);
	assert_hostile_bytes(lg, -1, v, 2);
	/* A stamp at 2^63, one with lo >= 10^9, the first above the last. */
	assert_hostile_bytes(lg, -1, v, log_bytes(v, 3, past, 1));
	n = log_bytes(v, 3, up, 1);
	v[5 + 3] = (char)0xff;
	assert_hostile_bytes(lg, -1, v, n);
	assert_hostile_bytes(lg, -1, v, log_bytes(v, 3, down, 3));
	/*
	 * Out of order between the first and the last: check.lua reads
	 * only the stamps it needs, the client every one it is sent (here a
	 * full log: no write; one that admits is written, and the check
	 * still fails).  A single log's check (fast.lua) is sent only the
	 * stamps its decision needs, none of the disorder: it denies, as
	 * the full log does, and writes nothing; a peek and a batch fail.
	 */
	n = log_bytes(v, 3, mid, 3);
	hostile_with(lg, -1, v, n, "", 0);
	hostile_with(lg, -1, v, n, "&server_time=1", 0);
	assert_hostile_bytes("all(gcra:5/s,sliding-log:3/10s)", 1, v,
			     log_bytes(v, 3, mid, 3));
	/* A log under a one-word policy. */
	assert_hostile_bytes("gcra:5/s", -1, v, log_bytes(v, 3, up, 1));
}

/* fast.lua's log (lib/redis/fast.lua): 0x95, @limit and the count @d of
 * stamps dropped in 2 bytes each, a copy of the first stamp not dropped
 * (zeros if none), then @n stamps as log_bytes() writes them, the first
 * @d of them dropped.  Its length. */
static size_t dropped_bytes(char *buf, unsigned int limit, unsigned int d,
			    const uint64_t *t, size_t n)
{
	size_t len = log_bytes(buf + 11, limit, t, n) + 11;

	buf[0] = (char)0x95;
	buf[1] = (char)(limit >> 8);
	buf[2] = (char)limit;
	buf[3] = (char)(d >> 8);
	buf[4] = (char)d;
	memset(buf + 5, 0, 9);
	if (d < n)
		memcpy(buf + 5, buf + 14 + 9 * d, 9);
	return len;
}

/* The log with dropped stamps: more dropped than there are, another
 * limit's, a byte short, more than L left, the live ones out of order, a
 * head cut short.  (Valid ones: test_redis_log.) */
static void test_log_dropped(void **state)
{
	const uint64_t up[4] = { T0 - 4 * MS, T0 - 3 * MS, T0 - 2 * MS,
				 T0 - MS };
	const uint64_t mixed[3] = { T0 - 4 * MS, T0 - MS, T0 - 3 * MS };
	const char *lg = "sliding-log:3/10s";
	char v[80] = { 0 };

	(void)state;
	need_server();
	assert_hostile_bytes(lg, -1, v, dropped_bytes(v, 3, 3, up, 2));
	assert_hostile_bytes(lg, -1, v, dropped_bytes(v, 2, 0, up, 1));
	assert_hostile_bytes(lg, -1, v, dropped_bytes(v, 3, 1, up, 3) - 1);
	assert_hostile_bytes(lg, -1, v, dropped_bytes(v, 3, 0, up, 4));
	assert_hostile_bytes(lg, -1, v, dropped_bytes(v, 3, 1, mixed, 3));
	assert_hostile_bytes(lg, -1, v, 4);
	assert_hostile_bytes(lg, -1, v, 13);
}

/* The state of key "k" under @policy, if a binary log, rewritten as the
 * text "5:L:T1:...:Tn" of earlier versions (without the stamps fast.lua
 * dropped); the length of the binary log as check.lua writes it (0: not
 * one). */
static long long log_to_text(const char *policy)
{
	static const char script[] =
		"local v = redis.call('GET', KEYS[1]) "
		"local s = 4 "
		"if string.byte(v) == 149 then "
		"s = 15 + 9 * struct.unpack('>I2', v, 4) "
		"elseif string.byte(v) ~= 133 then return 0 end "
		"local t = { '5', tostring(struct.unpack('>I2', v, 2)) } "
		"for i = s, #v, 9 do local h, l = struct.unpack('>I5I4', v, i) "
		"t[#t + 1] = string.format('%d%09d', h, l) end "
		"redis.call('SET', KEYS[1], table.concat(t, ':'), 'KEEPTTL') "
		"return 3 + #v - s + 1";

	return eval_on(policy, script);
}

/*
 * A log an earlier version wrote as text is read exactly: the decisions
 * after it are the memory store's, bit for bit, and the first check that
 * admits writes it in binary.
 */
static void test_log_text(void **state)
{
	/* ns between checks: a full log, then its stamps leaving. */
	static const uint64_t steps[] = {
		1, 0, 0, 0, 400 * MS, 0, 600 * MS, 0, 0, SEC, 0,
	};
	const char *pol = "sliding-log:3/1s";
	struct twin t;
	char spec[192];
	unsigned char first;
	size_t k;
	uint64_t now = T0;

	(void)state;
	need_server();
	snprintf(spec, sizeof(spec), "%s?key_prefix=t:&server_time=0",
		 kit.spec);
	twin_open(&t, pol, spec);
	assert_int_equal(log_to_text(pol), 3 + 2 * 9);
	for (k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		now += steps[k];
		twin_check(&t, now);
		/* Back to text after each write but the last two: all
		 * other checks read text. */
		if (k + 2 < sizeof(steps) / sizeof(steps[0]))
			log_to_text(pol);
	}
	/* Written again, as the script writes it now: two live stamps. */
	assert_int_equal(state_len(pol, &first), 3 + 2 * 9);
	assert_int_equal(first, 0x85);
	twin_close(&t);
}

static void test_ring(void **state)
{
	static const char *const bad[] = {
		"4",
		"4:4",
		"4:4:1000000000",
		"4:5:1000000000:0:0",
		"4:4:2000000000:0:0:0:0:0:0:0:0:0:0",
		"4:4:1000000000:0:0:0:0:0:0:0:0:x:0",
		"4:4:1000000000:0:0:0:0:0:0:0:0:0:99999999999999999999",
		"5:4:1000000000:0:0:0:0:0:0:0:0:0:0",
		"4:4:1000000000::0:0:0:0:0:0:0:0:0",
	};
	char v[8192];

	(void)state;
	need_server();
	assert_each("sliding-window:10/4s,buckets=4", bad,
		    sizeof(bad) / sizeof(bad[0]));
	/* Far too many buckets, and too few. */
	assert_hostile("sliding-window:10/4s,buckets=4", -1,
		       ring_of(v, sizeof(v), 4, 1000000000, 400, "0"));
	assert_hostile("sliding-window:10/4s,buckets=4", -1,
		       ring_of(v, sizeof(v), 4, 1000000000, 11, "0"));
	assert_hostile("sliding-window:10/4s,buckets=4", -1,
		       ring_of(v, sizeof(v), 4, 1000000000, 9, "0"));
	assert_hostile("sliding-window:10/4s,buckets=4", -1,
		       ring_of(v, sizeof(v), 4, 1000000000, 10, "x"));
	assert_hostile("all(gcra:5/s,sliding-window:10/4s,buckets=4)", 1,
		       ring_of(v, sizeof(v), 4, 1000000000, 400, "0"));
}

static void test_one_word(void **state)
{
	static const char *const policies[] = {
		"gcra:5/s",
		"token-bucket:capacity=4,refill=2/s",
		"leaky:10/s,max-queue=1s",
	};
	static const char *const bad[] = {
		"%u",
		"%u:",
		"%u:1:2",
		"%u:1:2:3:4:5:6:7:8",
		"%u:99999999999999999999",
		"%u:18446744073709551616",
		"%u:12x",
		"%u:-1",
		"9:1",
		":1",
		"",
	};
	static const unsigned int ids[] = { 1, 2, 7 };
	char v[64];
	size_t i, j;

	(void)state;
	need_server();
	for (i = 0; i < 3; i++) {
		for (j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
			snprintf(v, sizeof(v), bad[j], ids[i]);
			assert_hostile(policies[i], -1, v);
		}
		/* Another one-word algorithm's state. */
		snprintf(v, sizeof(v), "%u:1", ids[(i + 1) % 3]);
		assert_hostile(policies[i], -1, v);
	}
}

/* A one-word state as the script writes it: 10 bytes, 0x80 + the id, the
 * word's hi * 10^9 + lo in 5 and 4 bytes (lib/redis/scripts.c). */
static void test_one_word_binary(void **state)
{
	static const char *const bad[] = {
		/* lo >= 10^9 */
		"\x81\x01\x01\x01\x01\x01\xff\xff\xff\xff",
		/* hi * 10^9 + lo past 2^64 - 1 */
		"\x81\xff\xff\xff\xff\xff\x01\x01\x01\x01",
		/* another algorithm's mark */
		"\x82\x01\x01\x01\x01\x01\x01\x01\x01\x01",
		"\x87\x01\x01\x01\x01\x01\x01\x01\x01\x01",
		"\x80\x01\x01\x01\x01\x01\x01\x01\x01\x01",
		/* a byte short, a byte over */
		"\x81\x01\x01\x01\x01\x01\x01\x01\x01",
		"\x81\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01",
	};
	/* Well formed, near T0 (NUL bytes), another algorithm's mark. */
	static const char near[] = "\x82\x00\x65\x53\xf1\x00\x00\x00\x00\x07";
	char key[64];
	size_t klen = state_key("gcra:5/s", -1, key);
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;
	struct tk_decision d;
	struct tk_clock *c;
	char spec[192];

	(void)state;
	need_server();
	assert_each("gcra:5/s", bad, sizeof(bad) / sizeof(bad[0]));
	assert_hostile("all(gcra:5/s,fixed-window:5/10s)", 0, bad[0]);
	snprintf(spec, sizeof(spec), "%s?key_prefix=h:&server_time=0",
		 kit.spec);
	assert_rc(tk_clock_manual_new(&c, T0), 0);
	o.clock = c;
	assert_rc(tk_limiter_open(&l, "gcra:5/s", redis_kit_slow(spec), &o), 0);
	assert_int_equal(redis_kit_cmd(&kit, NULL, 0, "SET h:%b %b", key, klen,
				       near, sizeof(near) - 1),
			 0);
	assert_rc(tk_limiter_check(l, "k", 1, 1, &d), -EPROTO);
	assert_rc(tk_limiter_peek(l, "k", 1, &d), -EPROTO);
	/* Refused, and left as it was. */
	assert_int_equal(redis_kit_cmd(&kit, NULL, 0, "EVAL %s 1 h:%b %b",
				       "return redis.call('GET', KEYS[1]) == "
				       "ARGV[1] and 1 or 0",
				       key, klen, near, sizeof(near) - 1),
			 1);
	assert_rc(tk_limiter_reset(l, "k", 1), 0);
	tk_limiter_close(l);
	tk_clock_free(c);
}

/* The state of key "k" under @policy rewritten as the text "ALG:WORD" of
 * earlier versions; the length of the binary state it replaced. */
static long long to_text(const char *policy)
{
	static const char script[] =
		"local v = redis.call('GET', KEYS[1]) "
		"local m, h, l = struct.unpack('>BI5I4', v) "
		"redis.call('SET', KEYS[1], string.format('%d:%d%09d', "
		"m - 128, h, l), 'KEEPTTL') return #v";

	return eval_on(policy, script);
}

/*
 * A key an earlier version wrote ("ALG:WORD" text) is read exactly: the
 * decisions after it are the memory store's, bit for bit, and the first
 * check that admits writes it in the binary form.
 */
static void test_one_word_text(void **state)
{
	static const char *const policies[] = {
		"gcra:5/s,burst=3",
		"token-bucket:capacity=4,refill=2/s",
		"leaky:10/s,max-queue=1s",
	};
	static const unsigned int marks[] = { 0x81, 0x82, 0x87 };
	static const uint64_t steps[] = { 0, 1, 50 * MS, 0, 0, 0, 0, SEC, 3 };
	struct twin t;
	char spec[192];
	unsigned char first;
	size_t i, k;
	uint64_t now;

	(void)state;
	need_server();
	snprintf(spec, sizeof(spec), "%s?key_prefix=t:&server_time=0",
		 kit.spec);
	for (i = 0; i < sizeof(policies) / sizeof(policies[0]); i++) {
		twin_open(&t, policies[i], spec);
		assert_int_equal(to_text(policies[i]), 10);
		for (k = 0, now = T0; k < sizeof(steps) / sizeof(steps[0]);
		     k++) {
			now += steps[k];
			twin_check(&t, now);
		}
		/* Written again, as the script writes it now. */
		assert_int_equal(state_len(policies[i], &first), 10);
		assert_int_equal(first, marks[i]);
		twin_close(&t);
	}
}

static void test_windows(void **state)
{
	static const char *const bad[] = {
		"3",
		"3:10000000000",
		"3:10000000000:" STAMP,
		"3:10000000000:1700000000000000000:1700000010000000000",
		"3:10000000000:1700000000000000000:1700000010000000000:1:1",
		"3:10000000000:1700000000000000000:1700000010000000000:1:1:1:"
		"1:1:1:1",
		"3:20000000000:1700000000000000000:1700000020000000000:1",
		"3:10000000000:1700000000000000000:1700000020000000000:1",
		"3:10000000000:1700000000000000000:1700000000000000000:1",
		"3:10000000000:1700000000000000000:1700000010000000000:"
		"99999999999999999999",
		"3:10000000000:1700000000000000000:1700000010000000000:1x",
		"3:10000000000:9223372036854775808:9223372046854775808:1",
		"6:10000000000:1700000000000000000:1700000010000000000:1",
	};
	(void)state;
	need_server();
	assert_each("fixed-window:5/10s", bad, sizeof(bad) / sizeof(bad[0]));
	assert_hostile("quota:5/day", -1, "6:1:2:3:4:5");
	assert_hostile("quota:5/day", -1, "6:1:2");
	assert_hostile("quota:5/day", -1, "3:1:2:3:4");
	assert_hostile("any(quota:5/day,fixed-window:5/10s)", 1, bad[4]);
}

/* A string reply of @len bytes, as hiredis makes one. */
static void *string_reply(const char *s, size_t len)
{
	redisReply *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	r->type = REDIS_REPLY_STRING;
	r->str = malloc(len + 1);
	assert_non_null(r->str);
	memcpy(r->str, s, len);
	r->str[len] = '\0';
	r->len = len;
	return r;
}

static void assert_element(const redisReply *e, const char *want)
{
	if (!want) {
		assert_int_equal(e->type, REDIS_REPLY_NIL);
		return;
	}
	assert_int_equal(e->type, REDIS_REPLY_STRING);
	assert_int_equal(e->len, strlen(want));
	assert_memory_equal(e->str, want, e->len);
}

/* A fast path's one-string answer, read as the array it stands for. */
static void assert_expands(const char *s, size_t len, long long admitted,
			   const char *old, const char *new, const char *now)
{
	void *v = string_reply(s, len);
	const redisReply *r;

	assert_rc(tk__redis_reply_expand(&v), 0);
	r = v;
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(r->elements, 4);
	assert_int_equal(r->element[0]->type, REDIS_REPLY_INTEGER);
	assert_int_equal(r->element[0]->integer, admitted);
	assert_element(r->element[1], old);
	assert_element(r->element[2], new);
	assert_element(r->element[3], now);
	freeReplyObject(v);
}

static void test_reply_strings(void **state)
{
	static const char *const bad[] = {
		"",
		"\x01\x00\x00", /* no NOW */
		"\x02\x00\x00"
		"7", /* ADMITTED 2 */
		"\x01\x05\x00"
		"ab7", /* OLD past the end */
		"\x01\x01\x01"
		"ab", /* NEW up to the end: no NOW */
		"\x00\x00\x01"
		"a7", /* written, not admitted */
		"\x01\x00\xff"
		"a7", /* NEW past the end */
	};
	static const size_t bad_len[] = { 0, 3, 4, 6, 5, 5, 5 };
	void *v;
	size_t i;

	(void)state;
	assert_expands("\x01\x02\x03"
		       "abcde123",
		       11, 1, "ab", "cde", "123");
	assert_expands("\x00\x02\x00"
		       "ab9",
		       6, 0, "ab", NULL, "9");
	assert_expands("\x01\x00\x01"
		       "x5",
		       5, 1, NULL, "x", "5");
	/* Binary states: NUL bytes are data. */
	v = string_reply("\x01\x01\x02\x00\x00\x07"
			 "1",
			 7);
	assert_rc(tk__redis_reply_expand(&v), 0);
	assert_int_equal(((redisReply *)v)->element[1]->len, 1);
	assert_int_equal(((redisReply *)v)->element[2]->len, 2);
	assert_memory_equal(((redisReply *)v)->element[2]->str, "\x00\x07", 2);
	assert_element(((redisReply *)v)->element[3], "1");
	freeReplyObject(v);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = string_reply(bad[i], bad_len[i]);
		assert_rc(tk__redis_reply_expand(&v), -EPROTO);
		freeReplyObject(v);
	}
	/* Any other reply is left as it is. */
	v = calloc(1, sizeof(redisReply));
	assert_non_null(v);
	((redisReply *)v)->type = REDIS_REPLY_INTEGER;
	assert_rc(tk__redis_reply_expand(&v), 0);
	assert_int_equal(((redisReply *)v)->type, REDIS_REPLY_INTEGER);
	freeReplyObject(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_too_many),
		cmocka_unit_test(test_log_malformed),
		cmocka_unit_test(test_log_binary),
		cmocka_unit_test(test_log_dropped),
		cmocka_unit_test(test_log_text),
		cmocka_unit_test(test_ring),
		cmocka_unit_test(test_one_word),
		cmocka_unit_test(test_one_word_binary),
		cmocka_unit_test(test_one_word_text),
		cmocka_unit_test(test_reply_strings),
		cmocka_unit_test(test_windows),
	};

	return cmocka_run_group_tests(tests, NULL, stop_server);
}
