/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * engines.c - the engines a case runs on: the harness, the floor, the
 * zone and the memory store, and the baselines users would pick instead.
 */
#define _GNU_SOURCE
#include "tk-bench.h"

uint64_t populate(bench_run_fn run, void *arg, struct sizeclass *sc,
		  int *first_error)
{
	struct bench_cursor c = { .s = &sc->fill };

	run(arg, &c, sc->nkeys);
	*first_error = c.first_error;
	return c.errors;
}

/* harness */
static int harness_open(struct group *g)
{
	(void)g;
	return 0;
}

static int harness_worker(struct group *g, unsigned int batch, struct worker *w)
{
	(void)g;
	(void)batch;
	w->run = bench_harness_run;
	w->arg = NULL;
	return 0;
}

static void nothing_worker_close(struct group *g, struct worker *w)
{
	(void)g;
	(void)w;
}

static void nothing_close(struct group *g)
{
	(void)g;
}

/* floor */
struct floor_batch {
	struct bench_floor *f;
	unsigned int batch;
};

static uint64_t floor_batch_run(void *p, struct bench_cursor *c, uint64_t n)
{
	struct floor_batch *fb = p;

	return bench_floor_run_batch(fb->f, c, n, fb->batch);
}

static int floor_open(struct group *g)
{
	int rc = bench_floor_open(&g->floor, g->sc->nkeys), err;

	if (rc == 0)
		populate(bench_floor_run, g->floor, g->sc, &err);
	return rc;
}

static int floor_worker(struct group *g, unsigned int batch, struct worker *w)
{
	struct floor_batch *fb;

	if (!batch) {
		w->run = bench_floor_run;
		w->arg = g->floor;
		return 0;
	}
	fb = xmalloc(sizeof(*fb));
	fb->f = g->floor;
	fb->batch = batch;
	w->run = floor_batch_run;
	w->arg = fb;
	return 0;
}

static void floor_worker_close(struct group *g, struct worker *w)
{
	if (w->arg != g->floor)
		free(w->arg);
}

static void floor_close(struct group *g)
{
	bench_floor_close(g->floor);
	g->floor = NULL;
}

/* the library */
struct tk_worker {
	struct tk_limiter *l;
	unsigned int batch;
	struct tk_request req[BATCH_MAX];
	char keys[BATCH_MAX][16];
	struct tk_decision out[BATCH_MAX];
	int rcs[BATCH_MAX];
};

static inline void count_rc(struct bench_cursor *c, int rc, bool allowed)
{
	if (rc == 0) {
		c->admitted += allowed;
	} else {
		c->errors++;
		if (!c->first_error)
			c->first_error = rc;
	}
}

static uint64_t tk_run(void *p, struct bench_cursor *c, uint64_t n)
{
	struct tk_worker *w = p;
	char key[BENCH_KEY_LEN];
	struct tk_decision d;
	uint64_t i;
	int rc;

	for (i = 0; i < n; i++) {
		bench_key(key, bench_next(c));
		rc = tk_limiter_check(w->l, key, sizeof(key), 1, &d);
		count_rc(c, rc, d.allowed);
	}
	return n;
}

static uint64_t tk_run_many(void *p, struct bench_cursor *c, uint64_t n)
{
	struct tk_worker *w = p;
	uint64_t i;
	unsigned int j;

	for (i = 0; i < n; i += w->batch) {
		for (j = 0; j < w->batch; j++)
			bench_key(w->keys[j], bench_next(c));
		tk_limiter_check_many(w->l, w->req, w->batch, w->out, w->rcs);
		for (j = 0; j < w->batch; j++)
			count_rc(c, w->rcs[j], w->out[j].allowed);
	}
	return n;
}

static int tk_open(struct group *g, const char *store,
		   const struct tk_options *o)
{
	struct tk_worker w = { 0 };
	struct tk_options oc = TK_OPTIONS_INIT;
	int rc, err = 0;

	if (o)
		oc = *o;
	oc.clock = cfg.clock; /* TK_BENCH_CLOCK */
	rc = tk_limiter_open(&g->l, g->spec, store, &oc);
	if (rc)
		return rc;
	if (!g->populate)
		return 0;
	w.l = g->l;
	if (populate(tk_run, &w, g->sc, &err))
		return err;
	return 0;
}

uint64_t zone_capacity_for(uint32_t nkeys)
{
	uint64_t cap = pow2_at_least(2 * (uint64_t)nkeys);
	uint64_t min = pow2_at_least(cfg.zone_min);

	return cap < min ? min : cap;
}

static int tk_shm_open(struct group *g)
{
	static unsigned int serial;
	struct tk_options o = TK_OPTIONS_INIT;
	char spec[80];
	int rc;

	snprintf(g->zone, sizeof(g->zone), "tkbench-%ld-%u", (long)getpid(),
		 serial++);
	snprintf(spec, sizeof(spec), "shm:%s", g->zone);
	g->zone_capacity = zone_capacity_for(g->sc->nkeys);
	o.zone_capacity = g->zone_capacity;
	/* Windows keep their state in blocks: room for every key's block
	 * twice over (an update writes a new one before freeing the old),
	 * 512 bytes each (a sliding window of 10 buckets). */
	if (g->policy && strcmp(g->policy, "gcra") != 0)
		o.zone_arena = 2 * 512 * (uint64_t)g->sc->nkeys + (1u << 20);
	rc = tk_open(g, spec, &o);
	return rc;
}

/*
 * The memory store starts with 1024 buckets and grows its table from its
 * reclaimer, once a second: right after a burst of inserts, lookups walk
 * long chains.  Cases measure the steady state, so wait for a pass.
 */
static int tk_mem_open(struct group *g)
{
	int rc = tk_open(g, "memory", NULL);

	if (rc == 0 && g->populate && g->sc->nkeys > 1024)
		usleep(cfg.settle_ms * 1000u);
	return rc;
}

static int tk_worker_open(struct group *g, unsigned int batch, struct worker *w)
{
	struct tk_worker *t = xmalloc(sizeof(*t));
	unsigned int j;

	memset(t, 0, sizeof(*t));
	t->l = g->l;
	t->batch = batch;
	for (j = 0; j < BATCH_MAX; j++)
		t->req[j] = (struct tk_request){ t->keys[j], BENCH_KEY_LEN, 1 };
	w->run = batch ? tk_run_many : tk_run;
	w->arg = t;
	return 0;
}

static void free_worker_close(struct group *g, struct worker *w)
{
	(void)g;
	free(w->arg);
}

static void tk_close(struct group *g)
{
	tk_limiter_close(g->l);
	g->l = NULL;
	if (g->zone[0])
		tk_zone_destroy(g->zone);
	g->zone[0] = 0;
}

/* the mutex table */
uint64_t table_capacity_for(uint32_t nkeys)
{
	uint64_t cap = pow2_at_least(2 * (uint64_t)nkeys);

	return cap < 1024 ? 1024 : cap;
}

static int mutex_open(struct group *g)
{
	int rc, err;

	g->capacity = table_capacity_for(g->sc->nkeys);
	rc = bench_mutex_open(&g->mt, g->capacity, &g->gc);
	if (rc == 0 && g->populate &&
	    populate(bench_mutex_run, g->mt, g->sc, &err))
		return err;
	return rc;
}

static int mutex_worker(struct group *g, unsigned int batch, struct worker *w)
{
	(void)batch;
	w->run = bench_mutex_run;
	w->arg = g->mt;
	return 0;
}

static void mutex_close(struct group *g)
{
	bench_mutex_close(g->mt);
	g->mt = NULL;
}

/* per-process tables: each worker builds its own */
static int private_open(struct group *g)
{
	g->capacity = table_capacity_for(g->sc->nkeys);
	return 0;
}

static int private_worker(struct group *g, unsigned int batch, struct worker *w)
{
	struct bench_private_table *t;
	int rc, err;

	(void)batch;
	rc = bench_private_open(&t, g->capacity, &g->gc);
	if (rc)
		return rc;
	if (g->populate && populate(bench_private_run, t, g->sc, &err)) {
		bench_private_close(t);
		return err;
	}
	w->run = bench_private_run;
	w->arg = t;
	return 0;
}

static void private_worker_close(struct group *g, struct worker *w)
{
	(void)g;
	bench_private_close(w->arg);
}

const struct engine engines[] = {
	[E_HARNESS] = { "harness", 0, 'p', harness_open, harness_worker,
			nothing_worker_close, nothing_close },
	[E_FLOOR] = { "floor", 1, 'p', floor_open, floor_worker,
		      floor_worker_close, floor_close },
	[E_TK_SHM] = { "tk-shm", 2, 'p', tk_shm_open, tk_worker_open,
		       free_worker_close, tk_close },
	[E_TK_MEM] = { "tk-mem", 3, 't', tk_mem_open, tk_worker_open,
		       free_worker_close, tk_close },
	[E_MUTEX] = { "mutex", 4, 'p', mutex_open, mutex_worker,
		      nothing_worker_close, mutex_close },
	[E_PRIVATE] = { "per-process", 5, 'p', private_open, private_worker,
			private_worker_close, nothing_close },
};

const char *policy_spec(const char *policy, int path)
{
	int allow = path == P_ALLOW;

	if (path == P_ADMIT)
		return GCRA_ADMIT;
	/* Deny paths: windows of a day, so that no run crosses a boundary
	 * (at midnight UTC every key of a fixed window is admitted again). */
	/* Fixed windows pack into one word below 2^24 per window: 16 M per
	 * 100 ms is 160 M/s, beyond any worker. */
	if (strcmp(policy, "fixed-window") == 0)
		return allow ? "fixed-window:16000000/100ms"
			     : "fixed-window:1/1d";
	if (strcmp(policy, "sliding-window") == 0)
		return allow ? "sliding-window:1000000000000/1s"
			     : "sliding-window:1/1d";
	if (strcmp(policy, "sliding-window-100") == 0)
		return allow ? "sliding-window:1000000000000/1s,buckets=100"
			     : "sliding-window:1/1d,buckets=100";
	return allow ? GCRA_ALLOW : GCRA_DENY;
}

struct bench_gcra policy_gcra(int path)
{
	if (path == P_ADMIT)
		return (struct bench_gcra){ ADMIT_T, ADMIT_T * ADMIT_BURST };
	if (path == P_DENY)
		return (struct bench_gcra){ HOUR, HOUR };
	return (struct bench_gcra){ 1, 1000000000 };
}
