/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_keyhash_choice.c - which key hash a store uses (lib/hash/keyhash.c).
 *
 * A memory store hashes with AES-CMAC where the CPU has AES-NI, else
 * with SipHash-1-3 under its secret, for every key length.  A zone's
 * creator makes that choice for the zone and records it in the header
 * (TKZ_FLAG_SIPHASH); every store that attaches hashes as the header
 * says, whatever its own CPU has: two stores on one zone, one created as
 * a CPU without AES-NI would and one attached as this CPU is (and the
 * reverse: a CMAC zone attached through the software AES), and two
 * processes one after the other, admit exactly one limit between them,
 * which they do only if their fingerprints agree.  A header with a flag bit
 * this build does not know is refused, and the flag is covered by the header's
 * check word.
 *
 * tk__keyhash_no_aesni stands for a CPU without AES-NI.  White-box:
 * linked statically for it and for the memory store's key hash.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#include "store/store-ops.h"
#include "hash/siphash.h"
#include "test-hooks.h"
#include "hash/keyhash.h"
#include "../shm/zone.h"

#include "asserts.h"
#include "workers.h"

#define LIMIT 10
#define ROUNDS 3 /* checks per store: ROUNDS * LIMIT each */

static char dir[] = "/tmp/tk-keyhash-XXXXXX";

static int cpu_aesni(void)
{
	int saved = tk__keyhash_no_aesni, r;

	tk__keyhash_no_aesni = 0;
	r = tk__keyhash_aesni();
	tk__keyhash_no_aesni = saved;
	return r;
}

/* Open a store on zone @name as a CPU with (@aesni) or without AES-NI. */
static struct tk_store *open_zone(const char *name, int aesni)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_store *s;
	char spec[64];

	o.flags = TK_OPT_NO_RECLAIMER;
	snprintf(spec, sizeof(spec), "shm:%s", name);
	tk__keyhash_no_aesni = !aesni;
	assert_rc(tk_store_open(&s, spec, &o), 0);
	tk__keyhash_no_aesni = 0;
	return s;
}

/* The header flags of zone @name's file. */
static uint64_t zone_flags(const char *name)
{
	struct tkz_header h;
	int fd = kit_zone_open(name);

	assert_int_equal(pread(fd, &h, sizeof(h), 0), sizeof(h));
	close(fd);
	return h.flags;
}

/*
 * Checks of a few keys of store key lengths (8 to 16 bytes: the inlined
 * AES-NI path; shorter and longer: the out-of-line ones), alternating
 * between stores @a and @b: each key must be admitted exactly LIMIT times
 * in all.  Two fingerprints for one key would admit it up to twice that.
 */
static void assert_one_limit(struct tk_store *a, struct tk_store *b)
{
	static const char *const keys[] = { "k", "user:1234", "10.1.2.3",
					    "an-api-token-of-forty-bytes-or-so",
					    "abcdefghijklmn" };
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *la, *lb;
	struct tk_clock *c;
	struct tk_decision d;
	size_t k;
	int i, admitted;

	assert_rc(tk_clock_manual_new(&c, UINT64_C(1700000000000000000)), 0);
	o.clock = c;
	o.store = a;
	assert_rc(tk_limiter_open(&la, "gcra:10/1h", NULL, &o), 0);
	o.store = b;
	assert_rc(tk_limiter_open(&lb, "gcra:10/1h", NULL, &o), 0);
	for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		admitted = 0;
		for (i = 0; i < 2 * ROUNDS * LIMIT; i++) {
			assert_rc(tk_limiter_check(i % 2 ? lb : la, keys[k],
						   strlen(keys[k]), 1, &d),
				  0);
			admitted += d.allowed;
		}
		assert_int_equal(admitted, LIMIT);
	}
	tk_limiter_close(la);
	tk_limiter_close(lb);
	tk_clock_free(c);
}

/*
 * Zone @name created by a CPU with (@aesni) or without AES-NI records
 * CMAC or SipHash, and a store of the other kind of CPU hashes as it
 * records (with AES-NI: SipHash-1-3; without: CMAC by the software AES).
 */
static void shared_zone(const char *name, int aesni)
{
	struct tk_store *creator, *attacher;

	creator = open_zone(name, aesni);
	assert_int_equal(!(zone_flags(name) & TKZ_FLAG_SIPHASH), aesni);
	attacher = open_zone(name, !aesni);
	assert_one_limit(creator, attacher);
	tk_store_close(attacher);
	tk_store_close(creator);
	assert_rc(tk_zone_destroy(name), 0);
}

static void test_siphash_zone(void **state)
{
	(void)state;
	shared_zone("sip", 0);
}

static void test_cmac_zone(void **state)
{
	(void)state;
	if (!cpu_aesni())
		skip(); /* no CPU here creates a CMAC zone */
	shared_zone("cmac", 1);
}

/* Admitted of @n checks of @key on zone @name, by the system clock. */
static int admitted_of(const char *name, int aesni, const char *key, int n)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;
	struct tk_decision d;
	struct tk_store *s;
	int i, admitted = 0;

	s = open_zone(name, aesni);
	o.store = s;
	assert_rc(tk_limiter_open(&l, "gcra:10/1h", NULL, &o), 0);
	for (i = 0; i < n; i++) {
		assert_rc(tk_limiter_check(l, key, strlen(key), 1, &d), 0);
		admitted += d.allowed;
	}
	tk_limiter_close(l);
	tk_store_close(s);
	return admitted;
}

/*
 * Two processes: a child without AES-NI creates the zone and spends part
 * of a key's limit; this process, with its own CPU, attaches afterwards
 * and gets exactly the rest.
 */
static void test_two_processes(void **state)
{
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(admitted_of("procs", 0, "user:1234", 4) == 4 ? 0 : 1);
	kit_wait_exit(pid, 0);
	assert_true(zone_flags("procs") & TKZ_FLAG_SIPHASH);
	assert_int_equal(admitted_of("procs", 1, "user:1234", 3 * LIMIT),
			 LIMIT - 4);
	assert_rc(tk_zone_destroy("procs"), 0);
}

/* tk_zone_create() chooses as a store's creation does, and
 * tk_zone_info() reports the choice. */
static void test_admin_create(void **state)
{
	struct tk_zone_info info;

	(void)state;
	tk__keyhash_no_aesni = 1;
	assert_rc(tk_zone_create("admin-sip", NULL), 0);
	tk__keyhash_no_aesni = 0;
	assert_true(zone_flags("admin-sip") & TKZ_FLAG_SIPHASH);
	assert_rc(tk_zone_info("admin-sip", &info, sizeof(info)), 0);
	assert_int_equal(info.siphash, 1);
	assert_rc(tk_zone_create("admin-own", NULL), 0);
	assert_int_equal(!(zone_flags("admin-own") & TKZ_FLAG_SIPHASH),
			 cpu_aesni());
	assert_rc(tk_zone_info("admin-own", &info, sizeof(info)), 0);
	assert_int_equal(info.siphash, !cpu_aesni());
	assert_rc(tk_zone_destroy("admin-sip"), 0);
	assert_rc(tk_zone_destroy("admin-own"), 0);
}

/* Rewrite zone @name's flags (and its check word if @recheck). */
static void set_flags(const char *name, uint64_t flags, int recheck)
{
	struct tkz_header *h;
	char path[512];
	int fd;

	kit_zone_path(path, sizeof(path), name);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	h = mmap(NULL, TKZ_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 0);
	assert_true(h != MAP_FAILED);
	h->flags = flags;
	if (recheck)
		h->check = tk__zone_header_check(h);
	munmap(h, TKZ_HEADER_SIZE);
	close(fd);
}

static int try_open(const char *name)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_store *s;
	char spec[64];
	int rc;

	o.flags = TK_OPT_NO_RECLAIMER | TK_OPT_ZONE_NO_CREATE;
	snprintf(spec, sizeof(spec), "shm:%s", name);
	rc = tk_store_open(&s, spec, &o);
	if (rc == 0)
		tk_store_close(s);
	return rc;
}

static void test_header_flags(void **state)
{
	struct tk_store *s;
	uint64_t f;
	int bit;

	(void)state;
	s = open_zone("flags", 1);
	tk_store_close(s);
	f = zone_flags("flags");
	assert_rc(try_open("flags"), 0);
	/* The recorded choice is under the check word. */
	set_flags("flags", f ^ TKZ_FLAG_SIPHASH, 0);
	assert_rc(try_open("flags"), -EPROTO);
	set_flags("flags", f ^ TKZ_FLAG_SIPHASH, 1);
	assert_rc(try_open("flags"), 0);
	/* Every bit this build does not know, even with a good check. */
	for (bit = 0; bit < 64; bit++) {
		if ((UINT64_C(1) << bit) & TKZ_FLAGS_KNOWN)
			continue;
		set_flags("flags", f | UINT64_C(1) << bit, 1);
		assert_rc(try_open("flags"), -EPROTO);
	}
	set_flags("flags", f, 1);
	assert_rc(try_open("flags"), 0);
	assert_rc(tk_zone_destroy("flags"), 0);
}

/*
 * A memory store without AES-NI hashes every length with SipHash-1-3
 * under its secret; with AES-NI, with AES-CMAC under it (the first round
 * key is the secret itself).
 */
static void test_memory_store(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	const struct tk__keyhash_key *kh;
	struct tk__keyhash_key ref;
	struct tk_store *ts;
	unsigned char key[100];
	size_t len;
	int aesni;

	(void)state;
	for (len = 0; len < sizeof(key); len++)
		key[len] = (unsigned char)(len * 37 + 1);
	for (aesni = 0; aesni < 2; aesni++) {
		if (aesni && !cpu_aesni())
			continue;
		o.flags = TK_OPT_NO_RECLAIMER;
		tk__keyhash_no_aesni = !aesni;
		assert_rc(tk_store_open(&ts, "memory", &o), 0);
		tk__keyhash_no_aesni = 0;
		kh = tk__memory_keyhash(ts);
		assert_int_equal(kh->kind,
				 aesni ? TK__KEYHASH_CMAC : TK__KEYHASH_SIP13);
		assert_int_equal(kh->hw, aesni);
		if (aesni)
			tk__keyhash_setup(&ref, kh->rk[0], TK__KEYHASH_CMAC);
		for (len = 1; len < sizeof(key); len++)
			assert_true(tk__keyhash_fast(kh, key, len) ==
				    (aesni ? tk__keyhash(&ref, key, len)
					   : tk__siphash13(kh->sip, key, len)));
		tk_store_close(ts);
	}
}

static int setup(void **state)
{
	(void)state;
	return kit_zone_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_siphash_zone),
		cmocka_unit_test(test_cmac_zone),
		cmocka_unit_test(test_two_processes),
		cmocka_unit_test(test_admin_create),
		cmocka_unit_test(test_header_flags),
		cmocka_unit_test(test_memory_store),
	};

	return cmocka_run_group_tests(tests, setup, kit_zone_dir_remove);
}
