/*
 * test_memory_keys.c - the memory store tells keys apart by their bytes
 * and length alone: an entry keeps a key's first 16 bytes beside its
 * cell and the rest apart, and the compare reads both.
 *
 * Every key of the store gets one hash (tk__memory_collide()), so all
 * entries share one chain and only the key compare separates them.  Each
 * key's limit is one check per hour: a key's first check must admit and
 * its second deny, whatever other keys came before.
 *
 * White-box: linked statically for tk__memory_collide().
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "internal.h"

#define T0 UINT64_C(1700000000000000000)
#define LEN_MAX 40
/* For each length: 'k's, each byte of it changed, and zero bytes. */
#define NKEYS (LEN_MAX * (LEN_MAX + 1) / 2 + 2 * LEN_MAX)

struct key {
	char bytes[LEN_MAX];
	size_t len;
};

static struct key keys[NKEYS];

/*
 * Keys that differ in one place only, at every length around the 16
 * bytes kept beside the cell (the store key carries the limiter's 2-byte
 * prefix length too): a key and the same key with any one byte changed,
 * and runs of zero bytes that differ in their length alone.
 */
static void make_keys(void)
{
	size_t n, at, i = 0;

	for (n = 1; n <= LEN_MAX; n++) {
		memset(keys[i].bytes, 'k', n);
		keys[i++].len = n;
		for (at = 0; at < n; at++) {
			memset(keys[i].bytes, 'k', n);
			keys[i].bytes[at] = 'a';
			keys[i++].len = n;
		}
		memset(keys[i].bytes, 0, n);
		keys[i++].len = n;
	}
	assert_int_equal(i, NKEYS);
}

static int check(struct tk_limiter *l, const struct key *k)
{
	struct tk_decision d;

	assert_int_equal(tk_limiter_check(l, k->bytes, k->len, 1, &d), 0);
	return d.allowed;
}

static void run(int collide, int reverse)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_clock *clock;
	struct tk_store *store;
	struct tk_limiter *l;
	struct tk_stats st;
	size_t i, j;

	make_keys();
	assert_int_equal(tk_clock_manual_new(&clock, T0), 0);
	o.clock = clock;
	o.flags = TK_OPT_NO_RECLAIMER;
	assert_int_equal(tk_store_open(&store, "memory", &o), 0);
	if (collide)
		tk__memory_collide(store);
	o.store = store;
	assert_int_equal(tk_limiter_open(&l, "gcra:1/1h", NULL, &o), 0);
	for (i = 0; i < NKEYS; i++) {
		j = reverse ? NKEYS - 1 - i : i;
		assert_true(check(l, &keys[j]));
		assert_false(check(l, &keys[j]));
	}
	/* Every key kept its own state. */
	for (i = 0; i < NKEYS; i++)
		assert_false(check(l, &keys[i]));
	assert_int_equal(tk_store_stats(store, &st, sizeof(st)), 0);
	assert_int_equal(st.keys, NKEYS);
	/* A reset removes its key only. */
	for (j = 0; j < NKEYS; j += 97) {
		assert_int_equal(
			tk_limiter_reset(l, keys[j].bytes, keys[j].len), 0);
		for (i = 0; i < NKEYS; i++)
			assert_int_equal(check(l, &keys[i]), i == j);
	}
	tk_limiter_close(l);
	tk_store_close(store);
	tk_clock_free(clock);
}

static void test_keys_apart(void **state)
{
	(void)state;
	run(0, 0);
}

static void test_keys_apart_in_one_chain(void **state)
{
	(void)state;
	run(1, 0);
	run(1, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys_apart),
		cmocka_unit_test(test_keys_apart_in_one_chain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
