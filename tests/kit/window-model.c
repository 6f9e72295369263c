/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * window-model.c - reference models of fixed window, sliding window,
 * sliding log and quota, written from shared/design/semantics.md alone
 * (exact integer arithmetic, 128-bit where products can overflow; calendar
 * boundaries from the C library's timegm()/gmtime_r()), and the property
 * runner that compares every field of random decisions with them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include <throttlekit.h>

#include "algo-kit.h"

const char *const key_names[NKEYS] = { "k0", "key-1", "\x01k2",
				       "a much longer key number 3" };

void model_init(struct model *m, enum model_kind kind, uint64_t L, uint64_t W)
{
	memset(m, 0, sizeof(*m));
	m->kind = kind;
	m->L = L;
	m->W = W;
}

static void model_reset_key(struct model *m, int key)
{
	struct mkey *k = &m->k[key];
	uint64_t *st = k->st;
	size_t cap = k->cap;

	memset(k, 0, sizeof(*k));
	k->st = st;
	k->cap = cap;
}

void model_free(struct model *m)
{
	int i;

	for (i = 0; i < NKEYS; i++)
		free(m->k[i].st);
}

/* The window containing @now: [*start, *end). */
static void model_period(const struct model *m, uint64_t now, uint64_t *start,
			 uint64_t *end)
{
	struct tm tm, a, b;
	time_t secs, ts, te;
	int64_t local;
	i128 d, q;

	if (m->kind == M_FIXED) {
		*start = now / m->W * m->W;
		*end = *start + m->W;
		return;
	}
	if (m->cad == CAD_ANCHORED) {
		d = (i128)now - (i128)m->anchor;
		q = d / (i128)m->W;
		if (d % (i128)m->W < 0)
			q--;
		*start = (uint64_t)((i128)m->anchor + q * (i128)m->W);
		*end = *start + m->W;
		return;
	}
	/* Civil time at the offset: the UTC calendar of now + offset. */
	local = (int64_t)now + m->off_ns;
	secs = (time_t)(local / (int64_t)SEC);
	if (gmtime_r(&secs, &tm) == NULL)
		fail_msg("gmtime_r(%lld) failed", (long long)secs);
	a = tm;
	a.tm_hour = a.tm_min = a.tm_sec = 0;
	a.tm_isdst = 0;
	if (m->cad == CAD_WEEK)
		a.tm_mday -= (tm.tm_wday - m->wstart + 7) % 7;
	else if (m->cad == CAD_MONTH)
		a.tm_mday = 1;
	b = a;
	if (m->cad == CAD_DAY)
		b.tm_mday += 1;
	else if (m->cad == CAD_WEEK)
		b.tm_mday += 7;
	else
		b.tm_mon += 1;
	ts = timegm(&a);
	te = timegm(&b);
	*start = (uint64_t)((int64_t)ts * (int64_t)SEC - m->off_ns);
	*end = (uint64_t)((int64_t)te * (int64_t)SEC - m->off_ns);
}

/* Fixed window and quota: semantics.md's fixed-window rule. */
static int window_eval(struct model *m, int key, uint64_t now, uint64_t cost,
		       bool is_peek, bool commit, struct tk_decision *d)
{
	struct mkey *k = &m->k[key];
	uint64_t ws, we, s, e, count;

	model_period(m, now, &ws, &we);
	/* start' = max(ws, state.start) */
	if (k->has && k->start > ws) {
		s = k->start;
		e = k->end;
	} else {
		s = ws;
		e = we;
	}
	count = k->has && k->start == s ? k->count : 0;
	d->limit = m->L;
	d->reset_at = e;
	if (is_peek) {
		d->remaining = m->L - count;
		d->allowed = d->remaining >= 1;
		d->retry_after = d->allowed ? 0 : e - now;
		return 0;
	}
	if (cost > m->L)
		return -ERANGE;
	if (count + cost <= m->L) {
		d->allowed = true;
		d->remaining = m->L - count - cost;
		d->retry_after = 0;
		if (!commit)
			return 0;
		k->has = true;
		k->start = s;
		k->end = e;
		k->count = count + cost;
		k->seen = now;
	} else {
		d->allowed = false;
		d->remaining = m->L - count;
		d->retry_after = e - now;
	}
	return 0;
}

/* Sliding window: full (ticks >= c - S + 1, later ones included), old. */
static void sw_sums(const struct model *m, const struct mkey *k, uint64_t c,
		    uint64_t *full, uint64_t *old)
{
	size_t i;

	*full = *old = 0;
	for (i = 0; i < k->nb; i++) {
		if (k->b[i].tick + m->S >= c + 1)
			*full += k->b[i].count;
		else if (k->b[i].tick + m->S == c)
			*old += k->b[i].count;
	}
}

/* max(0, floor(L - est - extra)) with est = full + old * (w - e) / w. */
static uint64_t sw_floor_left(const struct model *m, uint64_t full,
			      uint64_t old, uint64_t e, uint64_t extra)
{
	i128 num = (i128)m->L * (i128)m->w - (i128)(full + extra) * (i128)m->w -
		   (i128)old * (i128)(m->w - e);

	return num <= 0 ? 0 : (uint64_t)(num / (i128)m->w);
}

/* The deny retry formula of semantics.md, over the integers. */
static uint64_t sw_retry(const struct model *m, uint64_t full, uint64_t old,
			 uint64_t cost, uint64_t c, uint64_t e, uint64_t now)
{
	/* Dw = D * w = (est + cost - L) * w, positive on a denial. */
	i128 dw = (i128)(full + cost) * (i128)m->w +
		  (i128)old * (i128)(m->w - e) - (i128)m->L * (i128)m->w;
	i128 r;

	if (dw <= 0)
		fail_msg("model: sw_retry on an admissible request");
	/* D <= old * (w - e) / w  <=>  D * w <= old * (w - e) */
	if (old > 0 && dw <= (i128)old * (i128)(m->w - e))
		r = (dw + (i128)old - 1) / (i128)old; /* ceil(D * w / old) */
	else
		r = (i128)((c + 1) * m->w) - (i128)now;
	return r < 1 ? 1 : (uint64_t)r;
}

static int sliding_eval(struct model *m, int key, uint64_t now, uint64_t cost,
			bool is_peek, bool commit, struct tk_decision *d)
{
	struct mkey *k = &m->k[key];
	uint64_t c = now / m->w, e = now - c * m->w, full, old, hi;
	size_t i, j;
	bool found;

	sw_sums(m, k, c, &full, &old);
	d->limit = m->L;
	/* (c + 1) * w + W, or later if a bucket above c has a count. */
	hi = c;
	for (i = 0; i < k->nb; i++)
		hi = max_u64(hi, k->b[i].tick);
	d->reset_at = (hi + 1) * m->w + m->W;
	if (is_peek) {
		d->remaining = sw_floor_left(m, full, old, e, 0);
		d->allowed = d->remaining >= 1;
		d->retry_after =
			d->allowed ? 0 : sw_retry(m, full, old, 1, c, e, now);
		return 0;
	}
	if (cost > m->L)
		return -ERANGE;
	/* allowed iff (full + cost) * w + old * (w - e) <= L * w */
	if ((u128)(full + cost) * m->w + (u128)old * (m->w - e) <=
	    (u128)m->L * m->w) {
		d->allowed = true;
		d->remaining = sw_floor_left(m, full, old, e, cost);
		d->retry_after = 0;
		if (!commit)
			return 0;
		found = false;
		for (i = 0; i < k->nb; i++) {
			if (k->b[i].tick == c) {
				k->b[i].count += cost;
				found = true;
			}
		}
		if (!found) {
			if (k->nb == SW_MAXB)
				fail_msg("model: too many buckets");
			k->b[k->nb].tick = c;
			k->b[k->nb].count = cost;
			k->nb++;
		}
		k->h = max_u64(k->h, c);
		k->seen = now;
		/* Ticks below h - 2S - 2 can never matter again. */
		for (i = j = 0; i < k->nb; i++)
			if (k->b[i].tick + 2 * m->S + 2 >= k->h)
				k->b[j++] = k->b[i];
		k->nb = j;
	} else {
		d->allowed = false;
		d->remaining = sw_floor_left(m, full, old, e, 0);
		d->retry_after = sw_retry(m, full, old, cost, c, e, now);
	}
	return 0;
}

/* Sliding log: forget stamps dead at @now (they stay dead unless the
 * clock goes back below dead_max, which resets the key first). */
static void log_age(struct model *m, struct mkey *k, uint64_t now)
{
	size_t i = 0;

	while (i < k->n && k->st[i] + m->W <= now) {
		k->dead_max = max_u64(k->dead_max, k->st[i] + m->W);
		i++;
	}
	if (i > 0) {
		memmove(k->st, k->st + i, (k->n - i) * sizeof(k->st[0]));
		k->n -= i;
	}
}

static int log_eval(struct model *m, int key, uint64_t now, uint64_t cost,
		    bool is_peek, bool commit, struct tk_decision *d)
{
	struct mkey *k = &m->k[key];
	uint64_t count, kth, need = is_peek ? 1 : cost;
	size_t pos, i;

	log_age(m, k, now); /* every stamp left has now < t + W */
	count = k->n;
	d->limit = m->L;
	if (!is_peek && cost > m->L)
		return -ERANGE;
	if (count + need <= m->L) {
		d->allowed = true;
		d->remaining = m->L - count - (is_peek ? 0 : cost);
		d->retry_after = 0;
		if (is_peek || !commit) {
			d->reset_at = count ? k->st[0] + m->W : now;
			return 0;
		}
		if (k->n + cost > k->cap) {
			k->cap = 2 * (k->n + cost) + 16;
			k->st = realloc(k->st, k->cap * sizeof(k->st[0]));
			assert_non_null(k->st);
		}
		/* Insert cost stamps "now", keeping the order. */
		for (pos = 0; pos < k->n && k->st[pos] <= now; pos++)
			;
		memmove(k->st + pos + cost, k->st + pos,
			(k->n - pos) * sizeof(k->st[0]));
		for (i = 0; i < cost; i++)
			k->st[pos + i] = now;
		k->n += cost;
		d->reset_at = k->st[0] + m->W;
		return 0;
	}
	/* Denied (or a peek with nothing available). */
	d->allowed = false;
	d->remaining = m->L > count ? m->L - count : 0;
	kth = k->st[count + need - m->L - 1];
	d->retry_after = max_u64(1, kth + m->W - now);
	d->reset_at = k->st[0] + m->W;
	return 0;
}

/* A check (@commit: the model takes it), or a peek (@is_peek). */
static int model_eval_as(struct model *m, int key, uint64_t now, uint64_t cost,
			 bool is_peek, bool commit, struct tk_decision *d)
{
	memset(d, 0, sizeof(*d));
	switch (m->kind) {
	case M_FIXED:
	case M_QUOTA:
		return window_eval(m, key, now, cost, is_peek, commit, d);
	case M_SLIDING:
		return sliding_eval(m, key, now, cost, is_peek, commit, d);
	default:
		return log_eval(m, key, now, cost, is_peek, commit, d);
	}
}

static int model_eval(struct model *m, int key, uint64_t now, uint64_t cost,
		      bool is_peek, struct tk_decision *d)
{
	return model_eval_as(m, key, now, cost, is_peek, !is_peek, d);
}

/*
 * forecast(@cost): allowed and retry_after as a check of @cost would say,
 * the other fields as a peek reports them (tk_limiter_forecast(3)).
 */
static int model_forecast(struct model *m, int key, uint64_t now, uint64_t cost,
			  struct tk_decision *d)
{
	struct tk_decision c;
	int rc = model_eval_as(m, key, now, cost, false, false, &c);

	if (rc != 0)
		return rc;
	model_eval_as(m, key, now, 0, true, false, d);
	d->allowed = c.allowed;
	d->retry_after = c.retry_after;
	return 0;
}

/* Every operation at @now is a time the store has seen. */
static void model_observe(struct model *m, uint64_t now)
{
	int i;

	for (i = 0; i < NKEYS; i++) {
		m->k[i].seen = max_u64(m->k[i].seen, now);
		if (m->kind == M_LOG)
			log_age(m, &m->k[i], now);
	}
}

/*
 * Before going back to @to: could @key's outcome depend on state the
 * library was free to forget?  (See the comment at the top.)
 */
static bool model_must_reset(const struct model *m, int key, uint64_t to)
{
	const struct mkey *k = &m->k[key];
	uint64_t hi = 0, c;
	size_t i;

	switch (m->kind) {
	case M_FIXED:
	case M_QUOTA:
		/* Expired at a time seen since written: maybe dropped. */
		return k->has && k->end <= k->seen;
	case M_SLIDING:
		if (k->nb == 0)
			return false;
		for (i = 0; i < k->nb; i++)
			hi = max_u64(hi, k->b[i].tick);
		if ((u128)(hi + m->S + 1) * m->w <= k->seen)
			return true; /* expired: maybe dropped */
		c = to / m->w;
		/* The ring holds S + 1 buckets: ticks below h - S may have
		 * been overwritten; any that would count at c make it
		 * ambiguous, and so does writing below h - S. */
		if (c + m->S < k->h)
			return true;
		for (i = 0; i < k->nb; i++)
			if (k->b[i].tick + m->S >= c &&
			    k->b[i].tick + m->S + 1 <= k->h)
				return true;
		return false;
	default:
		return k->dead_max > to;
	}
}

/* Does @key hold state that still matters at @t? (for statistics) */
static bool model_live(const struct model *m, int key, uint64_t t)
{
	const struct mkey *k = &m->k[key];
	size_t i;

	switch (m->kind) {
	case M_FIXED:
	case M_QUOTA:
		return k->has && k->end > t;
	case M_SLIDING:
		for (i = 0; i < k->nb; i++)
			if ((u128)(k->b[i].tick + m->S + 1) * m->w > t)
				return true;
		return false;
	default:
		return k->n > 0;
	}
}

/* A boundary after @now worth landing on exactly. */
static uint64_t model_boundary(const struct model *m, uint64_t now,
			       uint64_t *seed)
{
	uint64_t s, e;
	const struct mkey *k;
	int key;

	switch (m->kind) {
	case M_FIXED:
	case M_QUOTA:
		model_period(m, now, &s, &e);
		return e;
	case M_SLIDING:
		if (rnd_range(seed, 0, 2) == 0)
			return (now / m->W + 1) * m->W;
		return (now / m->w + 1) * m->w;
	default:
		key = (int)rnd_range(seed, 0, NKEYS - 1);
		k = &m->k[key];
		if (k->n == 0)
			return now + m->W;
		s = k->st[rnd_range(seed, 0, k->n - 1)] + m->W;
		return s > now ? s : now + 1;
	}
}

void run_property(struct model *m, const char *policy, uint64_t start,
		  uint64_t floor, uint64_t gran, uint64_t scale, int nops,
		  uint64_t seed, struct prop_stats *ps)
{
	const uint64_t seed0 = seed;
	const uint64_t ceiling = (1ull << 63) - 400ull * 366 * DAY;
	struct tk_decision got, want;
	char gs[200], ws[200];
	struct fx f;
	uint64_t now = start, to, back, r, cost, step, b;
	const char *what;
	int i, key, rc, want_rc, kk;
	bool live;

	fx_open(&f, policy, start);
	for (i = 0; i < nops; i++) {
		r = rnd_range(&seed, 0, 99);
		step = 0;
		if (r < 14) {
			; /* the same instant */
		} else if (r < 40) {
			step = rnd_range(&seed, 1, gran);
		} else if (r < 55) {
			b = model_boundary(m, now, &seed);
			r = rnd_range(&seed, 0, 9);
			step = (r < 7 ? b : r < 9 ? b - 1 : b + 1) - now;
		} else if (r < 75) {
			step = rnd_range(&seed, 1, scale);
		} else if (r < 83) {
			step = rnd_range(&seed, scale, 3 * scale);
		} else if (r < 85) {
			step = rnd_range(&seed, 3 * scale, 40 * scale);
		} else if (r < 95) {
			r = rnd_range(&seed, 0, 9);
			back = r < 5   ? rnd_range(&seed, 1, gran)
			       : r < 7 ? rnd_range(&seed, 1, scale)
			       : r < 8 ? m->W
				       : rnd_range(&seed, m->W, 2 * m->W);
			to = now - floor > back ? now - back : floor;
			if (to < now) {
				ps->jumps++;
				live = false;
				for (kk = 0; kk < NKEYS; kk++) {
					if (model_must_reset(m, kk, to)) {
						model_reset_key(m, kk);
						assert_rc(
							tk_limiter_reset(
								f.l,
								key_names[kk],
								strlen(key_names
									       [kk])),
							0);
						ps->jump_resets++;
					} else if (model_live(m, kk, to)) {
						live = true;
					}
				}
				ps->live_jumps += live;
				now = to;
			}
		}
		if (now + step < ceiling)
			now += step;
		fx_at(&f, now);
		model_observe(m, now);

		r = rnd_range(&seed, 0, 9);
		key = r < 4 ? 0 : r < 6 ? 1 : r < 8 ? 2 : 3;
		r = rnd_range(&seed, 0, 99);
		cost = 0;
		if (r < 72 || r >= 93) {
			what = "check";
			if (r >= 93) {
				cost = m->L;
			} else {
				r = rnd_range(&seed, 0, 99);
				cost = r < 55	? 1
				       : r < 80 ? rnd_range(&seed, 1,
							    min_u64(m->L, 4))
				       : r < 97 ? rnd_range(&seed, 1, m->L)
						: rnd_range(&seed, m->L + 1,
							    m->L + 3);
			}
			want_rc = model_eval(m, key, now, cost, false, &want);
			rc = check_rc(f.l, key_names[key], cost, &got);
			if (want_rc == 0) {
				ps->checks++;
				ps->denied += !want.allowed;
			} else {
				ps->eranges++;
			}
		} else if (r < 80) {
			what = "forecast";
			r = rnd_range(&seed, 0, 99);
			cost = r < 30 ? 1
			       : r < 60
				       ? rnd_range(&seed, 2,
						   max_u64(2, min_u64(m->L, 4)))
			       : r < 95 ? rnd_range(&seed, 1, m->L)
					: m->L + 1;
			want_rc = model_forecast(m, key, now, cost, &want);
			poison(&got);
			rc = tk_limiter_forecast(f.l, key_names[key],
						 strlen(key_names[key]), cost,
						 &got);
			ps->forecasts++;
		} else if (r < 90) {
			what = "peek";
			want_rc = model_eval(m, key, now, 0, true, &want);
			rc = peek_rc(f.l, key_names[key], &got);
			ps->peeks++;
		} else {
			what = "reset";
			model_reset_key(m, key);
			want_rc = 0;
			rc = tk_limiter_reset(f.l, key_names[key],
					      strlen(key_names[key]));
			memset(&want, 0, sizeof(want));
			got = want;
		}
		if (rc != want_rc)
			fail_msg("[%s] seed %#llx op %d: %s key %d cost %llu "
				 "at %llu: rc %d (%s), want %d (%s)",
				 policy, (unsigned long long)seed0, i, what,
				 key, (unsigned long long)cost,
				 (unsigned long long)now, rc,
				 tk_strerrorname(rc), want_rc,
				 tk_strerrorname(want_rc));
		if (rc == 0 && !same_decision(&got, &want)) {
			show_decision(&got, gs, sizeof(gs));
			show_decision(&want, ws, sizeof(ws));
			fail_msg("[%s] seed %#llx op %d: %s key %d cost %llu "
				 "at %llu:\n  got  %s\n  want %s",
				 policy, (unsigned long long)seed0, i, what,
				 key, (unsigned long long)cost,
				 (unsigned long long)now, gs, ws);
		}
	}
	fx_close(&f);
}

void assert_coverage(const char *name, const struct prop_stats *ps)
{
	print_message(
		"# %s: %llu checks (%llu denied), %llu peeks, %llu "
		"-ERANGE, %llu backward jumps (%llu kept live state, "
		"%llu keys reset first)\n",
		name, (unsigned long long)ps->checks,
		(unsigned long long)ps->denied, (unsigned long long)ps->peeks,
		(unsigned long long)ps->eranges, (unsigned long long)ps->jumps,
		(unsigned long long)ps->live_jumps,
		(unsigned long long)ps->jump_resets);
	assert_true(ps->denied > ps->checks / 20);
	assert_true(ps->denied < ps->checks * 19 / 20);
	assert_true(ps->peeks > 100);
	assert_true(ps->forecasts > 100);
	assert_true(ps->eranges > 10);
	assert_true(ps->live_jumps > 50);
}

int fmt_duration(char *buf, size_t len, uint64_t ns)
{
	if (ns % SEC == 0)
		return snprintf(buf, len, "%llus",
				(unsigned long long)(ns / SEC));
	if (ns % MS == 0)
		return snprintf(buf, len, "%llums",
				(unsigned long long)(ns / MS));
	return snprintf(buf, len, "%lluns", (unsigned long long)ns);
}

uint64_t draw_window(uint64_t *seed, int s, uint64_t ms_max, uint64_t sec_max,
		     uint64_t ns_lo, uint64_t ns_hi)
{
	switch (s % 3) {
	case 0:
		return rnd_range(seed, 1, ms_max) * MS;
	case 1:
		return rnd_range(seed, 1, sec_max) * SEC;
	default:
		return rnd_range(seed, ns_lo, ns_hi);
	}
}

void run_window_seed(enum model_kind kind, const char *algo, uint64_t L,
		     uint64_t W, uint64_t seed, int nops, struct prop_stats *ps)
{
	char policy[128], dur[48];
	struct model m;
	uint64_t start;

	fmt_duration(dur, sizeof(dur), W);
	snprintf(policy, sizeof(policy), "%s:%llu/%s", algo,
		 (unsigned long long)L, dur);
	model_init(&m, kind, L, W);
	start = B0 + rnd_range(&seed, 0, 100 * SEC);
	run_property(&m, policy, start, start - 3 * W, W / (L + 1) + 1, W, nops,
		     seed, ps);
	model_free(&m);
}
