/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_states.c - every algorithm's transitions on the states a store may
 * hand back, called directly (white-box, linked statically).
 *
 * A store returns whatever words it holds: a corrupt zone, another policy
 * of the same algorithm and size.  The contract (lib/algo/algo.h) is that
 * valid() bounds everything check(), forecast() and expires() rely on, so
 *   - every state either fails valid() or is handled without undefined
 *     behaviour (run under the ASan+UBSan build, where UB is fatal), and
 *     every decision on it is sane and every state it writes is valid;
 *   - valid() accepts every state the algorithm itself writes, whatever
 *     the timeline: clock readings near 0, 2^62 and 2^63 - 1, steps back,
 *     and policies whose periods reach 2^62 ns, so that TATs and window
 *     ends pass 2^63;
 *   - valid() without a policy (a zone's verify) is never stricter than
 *     with one.
 * Along those timelines GCRA, token bucket, leaky bucket, fixed window,
 * sliding log and anchored quotas are compared field by field with
 * reference models in 128-bit arithmetic, written from
 * shared/design/semantics.md; the sliding window and calendar quotas, whose
 * models live in tests/kit/window-model.c, must keep the invariants above.
 *
 * It also pins "what no longer counts at the latest time the key has seen
 * is gone for good" for the window algorithms, and the fixed-window
 * packing bound (a limit below 2^24 packs, 2^24 does not).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "algo/algo.h"
#include "algo/window.h"
#include "clock.h"

#include "asserts.h"
#include "rnd.h"

typedef __int128 i128;

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define TOP ((UINT64_C(1) << 63) - 1) /* the latest clock reading */
#define P62 (UINT64_C(1) << 62)
#define T0 (UINT64_C(1700000000) * SEC) /* 2023-11-14 */
#define POISON UINT64_C(0xa5a5a5a5a5a5a5a5)

/* a + b, or TOP if that is later. */
static uint64_t later(uint64_t a, uint64_t b)
{
	return b > TOP - a ? TOP : a + b;
}

/* a - b, or 0 if that is earlier. */
static uint64_t earlier(uint64_t a, uint64_t b)
{
	return b > a ? 0 : a - b;
}

/* ------------------------------------------------------------------ */
/* Policies under test                                                  */

enum ref_kind { R_NONE, R_GCRA, R_LEAKY, R_WINDOW, R_LOG };

struct subject {
	const char *text;
	struct tk_policy *pol;
	const struct tk__policy *p;
	const struct tk__algorithm *a;
	uint32_t words;
	enum ref_kind ref;
	uint64_t scale;	   /* ns: one unit, bucket or window */
	uint64_t max_cost; /* the largest cost that is not -ERANGE */
};

static const char *const texts[] = {
	"gcra:10/s,burst=5",
	"gcra:1/1h",
	"gcra:3/7ns,burst=2",
	"gcra:1/4611686018427387904ns",
	"gcra:2/4611686018427387904ns",
	"token-bucket:capacity=4,refill=3/s",
	"token-bucket:capacity=1,refill=1/4611686018427387904ns",
	"leaky:10/s,max-queue=1s",
	"leaky:1/1h",
	"leaky:3/7ns,max-queue=20ns",
	"leaky:1/4611686018427387904ns,max-queue=4611686018427387904ns",
	"fixed-window:5/1s",
	"fixed-window:5/10ms",
	"fixed-window:3/7ns",
	"fixed-window:16777215/1s",
	"fixed-window:16777216/1s",
	"fixed-window:16777216/1h",
	"fixed-window:3/4611686018427387904ns",
	"fixed-window:4611686018427387904/4611686018427387904ns",
	"sliding-window:10/1s",
	"sliding-window:7/9s,buckets=3",
	"sliding-window:5/3ns,buckets=3",
	"sliding-window:4/4611686018427387904ns,buckets=4",
	"sliding-window:281474976710656/1s,buckets=100",
	"sliding-log:4/1s",
	"sliding-log:1/1h",
	"sliding-log:21/10s",
	"sliding-log:3/5ns",
	"sliding-log:3/4611686018427387904ns",
	"quota:5/1s",
	"quota:5/7ns",
	"quota:16777215/1s",
	"quota:16777216/1s",
	"quota:3/4611686018427387904ns",
	"quota:5/day",
	"quota:5/week,offset=-14:00,week-start=sun",
	"quota:5/month,offset=+14:00",
	"quota:4611686018427387904/day",
	"quota:3/10s,anchor=7000000000",
};

#define NSUBJECTS ARRAY_SIZE(texts)

static void subject_open(struct subject *s, const char *text)
{
	struct tk_parse_error err;
	const struct tk__policy *p;

	memset(s, 0, sizeof(*s));
	s->text = text;
	if (tk_policy_parse(&s->pol, text, &err) != 0)
		fail_msg("\"%s\" does not parse", text);
	assert_int_equal(s->pol->kind, TK__SINGLE);
	p = s->p = &s->pol->dim[0];
	s->a = p->alg;
	s->words = p->state_words;
	assert_non_null(s->a->valid);
	s->max_cost = p->limit;
	switch (s->a->id) {
	case TK__ALG_GCRA:
	case TK__ALG_TOKEN_BUCKET:
		s->ref = R_GCRA;
		s->scale = p->u.gcra.t;
		break;
	case TK__ALG_LEAKY:
		s->ref = R_LEAKY;
		s->scale = p->u.leaky.t;
		s->max_cost = P62 / p->u.leaky.t;
		break;
	case TK__ALG_FIXED_WINDOW:
		s->ref = R_WINDOW;
		s->scale = p->u.window.window;
		break;
	case TK__ALG_SLIDING_LOG:
		s->ref = R_LOG;
		s->scale = p->u.window.window;
		break;
	case TK__ALG_SLIDING_WINDOW:
		s->ref = R_NONE;
		s->scale = p->u.sliding.width;
		break;
	default:
		/* Anchored at 0, a fixed-period quota is a fixed window. */
		s->ref = p->u.quota.cadence < 0 && p->u.quota.anchor == 0
				 ? R_WINDOW
				 : R_NONE;
		s->scale = p->u.quota.cadence < 0 ? p->u.quota.period
						  : UINT64_C(86400) * SEC;
		break;
	}
}

static void subject_close(struct subject *s)
{
	tk_policy_free(s->pol);
}

/* The window length of a R_WINDOW subject. */
static uint64_t window_of(const struct subject *s)
{
	return s->a->id == TK__ALG_QUOTA ? s->p->u.quota.period
					 : s->p->u.window.window;
}

/* ------------------------------------------------------------------ */
/* Reference models (semantics.md), 128-bit                             */

struct ref {
	uint64_t tat;	       /* GCRA, leaky: 0 = none */
	bool has;	       /* window */
	uint64_t start, count; /* window */
	uint64_t st[600], n;   /* sliding log: ascending */
};

static uint64_t ref_gcra(const struct subject *s, struct ref *r, uint64_t now,
			 uint64_t cost, bool commit, struct tk_decision *d)
{
	const struct tk__policy *p = s->p;
	i128 T = p->u.gcra.t, tau = p->u.gcra.tau, tat, nw, at, rem;

	tat = r->tat > now ? r->tat : now;
	nw = tat + T * (i128)(cost ? cost : 1);
	at = nw - tau;
	d->limit = p->limit;
	rem = (tau - (tat - (i128)now)) / T;
	if (!commit) {
		d->remaining = rem > 0 ? (uint64_t)rem : 0;
		d->reset_at = (uint64_t)tat;
		d->retry_after = at > (i128)now ? (uint64_t)(at - now) : 0;
		d->allowed = d->retry_after == 0;
		return 0;
	}
	if ((i128)now >= at) {
		d->allowed = true;
		d->remaining = (uint64_t)((tau - (nw - (i128)now)) / T);
		d->reset_at = (uint64_t)nw;
		d->retry_after = 0;
		r->tat = (uint64_t)nw;
		return 0;
	}
	d->allowed = false;
	d->remaining = rem > 0 ? (uint64_t)rem : 0;
	d->reset_at = (uint64_t)tat;
	d->retry_after = (uint64_t)(at - now);
	return 0;
}

static uint64_t ref_leaky(const struct subject *s, struct ref *r, uint64_t now,
			  uint64_t cost, bool commit, struct tk_decision *d)
{
	const struct tk__policy *p = s->p;
	i128 T = p->u.leaky.t, Q = p->u.leaky.max_queue, dep, delay, nx;

	dep = r->tat > now ? r->tat : now;
	delay = dep - now;
	d->limit = (uint64_t)(Q / T + 1);
	d->allowed = delay <= Q;
	d->delay = d->allowed ? (uint64_t)delay : 0;
	d->retry_after = d->allowed ? 0 : (uint64_t)(delay - Q);
	d->remaining = delay <= Q ? (uint64_t)((Q - delay) / T + 1) : 0;
	d->reset_at = (uint64_t)dep;
	if (commit && d->allowed) {
		nx = dep + T * (i128)cost;
		r->tat = (uint64_t)nx;
		d->remaining = nx - now <= Q
				       ? (uint64_t)((Q - (nx - now)) / T + 1)
				       : 0;
		d->reset_at = (uint64_t)nx;
	}
	return 0;
}

static uint64_t ref_window(const struct subject *s, struct ref *r, uint64_t now,
			   uint64_t cost, bool commit, struct tk_decision *d)
{
	uint64_t L = s->p->limit, W = window_of(s), ws, start, count;
	uint64_t need = cost ? cost : 1;

	ws = now / W * W;
	start = r->has && r->start > ws ? r->start : ws;
	count = r->has && r->start == start ? r->count : 0;
	d->limit = L;
	d->reset_at = (uint64_t)((i128)start + W);
	d->allowed = count + need <= L;
	d->remaining = L - count - (commit && d->allowed ? cost : 0);
	d->retry_after = d->allowed ? 0 : start + W - now;
	if (commit && d->allowed) {
		r->has = true;
		r->start = start;
		r->count = count + cost;
	}
	return 0;
}

static uint64_t ref_log(const struct subject *s, struct ref *r, uint64_t now,
			uint64_t cost, bool commit, struct tk_decision *d)
{
	uint64_t L = s->p->limit, W = s->p->u.window.window, live, count, i;
	uint64_t need = cost ? cost : 1, pos, kth;

	for (live = 0; live < r->n && (i128)r->st[live] + W <= now; live++)
		;
	count = r->n - live;
	d->limit = L;
	d->allowed = count + need <= L;
	d->remaining = L - count;
	d->reset_at = count ? r->st[live] + W : now;
	if (!d->allowed) {
		kth = r->st[live + count + need - L - 1] + W;
		d->retry_after = kth > now + 1 ? kth - now : 1;
		return 0;
	}
	d->retry_after = 0;
	if (!commit)
		return 0;
	/* Keep the live stamps, insert cost stamps of now in order. */
	memmove(r->st, r->st + live, count * sizeof(r->st[0]));
	for (pos = 0; pos < count && r->st[pos] <= now; pos++)
		;
	memmove(r->st + pos + cost, r->st + pos,
		(count - pos) * sizeof(r->st[0]));
	for (i = 0; i < cost; i++)
		r->st[pos + i] = now;
	r->n = count + cost;
	d->remaining = L - r->n;
	d->reset_at = r->st[0] + W;
	return 0;
}

/* The model's decision; check if @commit, else forecast (0: a peek). */
static void ref_eval(const struct subject *s, struct ref *r, uint64_t now,
		     uint64_t cost, bool commit, struct tk_decision *d)
{
	memset(d, 0, sizeof(*d));
	switch (s->ref) {
	case R_GCRA:
		ref_gcra(s, r, now, cost, commit, d);
		break;
	case R_LEAKY:
		ref_leaky(s, r, now, cost, commit, d);
		break;
	case R_WINDOW:
		ref_window(s, r, now, cost, commit, d);
		break;
	case R_LOG:
		ref_log(s, r, now, cost, commit, d);
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------------ */
/* Running the algorithm                                                */

static bool same(const struct tk_decision *a, const struct tk_decision *b)
{
	return a->allowed == b->allowed && a->limit == b->limit &&
	       a->remaining == b->remaining && a->reset_at == b->reset_at &&
	       a->retry_after == b->retry_after && a->delay == b->delay;
}

/* The @op ("forecast" or "check") of @cost at @now gave @got: it must be
 * the model's @want. */
static void expect_same(const struct subject *s, const char *where,
			const char *op, uint64_t cost, uint64_t now,
			const struct tk_decision *got,
			const struct tk_decision *want)
{
	char b1[200], b2[200];

	if (!same(got, want))
		fail_msg("[%s] %s: %s cost %llu at %llu:\n got  %s\n want %s",
			 s->text, where, op, (unsigned long long)cost,
			 (unsigned long long)now,
			 show_decision(got, b1, sizeof(b1)),
			 show_decision(want, b2, sizeof(b2)));
}

static bool valid(const struct subject *s, const uint64_t *state)
{
	bool v = s->a->valid(s->p, s->words, state);

	/* Without the policy, valid() only ever checks less. */
	if (v && !s->a->valid(NULL, s->words, state))
		fail_msg("[%s] valid with the policy, not without", s->text);
	return v;
}

/* The sliding window's units counted in full at @now, exactly. */
static i128 sw_full(const struct subject *s, const uint64_t *state,
		    uint64_t now)
{
	i128 S = s->p->u.sliding.buckets, c = now / s->p->u.sliding.width;
	i128 full = 0;
	uint32_t i;

	for (i = 0; i < s->words; i += 2)
		if (state[i + 1] && (i128)state[i] + S >= c + 1)
			full += state[i + 1];
	return full;
}

static bool may_overflow(const struct subject *s)
{
	return s->a->id == TK__ALG_QUOTA;
}

/*
 * forecast(@cost) then check(@cost) of @state at @now, with the sanity
 * every decision must have.  Returns check's code; @next is the state
 * written (or @state), @fd and @cd the decisions.
 */
static int run_op(const struct subject *s, const uint64_t *state, uint64_t now,
		  uint64_t cost, uint64_t *next, struct tk_decision *fd,
		  struct tk_decision *cd, const char *where)
{
	char b1[200], b2[200];
	int frc, crc, i;

	for (i = 0; i < 2; i++) {
		struct tk_decision *d = i ? cd : fd;
		int rc;

		memset(d, 0x5a, sizeof(*d));
		d->delay = 0;
		if (i == 0) {
			rc = frc = s->a->forecast(s->p, state, now, cost, d);
		} else {
			memset(next, 0xa5, s->words * sizeof(next[0]));
			rc = crc = s->a->check(s->p, state, now, cost, next, d);
		}
		if (rc == -ERANGE && cost > s->max_cost)
			continue;
		if (rc == -EOVERFLOW && may_overflow(s))
			continue;
		if (rc !=
		    (i ? (d->allowed ? TK__PERSIST : TK__KEEP) : TK__KEEP))
			fail_msg("[%s] %s: %s cost %llu at %llu: rc %d",
				 s->text, where, i ? "check" : "forecast",
				 (unsigned long long)cost,
				 (unsigned long long)now, rc);
		if (d->limit != s->p->limit || d->remaining > s->p->limit ||
		    d->allowed != (d->retry_after == 0) || d->reset_at < now ||
		    d->retry_after > UINT64_MAX - now ||
		    (s->a->id != TK__ALG_LEAKY && d->delay != 0))
			fail_msg("[%s] %s: %s cost %llu at %llu: insane %s",
				 s->text, where, i ? "check" : "forecast",
				 (unsigned long long)cost,
				 (unsigned long long)now,
				 show_decision(d, b1, sizeof(b1)));
	}
	if ((frc < 0 || crc < 0) ? frc != crc
				 : (fd->allowed != cd->allowed ||
				    fd->retry_after != cd->retry_after ||
				    fd->delay != cd->delay))
		fail_msg("[%s] %s: cost %llu at %llu: forecast %d %s, check "
			 "%d %s",
			 s->text, where, (unsigned long long)cost,
			 (unsigned long long)now, frc,
			 show_decision(fd, b1, sizeof(b1)), crc,
			 show_decision(cd, b2, sizeof(b2)));
	if (crc == TK__PERSIST && s->a->id == TK__ALG_SLIDING_WINDOW &&
	    sw_full(s, state, now) + cost > (i128)s->p->limit)
		fail_msg("[%s] %s: cost %llu at %llu admitted over the full "
			 "buckets alone",
			 s->text, where, (unsigned long long)cost,
			 (unsigned long long)now);
	if (crc != TK__PERSIST) {
		memcpy(next, state, s->words * sizeof(next[0]));
		return crc;
	}
	if (!valid(s, next))
		fail_msg("[%s] %s: check cost %llu at %llu wrote a state that "
			 "does not validate",
			 s->text, where, (unsigned long long)cost,
			 (unsigned long long)now);
	if (s->a->expires(s->p, next) <= now)
		fail_msg("[%s] %s: check cost %llu at %llu wrote a state "
			 "that expires at %llu",
			 s->text, where, (unsigned long long)cost,
			 (unsigned long long)now,
			 (unsigned long long)s->a->expires(s->p, next));
	return crc;
}

static uint64_t pick_cost(const struct subject *s, uint64_t *seed)
{
	uint64_t r = rnd_range(seed, 0, 99), L = s->max_cost;

	return r < 50	? 1
	       : r < 80 ? rnd_range(seed, 1, min_u64(L, 8))
	       : r < 90 ? rnd_range(seed, 1, L)
	       : r < 97 ? L
			: L + 1;
}

/* Where the clock goes next: near 0, 2^62, 2^63 - 1 or today. */
static uint64_t step_time(const struct subject *s, uint64_t now, uint64_t *seed)
{
	static const uint64_t bases[] = { 0, P62, TOP, T0 };
	uint64_t r = rnd_range(seed, 0, 99), sc = s->scale;

	if (r < 20)
		return now;
	if (r < 50)
		return later(now, rnd_range(seed, 1, sc));
	if (r < 62)
		return later(now, rnd_range(seed, sc, 4 * min_u64(sc, P62)));
	if (r < 67)
		return later(now, rnd_range(seed, 1, 1 + sc / 16));
	if (r < 85)
		return earlier(now, rnd_range(seed, 1, 2 * min_u64(sc, P62)));
	if (r < 90)
		return earlier(now, rnd_range(seed, 1, 1 + sc / 16));
	r = bases[rnd_range(seed, 0, ARRAY_SIZE(bases) - 1)];
	return r == TOP ? earlier(TOP, rnd_range(seed, 0, 3 * sc))
			: later(r, rnd_range(seed, 0, 3 * sc));
}

/* ------------------------------------------------------------------ */
/* Tests                                                                */

/*
 * Timelines around 0, 2^62 and 2^63 - 1 with steps back: every state the
 * algorithm writes validates, and decisions match the model field by
 * field where there is one.
 */
static void test_own_states_validate(void **state)
{
	const int nseeds = 6, nops = 3000;
	struct tk_decision fd, cd, want;
	char where[64];
	struct subject s;
	struct ref *ref;
	uint64_t *st, *next, seed, now, cost;
	uint64_t writes = 0, denials = 0, high = 0;
	size_t k;
	int n, i, rc;

	(void)state;
	ref = malloc(sizeof(*ref));
	assert_non_null(ref);
	for (k = 0; k < NSUBJECTS; k++) {
		subject_open(&s, texts[k]);
		st = calloc(s.words, sizeof(*st));
		next = calloc(s.words, sizeof(*next));
		assert_non_null(st);
		assert_non_null(next);
		for (n = 0; n < nseeds; n++) {
			seed = 0x57a7e5000ull + k * 64 + (uint64_t)n;
			memset(st, 0, s.words * sizeof(*st));
			memset(ref, 0, sizeof(*ref));
			now = step_time(&s, 0, &seed);
			for (i = 0; i < nops; i++) {
				now = step_time(&s, now, &seed);
				cost = pick_cost(&s, &seed);
				if (rnd_range(&seed, 0, 9) == 0)
					cost = 0; /* a peek: forecast only */
				snprintf(where, sizeof(where), "seed %d op %d",
					 n, i);
				if (!valid(&s, st))
					fail_msg("[%s] %s: state invalid",
						 s.text, where);
				if (cost == 0) {
					memset(&fd, 0, sizeof(fd));
					rc = s.a->forecast(s.p, st, now, 0,
							   &fd);
					if (rc != TK__KEEP &&
					    !(rc == -EOVERFLOW &&
					      may_overflow(&s)))
						fail_msg("[%s] %s: peek rc %d",
							 s.text, where, rc);
				} else {
					rc = run_op(&s, st, now, cost, next,
						    &fd, &cd, where);
				}
				if (rc < 0 || s.ref == R_NONE)
					goto next_op;
				/* forecast: allowed and retry_after as the
				 * check, the rest as a peek */
				ref_eval(&s, ref, now, cost, false, &want);
				expect_same(&s, where, "forecast", cost, now,
					    &fd, &want);
				if (cost == 0)
					goto next_op;
				ref_eval(&s, ref, now, cost, true, &want);
				expect_same(&s, where, "check", cost, now, &cd,
					    &want);
			next_op:
				if (rc == TK__PERSIST) {
					memcpy(st, next, s.words * sizeof(*st));
					writes++;
					high += s.a->expires(s.p, st) >=
						TK__NOW_LIMIT;
				} else if (rc == TK__KEEP && cost) {
					denials++;
				}
			}
		}
		free(st);
		free(next);
		subject_close(&s);
	}
	free(ref);
	print_message("# %llu writes (%llu expiring after 2^63), %llu "
		      "denials\n",
		      (unsigned long long)writes, (unsigned long long)high,
		      (unsigned long long)denials);
	assert_true(denials > writes / 20 && writes > denials / 20);
	assert_true(high > 100);
}

/* Words of @s's algorithm that are valid or nearly so. */
static void hostile_state(const struct subject *s, const uint64_t *real,
			  uint64_t *st, int kind, uint64_t *seed)
{
	static const uint64_t special[] = {
		0,
		1,
		UINT64_C(1000000000000),
		(UINT64_C(1) << 24) - 1,
		UINT64_C(1) << 24,
		P62,
		TOP,
		UINT64_C(1) << 63,
		(UINT64_C(1) << 63) + P62,
		UINT64_MAX - 1,
		UINT64_MAX,
	};
	uint32_t i, w = s->words;
	uint64_t x;

	switch (kind) {
	case 0:
		memset(st, 0xff, w * sizeof(*st)); /* all ones */
		break;
	case 1: /* a huge count or stamp count in word 0 */
		memset(st, 0, w * sizeof(*st));
		st[0] = UINT64_C(1000000000000);
		break;
	case 2:
		for (i = 0; i < w; i++)
			st[i] = UINT64_C(1000000000000);
		break;
	case 3:
		for (i = 0; i < w; i++)
			st[i] = rnd_next(seed);
		break;
	case 4:
		for (i = 0; i < w; i++)
			st[i] = special[rnd_range(seed, 0,
						  ARRAY_SIZE(special) - 1)];
		break;
	case 5: /* small words: counts, indices, ring slots */
		for (i = 0; i < w; i++)
			st[i] = rnd_range(seed, 0, 4);
		break;
	case 6: /* a real state with ticks or stamps near 2^64 */
		memcpy(st, real, w * sizeof(*st));
		for (i = 0; i < w; i += 1 + (uint32_t)rnd_range(seed, 0, 2))
			st[i] = UINT64_MAX - rnd_range(seed, 0, 40);
		break;
	case 7: /* a real state, two words swapped (unsorted stamps) */
		memcpy(st, real, w * sizeof(*st));
		i = (uint32_t)rnd_range(seed, 0, w - 1);
		x = st[i];
		st[i] = st[(i + 1) % w];
		st[(i + 1) % w] = x;
		break;
	default: /* a real state, one word nudged or replaced */
		memcpy(st, real, w * sizeof(*st));
		i = (uint32_t)rnd_range(seed, 0, w - 1);
		x = rnd_range(seed, 0, 3);
		st[i] = x == 0	 ? st[i] + 1
			: x == 1 ? st[i] - 1
			: x == 2 ? st[i] ^ (UINT64_C(1)
					    << rnd_range(seed, 0, 63))
				 : special[rnd_range(seed, 0,
						     ARRAY_SIZE(special) - 1)];
		break;
	}
}

/* One of @n values, nudged by -1, 0 or +1. */
static uint64_t near(uint64_t *seed, const uint64_t *v, size_t n)
{
	return v[rnd_range(seed, 0, n - 1)] + rnd_range(seed, 0, 2) - 1;
}

/* @s's own layout, with values on both sides of every bound. */
static void structured_state(const struct subject *s, uint64_t *st,
			     uint64_t *seed)
{
	const struct tk__policy *p = s->p;
	uint64_t L = p->limit, W, S, k, x, top = UINT64_C(1) << 63;
	uint32_t i, w = s->words;

	memset(st, 0, w * sizeof(*st));
	switch (s->a->id) {
	case TK__ALG_GCRA:
	case TK__ALG_TOKEN_BUCKET: {
		const uint64_t v[] = { top + p->u.gcra.tau, top + P62,
				       UINT64_MAX, p->u.gcra.tau, top };

		st[0] = near(seed, v, ARRAY_SIZE(v));
		break;
	}
	case TK__ALG_LEAKY: {
		const uint64_t v[] = { top + p->u.leaky.max_queue +
					       P62 / p->u.leaky.t *
						       p->u.leaky.t,
				       top + p->u.leaky.max_queue, UINT64_MAX,
				       top };

		st[0] = near(seed, v, ARRAY_SIZE(v));
		break;
	}
	case TK__ALG_FIXED_WINDOW:
	case TK__ALG_QUOTA: {
		const uint64_t counts[] = { 1, L, L + 1, P62, UINT64_MAX };

		W = s->ref == R_WINDOW ? window_of(s) : UINT64_C(86400) * SEC;
		if (w == 1) {
			const uint64_t v[] = { (top + W) >> 24,
					       (top + P62) >> 24,
					       (UINT64_C(1) << 40) - 1,
					       (T0 + W) >> 24, 1 };

			st[0] = near(seed, v, ARRAY_SIZE(v)) << 24 |
				(rnd_range(seed, 0, 1) ? L : L + 1) %
					(UINT64_C(1) << 24);
			break;
		}
		k = rnd_range(seed, 0, 2);
		k = k == 0 ? (top - 1) / W : k == 1 ? UINT64_MAX / W : T0 / W;
		st[0] = (k + rnd_range(seed, 0, 2) - 1) * W +
			(rnd_range(seed, 0, 3) == 0);
		st[1] = near(seed, counts, ARRAY_SIZE(counts));
		break;
	}
	case TK__ALG_SLIDING_WINDOW: {
		const uint64_t counts[] = {
			1, 1, L, L, L + 1, UINT64_C(1) << 48, UINT64_C(1) << 63
		};

		S = p->u.sliding.buckets;
		for (i = 0; i <= S; i++) {
			if (rnd_range(seed, 0, 2) == 0)
				continue;
			k = rnd_range(seed, 0, 2);
			k = k == 0   ? (top - 1) / p->u.sliding.width / (S + 1)
			    : k == 1 ? UINT64_MAX / (S + 1) - 1
				     : T0 / p->u.sliding.width / (S + 1);
			st[2 * i] =
				(k + rnd_range(seed, 0, 2) - 1) * (S + 1) + i;
			st[2 * i + 1] = near(seed, counts, ARRAY_SIZE(counts));
		}
		break;
	}
	default: { /* sliding log */
		const uint64_t bases[] = { 0, top - 4, top, UINT64_MAX - 4,
					   T0 };

		x = rnd_range(seed, 0, 4);
		st[0] = x < 3	? rnd_range(seed, 0, w - 1)
			: x < 4 ? w
				: UINT64_C(1000000000000);
		x = near(seed, bases, ARRAY_SIZE(bases));
		for (i = 1; i < w; i++) {
			st[i] = x;
			x += rnd_range(seed, 0, 1);
		}
		break;
	}
	}
}

/*
 * Random and adversarial states: each one either fails valid() or goes
 * through forecast, check and expires at instants near 0, 2^62 and
 * 2^63 - 1 with sane decisions and a valid next state.
 */
static void test_hostile_states(void **state)
{
	const int nstates = 3000;
	struct tk_decision fd, cd;
	char where[64];
	struct subject s, other;
	uint64_t *st, *real, *next, *tmp, seed, now, accepted, rejected;
	uint64_t nows[8];
	size_t k, j;
	int n, i, c;

	(void)state;
	for (k = 0; k < NSUBJECTS; k++) {
		subject_open(&s, texts[k]);
		/* Exactly the words the policy has: ASan sees any read
		 * past them. */
		st = malloc(s.words * sizeof(*st));
		real = calloc(s.words, sizeof(*real));
		next = malloc(s.words * sizeof(*next));
		tmp = malloc(s.words * sizeof(*tmp));
		assert_true(st && real && next && tmp);
		seed = 0xbad5ea7e00ull + k;
		accepted = rejected = 0;
		now = T0;
		for (n = 0; n < nstates; n++) {
			/* Real states to start from come from a timeline. */
			now = step_time(&s, now, &seed);
			if (run_op(&s, real, now, pick_cost(&s, &seed), next,
				   &fd, &cd, "timeline") == TK__PERSIST)
				memcpy(real, next, s.words * sizeof(*real));
			if (n % 3 == 0)
				structured_state(&s, st, &seed);
			else
				hostile_state(&s, real, st, n % 12, &seed);
			if (!valid(&s, st)) {
				rejected++;
				continue;
			}
			accepted++;
			nows[0] = 0;
			nows[1] = 1;
			nows[2] = P62;
			nows[3] = TOP;
			nows[4] = T0;
			nows[5] = rnd_range(&seed, 0, TOP);
			nows[6] = st[0] < TOP ? st[0] : TOP;
			nows[7] = earlier(s.a->expires(s.p, st) < TOP
						  ? s.a->expires(s.p, st)
						  : TOP,
					  rnd_range(&seed, 0, 2));
			for (j = 0; j < ARRAY_SIZE(nows); j++) {
				for (c = 0; c < 3; c++) {
					snprintf(where, sizeof(where),
						 "hostile state %d", n);
					memcpy(tmp, st, s.words * sizeof(*tmp));
					run_op(&s, tmp, nows[j],
					       c == 0	? 1
					       : c == 1 ? s.max_cost
							: s.max_cost + 1,
					       next, &fd, &cd, where);
					/* The state read is not written. */
					assert_memory_equal(
						tmp, st,
						s.words * sizeof(*tmp));
				}
			}
		}
		print_message("# %-56s %5llu accepted, %5llu rejected\n",
			      s.text, (unsigned long long)accepted,
			      (unsigned long long)rejected);
		assert_true(accepted > 0);
		/* (A queue of 2^62 ns of 2^62 ns units: any word.) */
		assert_true(rejected > 0 || s.a->id == TK__ALG_LEAKY);
		/* Another policy of another algorithm with as many words:
		 * its real states run through this one's checks too. */
		for (j = 0; j < NSUBJECTS; j++) {
			subject_open(&other, texts[j]);
			if (other.words == s.words && other.a != s.a) {
				memset(real, 0, s.words * sizeof(*real));
				for (i = 0; i < 200; i++) {
					now = step_time(&other, now, &seed);
					if (run_op(&other, real, now,
						   pick_cost(&other, &seed),
						   next, &fd, &cd,
						   "other") == TK__PERSIST)
						memcpy(real, next,
						       s.words * sizeof(*real));
					if (valid(&s, real))
						run_op(&s, real,
						       step_time(&s, now,
								 &seed),
						       1, next, &fd, &cd,
						       other.text);
				}
			}
			subject_close(&other);
		}
		free(st);
		free(real);
		free(next);
		free(tmp);
		subject_close(&s);
	}
}

/* The states of the issue: another policy's words, a corrupt block. */
static void test_foreign_states_rejected(void **state)
{
	struct subject fw, log1, sw, log21;
	struct tk_decision d;
	uint64_t st[22] = { 0 }, next[22];
	uint64_t now = T0 + 123, c;

	(void)state;
	subject_open(&fw, "fixed-window:16777216/1h");
	subject_open(&log1, "sliding-log:1/1h");
	assert_int_equal(fw.words, 2);
	assert_int_equal(log1.words, 2);
	assert_int_equal(fw.a->check(fw.p, st, now, 16777216, next, &d),
			 TK__PERSIST);
	assert_true(valid(&fw, next));
	assert_false(valid(&log1, next));
	/* A corrupt block. */
	st[0] = UINT64_C(1000000000000);
	st[1] = 0;
	assert_false(valid(&log1, st));
	assert_false(valid(&fw, st));

	subject_open(&sw, "sliding-window:100/10s");
	subject_open(&log21, "sliding-log:21/10s");
	assert_int_equal(sw.words, 22);
	assert_int_equal(log21.words, 22);
	/* Bucket 0 first, so that word 0 is a tick, not 0. */
	now = (T0 / SEC - T0 / SEC % 11) * SEC + 123;
	memset(st, 0, sizeof(st));
	assert_int_equal(sw.a->check(sw.p, st, now, 3, next, &d), TK__PERSIST);
	assert_int_equal(next[0], now / SEC);
	assert_false(valid(&log21, next));
	/* A ring bucket out of its slot, a count above L. */
	memcpy(st, next, sizeof(st));
	assert_true(valid(&sw, st));
	c = now / SEC;
	st[2 * ((c + 1) % 11)] = c + 2;
	st[2 * ((c + 1) % 11) + 1] = 1;
	assert_false(valid(&sw, st));
	st[2 * ((c + 1) % 11)] = c + 12; /* a later bucket, in its slot */
	assert_true(valid(&sw, st));
	/* Above L is a lowered limit's; above 2^48, no policy's. */
	st[2 * (c % 11) + 1] = 101;
	assert_true(valid(&sw, st));
	st[2 * (c % 11) + 1] = (UINT64_C(1) << 48) + 1;
	assert_false(valid(&sw, st));
	/* Unsorted stamps; too many of them. */
	memset(st, 0, sizeof(st));
	st[0] = 2;
	st[1] = now;
	st[2] = now - 1;
	assert_false(valid(&log21, st));
	st[2] = now;
	assert_true(valid(&log21, st));
	st[0] = 22;
	assert_false(valid(&log21, st));
	subject_close(&fw);
	subject_close(&log1);
	subject_close(&sw);
	subject_close(&log21);
}

/* One bucket {@tick, @count} in its slot of @text's ring. */
static bool valid_sw(const char *text, uint64_t tick, uint64_t count,
		     bool with_policy)
{
	struct subject s;
	uint64_t *st, i;
	bool v;

	subject_open(&s, text);
	st = calloc(s.words, sizeof(*st));
	assert_non_null(st);
	i = tick % (s.words / 2);
	st[2 * i] = tick;
	st[2 * i + 1] = count;
	v = s.a->valid(with_policy ? s.p : NULL, s.words, st);
	free(st);
	subject_close(&s);
	return v;
}

/* valid() of @text (or of its algorithm alone) on @n words. */
static bool valid_words(const char *text, bool with_policy, uint64_t w0,
			uint64_t w1, uint64_t w2, uint64_t w3)
{
	const uint64_t words[4] = { w0, w1, w2, w3 };
	struct subject s;
	uint64_t *st;
	bool v;

	subject_open(&s, text);
	assert_true(s.words <= 4 || s.a->id == TK__ALG_SLIDING_WINDOW);
	st = calloc(s.words, sizeof(*st));
	assert_non_null(st);
	memcpy(st, words, min_u64(s.words, 4) * sizeof(*st));
	v = s.a->valid(with_policy ? s.p : NULL, s.words, st);
	free(st);
	subject_close(&s);
	return v;
}

#define VALID(text, ...) valid_words(text, true, __VA_ARGS__)
#define VALID_ALONE(text, ...) valid_words(text, false, __VA_ARGS__)

/* Each bound valid() keeps, on both sides. */
static void test_valid_bounds(void **state)
{
	const uint64_t top = UINT64_C(1) << 63, H = 3600 * SEC;
	const uint64_t Wl = (top - 1) / SEC * SEC; /* last 1 s window */
	const uint64_t Wm = (top - 1) / (10 * MS) * (10 * MS);
	const uint64_t D = (top - 1) / (86400 * SEC) * (86400 * SEC);
	const uint64_t coarse_max = (top + P62) >> 24;
	uint64_t c, t, leaky;

	(void)state;
	/* GCRA: a TAT below 2^63 + tau (2^62 for any policy). */
	assert_true(VALID("gcra:1/1h", top - 1 + H, 0, 0, 0));
	assert_false(VALID("gcra:1/1h", top + H, 0, 0, 0));
	assert_true(VALID_ALONE("gcra:1/1h", top - 1 + P62, 0, 0, 0));
	assert_false(VALID_ALONE("gcra:1/1h", top + P62, 0, 0, 0));
	assert_false(VALID("token-bucket:capacity=2,refill=1/1h", top + 2 * H,
			   0, 0, 0));
	/* Leaky: a departure below 2^63 + Q + T * floor(2^62 / T). */
	leaky = top - 1 + SEC + P62 / (100 * MS) * (100 * MS);
	assert_true(VALID("leaky:10/s,max-queue=1s", leaky, 0, 0, 0));
	assert_false(VALID("leaky:10/s,max-queue=1s", leaky + 1, 0, 0, 0));
	assert_true(
		VALID_ALONE("leaky:10/s,max-queue=1s", UINT64_MAX, 0, 0, 0));
	/* Fixed window, packed: the last window that starts below 2^63. */
	c = ((Wl + SEC) >> 24) + !!((Wl + SEC) & 0xffffff);
	assert_true(VALID("fixed-window:5/1s", c << 24 | 5, 0, 0, 0));
	/* Over L: a policy of a higher limit wrote it. */
	assert_true(VALID("fixed-window:5/1s", c << 24 | 6, 0, 0, 0));
	c = ((Wl + 2 * SEC) >> 24) + !!((Wl + 2 * SEC) & 0xffffff);
	assert_false(VALID("fixed-window:5/1s", c << 24 | 1, 0, 0, 0));
	assert_false(VALID("fixed-window:5/1s", 1, 0, 0, 0));
	assert_false(VALID("fixed-window:5/1s", (c + 1) << 24 | 1, 0, 0, 0));
	assert_true(VALID_ALONE("fixed-window:5/1s", coarse_max << 24 | 1, 0, 0,
				0));
	assert_false(VALID_ALONE("fixed-window:5/1s",
				 (coarse_max + 1) << 24 | 1, 0, 0, 0));
	assert_false(VALID_ALONE("fixed-window:5/1s", 1, 0, 0, 0));
	/* Unpacked: a window start below 2^63, a count up to 2^62. */
	assert_true(VALID("fixed-window:5/10ms", Wm, 5, 0, 0));
	assert_true(VALID("fixed-window:5/10ms", Wm, 6, 0, 0));
	assert_false(VALID("fixed-window:5/10ms", Wm + 10 * MS, 1, 0, 0));
	assert_false(VALID("fixed-window:5/10ms", 10 * MS + 1, 1, 0, 0));
	assert_true(VALID_ALONE("fixed-window:5/10ms", top - 1, P62, 0, 0));
	assert_false(VALID_ALONE("fixed-window:5/10ms", top, 1, 0, 0));
	assert_false(VALID_ALONE("fixed-window:5/10ms", 0, P62 + 1, 0, 0));
	/* Quota, unpacked: a count belongs to a period start. */
	assert_true(
		VALID("quota:16777216/day", D - 86400 * SEC, 16777216, 0, 0));
	assert_true(
		VALID("quota:16777216/day", D - 86400 * SEC, 16777217, 0, 0));
	assert_false(VALID("quota:16777216/day", D - 86400 * SEC + 1, 1, 0, 0));
	assert_true(VALID("quota:16777216/day", D + 1, 0, 0, 0));
	/* Quota, packed: the coarse end of a period. */
	c = (D >> 24) + !!(D & 0xffffff);
	assert_true(VALID("quota:5/day", c << 24 | 5, 0, 0, 0));
	assert_true(VALID("quota:5/day", c << 24 | 6, 0, 0, 0));
	assert_false(VALID("quota:5/day", (c + 1) << 24 | 1, 0, 0, 0));
	/* Sliding window: the last tick a clock reading gives. */
	t = (top - 1) / (100 * MS);
	assert_true(valid_sw("sliding-window:10/1s", t, 10, true));
	assert_false(valid_sw("sliding-window:10/1s", t + 11, 1, true));
	assert_true(valid_sw("sliding-window:10/1s", t, 11, true));
	assert_true(valid_sw("sliding-window:10/1s", top - 1, 1, false));
	assert_false(valid_sw("sliding-window:10/1s", top - 1 + 11, 1, false));
	assert_false(valid_sw("sliding-window:10/1s", t,
			      (UINT64_C(1) << 48) + 1, false));
	/* Sliding log: n <= L stamps, ascending, below 2^63. */
	assert_true(VALID("sliding-log:3/1s", 3, 5, 5, top - 1));
	assert_false(VALID("sliding-log:3/1s", 4, 5, 5, top - 1));
	assert_false(VALID("sliding-log:3/1s", 3, 5, 4, top - 1));
	assert_false(VALID("sliding-log:3/1s", 1, top, 0, 0));
	assert_true(VALID("sliding-log:3/1s", 1, top - 1, 0, 0));
	assert_true(VALID("sliding-log:3/1s", 0, UINT64_MAX, 1, 0));
	assert_false(VALID_ALONE("sliding-log:3/1s", 4, 5, 5, 5));
}

/* ------------------------------------------------------------------ */
/* Nothing that stopped counting comes back                             */

/*
 * @s admits L at t1, then one unit at t2 when nothing of t1's counts any
 * more; after a step back to t1 + @back only t2's unit counts.
 */
static void no_revival(const char *text, uint64_t t1, uint64_t t2,
		       uint64_t back, uint64_t want_reset)
{
	struct subject s;
	struct tk_decision d;
	uint64_t *st, *next;

	subject_open(&s, text);
	st = calloc(s.words, sizeof(*st));
	next = calloc(s.words, sizeof(*next));
	assert_true(st && next);
	assert_int_equal(s.a->check(s.p, st, t1, s.p->limit, next, &d),
			 TK__PERSIST);
	memcpy(st, next, s.words * sizeof(*st));
	assert_int_equal(s.a->forecast(s.p, st, t2, 0, &d), TK__KEEP);
	if (d.remaining != s.p->limit)
		fail_msg("[%s] %llu still counts at t2", text,
			 (unsigned long long)(s.p->limit - d.remaining));
	assert_int_equal(s.a->check(s.p, st, t2, 1, next, &d), TK__PERSIST);
	memcpy(st, next, s.words * sizeof(*st));
	assert_int_equal(s.a->forecast(s.p, st, t1 + back, 0, &d), TK__KEEP);
	if (d.remaining != s.p->limit - 1)
		fail_msg("[%s] back at t1 + %llu: %llu count, want 1", text,
			 (unsigned long long)back,
			 (unsigned long long)(s.p->limit - d.remaining));
	assert_int_equal(d.reset_at, want_reset);
	assert_int_equal(
		s.a->check(s.p, st, t1 + back, s.p->limit - 1, next, &d),
		TK__PERSIST);
	assert_int_equal(s.a->check(s.p, next, t1 + back, 1, st, &d), TK__KEEP);
	free(st);
	free(next);
	subject_close(&s);
}

static void test_dead_state_stays_dead(void **state)
{
	(void)state;
	/* Windows: t2's window is the one that counts at t1 as well. */
	no_revival("fixed-window:5/1s", T0 + 100 * MS, T0 + 7 * SEC + 5 * MS, 0,
		   T0 + 8 * SEC);
	no_revival("fixed-window:5/10ms", T0 + 1 * MS, T0 + 35 * MS, 2 * MS,
		   T0 + 40 * MS);
	no_revival("quota:5/1s", T0 + 100 * MS, T0 + 7 * SEC, 0, T0 + 8 * SEC);
	no_revival("quota:5/7ns", 700, 730, 1, 735);
	no_revival("quota:5/day", T0, T0 + 3 * 86400 * SEC, 0,
		   (T0 / (86400 * SEC) + 4) * 86400 * SEC);
	/* Sliding window: t1's bucket left the window before t2. */
	no_revival("sliding-window:5/1s", T0 + 20 * MS, T0 + 2 * SEC + 50 * MS,
		   10 * MS, T0 + 2 * SEC + 100 * MS + SEC);
	no_revival("sliding-window:5/3s,buckets=3", T0 + 500 * MS,
		   T0 + 6 * SEC + 500 * MS, 0, T0 + 7 * SEC + 3 * SEC);
	/* The ring slot of t1's tick is not the one t2 writes. */
	no_revival("sliding-window:5/10s", T0, T0 + 23 * SEC, 5 * SEC,
		   T0 + 24 * SEC + 10 * SEC);
	/* Sliding log: t1's stamps are dropped at t2's write. */
	no_revival("sliding-log:5/1s", T0, T0 + 1 * SEC, 5 * MS, T0 + 2 * SEC);
	no_revival("sliding-log:4/5ns", 100, 120, 3, 125);
}

/* ------------------------------------------------------------------ */
/* Fixed-window packing                                                 */

static void pack_case(const char *text, uint64_t W, uint32_t words)
{
	struct subject s;
	struct tk_decision d;
	uint64_t st[2] = { 0, 0 }, next[2], L, t;

	subject_open(&s, text);
	L = s.p->limit;
	assert_int_equal(s.words, words);
	assert_int_equal(s.p->word_is_expiry, words == 1);
	t = T0 + W / 4;
	/* count + cost == L: allowed, and the count is L, not 0. */
	assert_int_equal(s.a->check(s.p, st, t, L, next, &d), TK__PERSIST);
	assert_decision(d, true, L, 0, T0 + W, 0);
	memcpy(st, next, sizeof(st));
	assert_true(valid(&s, st));
	assert_int_equal(s.a->expires(s.p, st), T0 + W);
	assert_int_equal(s.a->check(s.p, st, t + 1, 1, next, &d), TK__KEEP);
	assert_decision(d, false, L, 0, T0 + W, T0 + W - t - 1);
	assert_int_equal(s.a->forecast(s.p, st, t, 0, &d), TK__KEEP);
	assert_decision(d, false, L, 0, T0 + W, T0 + W - t);
	/* The next window starts from nothing. */
	assert_int_equal(s.a->check(s.p, st, T0 + W, L - 1, next, &d),
			 TK__PERSIST);
	assert_decision(d, true, L, 1, T0 + 2 * W, 0);
	memcpy(st, next, sizeof(st));
	assert_int_equal(s.a->check(s.p, st, T0 + W + 1, 1, next, &d),
			 TK__PERSIST);
	assert_decision(d, true, L, 0, T0 + 2 * W, 0);
	subject_close(&s);
}

/* A limit below 2^24 packs, 2^24 does not; both decide alike. */
static void test_window_packing_bound(void **state)
{
	(void)state;
	pack_case("fixed-window:16777215/1s", SEC, 1);
	pack_case("fixed-window:16777216/1s", SEC, 2);
	pack_case("quota:16777215/1s", SEC, 1);
	pack_case("quota:16777216/1s", SEC, 2);
	pack_case("fixed-window:16777215/10ms", 10 * MS, 2);
	assert_true(
		tk__window_packs(UINT64_C(1) << 24, (UINT64_C(1) << 24) - 1));
	assert_false(tk__window_packs(UINT64_C(1) << 24, UINT64_C(1) << 24));
	assert_false(tk__window_packs((UINT64_C(1) << 24) - 1, 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_states_validate),
		cmocka_unit_test(test_hostile_states),
		cmocka_unit_test(test_foreign_states_rejected),
		cmocka_unit_test(test_valid_bounds),
		cmocka_unit_test(test_dead_state_stays_dead),
		cmocka_unit_test(test_window_packing_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
