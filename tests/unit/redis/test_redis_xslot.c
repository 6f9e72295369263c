/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_redis_xslot.c - checks over keys of several hash slots on a real
 * 3-master Redis Cluster (lib/redis/xslot.c: one script per slot, consumed
 * in slot order, refunded when a later slot refuses).
 *
 * - Without races the decisions are the memory store's, field for field,
 *   on generated timelines (composites over several keys, groups).
 * - Under concurrency (N processes x M checks) no key admits past its
 *   limit, and a refund never takes back another check's units: the
 *   admitted counts and each key's own count are printed and compared.
 * - Workers killed by SIGKILL mid-run leave fewer admitted, never more.
 *
 * Skipped without redis-server and redis-cli.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <throttlekit.h>

#include "asserts.h"
#include "redis-kit.h"
#include "rnd.h"
#include "store/store-ops.h"
#include "redis/cluster.h"
#include "test-hooks.h"
#include "workers.h"

#define T0 (UINT64_C(1700000000) * SEC)

static struct redis_kit nodes[3];
static char cluster_spec[128];
static int cluster_up;

static int group_setup(void **state)
{
	(void)state;
	if (!redis_cluster_available())
		return 0;
	if (redis_cluster_start(nodes, cluster_spec, sizeof(cluster_spec)))
		return -1;
	cluster_up = 1;
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	for (int i = 0; cluster_up && i < 3; i++)
		redis_kit_destroy(&nodes[i]);
	return 0;
}

static void need_cluster(void)
{
	if (!cluster_up)
		skip();
}

/*
 * The Redis key of dimension @dim of @key for a limiter without a prefix
 * in a group or composite, of policy @p (NULL: one without a tag):
 * "{" 0x80 0x00 KEY "}" DIM, then the tag's bytes and 0x80 | its length
 * (lib/redis/keys.c).
 */
static size_t dim_key(const char *key_prefix, const char *key, int dim,
		      const struct tk__policy *p, char *buf)
{
	size_t n = strlen(key_prefix), k = strlen(key);

	memcpy(buf, key_prefix, n);
	memcpy(buf + n, "{\x80\0", 3);
	memcpy(buf + n + 3, key, k);
	buf[n + 3 + k] = '}';
	buf[n + 4 + k] = (char)dim;
	n += 5 + k;
	if (p && p->tag_len) {
		memcpy(buf + n, p->tag + 1, p->tag_len - 1);
		n += p->tag_len - 1;
		buf[n++] = (char)(0x80 | p->tag[0]);
	}
	return n;
}

static unsigned int slot_of(const char *key)
{
	char buf[64];
	size_t n = dim_key("", key, 0, NULL, buf);

	/* The slot hashes what is between the braces. */
	return tk__redis_slot(buf, n - 1);
}

/* Which third of the slots (one master each, as --cluster create
 * splits them) @key falls in. */
static int third(const char *key)
{
	return (int)(slot_of(key) * 3 / 16384);
}

/*
 * The Redis key of @key's state for a limiter without a prefix of simple
 * policy @p, in a group as alone (a group keeps a simple policy's state
 * under its single key): "{" FLAGS 0x00 TAG KEY "}", FLAGS 0x40 when the
 * policy has a tag (lib/store/store-key.h, lib/redis/keys.c).
 */
static size_t state_key(const char *key_prefix, const char *key,
			const struct tk__policy *p, char *buf)
{
	size_t n = strlen(key_prefix), k = strlen(key);

	memcpy(buf, key_prefix, n);
	buf[n++] = '{';
	buf[n++] = (char)(p->tag_len ? 0x40 : 0);
	buf[n++] = '\0';
	memcpy(buf + n, p->tag, p->tag_len);
	n += p->tag_len;
	memcpy(buf + n, key, k);
	n += k;
	buf[n++] = '}';
	return n;
}

/* The slot of @key's state under simple policy @p. */
static unsigned int state_slot(const char *key, const struct tk__policy *p)
{
	char buf[96];

	return tk__redis_slot(buf, state_key("", key, p, buf));
}

/* Names "STEM0", "STEM1", ... for three limiters of simple policies
 * @ps: name i's state on master i, so in ascending slot order. */
static void pick_states(const char *stem, const struct tk__policy *const ps[3],
			char out[][16])
{
	int i, found = 0;
	char name[16];

	for (i = 0; found < 3 && i < 3000; i++) {
		snprintf(name, sizeof(name), "%s%d", stem, i);
		if ((int)(state_slot(name, ps[found]) * 3 / 16384) != found)
			continue;
		memcpy(out[found++], name, sizeof(name));
	}
	assert_int_equal(found, 3);
}

/* Names "STEM0", "STEM1", ... of @n keys on @n different masters, in
 * ascending slot order if @ascending, else descending. */
static void pick(const char *stem, int n, int ascending, char out[][16])
{
	int i, found = 0, used[3] = { 0 };
	char name[16];

	for (i = 0; found < n && i < 1000; i++) {
		snprintf(name, sizeof(name), "%s%d", stem, i);
		if (used[third(name)])
			continue;
		used[third(name)] = 1;
		memcpy(out[found++], name, sizeof(name));
	}
	assert_int_equal(found, n);
	/* Sort by slot, either way. */
	for (i = 1; i < n; i++)
		for (int j = i; j > 0; j--) {
			int swap =
				ascending
					? slot_of(out[j]) < slot_of(out[j - 1])
					: slot_of(out[j]) > slot_of(out[j - 1]);
			if (!swap)
				break;
			memcpy(name, out[j], sizeof(name));
			memcpy(out[j], out[j - 1], sizeof(name));
			memcpy(out[j - 1], name, sizeof(name));
		}
}

/* A store on @spec ("memory" too) at a manual clock. */
static struct tk_store *store_at(struct tk_clock *c, const char *spec)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_store *st;

	o.clock = c;
	o.flags = TK_OPT_NO_RECLAIMER;
	assert_rc(tk_store_open(&st, spec, &o), 0);
	return st;
}

/* A limiter on @st (the group's one store) at a manual clock. */
static void open_at(struct tk_limiter **l, struct tk_clock *c,
		    const char *policy, struct tk_store *st)
{
	struct tk_options o = TK_OPTIONS_INIT;

	o.clock = c;
	o.store = st;
	o.flags = TK_OPT_NO_RECLAIMER;
	assert_rc(tk_limiter_open(l, policy, NULL, &o), 0);
}

static void same(const struct tk_decision *x, const struct tk_decision *y,
		 int step)
{
	if (x->allowed != y->allowed || x->limit != y->limit ||
	    x->remaining != y->remaining || x->reset_at != y->reset_at ||
	    x->retry_after != y->retry_after || x->delay != y->delay ||
	    x->degraded != y->degraded)
		fail_msg("step %d: memory %d lim %llu rem %llu reset %llu "
			 "retry %llu; cluster %d lim %llu rem %llu reset %llu "
			 "retry %llu",
			 step, x->allowed, (unsigned long long)x->limit,
			 (unsigned long long)x->remaining,
			 (unsigned long long)x->reset_at,
			 (unsigned long long)x->retry_after, y->allowed,
			 (unsigned long long)y->limit,
			 (unsigned long long)y->remaining,
			 (unsigned long long)y->reset_at,
			 (unsigned long long)y->retry_after);
}

#define STEPS 400

/*
 * A group of limiters @pols (one key each, on different masters, slots
 * ascending or descending), memory vs cluster on one timeline: every
 * decision and every dimension's decision the same.  Returns how many
 * checks were refused by a later slot after an earlier one admitted
 * (the refunds the run exercised).
 */
static int group_differential(const char *const *pols, int n, int ascending,
			      uint64_t seed, const char *prefix)
{
	struct tk_limiter *mem[3], *red[3];
	struct tk_store *sm, *sr;
	struct tk_clock *cm, *cr;
	struct tk_key keys[3];
	struct tk_decision dm, dr, dims_m[3], dims_r[3];
	char names[3][16], spec[256];
	uint64_t s = seed, now = T0;
	int i, step, refunds = 0, first = ascending ? 0 : n - 1;

	pick(prefix, n, ascending, names);
	snprintf(spec, sizeof(spec),
		 "%s?key_prefix=%s:&timeout=5s&server_time=0", cluster_spec,
		 prefix);
	assert_rc(tk_clock_manual_new(&cm, T0), 0);
	assert_rc(tk_clock_manual_new(&cr, T0), 0);
	sm = store_at(cm, "memory");
	sr = store_at(cr, spec);
	for (i = 0; i < n; i++) {
		open_at(&mem[i], cm, pols[i], sm);
		open_at(&red[i], cr, pols[i], sr);
		keys[i].key = names[i];
		keys[i].key_len = strlen(names[i]);
	}
	for (step = 0; step < STEPS; step++) {
		uint64_t cost = rnd_range(&s, 1, 2);

		now += rnd_range(&s, 0, 3) == 0 ? rnd_range(&s, 0, 900) * MS
						: rnd_range(&s, 0, 60) * MS;
		assert_rc(tk_clock_set(cm, now), 0);
		assert_rc(tk_clock_set(cr, now), 0);
		assert_rc(tk_limiter_check_group(mem, keys, (size_t)n, cost,
						 &dm, dims_m, 3),
			  0);
		assert_rc(tk_limiter_check_group(red, keys, (size_t)n, cost,
						 &dr, dims_r, 3),
			  0);
		same(&dm, &dr, step);
		for (i = 0; i < n; i++)
			same(&dims_m[i], &dims_r[i], step);
		/* A refusal after the first slot's key admitted. */
		refunds += !dm.allowed && dims_m[first].allowed;
	}
	for (i = 0; i < n; i++) {
		tk_limiter_close(mem[i]);
		tk_limiter_close(red[i]);
	}
	tk_store_close(sm);
	tk_store_close(sr);
	tk_clock_free(cm);
	tk_clock_free(cr);
	return refunds;
}

static void test_group_differential(void **state)
{
	static const char *const sets[][3] = {
		{ "fixed-window:5/1s", "gcra:3/1s,burst=2", NULL },
		{ "gcra:4/1s,burst=4", "fixed-window:3/1s", NULL },
		{ "sliding-log:4/1s", "gcra:5/1s", "fixed-window:6/1s" },
		{ "gcra:6/1s", "sliding-window:4/1s", "quota:5/2s" },
		{ "fixed-window:3/1s", "leaky:5/1s,max-queue=1s",
		  "token-bucket:capacity=4,refill=3/1s" },
	};
	int set, dir, refunds = 0;
	char prefix[32];

	(void)state;
	need_cluster();
	for (set = 0; set < (int)(sizeof(sets) / sizeof(sets[0])); set++)
		for (dir = 0; dir < 2; dir++) {
			int n = sets[set][2] ? 3 : 2;

			snprintf(prefix, sizeof(prefix), "d%d%d_%ld", set, dir,
				 (long)getpid());
			refunds += group_differential(sets[set], n, dir,
						      0x5eed + 7 * set + dir,
						      prefix);
		}
	print_message("# refusals after an earlier slot admitted: %d\n",
		      refunds);
	/* The timelines exercise the refund. */
	assert_true(refunds > 50);
}

/* A composite over several keys (tk_limiter_check_keys()). */
static void test_keys_differential(void **state)
{
	static const char *const pols[] = {
		"all(fixed-window:4/1s,gcra:3/1s,sliding-log:5/2s)",
		"any(fixed-window:2/1s,gcra:2/1s)",
	};
	struct tk_limiter *mem, *red;
	struct tk_store *sm, *sr;
	struct tk_clock *cm, *cr;
	struct tk_decision dm, dr;
	struct tk_key keys[3];
	char names[3][16], spec[256], prefix[32];
	uint64_t s = 0xabcdef, now = T0;
	int p, i, step, denied = 0;

	(void)state;
	need_cluster();
	for (p = 0; p < 2; p++) {
		int n = p == 0 ? 3 : 2;

		snprintf(prefix, sizeof(prefix), "k%d_%ld", p, (long)getpid());
		pick(prefix, n, p, names);
		snprintf(spec, sizeof(spec),
			 "%s?key_prefix=%s:&timeout=5s&server_time=0",
			 cluster_spec, prefix);
		assert_rc(tk_clock_manual_new(&cm, T0), 0);
		assert_rc(tk_clock_manual_new(&cr, T0), 0);
		sm = store_at(cm, "memory");
		sr = store_at(cr, spec);
		open_at(&mem, cm, pols[p], sm);
		open_at(&red, cr, pols[p], sr);
		for (i = 0; i < n; i++) {
			keys[i].key = names[i];
			keys[i].key_len = strlen(names[i]);
		}
		for (step = 0; step < STEPS; step++) {
			uint64_t cost = rnd_range(&s, 1, 2);

			now += rnd_range(&s, 0, 120) * MS;
			assert_rc(tk_clock_set(cm, now), 0);
			assert_rc(tk_clock_set(cr, now), 0);
			assert_rc(tk_limiter_check_keys(mem, keys, (size_t)n,
							cost, &dm),
				  0);
			assert_rc(tk_limiter_check_keys(red, keys, (size_t)n,
							cost, &dr),
				  0);
			same(&dm, &dr, step);
			denied += !dm.allowed;
		}
		tk_limiter_close(mem);
		tk_limiter_close(red);
		tk_store_close(sm);
		tk_store_close(sr);
		tk_clock_free(cm);
		tk_clock_free(cr);
	}
	assert_true(denied > 50);
}

/* The units a raw state counts: a window's ("ALG:POLICY:START:END:COUNT"),
 * a sliding window's buckets', a log's stamps; 0 for none. */
static uint64_t count_of(const char *val)
{
	const char *colon;
	uint64_t n = 0;
	int field = 0;

	if (strncmp(val, "4:", 2) == 0) {
		/* A sliding window, "4:S:w:T0:N0:...:TS:NS". */
		for (colon = val; (colon = strchr(colon, ':')) != NULL; colon++)
			if (++field >= 4 && field % 2 == 0)
				n += strtoull(colon + 1, NULL, 10);
		return n;
	}
	if (strncmp(val, "5:", 2) != 0) {
		colon = strrchr(val, ':');
		return colon ? strtoull(colon + 1, NULL, 10) : 0;
	}
	/* A sliding log, "5:L:T1:...:Tn": its n stamps. */
	for (colon = val; (colon = strchr(colon, ':')) != NULL; colon++)
		n++;
	return n - 1;
}

/* A sliding log (binary, check.lua's LOGH and STAMP) as the text
 * "5:L:T1:...:Tn" of earlier versions, a sliding window (SWH, SWT, REC)
 * as "4:S:w:T0:N0:...:TS:NS", a window (binary, WIN) as
 * "ALG:POLICY:START:END:COUNT"; any other state as it is. */
static const char as_text[] =
	"local function d(h, l) return h == 0 and tostring(l) or "
	"string.format('%d%09d', h, l) end "
	"local v = redis.call('GET', KEYS[1]) "
	"if v and string.byte(v) == 132 then "
	"local t = { '4', tostring(string.byte(v, 2)), d(struct.unpack("
	"'>I5I4', v, 3)) } "
	"for i = 29, #v, 16 do local h, l, n = struct.unpack('>I5I4I7', v, i) "
	"t[#t + 1] = d(h, l) t[#t + 1] = string.format('%d', n) end "
	"return table.concat(t, ':') end "
	"if v and #v == 37 and (v:byte() == 131 or v:byte() == 134) then "
	"local f = { struct.unpack('>BI5I4I5I4I5I4I5I4', v) } "
	"local t = { tostring(f[1] - 128) } "
	"for i = 2, 8, 2 do t[#t + 1] = d(f[i], f[i + 1]) end "
	"return table.concat(t, ':') end "
	"if not v or string.byte(v) ~= 133 then return v or '' end "
	"local t = { '5', tostring(struct.unpack('>I2', v, 2)) } "
	"for i = 4, #v, 9 do local h, l = struct.unpack('>I5I4', v, i) "
	"t[#t + 1] = d(h, l) end return table.concat(t, ':')";

/* The raw state of dimension 0 of @key under @p ("" for none) into
 * @val, a sliding log or a window as text (as_text). */
static void raw_state(const char *key_prefix, const char *key,
		      const struct tk__policy *p, char *val, size_t len)
{
	char buf[96];
	size_t n = state_key(key_prefix, key, p, buf);
	int i;

	for (i = 0; i < 3; i++) {
		val[0] = '\0';
		if (redis_kit_cmd(&nodes[i], val, len, "EVAL %s 1 %b", as_text,
				  buf, n) >= 0)
			return; /* else MOVED: another master's */
	}
	fail_msg("no master serves %s", key);
}

/* The units @key's state under @p counts (count_of()). */
static uint64_t window_count(const char *key_prefix, const char *key,
			     const struct tk__policy *p)
{
	static char val[16384];

	raw_state(key_prefix, key, p, val, sizeof(val));
	return count_of(val);
}

/* What the workers share: admitted checks of each group. */
struct shared {
	_Atomic uint64_t admitted[2];
	_Atomic uint64_t single; /* test_reshard: admitted checks of S */
	_Atomic uint64_t errors;
	_Atomic int last_error; /* the last check's error */
	_Atomic int stop;
};

/*
 * The race that a refund must survive: group 0 = {A, B}, group 1 =
 * {A, C}, A in the lowest slot (consumed first).  C's small limit
 * refuses group 1 often, after A consumed: those refunds meet group 0's
 * consumes of A.  Returns the limiters (closed by the caller).
 */
struct race {
	struct tk_clock *clock;
	struct tk_store *store;
	struct tk_limiter *l[3]; /* A, B, C */
	char names[3][16];
	int named; /* names[] given: race_open() keeps them */
	char key_prefix[32];
	uint64_t limit[3];
};

/* @opts: the spec's options after key_prefix (NULL: a 5 s timeout). */
static void race_open(struct race *r, const char *prefix,
		      const char *const pols[3], const char *opts)
{
	char spec[256];
	int i;

	const struct tk__policy *ps[3];

	snprintf(r->key_prefix, sizeof(r->key_prefix), "%s_%ld:", prefix,
		 (long)getpid());
	/* A timeout is an error whose script may still run: generous, so
	 * that a loaded machine never makes one. */
	snprintf(spec, sizeof(spec), "%s?key_prefix=%s&%s", cluster_spec,
		 r->key_prefix, opts ? opts : "timeout=5s&server_time=0");
	assert_rc(tk_clock_manual_new(&r->clock, T0), 0);
	r->store = store_at(r->clock, spec);
	for (i = 0; i < 3; i++) {
		open_at(&r->l[i], r->clock, pols[i], r->store);
		r->limit[i] = tk_limiter_policy(r->l[i])->dim[0].limit;
		ps[i] = &tk_limiter_policy(r->l[i])->dim[0];
	}
	if (!r->named)
		pick_states(prefix, ps, r->names);
	/* B and C in either order after A. */
	assert_true(state_slot(r->names[0], ps[0]) <
		    state_slot(r->names[1], ps[1]));
	assert_true(state_slot(r->names[0], ps[0]) <
		    state_slot(r->names[2], ps[2]));
}

/* The policy of @r's limiter @i (A, B, C), whose tag names its keys. */
static const struct tk__policy *pol_of(const struct race *r, int i)
{
	return &tk_limiter_policy(r->l[i])->dim[0];
}

static void race_close(struct race *r)
{
	for (int i = 0; i < 3; i++)
		tk_limiter_close(r->l[i]);
	tk_store_close(r->store);
	tk_clock_free(r->clock);
}

/* One check of group @g at @cost: 1 admitted, 0 refused, -1 error. */
static int race_check_cost(struct race *r, int g, uint64_t cost)
{
	struct tk_limiter *ls[2] = { r->l[0], r->l[1 + g] };
	struct tk_key keys[2] = {
		{ r->names[0], strlen(r->names[0]) },
		{ r->names[1 + g], strlen(r->names[1 + g]) },
	};
	struct tk_decision d;

	if (tk_limiter_check_group(ls, keys, 2, cost, &d, NULL, 0) != 0)
		return -1;
	return d.allowed;
}

static int race_check(struct race *r, int g)
{
	return race_check_cost(r, g, 1);
}

static void race_worker(struct race *r, struct shared *sh, int w, int m)
{
	int j, rc;

	for (j = 0; (m == 0 || j < m) && !atomic_load(&sh->stop); j++) {
		int g = (j + w) % 2;

		rc = race_check(r, g);
		if (rc < 0)
			atomic_fetch_add(&sh->errors, 1);
		else if (rc)
			atomic_fetch_add(&sh->admitted[g], 1);
	}
}

static struct shared *shared_map(void)
{
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	assert_true(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	return sh;
}

static void fork_workers(struct race *r, struct shared *sh, pid_t *pids, int n,
			 int m)
{
	for (int i = 0; i < n; i++) {
		pids[i] = kit_fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			race_worker(r, sh, i, m);
			_exit(0);
		}
	}
}

static void wait_workers(pid_t *pids, int n, int killed)
{
	int status;

	for (int i = 0; i < n; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		if (killed)
			assert_true(WIFSIGNALED(status) || WIFEXITED(status));
		else
			assert_true(WIFEXITED(status) &&
				    WEXITSTATUS(status) == 0);
	}
}

/* What a race run left: the admitted checks of each group and each key's
 * count, printed after @what. */
struct tally {
	uint64_t a0, a1; /* admitted {A,B}, {A,C} */
	uint64_t ca, cb, cc;
};

static void tally(const struct race *r, struct shared *sh, const char *what,
		  struct tally *t)
{
	t->a0 = atomic_load(&sh->admitted[0]);
	t->a1 = atomic_load(&sh->admitted[1]);
	t->ca = window_count(r->key_prefix, r->names[0], pol_of(r, 0));
	t->cb = window_count(r->key_prefix, r->names[1], pol_of(r, 1));
	t->cc = window_count(r->key_prefix, r->names[2], pol_of(r, 2));
	print_message(
		"# %s: admitted {A,B} %llu {A,C} %llu; counts A "
		"%llu/%llu B %llu/%llu C %llu/%llu\n",
		what, (unsigned long long)t->a0, (unsigned long long)t->a1,
		(unsigned long long)t->ca, (unsigned long long)r->limit[0],
		(unsigned long long)t->cb, (unsigned long long)r->limit[1],
		(unsigned long long)t->cc, (unsigned long long)r->limit[2]);
}

/* 4 processes x 200 checks of the groups {A, B} and {A, C}. */
static void concurrent(const char *const pols[3], const char *stem)
{
	enum { N = 4, M = 200 };
	struct shared *sh;
	struct race r = { 0 };
	pid_t pids[N];
	struct tally t;

	need_cluster();
	sh = shared_map();
	race_open(&r, stem, pols, NULL);
	fork_workers(&r, sh, pids, N, M);
	wait_workers(pids, N, 0);
	tally(&r, sh, "4 x 200 checks", &t);
	assert_int_equal(atomic_load(&sh->errors), 0);
	/* Never more than a limit. */
	assert_true(t.a0 + t.a1 <= r.limit[0]);
	assert_true(t.a1 <= r.limit[2]);
	/* Every key counts exactly what was admitted through it: a refund
	 * took back only its own units, and all of them. */
	assert_int_equal(t.ca, t.a0 + t.a1);
	assert_int_equal(t.cb, t.a0);
	assert_int_equal(t.cc, t.a1);
	/* And the race happened: C filled, then A. */
	assert_int_equal(t.a1, r.limit[2]);
	assert_int_equal(t.a0 + t.a1, r.limit[0]);
	race_close(&r);
	munmap(sh, sizeof(*sh));
}

static void test_concurrent(void **state)
{
	static const char *const pols[3] = { "fixed-window:60/1d",
					     "fixed-window:1000/1d",
					     "fixed-window:25/1d" };

	(void)state;
	concurrent(pols, "c");
}

/* The same race on sliding windows: a refund takes its units off its
 * bucket. */
static void test_concurrent_sliding(void **state)
{
	static const char *const pols[3] = { "sliding-window:60/1d",
					     "fixed-window:1000/1d",
					     "sliding-window:25/1d" };

	(void)state;
	concurrent(pols, "w");
}

/* The same race on sliding logs: a refund takes its stamps off. */
static void test_concurrent_log(void **state)
{
	static const char *const pols[3] = { "sliding-log:60/1d",
					     "fixed-window:1000/1d",
					     "sliding-log:25/1d" };

	(void)state;
	concurrent(pols, "l");
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Workers killed mid-check leave consumes without their refunds: fewer
 * admitted, never more. */
static void test_kill9(void **state)
{
	enum { N = 4, ROUNDS = 5 };
	struct shared *sh;
	struct race r = { 0 };
	pid_t pids[N];
	struct tally t;
	int round, i;

	/* Larger limits, so that kills land mid-run. */
	static const char *const pols[3] = { "fixed-window:1500/1d",
					     "fixed-window:100000/1d",
					     "fixed-window:600/1d" };

	(void)state;
	need_cluster();
	sh = shared_map();
	race_open(&r, "x", pols, NULL);
	for (round = 0; round < ROUNDS; round++) {
		fork_workers(&r, sh, pids, N, 0);
		pause_ms(20 + 15 * round);
		for (i = 0; i < N; i++)
			kill(pids[i], SIGKILL);
		wait_workers(pids, N, 1);
	}
	/* Then the rest, to the end. */
	fork_workers(&r, sh, pids, N, 2000);
	wait_workers(pids, N, 0);
	tally(&r, sh, "after rounds of SIGKILL", &t);
	print_message("# units held by killed checks: A %llu\n",
		      (unsigned long long)(t.ca - t.a0 - t.a1));
	assert_true(t.a0 + t.a1 <= r.limit[0]);
	assert_true(t.a1 <= r.limit[2]);
	assert_true(t.ca <= r.limit[0] && t.cb <= r.limit[1] &&
		    t.cc <= r.limit[2]);
	/* Units held by a killed check stay counted: never fewer counted
	 * than admitted. */
	assert_true(t.ca >= t.a0 + t.a1 && t.cb >= t.a0 && t.cc >= t.a1);
	/* Both groups ran to exhaustion of A. */
	assert_int_equal(t.ca, r.limit[0]);
	race_close(&r);
	munmap(sh, sizeof(*sh));
}

static int owner(const char *buf, size_t len);

/* @n checks of group {A, B}: how many were admitted. */
static int admit_n(struct race *r, int n)
{
	int i, yes = 0;

	for (i = 0; i < n; i++)
		yes += race_check(r, 0) == 1;
	return yes;
}

/*
 * server_time=1: the first slot's master gives the time, every slot
 * decides at it; A (limit 10) consumed first and refunded when B
 * (limit 5) refuses.
 */
static void test_server_time(void **state)
{
	static const char *const pols[3] = { "fixed-window:10/1h",
					     "fixed-window:5/1h",
					     "fixed-window:5/1h" };
	struct race r = { 0 };

	(void)state;
	need_cluster();
	race_open(&r, "t", pols, "server_time=1&timeout=5s");
	assert_int_equal(admit_n(&r, 8), 5);
	assert_int_equal(window_count(r.key_prefix, r.names[0], pol_of(&r, 0)),
			 5);
	assert_int_equal(window_count(r.key_prefix, r.names[1], pol_of(&r, 1)),
			 5);
	race_close(&r);
}

/*
 * A later slot's master stopped (SIGSTOP): the check fails with its
 * error, and what the earlier slot consumed is given back.
 */
static void test_later_slot_fails(void **state)
{
	static const char *const pols[3] = { "fixed-window:10/1h",
					     "fixed-window:10/1h",
					     "fixed-window:10/1h" };
	struct tk_decision d;
	struct race r = { 0 };
	char buf[64];
	int i, b, rc = -1;
	uint64_t n;

	(void)state;
	need_cluster();
	/* B times out whatever the deadline; A's refund gets the same
	 * timeout, which must hold on a loaded machine (200 ms did not,
	 * once; nor did 1 s): generous, as B's check waits it out once. */
	race_open(&r, "f", pols, "timeout=3s&connect_timeout=3s&server_time=0");
	assert_int_equal(admit_n(&r, 3), 3);
	b = owner(buf, state_key(r.key_prefix, r.names[1], pol_of(&r, 1), buf));
	assert_int_equal(kill(nodes[b].pid, SIGSTOP), 0);
	{
		struct tk_limiter *ls[2] = { r.l[0], r.l[1] };
		struct tk_key keys[2] = {
			{ r.names[0], strlen(r.names[0]) },
			{ r.names[1], strlen(r.names[1]) },
		};

		rc = tk_limiter_check_group(ls, keys, 2, 1, &d, NULL, 0);
	}
	/* A, consumed first, is back at 3 before B's master resumes. */
	n = window_count(r.key_prefix, r.names[0], pol_of(&r, 0));
	assert_int_equal(kill(nodes[b].pid, SIGCONT), 0);
	assert_rc(rc, -ETIMEDOUT);
	assert_int_equal(n, 3);
	/* Back: B's master answers again (after the reconnect backoff). */
	for (i = 0; i < 100 && (rc = race_check(&r, 0)) < 0; i++)
		pause_ms(100);
	assert_int_equal(rc, 1);
	/* A counts what was admitted through it, whatever failed. */
	assert_int_equal(window_count(r.key_prefix, r.names[0], pol_of(&r, 0)),
			 4);
	/* B's master may have run the timed-out script once resumed: a
	 * unit counted that no check was admitted for (fewer, not more). */
	n = window_count(r.key_prefix, r.names[1], pol_of(&r, 1));
	print_message("# B counts %llu after 4 admitted\n",
		      (unsigned long long)n);
	assert_true(n == 4 || n == 5);
	race_close(&r);
}

/*
 * Another client (its own store and clock) whose check of {A, C} lands
 * between the first client's consume of A and its refund.
 */
struct between {
	struct race *other;
	uint64_t at; /* ns: when the other client checks */
	int lose;    /* A's state lost first (a flush, an eviction) */
	int admitted, calls;
	char state[512]; /* A's state as the other client wrote it */
};

static void between_check(void *arg)
{
	struct between *b = arg;
	char buf[64];
	size_t n;

	/* Once, even if an assertion below ends the test. */
	tk__xslot_pause = NULL;
	b->calls++;
	if (b->lose) {
		n = state_key(b->other->key_prefix, b->other->names[0],
			      pol_of(b->other, 0), buf);
		assert_int_equal(redis_kit_cmd(&nodes[owner(buf, n)], NULL, 0,
					       "DEL %b", buf, n),
				 1);
	}
	assert_rc(tk_clock_set(b->other->clock, b->at), 0);
	b->admitted = race_check(b->other, 1);
	raw_state(b->other->key_prefix, b->other->names[0], pol_of(b->other, 0),
		  b->state, sizeof(b->state));
}

enum {
	ONE_WORD = 1, /* gcra, token-bucket, leaky: the consume stays */
	LOST = 2,     /* A's state lost before the other client's check */
};

/*
 * A of policy @pol, B spent: a check of {A, B} of @cost at @t1
 * consumes A and is refunded when B refuses, while another client checks
 * {A, C} at @t2 between that consume and the refund.  A counts what was
 * admitted through it: its state after the refund is the one a second
 * run without the refused check leaves (stem "x" + @tag), byte for byte;
 * with ONE_WORD or LOST the other client's, the consume left in place
 * (its units cannot be told from theirs, or are gone).
 */
static void refund_between(const char *pol, uint64_t t1, uint64_t t2,
			   uint64_t cost, int flags, const char *tag)
{
	char stem[16], after[512], want[512], spent[32];
	const char *const pols[3] = { pol, spent, "fixed-window:100/1d" };
	struct between b = { 0 };
	struct race r = { 0 }, other = { 0 }, replay = { 0 };

	/* B's limit @cost: the check's own unit first spends it. */
	snprintf(spent, sizeof(spent), "fixed-window:%llu/1d",
		 (unsigned long long)cost);
	snprintf(stem, sizeof(stem), "b%s", tag);
	race_open(&r, stem, pols, NULL);
	race_open(&other, stem, pols, NULL);
	assert_rc(tk_clock_set(r.clock, t1), 0);
	/* A holds a unit of this client already: it stays. */
	assert_int_equal(race_check(&r, 0), 1);
	b.other = &other;
	b.at = t2;
	b.lose = !!(flags & LOST);
	tk__xslot_pause = between_check;
	tk__xslot_pause_arg = &b;
	assert_int_equal(race_check_cost(&r, 0, cost), 0);
	assert_int_equal(b.calls, 1);
	assert_int_equal(b.admitted, 1);
	raw_state(r.key_prefix, r.names[0], pol_of(&r, 0), after,
		  sizeof(after));

	snprintf(stem, sizeof(stem), "x%s", tag);
	race_open(&replay, stem, pols, NULL);
	assert_rc(tk_clock_set(replay.clock, t1), 0);
	assert_int_equal(race_check(&replay, 0), 1);
	assert_rc(tk_clock_set(replay.clock, t2), 0);
	assert_int_equal(race_check(&replay, 1), 1);
	raw_state(replay.key_prefix, replay.names[0], pol_of(&replay, 0), want,
		  sizeof(want));
	print_message("# %s: the other client wrote %s, refunded %s, "
		      "without the refused check %s\n",
		      pol, b.state, after, want);
	assert_string_equal(after, flags ? b.state : want);
	race_close(&r);
	race_close(&other);
	race_close(&replay);
}

/* One refund_between() run, its times in s from the start of a minute
 * (of a UTC day if @day) at or before T0. */
struct refund_case {
	const char *pol;
	int day;
	uint64_t t1, t2; /* s */
	uint64_t cost;
	int flags;
	const char *tag;
};

static void refund_cases(const struct refund_case *c, size_t n)
{
	uint64_t w;

	need_cluster();
	for (size_t i = 0; i < n; i++) {
		w = (c[i].day ? 86400 : 60) * SEC;
		refund_between(c[i].pol, T0 - T0 % w + c[i].t1 * SEC,
			       T0 - T0 % w + c[i].t2 * SEC, c[i].cost,
			       c[i].flags, c[i].tag);
	}
}

#define SW "sliding-window:5/1m,buckets=4" /* buckets of 15 s, 5 a ring */

/*
 * A refund meets the next window, bucket or log entry another client
 * wrote since the consume: it takes back nothing of theirs.  With a
 * manual clock, server_time off.
 */
static void test_refund_after_edge(void **state)
{
	static const struct refund_case c[] = {
		/* The consume in the first minute, theirs in the next. */
		{ "fixed-window:5/1m", 0, 59, 61, 1, 0, "fn" },
		/* A quota's calendar window: the same window code. */
		{ "quota:5/day", 1, 86399, 86401, 1, 0, "qn" },
		/* 75 s on, the consume's bucket holds a new tick. */
		{ SW, 0, 14, 89, 1, 0, "sn" },
		/* Their stamp when the consume's has expired (pruned). */
		{ "sliding-log:3/1m", 0, 30, 90, 1, 0, "ln" },
		{ "gcra:3/1m", 0, 30, 31, 1, ONE_WORD, "gn" },
		{ "token-bucket:capacity=3,refill=3/1m", 0, 30, 31, 1, ONE_WORD,
		  "tn" },
		{ "leaky:3/1m,max-queue=2m", 0, 30, 31, 1, ONE_WORD, "kn" },
	};

	(void)state;
	refund_cases(c, sizeof(c) / sizeof(c[0]));
}

/*
 * The same with the other client's check in the consume's window,
 * bucket or log span: exactly the check's unit comes back.
 */
static void test_refund_same_edge(void **state)
{
	static const struct refund_case c[] = {
		{ "fixed-window:5/1m", 0, 58, 59, 1, 0, "fs" },
		{ "quota:5/day", 1, 86398, 86399, 1, 0, "qs" },
		/* The next bucket, the consume's still counting in full. */
		{ SW, 0, 14, 16, 1, 0, "ss" },
		/* The consume's bucket counting in part, from the next
		 * round's. */
		{ SW, 0, 14, 74, 1, 0, "sp" },
		{ "sliding-log:3/1m", 0, 30, 89, 1, 0, "ls" },
	};

	(void)state;
	refund_cases(c, sizeof(c) / sizeof(c[0]));
}

/*
 * A's state lost (a flush, an eviction) between the consume and the
 * refund, and written again by another client at the check's time: in
 * the same window, bucket or log entry, fewer units than the refund's
 * cost are not all the check's, and it takes none.
 */
static void test_refund_lost_state(void **state)
{
	static const struct refund_case c[] = {
		{ "fixed-window:5/1m", 0, 30, 30, 2, LOST, "fl" },
		{ "quota:5/day", 1, 30, 30, 2, LOST, "ql" },
		{ SW, 0, 14, 14, 2, LOST, "sl" },
		{ "sliding-log:3/1m", 0, 30, 30, 2, LOST, "ll" },
	};

	(void)state;
	refund_cases(c, sizeof(c) / sizeof(c[0]));
}

/* The master that serves @buf's slot now (the others answer MOVED). */
static int owner(const char *buf, size_t len)
{
	for (int i = 0; i < 3; i++)
		if (redis_kit_cmd(&nodes[i], NULL, 0, "EXISTS %b", buf, len) >=
		    0)
			return i;
	fail_msg("no master serves the key");
	return -1;
}

/* The slot of a simple policy's state of @key: "{" 0 0 KEY "}". */
static unsigned int single_slot(const char *key, char *buf, size_t *len)
{
	size_t k = strlen(key);

	memcpy(buf, "{\0\0", 3);
	memcpy(buf + 3, key, k);
	buf[3 + k] = '}';
	*len = 4 + k;
	return tk__redis_slot(buf, *len);
}

/* Until told to stop and S is spent: one check of S, one of a group. */
static void reshard_worker(struct race *r, struct tk_limiter *single,
			   const char *key, struct shared *sh, int w)
{
	struct tk_decision d;
	int j, rc, spent = 0;

	for (j = 0; !(atomic_load(&sh->stop) && spent); j++) {
		rc = tk_limiter_check(single, key, strlen(key), 1, &d);
		if (rc) {
			atomic_fetch_add(&sh->errors, 1);
			atomic_store(&sh->last_error, rc);
		} else if (d.allowed)
			atomic_fetch_add(&sh->single, 1);
		else
			spent = 1;
		rc = race_check(r, (j + w) % 2);
		if (rc < 0)
			atomic_fetch_add(&sh->errors, 1);
		else if (rc)
			atomic_fetch_add(&sh->admitted[(j + w) % 2], 1);
	}
}

/*
 * redis-cli --cluster reshard moves the slots of S (one key) and of A
 * (the key both groups share) to another master while 4 processes check
 * them: MOVED and ASK followed, by the checks and by the refunds; S
 * admits exactly its limit, no group more than its limits.
 */
static void test_reshard(void **state)
{
	enum { N = 4 };
	static const char *const pols[3] = { "fixed-window:1500/1d",
					     "fixed-window:100000/1d",
					     "fixed-window:600/1d" };
	char stem[16], skey[16], sbuf[32], abuf[96], id[2][64], cmd[512];
	const struct tk__policy *ps[3];
	struct tk_policy *parsed[3];
	struct tk_limiter *single;
	struct shared *sh;
	struct race r = { 0 };
	struct tally t;
	pid_t pids[N];
	size_t slen, alen;
	uint64_t before, after;
	unsigned int top;
	int i, from, to;

	(void)state;
	need_cluster();
	/* A and S among the first slots of one master: a short reshard. */
	for (i = 0; i < 3; i++)
		assert_rc(tk_policy_parse(&parsed[i], pols[i], NULL), 0);
	for (i = 0; i < 3; i++)
		ps[i] = &parsed[i]->dim[0];
	for (i = 0; i < 1000; i++) {
		snprintf(stem, sizeof(stem), "r%d_", i);
		pick_states(stem, ps, r.names);
		if (state_slot(r.names[0], ps[0]) < 300)
			break;
	}
	assert_true(state_slot(r.names[0], ps[0]) < 300);
	r.named = 1;
	for (i = 0; i < 1000; i++) {
		snprintf(skey, sizeof(skey), "s%d", i);
		if (single_slot(skey, sbuf, &slen) < 300)
			break;
	}
	assert_true(single_slot(skey, sbuf, &slen) < 300);
	sh = shared_map();
	race_open(&r, stem, pols, NULL);
	open_at(&single, r.clock, "gcra:3000/1d", r.store);
	alen = state_key(r.key_prefix, r.names[0], pol_of(&r, 0), abuf);
	from = owner(abuf, alen);
	assert_int_equal(owner(sbuf, slen), from);
	to = (from + 1) % 3;
	assert_int_equal(redis_kit_cmd(&nodes[from], id[0], 64, "CLUSTER MYID"),
			 0);
	assert_int_equal(redis_kit_cmd(&nodes[to], id[1], 64, "CLUSTER MYID"),
			 0);
	/* --cluster reshard takes a source's slots in ascending order. */
	top = state_slot(r.names[0], ps[0]);
	for (i = 0; i < 3; i++)
		tk_policy_free(parsed[i]);
	if (single_slot(skey, sbuf, &slen) > top)
		top = single_slot(skey, sbuf, &slen);
	snprintf(cmd, sizeof(cmd),
		 "'%s' --cluster reshard 127.0.0.1:%d --cluster-from %s "
		 "--cluster-to %s --cluster-slots %u --cluster-yes "
		 ">/dev/null 2>&1",
		 REDIS_CLI, nodes[from].port, id[0], id[1], top + 1);
	for (i = 0; i < N; i++) {
		pids[i] = kit_fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			reshard_worker(&r, single, skey, sh, i);
			_exit(0);
		}
	}
	pause_ms(50);
	before = atomic_load(&sh->single);
	assert_int_equal(system(cmd), 0);
	after = atomic_load(&sh->single);
	atomic_store(&sh->stop, 1);
	wait_workers(pids, N, 0);
	assert_int_equal(owner(abuf, alen), to);
	assert_int_equal(owner(sbuf, slen), to);
	tally(&r, sh, "during --cluster reshard", &t);
	print_message("# S: %llu admitted of 3000 (%llu when the reshard "
		      "began, %llu when it ended), %llu errors (last %d)\n",
		      (unsigned long long)atomic_load(&sh->single),
		      (unsigned long long)before, (unsigned long long)after,
		      (unsigned long long)atomic_load(&sh->errors),
		      atomic_load(&sh->last_error));
	/* The checks ran while the slots moved. */
	assert_true(before < after);
	assert_int_equal(atomic_load(&sh->single), 3000);
	assert_true(t.a0 + t.a1 <= r.limit[0] && t.a1 <= r.limit[2]);
	assert_true(t.ca >= t.a0 + t.a1 && t.cb >= t.a0 && t.cc >= t.a1);
	/* Every redirection followed: no error, so every refund was made
	 * and the counts are exact. */
	assert_int_equal(atomic_load(&sh->errors), 0);
	assert_true(t.ca == t.a0 + t.a1 && t.cb == t.a0 && t.cc == t.a1);
	tk_limiter_close(single);
	race_close(&r);
	munmap(sh, sizeof(*sh));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_group_differential),
		cmocka_unit_test(test_keys_differential),
		cmocka_unit_test(test_concurrent),
		cmocka_unit_test(test_concurrent_log),
		cmocka_unit_test(test_concurrent_sliding),
		cmocka_unit_test(test_kill9),
		cmocka_unit_test(test_server_time),
		cmocka_unit_test(test_later_slot_fails),
		cmocka_unit_test(test_refund_after_edge),
		cmocka_unit_test(test_refund_same_edge),
		cmocka_unit_test(test_refund_lost_state),
		cmocka_unit_test(test_reshard),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
