/*
 * tk-bench.c - what a check costs, next to the floor and the designs users
 * would pick instead, all measured in the same run.
 *
 * The matrix: key sets (one hot key; 100k and 1M keys, uniform and
 * Zipf-skewed), policies (GCRA; fixed and sliding window on the memory
 * store), paths (allow: every check admitted and written; deny: every
 * check denied, nothing written), 1 and 2 workers (threads on the memory
 * store, processes on the zone and the baselines), tk_limiter_check() and
 * tk_limiter_check_many() batches.  Baselines (baselines/): the floor
 * (clock + one CAS per check), a mutex-protected shared table (nginx's
 * design) and per-process tables (per-child Apache modules).
 *
 * Method.  A case opens its store and touches every key of its key set
 * once (untimed), so rounds measure steady-state lookups, not inserts.
 * Each worker then runs a warm-up, and R rounds of a fixed duration; the
 * timer (CLOCK_MONOTONIC) is read every BENCH_CALLS checks, never around
 * one call.  Workers start every round together at a barrier (a
 * process-shared pthread barrier in MAP_SHARED memory; fork() for
 * processes).  A round's throughput is the sum over workers of
 * checks / elapsed; its ns/check is workers / throughput, i.e. the time
 * one worker spends per check.  Reported: the median over rounds, the
 * min-max, and the ratio of the median to the floor's median for the same
 * key set and worker count.  Machines are noisy; ratios measured in one
 * run are what to compare across machines.
 *
 * Also: bytes of table per key for every store, an admission experiment
 * (2 workers on one key of gcra:10000/s,burst=100: how many requests did
 * each design admit?), and the targets of the benchmark issue, each
 * judged met or missed.  Output: a table on stdout, progress on stderr,
 * JSON (--json) and gnuplot data files (--dat).
 *
 * --callgrind N runs each selected single-worker case for exactly N
 * checks inside cg_measured(), for valgrind --toggle-collect (see
 * callgrind.sh).
 *
 * Environment: TK_BENCH_ROUNDS (5), TK_BENCH_ROUND_MS (150),
 * TK_BENCH_WARMUP_MS (100), TK_BENCH_ADMIT_MS (500), TK_BENCH_MID_KEYS
 * (100000), TK_BENCH_BIG_KEYS (1000000), TK_BENCH_ZIPF_S (0.99),
 * TK_BENCH_BATCH (16), TK_BENCH_SETTLE_MS (1500: pause after filling a
 * memory store, see tk_mem_open()), TK_BENCH_FILTER (comma-separated fnmatch(3)
 * patterns over case names; the names "memory/..." and "admission/..."
 * select the other sections), TK_BENCH_LIB_CFLAGS and TK_BENCH_LIB_ID (how
 * the library was built and which binary it is; recorded in the output).
 */
#define _GNU_SOURCE
#include "bench.h"
#include "baselines/baselines.h"

#include <throttlekit.h>

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_WORKERS 8
#define MAX_ROUNDS 50
#define BATCH_MAX 64
#define STREAM_LEN (UINT64_C(1) << 20) /* requests in a stream */
#define MAX_RESULTS 512
#define MAX_NOTES 64
#define NSEC 1e9

/* Policies of the matrix, as the library parses them, and as the
 * baselines run them (t ns per unit, tau ns). */
#define GCRA_ALLOW "gcra:1000000000/1s,burst=1000000000"
#define GCRA_DENY "gcra:1/1h,burst=1"
#define GCRA_ADMIT "gcra:10000/1s,burst=100"
#define ADMIT_T UINT64_C(100000)
#define ADMIT_BURST 100
#define HOUR UINT64_C(3600000000000)

enum path { P_NONE = -1, P_ALLOW, P_DENY, P_ADMIT };
static const char *const path_names[] = { "allow", "deny", "admit" };

/* ---- configuration ---------------------------------------------------- */

/* /proc/loadavg at the start and the end of the run: noise to report. */
static char load_start[64], load_end[64];

/*
 * CPU time of the whole machine (/proc/stat) against our own (getrusage
 * of this process and its reaped children): the difference is what other
 * processes used while we ran, the noise that matters most on a small
 * machine.  In clock ticks.
 */
struct cpu_sample {
	double busy, total, steal, ours;
};

static struct cpu_sample cpu_start;
static double others_share = -1, steal_share = -1; /* of the machine */

static void cpu_sample(struct cpu_sample *c)
{
	unsigned long long v[8] = { 0 };
	struct rusage self, kids;
	double tck = (double)sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/stat", "r");
	int i, n = 0;

	memset(c, 0, sizeof(*c));
	if (f) {
		n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu",
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
			   &v[7]);
		fclose(f);
	}
	for (i = 0; i < 8 && i < n; i++)
		c->total += (double)v[i];
	c->busy = c->total - (double)v[3] - (double)v[4]; /* idle, iowait */
	c->steal = (double)v[7];
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	c->ours = ((double)self.ru_utime.tv_sec + (double)self.ru_stime.tv_sec +
		   (double)kids.ru_utime.tv_sec + (double)kids.ru_stime.tv_sec +
		   ((double)self.ru_utime.tv_usec +
		    (double)self.ru_stime.tv_usec +
		    (double)kids.ru_utime.tv_usec +
		    (double)kids.ru_stime.tv_usec) /
			   1e6) *
		  tck;
}

/* Share of the machine's CPU time since @from that others used; -1 if
 * unknown.  Sets *@steal (if not NULL) to the hypervisor's share. */
static double cpu_others_since(const struct cpu_sample *from, double *steal)
{
	struct cpu_sample end;
	double total, other;

	cpu_sample(&end);
	total = end.total - from->total;
	if (total <= 0)
		return -1;
	other = end.busy - from->busy - (end.ours - from->ours);
	if (steal)
		*steal = (end.steal - from->steal) / total;
	return other > 0 ? other / total : 0;
}

static void read_load(char *buf, size_t len)
{
	FILE *f = fopen("/proc/loadavg", "r");
	double a = 0, b = 0, c = 0;

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	if (fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3)
		snprintf(buf, len, "%.2f %.2f %.2f", a, b, c);
	fclose(f);
}

static struct {
	unsigned int rounds, round_ms, warmup_ms, admit_ms, batch, settle_ms;
	uint32_t mid_keys, big_keys;
	double zipf_s;
	const char *filter;
	const char *lib_cflags;
	const char *lib_id; /* which binary: set by run.sh */
	const char *json, *dat;
	uint64_t cg_checks; /* callgrind mode when non-zero */
	int list;	    /* --list: print the case names, run nothing */
} cfg;

static unsigned long env_ulong(const char *name, unsigned long def,
			       unsigned long min, unsigned long max)
{
	const char *v = getenv(name);
	unsigned long x;
	char *end;

	if (!v || !*v)
		return def;
	errno = 0;
	x = strtoul(v, &end, 10);
	if (errno || *end || x < min || x > max) {
		fprintf(stderr, "tk-bench: %s must be %lu..%lu\n", name, min,
			max);
		exit(2);
	}
	return x;
}

static int selected(const char *name)
{
	char pat[256];
	const char *p, *q;
	size_t n;

	if (!cfg.filter || !*cfg.filter)
		return 1;
	for (p = cfg.filter; *p; p = *q ? q + 1 : q) {
		q = strchr(p, ',');
		if (!q)
			q = p + strlen(p);
		n = (size_t)(q - p);
		if (n == 0 || n >= sizeof(pat))
			continue;
		memcpy(pat, p, n);
		pat[n] = 0;
		if (fnmatch(pat, name, 0) == 0)
			return 1;
	}
	return 0;
}

/* ---- key sets and request streams ----------------------------------- */

struct sizeclass {
	const char *name; /* "hot", "100k", "1M" */
	uint32_t nkeys;
	int ready;
	uint32_t *fill_idx;
	struct bench_stream fill; /* every key once, in order */
};

struct keyset {
	char name[32];	  /* "hot", "100k-uniform", ... */
	const char *dist; /* "hot", "uniform", "zipf" */
	struct sizeclass *sc;
	int index; /* order in the output */
	int ready;
	uint32_t *idx;
	struct bench_stream stream;
};

static struct sizeclass sizes[3];
static struct keyset keysets[5];

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

static uint64_t pow2_at_least(uint64_t n)
{
	uint64_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "tk-bench: out of memory\n");
		exit(3);
	}
	return p;
}

static void sizeclass_ready(struct sizeclass *sc)
{
	uint64_t len = pow2_at_least(sc->nkeys), i;

	if (sc->ready)
		return;
	sc->fill_idx = xmalloc(len * sizeof(uint32_t));
	for (i = 0; i < len; i++)
		sc->fill_idx[i] = (uint32_t)(i % sc->nkeys);
	sc->fill = (struct bench_stream){ sc->fill_idx, len - 1, sc->nkeys };
	sc->ready = 1;
}

/*
 * Zipf(s) over n keys: rank r has weight 1 / (r + 1)^s.  Ranks map to key
 * indices through a bijection (multiplication by a unit mod n), so that
 * popular keys are scattered over the table as hashes would scatter them.
 */
static void zipf_fill(uint32_t *idx, uint64_t len, uint32_t n, double s,
		      uint64_t *rng)
{
	double *cdf = xmalloc(n * sizeof(double)), sum = 0, u;
	uint64_t mult = UINT64_C(2654435761) % n, i, lo, hi, mid;

	while (n > 1 && (mult == 0 || gcd(mult, n) != 1))
		mult++;
	for (i = 0; i < n; i++) {
		sum += 1.0 / pow((double)(i + 1), s);
		cdf[i] = sum;
	}
	for (i = 0; i < len; i++) {
		u = (double)(splitmix(rng) >> 11) / 9007199254740992.0 * sum;
		lo = 0;
		hi = n - 1;
		while (lo < hi) {
			mid = (lo + hi) / 2;
			if (cdf[mid] < u)
				lo = mid + 1;
			else
				hi = mid;
		}
		idx[i] = (uint32_t)(lo * mult % n);
	}
	free(cdf);
}

static void keyset_ready(struct keyset *ks)
{
	uint64_t len, i,
		rng = UINT64_C(0x746b2d62656e6368) + (uint64_t)ks->index;
	uint32_t n = ks->sc->nkeys;

	if (ks->ready)
		return;
	sizeclass_ready(ks->sc);
	len = n == 1 ? 1 : STREAM_LEN;
	ks->idx = xmalloc(len * sizeof(uint32_t));
	if (n == 1)
		ks->idx[0] = 0;
	else if (strcmp(ks->dist, "zipf") == 0)
		zipf_fill(ks->idx, len, n, cfg.zipf_s, &rng);
	else
		for (i = 0; i < len; i++)
			ks->idx[i] =
				(uint32_t)(((splitmix(&rng) >> 32) * n) >> 32);
	ks->stream = (struct bench_stream){ ks->idx, len - 1, n };
	ks->ready = 1;
}

static void keysets_init(void)
{
	static const char *const dists[] = { "uniform", "zipf" };
	int i, k = 1;

	sizes[0] = (struct sizeclass){ .name = "hot", .nkeys = 1 };
	sizes[1] = (struct sizeclass){ .name = "100k", .nkeys = cfg.mid_keys };
	sizes[2] = (struct sizeclass){ .name = "1M", .nkeys = cfg.big_keys };
	if (cfg.mid_keys != 100000)
		sizes[1].name = "mid";
	if (cfg.big_keys != 1000000)
		sizes[2].name = "big";
	keysets[0] = (struct keyset){ .name = "hot",
				      .dist = "hot",
				      .sc = &sizes[0] };
	for (i = 0; i < 4; i++, k++) {
		keysets[k].sc = &sizes[1 + i / 2];
		keysets[k].dist = dists[i % 2];
		keysets[k].index = k;
		snprintf(keysets[k].name, sizeof(keysets[k].name), "%s-%s",
			 keysets[k].sc->name, keysets[k].dist);
	}
}

/* ---- engines ---------------------------------------------------------- */

struct group;

/* A worker's loop and its argument. */
struct worker {
	bench_run_fn run;
	void *arg;
};

struct engine {
	const char *name;
	int order; /* in the output */
	char mode; /* workers are 't'hreads or 'p'rocesses */
	int (*open)(struct group *g);
	int (*worker_open)(struct group *g, unsigned int batch,
			   struct worker *w);
	void (*worker_close)(struct group *g, struct worker *w);
	void (*close)(struct group *g);
};

/* One store (or baseline) with one policy, shared by the cases run on it. */
struct group {
	const struct engine *e;
	const char *policy; /* "gcra", "fixed-window", ...; NULL: none */
	int path;
	struct sizeclass *sc;
	const char *spec;     /* policy string for the library */
	struct bench_gcra gc; /* the same policy for the baselines */
	int populate;	      /* touch every key once at open */
	/* state */
	struct tk_limiter *l;
	char zone[64];
	uint64_t zone_capacity;
	struct bench_floor *floor;
	struct bench_mutex_table *mt;
	uint64_t capacity; /* table entries for the baselines */
	char note[160];
};

static uint64_t populate(bench_run_fn run, void *arg, struct sizeclass *sc,
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
	int rc, err = 0;

	rc = tk_limiter_open(&g->l, g->spec, store, o);
	if (rc)
		return rc;
	if (!g->populate)
		return 0;
	w.l = g->l;
	if (populate(tk_run, &w, g->sc, &err))
		return err;
	return 0;
}

static uint64_t zone_capacity_for(uint32_t nkeys)
{
	uint64_t cap = pow2_at_least(2 * (uint64_t)nkeys);

	return cap < 65536 ? 65536 : cap;
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
static uint64_t table_capacity_for(uint32_t nkeys)
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

enum { E_HARNESS, E_FLOOR, E_TK_SHM, E_TK_MEM, E_MUTEX, E_PRIVATE };

static const struct engine engines[] = {
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

static const char *policy_spec(const char *policy, int path)
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
	return allow ? GCRA_ALLOW : GCRA_DENY;
}

static struct bench_gcra policy_gcra(int path)
{
	if (path == P_ADMIT)
		return (struct bench_gcra){ ADMIT_T, ADMIT_T * ADMIT_BURST };
	if (path == P_DENY)
		return (struct bench_gcra){ HOUR, HOUR };
	return (struct bench_gcra){ 1, 1000000000 };
}

/* ---- running cases ---------------------------------------------------- */

/* Shared by the workers of one case (MAP_SHARED: seen across fork()). */
struct run_shared {
	pthread_barrier_t bar; /* process-shared */
	int fail;	       /* some worker could not start */
	int worker_rc[MAX_WORKERS];
	uint64_t ns[MAX_ROUNDS][MAX_WORKERS];
	uint64_t ops[MAX_ROUNDS][MAX_WORKERS];
	uint64_t adm[MAX_ROUNDS][MAX_WORKERS];
	uint64_t errors[MAX_WORKERS];
	int first_error[MAX_WORKERS];
	uint64_t rt0[MAX_WORKERS], rt1[MAX_WORKERS]; /* realtime, ns */
};

struct job {
	struct group *g;
	struct keyset *ks;
	unsigned int workers, batch, rounds;
	uint64_t warmup_ns, round_ns;
	int admit; /* one round from a fresh key; no warm-up */
	struct run_shared *sh;
};

struct result {
	char name[128];
	const char *engine, *policy, *path, *keyset, *dist;
	int ks_index, engine_order, policy_order, path_order;
	uint32_t nkeys;
	unsigned int workers, batch;
	char mode;
	int status; /* 0, or a negative errno: the case did not run */
	char note[200];
	unsigned int rounds;
	double ns_med, ns_min, ns_max;	  /* per check, per worker */
	double cps_med, cps_min, cps_max; /* all workers */
	double admitted;		  /* fraction of checks admitted */
	uint64_t admitted_n;		  /* checks admitted, in the rounds */
	uint64_t checks, errors;
	int first_error;
	double noise;  /* share of the CPU time others used during the case */
	int has_stats; /* the library's stores: counters after the case */
	struct tk_stats stats;
};

static struct result results[MAX_RESULTS];
static int nresults;

void cg_measured(struct worker *w, struct bench_cursor *c, uint64_t n);

/* Callgrind counts only inside this function (--toggle-collect). */
__attribute__((noinline)) void cg_measured(struct worker *w,
					   struct bench_cursor *c, uint64_t n)
{
	uint64_t done;

	for (done = 0; done < n; done += BENCH_CALLS)
		w->run(w->arg, c, BENCH_CALLS);
}

static void run_for(struct worker *w, struct bench_cursor *c, uint64_t ns,
		    uint64_t *ops, uint64_t *elapsed)
{
	uint64_t t0 = bench_mono(), t, n = 0;

	do {
		n += w->run(w->arg, c, BENCH_CALLS);
		t = bench_mono();
	} while (t - t0 < ns);
	*ops = n;
	*elapsed = t - t0;
}

static void worker_main(struct job *j, unsigned int w)
{
	struct run_shared *sh = j->sh;
	struct bench_cursor c = { .s = &j->ks->stream };
	struct worker wk = { 0 };
	uint64_t ops, ns, warm;
	unsigned int r;
	int rc;

	rc = j->g->e->worker_open(j->g, j->batch, &wk);
	sh->worker_rc[w] = rc;
	if (rc)
		sh->fail = 1;
	/* The barrier orders the writes above before every reader. */
	pthread_barrier_wait(&sh->bar);
	if (sh->fail)
		goto out;
	c.pos = w * ((j->ks->stream.mask + 1) / j->workers);
	if (cfg.cg_checks) {
		warm = cfg.cg_checks / 8 / BENCH_CALLS * BENCH_CALLS;
		for (ops = 0; ops < warm; ops += BENCH_CALLS)
			wk.run(wk.arg, &c, BENCH_CALLS);
		cg_measured(&wk, &c, cfg.cg_checks);
		sh->ops[0][w] = cfg.cg_checks;
		goto done;
	}
	if (!j->admit)
		run_for(&wk, &c, j->warmup_ns, &ops, &ns);
	for (r = 0; r < j->rounds; r++) {
		pthread_barrier_wait(&sh->bar);
		c.admitted = 0;
		sh->rt0[w] = bench_realtime();
		run_for(&wk, &c, j->round_ns, &ops, &ns);
		sh->rt1[w] = bench_realtime();
		sh->ns[r][w] = ns;
		sh->ops[r][w] = ops;
		sh->adm[r][w] = c.admitted;
	}
done:
	sh->errors[w] = c.errors;
	sh->first_error[w] = c.first_error;
out:
	j->g->e->worker_close(j->g, &wk);
}

struct thread_arg {
	struct job *j;
	unsigned int w;
};

static void *thread_main(void *p)
{
	struct thread_arg *a = p;

	worker_main(a->j, a->w);
	return NULL;
}

/* Run @j's workers: inline for one, else threads or processes. */
static int spawn(struct job *j)
{
	struct thread_arg args[MAX_WORKERS];
	pthread_t th[MAX_WORKERS];
	pid_t pid[MAX_WORKERS];
	unsigned int w, started = 0;
	int status, rc = 0;

	if (j->workers == 1) {
		worker_main(j, 0);
		return 0;
	}
	if (j->g->e->mode == 't') {
		for (w = 0; w < j->workers; w++) {
			args[w] = (struct thread_arg){ j, w };
			if (pthread_create(&th[w], NULL, thread_main, &args[w]))
				break;
		}
		if (w < j->workers) {
			/* Too few threads for the barrier: nothing ran. */
			fprintf(stderr, "tk-bench: pthread_create failed\n");
			exit(3);
		}
		for (w = 0; w < j->workers; w++)
			pthread_join(th[w], NULL);
		return 0;
	}
	fflush(NULL);
	for (w = 0; w < j->workers; w++) {
		pid[w] = fork();
		if (pid[w] < 0)
			break;
		if (pid[w] == 0) {
			worker_main(j, w);
			_exit(0);
		}
		started++;
	}
	if (started < j->workers) {
		/* The ones started wait at the barrier for ever. */
		for (w = 0; w < started; w++)
			kill(pid[w], SIGKILL);
		rc = -EAGAIN;
	}
	for (w = 0; w < started; w++) {
		if (waitpid(pid[w], &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			rc = rc ? rc : -ECHILD;
	}
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int policy_order(const char *p)
{
	if (!p)
		return 0;
	if (strcmp(p, "gcra") == 0)
		return 1;
	if (strcmp(p, "fixed-window") == 0)
		return 2;
	return 3;
}

static void case_name(char *buf, size_t len, const struct group *g,
		      const struct keyset *ks, unsigned int workers,
		      unsigned int batch)
{
	int n;

	if (g->policy)
		n = snprintf(buf, len, "%s/%s/%s/%s/%u%c", g->e->name,
			     g->policy, path_names[g->path], ks->name, workers,
			     g->e->mode);
	else
		n = snprintf(buf, len, "%s/%s/%u%c", g->e->name, ks->name,
			     workers, g->e->mode);
	if (batch && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "/batch%u", batch);
}

static struct result *new_result(const struct group *g, const struct keyset *ks,
				 unsigned int workers, unsigned int batch)
{
	struct result *r;

	if (nresults == MAX_RESULTS) {
		fprintf(stderr, "tk-bench: too many cases\n");
		exit(3);
	}
	r = &results[nresults++];
	memset(r, 0, sizeof(*r));
	case_name(r->name, sizeof(r->name), g, ks, workers, batch);
	r->engine = g->e->name;
	r->engine_order = g->e->order;
	r->policy = g->policy;
	r->policy_order = policy_order(g->policy);
	r->path = g->path >= 0 ? path_names[g->path] : NULL;
	r->path_order = g->path;
	r->keyset = ks->name;
	r->ks_index = ks->index;
	r->dist = ks->dist;
	r->nkeys = ks->sc->nkeys;
	r->workers = workers;
	r->batch = batch;
	r->mode = g->e->mode;
	return r;
}

static struct run_shared *shared_new(unsigned int workers)
{
	struct run_shared *sh;
	pthread_barrierattr_t a;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		fprintf(stderr, "tk-bench: mmap: %s\n", strerror(errno));
		exit(3);
	}
	pthread_barrierattr_init(&a);
	pthread_barrierattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_barrier_init(&sh->bar, &a, workers);
	pthread_barrierattr_destroy(&a);
	return sh;
}

static void shared_free(struct run_shared *sh)
{
	pthread_barrier_destroy(&sh->bar);
	munmap(sh, sizeof(*sh));
}

static void progress(const struct result *r)
{
	if (r->status)
		fprintf(stderr, "  %-48s %s\n", r->name, r->note);
	else if (cfg.cg_checks)
		fprintf(stderr, "  %-48s %llu checks under callgrind\n",
			r->name, (unsigned long long)r->checks);
	else
		fprintf(stderr, "  %-48s %9.1f ns/check %8.2f M/s\n", r->name,
			r->ns_med, r->cps_med / 1e6);
}

static void run_case(struct group *g, struct keyset *ks, unsigned int workers,
		     unsigned int batch)
{
	struct job j = { .g = g,
			 .ks = ks,
			 .workers = workers,
			 .batch = batch,
			 .rounds = cfg.rounds };
	double ns[MAX_ROUNDS], cps[MAX_ROUNDS], c;
	uint64_t ops = 0, adm = 0;
	struct cpu_sample cpu;
	struct result *r;
	unsigned int i, w;
	int rc;

	r = new_result(g, ks, workers, batch);
	cpu_sample(&cpu);
	j.warmup_ns = (uint64_t)cfg.warmup_ms * 1000000u;
	j.round_ns = (uint64_t)cfg.round_ms * 1000000u;
	j.sh = shared_new(workers);
	rc = spawn(&j);
	r->noise = cpu_others_since(&cpu, NULL);
	for (w = 0; w < workers && rc == 0; w++)
		if (j.sh->worker_rc[w])
			rc = j.sh->worker_rc[w];
	if (rc) {
		r->status = rc;
		snprintf(r->note, sizeof(r->note), "failed: %s (%s)",
			 tk_strerror(rc), tk_strerrorname(rc));
		goto out;
	}
	for (w = 0; w < workers; w++) {
		r->errors += j.sh->errors[w];
		if (!r->first_error)
			r->first_error = j.sh->first_error[w];
	}
	if (cfg.cg_checks) {
		r->checks = j.sh->ops[0][0];
		goto out;
	}
	for (i = 0; i < j.rounds; i++) {
		for (c = 0, w = 0; w < workers; w++) {
			c += (double)j.sh->ops[i][w] * NSEC /
			     (double)j.sh->ns[i][w];
			ops += j.sh->ops[i][w];
			adm += j.sh->adm[i][w];
		}
		cps[i] = c;
		ns[i] = workers * NSEC / c;
	}
	r->rounds = j.rounds;
	r->checks = ops;
	r->admitted_n = adm;
	r->admitted = ops ? (double)adm / (double)ops : 0;
	r->ns_med = median(ns, j.rounds);
	r->ns_min = ns[0];
	r->ns_max = ns[j.rounds - 1];
	r->cps_med = median(cps, j.rounds);
	r->cps_min = cps[0];
	r->cps_max = cps[j.rounds - 1];
	if (r->errors) {
		snprintf(r->note, sizeof(r->note), "%llu checks failed: %s",
			 (unsigned long long)r->errors,
			 tk_strerrorname(r->first_error));
	}
	if (g->l && tk_limiter_stats(g->l, &r->stats, sizeof(r->stats)) == 0) {
		r->has_stats = 1;
		if (r->stats.evictions && !r->errors)
			snprintf(r->note, sizeof(r->note),
				 "%llu keys evicted so far",
				 (unsigned long long)r->stats.evictions);
	}
	/* A denial path admits nothing, unless a key lost its state. */
	if (g->path == P_DENY && adm && !r->errors)
		snprintf(r->note + strlen(r->note),
			 sizeof(r->note) - strlen(r->note), "%s%llu admitted",
			 r->note[0] ? "; " : "", (unsigned long long)adm);
out:
	shared_free(j.sh);
	progress(r);
}

/* A failed or unsupported group: one row per case, saying why. */
static void skip_case(struct group *g, struct keyset *ks, unsigned int workers,
		      unsigned int batch, int rc)
{
	struct result *r = new_result(g, ks, workers, batch);

	r->status = rc;
	if (g->note[0])
		snprintf(r->note, sizeof(r->note), "n/a: %s", g->note);
	else
		snprintf(r->note, sizeof(r->note), "failed: %s (%s)",
			 tk_strerror(rc), tk_strerrorname(rc));
	progress(r);
}

#define W1 0x1u
#define W2 0x2u

/*
 * Run engine @e with @policy/@path on the key sets @ks (one size class):
 * for each, with 1 and/or 2 workers (@wmask), and a check_many batch on
 * one worker if @batches (not for Zipf key sets).
 */
static void group_run(int e, const char *policy, int path, struct keyset **ks,
		      int nks, unsigned int wmask, int batches)
{
	struct group g = { .e = &engines[e],
			   .policy = policy,
			   .path = path,
			   .sc = ks[0]->sc,
			   .populate = 1 };
	struct {
		struct keyset *ks;
		unsigned int workers, batch;
	} todo[16];
	char name[128];
	int i, n = 0, rc;
	unsigned int w;

	if (cfg.cg_checks)
		wmask &= W1;
	for (i = 0; i < nks; i++) {
		for (w = 1; w <= 2; w++) {
			if (!(wmask & (w == 1 ? W1 : W2)))
				continue;
			case_name(name, sizeof(name), &g, ks[i], w, 0);
			if (selected(name))
				todo[n++] = (typeof(todo[0])){ ks[i], w, 0 };
		}
		if (batches && strcmp(ks[i]->dist, "zipf") != 0) {
			case_name(name, sizeof(name), &g, ks[i], 1, cfg.batch);
			if (selected(name))
				todo[n++] = (typeof(todo[0])){ ks[i], 1,
							       cfg.batch };
		}
	}
	if (n == 0)
		return;
	if (cfg.list) {
		for (i = 0; i < n; i++) {
			case_name(name, sizeof(name), &g, todo[i].ks,
				  todo[i].workers, todo[i].batch);
			printf("%s\n", name);
		}
		return;
	}
	for (i = 0; i < n; i++)
		keyset_ready(todo[i].ks);
	if (policy) {
		g.spec = policy_spec(policy, path);
		g.gc = policy_gcra(path);
	}
	rc = g.e->open(&g);
	if (rc) {
		for (i = 0; i < n; i++)
			skip_case(&g, todo[i].ks, todo[i].workers,
				  todo[i].batch, rc);
	} else {
		for (i = 0; i < n; i++)
			run_case(&g, todo[i].ks, todo[i].workers,
				 todo[i].batch);
	}
	g.e->close(&g);
}

static void run_matrix(void)
{
	static const char *const windows[] = { "fixed-window",
					       "sliding-window" };
	struct keyset *hot[1] = { &keysets[0] };
	struct keyset *mid[2] = { &keysets[1], &keysets[2] };
	struct keyset *big[2] = { &keysets[3], &keysets[4] };
	struct keyset **sets[3] = { hot, mid, big };
	int nsets[3] = { 1, 2, 2 }, s, path, i, ishot;

	for (s = 0; s < 3; s++) {
		ishot = s == 0;
		if (!cfg.list)
			fprintf(stderr, "tk-bench: %s\n",
				ishot ? "one hot key" : sets[s][0]->sc->name);
		group_run(E_HARNESS, NULL, P_NONE, sets[s], nsets[s], W1, 0);
		group_run(E_FLOOR, NULL, P_NONE, sets[s], nsets[s], W1 | W2, 1);
		for (path = P_ALLOW; path <= P_DENY; path++) {
			group_run(E_TK_SHM, "gcra", path, sets[s], nsets[s],
				  W1 | W2, 1);
			group_run(E_TK_MEM, "gcra", path, sets[s], nsets[s],
				  W1 | W2, 1);
			group_run(E_MUTEX, "gcra", path, sets[s], nsets[s],
				  W1 | W2, 0);
			group_run(E_PRIVATE, "gcra", path, sets[s], nsets[s],
				  W1 | W2, 0);
		}
		for (i = 0; i < 2; i++) {
			for (path = P_ALLOW; path <= P_DENY; path++)
				group_run(E_TK_MEM, windows[i], path, sets[s],
					  nsets[s], W1, 0);
			/* Zones keep window states in blocks. */
			for (path = P_ALLOW; path <= P_DENY; path++)
				group_run(E_TK_SHM, windows[i], path, sets[s],
					  nsets[s], W1, 0);
		}
	}
}

/* ---- admission: how many requests does each design let through? ---- */

struct admission {
	const char *engine;
	unsigned int workers;
	char mode;
	uint64_t admitted, expected;
	double seconds;
	int status;
};

static struct admission admissions[8];
static int nadmissions;

static void admission_run(int e)
{
	struct group g = { .e = &engines[e],
			   .policy = "gcra",
			   .path = P_ADMIT,
			   .sc = &sizes[0],
			   .populate = 0 };
	struct job j = { .g = &g,
			 .ks = &keysets[0],
			 .workers = 2,
			 .rounds = 1,
			 .admit = 1 };
	struct admission *a = &admissions[nadmissions++];
	uint64_t t0 = UINT64_MAX, t1 = 0;
	char name[64];
	unsigned int w;
	int rc;

	a->engine = g.e->name;
	a->workers = j.workers;
	a->mode = g.e->mode;
	snprintf(name, sizeof(name), "admission/%s/%u%c", a->engine, j.workers,
		 a->mode);
	if (!selected(name)) {
		nadmissions--;
		return;
	}
	keyset_ready(&keysets[0]);
	g.spec = GCRA_ADMIT;
	g.gc = policy_gcra(P_ADMIT);
	j.round_ns = (uint64_t)cfg.admit_ms * 1000000u;
	rc = g.e->open(&g);
	if (rc == 0) {
		j.sh = shared_new(j.workers);
		rc = spawn(&j);
		for (w = 0; w < j.workers && rc == 0; w++) {
			rc = j.sh->worker_rc[w];
			a->admitted += j.sh->adm[0][w];
			t0 = j.sh->rt0[w] < t0 ? j.sh->rt0[w] : t0;
			t1 = j.sh->rt1[w] > t1 ? j.sh->rt1[w] : t1;
		}
		shared_free(j.sh);
	}
	g.e->close(&g);
	a->status = rc;
	if (rc == 0) {
		/* A full bucket at t0, then one unit per T. */
		a->expected = ADMIT_BURST + (t1 - t0) / ADMIT_T;
		a->seconds = (double)(t1 - t0) / NSEC;
	}
	fprintf(stderr, "  %-48s admitted %llu, one limit: at most %llu\n",
		name, (unsigned long long)a->admitted,
		(unsigned long long)a->expected);
}

/* ---- memory: bytes of table per key ---------------------------------- */

struct memrow {
	char id[32]; /* stable, for the targets and the JSON */
	char store[32];
	char what[96];
	double bytes_per_key;
	char note[200];
};

static struct memrow memrows[16];
static int nmemrows;

static struct memrow *memrow_add(const char *id, const char *store,
				 const char *what, double bpk)
{
	struct memrow *m = &memrows[nmemrows++];

	memset(m, 0, sizeof(*m));
	snprintf(m->id, sizeof(m->id), "%s", id);
	snprintf(m->store, sizeof(m->store), "%s", store);
	snprintf(m->what, sizeof(m->what), "%s", what);
	m->bytes_per_key = bpk;
	return m;
}

static long rss_pages(void)
{
	long size = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &size, &rss) != 2)
		rss = -1;
	fclose(f);
	return rss;
}

/*
 * RSS growth of the memory store while inserting @n keys, measured in a
 * fresh child so that no free list left by earlier cases hides growth.
 */
static double memory_store_bytes(const char *spec, uint32_t n)
{
	int fd[2], status, rc;
	double bpk = -1;
	pid_t pid;

	if (pipe(fd))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct tk_limiter *l;
		struct tk_decision d;
		char key[BENCH_KEY_LEN];
		long before, after;
		uint32_t i;

		close(fd[0]);
		rc = tk_limiter_open(&l, spec, "memory", NULL);
		before = rss_pages();
		for (i = 0; i < n && rc == 0; i++) {
			bench_key(key, i);
			rc = tk_limiter_check(l, key, sizeof(key), 1, &d);
		}
		usleep(300000); /* let a pending table resize finish */
		after = rss_pages();
		if (rc == 0 && before >= 0 && after >= 0)
			bpk = (double)(after - before) *
			      (double)sysconf(_SC_PAGESIZE) / n;
		if (write(fd[1], &bpk, sizeof(bpk)) != sizeof(bpk))
			_exit(1);
		_exit(0);
	}
	close(fd[1]);
	if (pid < 0 || read(fd[0], &bpk, sizeof(bpk)) != sizeof(bpk))
		bpk = -1;
	close(fd[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	return bpk;
}

/* Fill a zone of @cap slots that refuses when full, with distinct keys. */
static int zone_fill(uint64_t cap, uint64_t *first_refusal, uint64_t *stored,
		     uint64_t *segment)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_zone_info zi;
	struct tk_limiter *l;
	struct tk_decision d;
	char key[BENCH_KEY_LEN], zone[64], spec[80];
	uint64_t i;
	int rc;

	snprintf(zone, sizeof(zone), "tkbench-%ld-fill", (long)getpid());
	snprintf(spec, sizeof(spec), "shm:%s", zone);
	o.zone_capacity = cap;
	o.flags = TK_OPT_ZONE_REFUSE_FULL;
	rc = tk_limiter_open(&l, GCRA_DENY, spec, &o);
	if (rc)
		return rc;
	*first_refusal = 0;
	for (i = 0; i < cap; i++) {
		bench_key(key, (uint32_t)i);
		rc = tk_limiter_check(l, key, sizeof(key), 1, &d);
		if (rc == -ENOSPC && !*first_refusal)
			*first_refusal = i;
		else if (rc && rc != -ENOSPC)
			break;
	}
	tk_limiter_close(l);
	rc = rc == -ENOSPC ? 0 : rc;
	if (rc == 0)
		rc = tk_zone_info(zone, &zi, sizeof(zi));
	if (rc == 0) {
		*stored = zi.keys;
		/* The table; the arena's pages are used only by blocks. */
		*segment = zi.segment_size - zi.arena_size;
	}
	tk_zone_destroy(zone);
	return rc;
}

/* Bytes per key of @n keys of block policy @spec in a zone: its table
 * plus the blocks in use. */
static int zone_block_bytes(const char *spec, uint32_t n, double *bytes)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_zone_info zi;
	struct tk_limiter *l;
	struct tk_decision d;
	char key[BENCH_KEY_LEN], zone[64], shm[80];
	uint32_t i;
	int rc;

	snprintf(zone, sizeof(zone), "tkbench-%ld-blocks", (long)getpid());
	snprintf(shm, sizeof(shm), "shm:%s", zone);
	o.zone_capacity = zone_capacity_for(n);
	o.zone_arena = 1024 * (uint64_t)n + (1u << 20);
	rc = tk_limiter_open(&l, spec, shm, &o);
	if (rc)
		return rc;
	for (i = 0; i < n && rc == 0; i++) {
		bench_key(key, i);
		rc = tk_limiter_check(l, key, sizeof(key), 1, &d);
	}
	tk_limiter_close(l);
	if (rc == 0)
		rc = tk_zone_info(zone, &zi, sizeof(zi));
	if (rc == 0)
		*bytes = (double)(zi.segment_size - zi.arena_size +
				  zi.arena_used) /
			 (double)zi.keys;
	tk_zone_destroy(zone);
	return rc;
}

static int zone_segment(uint64_t cap, uint64_t *segment)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_zone_info zi;
	char zone[64];
	int rc;

	snprintf(zone, sizeof(zone), "tkbench-%ld-size", (long)getpid());
	o.zone_capacity = cap;
	rc = tk_zone_create(zone, &o);
	if (rc == 0)
		rc = tk_zone_info(zone, &zi, sizeof(zi));
	if (rc == 0)
		*segment = zi.segment_size - zi.arena_size;
	tk_zone_destroy(zone);
	return rc;
}

static void memory_run(void)
{
	static const char *const specs[][2] = {
		{ "gcra", GCRA_DENY },
		{ "fixed-window", "fixed-window:1/1d" },
		{ "sliding-window", "sliding-window:1/1d" },
	};
	uint32_t n = cfg.big_keys, caps[3];
	uint64_t seg, first, stored, cap;
	struct bench_mutex_table *mt;
	struct bench_gcra gc = policy_gcra(P_DENY);
	struct memrow *m;
	char what[96], id[32];
	double b;
	int i;

	if (selected("memory/zone")) {
		fprintf(stderr, "tk-bench: memory, zones\n");
		caps[0] = (uint32_t)zone_capacity_for(1);
		caps[1] = (uint32_t)zone_capacity_for(cfg.mid_keys);
		caps[2] = (uint32_t)zone_capacity_for(cfg.big_keys);
		for (i = 0; i < 3; i++) {
			if (zone_segment(caps[i], &seg))
				continue;
			snprintf(what, sizeof(what),
				 "table / capacity, %u slots", caps[i]);
			snprintf(id, sizeof(id), "zone-slot-%u", caps[i]);
			m = memrow_add(id, "tk-shm", what,
				       (double)seg / (double)caps[i]);
			snprintf(m->note, sizeof(m->note),
				 "%.1f MiB of slots; any one-word policy (GCRA, "
				 "token bucket, leaky)",
				 (double)seg / 1048576.0);
		}
		cap = zone_capacity_for(cfg.big_keys);
		if (zone_segment(cap, &seg) == 0) {
			snprintf(what, sizeof(what),
				 "per stored key, %u keys in %llu slots",
				 cfg.big_keys, (unsigned long long)cap);
			m = memrow_add("zone-bench-load", "tk-shm", what,
				       (double)seg / (double)cfg.big_keys);
			snprintf(m->note, sizeof(m->note),
				 "the benchmark's zone at %.0f%% load",
				 100.0 * cfg.big_keys / (double)cap);
		}
		cap = pow2_at_least(cfg.big_keys) / 2 < 65536
			      ? 65536
			      : pow2_at_least(cfg.big_keys) / 2;
		if (zone_fill(cap, &first, &stored, &seg) == 0) {
			snprintf(what, sizeof(what),
				 "per stored key, zone filled (%llu slots)",
				 (unsigned long long)cap);
			m = memrow_add("zone-filled", "tk-shm", what,
				       (double)seg / (double)stored);
			snprintf(m->note, sizeof(m->note),
				 "first refusal at %.1f%% load; %.1f%% of "
				 "slots held keys after offering one key per "
				 "slot",
				 100.0 * (double)first / (double)cap,
				 100.0 * (double)stored / (double)cap);
		}
	}
	for (i = 0; i < 3; i++) {
		snprintf(what, sizeof(what), "memory/tk-mem/%s", specs[i][0]);
		if (!selected(what))
			continue;
		fprintf(stderr, "tk-bench: memory, memory store, %s\n",
			specs[i][0]);
		b = memory_store_bytes(specs[i][1], n);
		snprintf(what, sizeof(what), "RSS growth per key, %s, %u keys",
			 specs[i][0], n);
		snprintf(id, sizeof(id), "mem-%s", specs[i][0]);
		m = memrow_add(id, "tk-mem", what, b);
		snprintf(m->note, sizeof(m->note),
			 "/proc/self/statm; entry, key bytes, hash table, "
			 "allocator overhead");
	}
	for (i = 1; i < 3; i++) {
		snprintf(what, sizeof(what), "memory/zone/%s", specs[i][0]);
		if (!selected(what) || zone_block_bytes(specs[i][1], n, &b))
			continue;
		snprintf(what, sizeof(what),
			 "per stored key, %s, %u keys (slots + blocks)",
			 specs[i][0], n);
		snprintf(id, sizeof(id), "zone-%s", specs[i][0]);
		m = memrow_add(id, "tk-shm", what, b);
		snprintf(m->note, sizeof(m->note),
			 "slots at 50%% load plus the state block in use");
	}
	if (selected("memory/mutex") &&
	    bench_mutex_open(&mt, table_capacity_for(n), &gc) == 0) {
		snprintf(what, sizeof(what), "segment / capacity, %llu entries",
			 (unsigned long long)bench_mutex_capacity(mt));
		m = memrow_add("mutex-slot", "mutex", what,
			       (double)bench_mutex_bytes(mt) /
				       (double)bench_mutex_capacity(mt));
		snprintf(m->note, sizeof(m->note),
			 "32-byte entries holding keys of up to 15 bytes; "
			 "sized at 2x the keys: %.1f B per stored key",
			 (double)bench_mutex_bytes(mt) / n);
		bench_mutex_close(mt);
	}
	if (selected("memory/per-process")) {
		m = memrow_add("private-slot", "per-process",
			       "table / capacity, per process", 32.0);
		snprintf(m->note, sizeof(m->note),
			 "every process holds its own copy: N processes, N x");
	}
}

/* ---- output ----------------------------------------------------------- */

static const struct result *find(const char *name)
{
	int i;

	for (i = 0; i < nresults; i++)
		if (strcmp(results[i].name, name) == 0 && !results[i].status)
			return &results[i];
	return NULL;
}

/* The floor for @r: same key set and worker count; a batch's floor reads
 * the clock once per batch. */
static const struct result *floor_of(const struct result *r)
{
	char name[128];

	if (r->batch)
		snprintf(name, sizeof(name), "floor/%s/1p/batch%u", r->keyset,
			 r->batch);
	else
		snprintf(name, sizeof(name), "floor/%s/%up", r->keyset,
			 r->workers);
	return find(name);
}

static double ratio(const struct result *r)
{
	const struct result *f = floor_of(r);

	if (r->status || !f || strcmp(r->engine, "harness") == 0)
		return 0;
	return r->ns_med / f->ns_med;
}

static int cmp_result(const void *a, const void *b)
{
	const struct result *x = a, *y = b;

	if (x->ks_index != y->ks_index)
		return x->ks_index - y->ks_index;
	if (x->policy_order != y->policy_order)
		return x->policy_order - y->policy_order;
	if (x->path_order != y->path_order)
		return x->path_order - y->path_order;
	if ((x->batch != 0) != (y->batch != 0))
		return (x->batch != 0) - (y->batch != 0);
	if (x->engine_order != y->engine_order)
		return x->engine_order - y->engine_order;
	return (int)x->workers - (int)y->workers;
}

static const char *keyset_title(const struct keyset *ks, char *buf, size_t len)
{
	if (ks->sc->nkeys == 1)
		snprintf(buf, len, "one hot key");
	else if (strcmp(ks->dist, "zipf") == 0)
		snprintf(buf, len, "%u keys, Zipf s=%.2f", ks->sc->nkeys,
			 cfg.zipf_s);
	else
		snprintf(buf, len, "%u keys, uniform", ks->sc->nkeys);
	return buf;
}

static void fmt_rate(char *buf, size_t len, double cps)
{
	if (cps >= 1e6)
		snprintf(buf, len, "%.2fM", cps / 1e6);
	else
		snprintf(buf, len, "%.0fk", cps / 1e3);
}

/* Marks: "<" below the floor on the write path; "!" wrong admits; "~"
 * other processes took more than a tenth of the CPUs during the case. */
#define NOISY 0.10

static const char *flags_of(const struct result *r)
{
	static char buf[8];
	double q = ratio(r);

	buf[0] = 0;
	if (!r->status && r->noise > NOISY)
		strcat(buf, "~");
	if (r->status || !r->path)
		return buf;
	/* The library and the mutex table do at least the floor's work on
	 * the write path; a private table has no atomic and may not. */
	if (q > 0 && q < 1.0 && strcmp(r->path, "allow") == 0 &&
	    strcmp(r->engine, "per-process") != 0)
		strcat(buf, "<");
	if ((strcmp(r->path, "allow") == 0 && r->admitted_n != r->checks) ||
	    (strcmp(r->path, "deny") == 0 && r->admitted_n != 0) || r->errors)
		strcat(buf, "!");
	return buf;
}

static void print_table(void)
{
	char title[96], label[128], rate[32], range[48], q[16], adm[16];
	const struct result *r;
	int i, last = -1;
	const char *p;

	qsort(results, (size_t)nresults, sizeof(results[0]), cmp_result);
	printf("\n%-36s %9s %17s %10s %7s %8s\n", "case", "ns/check", "min-max",
	       "checks/s", "xfloor", "admitted");
	for (i = 0; i < nresults; i++) {
		r = &results[i];
		if (r->ks_index != last) {
			last = r->ks_index;
			printf("-- %s\n", keyset_title(&keysets[r->ks_index],
						       title, sizeof(title)));
		}
		/* The key set is the section: drop it from the label. */
		p = strstr(r->name, r->keyset);
		snprintf(label, sizeof(label), "%.*s%s", (int)(p - r->name),
			 r->name, p + strlen(r->keyset) + 1);
		if (r->status) {
			printf("  %-34s %s\n", label, r->note);
			continue;
		}
		fmt_rate(rate, sizeof(rate), r->cps_med);
		snprintf(range, sizeof(range), "%.1f-%.1f", r->ns_min,
			 r->ns_max);
		if (ratio(r) > 0)
			snprintf(q, sizeof(q), "%.2f", ratio(r));
		else
			snprintf(q, sizeof(q), "-");
		if (r->path)
			snprintf(adm, sizeof(adm), "%.1f%%",
				 100.0 * r->admitted);
		else
			snprintf(adm, sizeof(adm), "-");
		printf("  %-34s %9.1f %17s %10s %7s %8s %-2s %s\n", label,
		       r->ns_med, range, rate, q, adm, flags_of(r), r->note);
	}
	printf("ns/check: median over rounds of the time one worker spends "
	       "per check; checks/s: all workers.\n"
	       "xfloor: against the floor for the same key set and worker "
	       "count (a batch: one clock read per batch).\n"
	       "Marks: '<' below the floor on the write path, '!' not every "
	       "check admitted (allow) or\nany check admitted (deny), or "
	       "errors; "
	       "'~' other processes used more than %.0f%% of the CPUs during "
	       "the case (noise).\n",
	       100 * NOISY);
}

struct target {
	const char *id, *text;
	double value, limit;
	int met; /* 1 met, 0 missed, -1 not measured */
	char detail[240];
};

static struct target targets[4];

static double memrow_value(const char *id)
{
	int i;

	for (i = 0; i < nmemrows; i++)
		if (strcmp(memrows[i].id, id) == 0)
			return memrows[i].bytes_per_key;
	return -1;
}

static void judge_targets(void)
{
	const struct result *a, *b;
	char name[128];
	struct target *t;
	double v;
	int i;

	t = &targets[0];
	*t = (struct target){ "hot-vs-floor",
			      "shm GCRA check on a hot key within 1.3x the "
			      "floor",
			      0,
			      1.3,
			      -1,
			      "" };
	if ((a = find("tk-shm/gcra/allow/hot/1p"))) {
		t->value = ratio(a);
		t->met = t->value > 0 && t->value <= t->limit;
		b = find("tk-shm/gcra/deny/hot/1p");
		snprintf(t->detail, sizeof(t->detail),
			 "allow path %.1f ns = %.2fx the floor (%.1f ns); "
			 "deny path %.2fx",
			 a->ns_med, t->value,
			 floor_of(a) ? floor_of(a)->ns_med : 0,
			 b ? ratio(b) : 0);
	}
	t = &targets[1];
	*t = (struct target){ "100k-vs-floor",
			      "shm GCRA check within 1.5x the floor at 100k "
			      "keys",
			      0,
			      1.5,
			      -1,
			      "" };
	snprintf(name, sizeof(name), "tk-shm/gcra/allow/%s/1p",
		 keysets[1].name);
	if ((a = find(name))) {
		t->value = ratio(a);
		t->met = t->value > 0 && t->value <= t->limit;
		snprintf(name, sizeof(name), "tk-shm/gcra/allow/%s/1p",
			 keysets[2].name);
		b = find(name);
		snprintf(t->detail, sizeof(t->detail),
			 "uniform: %.1f ns = %.2fx the floor (%.1f ns); "
			 "Zipf: %.2fx",
			 a->ns_med, t->value,
			 floor_of(a) ? floor_of(a)->ns_med : 0,
			 b ? ratio(b) : 0);
	}
	t = &targets[2];
	*t = (struct target){ "2p-vs-mutex",
			      ">= 3x the throughput of the mutex table with "
			      "2 processes on one hot key",
			      0,
			      3.0,
			      -1,
			      "" };
	a = find("tk-shm/gcra/allow/hot/2p");
	b = find("mutex/gcra/allow/hot/2p");
	if (a && b) {
		t->value = a->cps_med / b->cps_med;
		t->met = t->value >= t->limit;
		snprintf(t->detail, sizeof(t->detail),
			 "allow path: %.2fM vs %.2fM checks/s = %.2fx",
			 a->cps_med / 1e6, b->cps_med / 1e6, t->value);
		a = find("tk-shm/gcra/deny/hot/2p");
		b = find("mutex/gcra/deny/hot/2p");
		if (a && b) {
			v = a->cps_med / b->cps_med;
			snprintf(t->detail + strlen(t->detail),
				 sizeof(t->detail) - strlen(t->detail),
				 "; deny path %.2fx", v);
		}
	}
	t = &targets[3];
	*t = (struct target){
		"shm-bytes", "<= 32 bytes of shm table per GCRA key", 0, 32, -1,
		""
	};
	snprintf(name, sizeof(name), "zone-slot-%llu",
		 (unsigned long long)zone_capacity_for(1));
	v = memrow_value(name);
	if (v > 0) {
		t->value = v;
		t->met = v <= t->limit;
		snprintf(t->detail, sizeof(t->detail),
			 "%.2f B per slot (table / capacity, default "
			 "capacity); per stored key: %.1f B in the "
			 "benchmark's 1M-key zone (%.0f%% load), %.1f B in a "
			 "zone filled until it refused",
			 v, memrow_value("zone-bench-load"),
			 100.0 * cfg.big_keys /
				 (double)zone_capacity_for(cfg.big_keys),
			 memrow_value("zone-filled"));
	}
	for (i = 0; i < 4; i++)
		if (targets[i].met < 0)
			snprintf(targets[i].detail, sizeof(targets[i].detail),
				 "its cases were not run (TK_BENCH_FILTER)");
}

static void print_sections(void)
{
	int i;

	if (nadmissions) {
		printf("\nAdmitted in %.1f s, 2 workers hammering one key of "
		       "%s.\nOne shared limit admits at most burst + rate x "
		       "time; fewer if workers stall\nlonger than the burst "
		       "lasts (10 ms), since unused credit caps at the "
		       "burst.\n",
		       cfg.admit_ms / 1000.0, GCRA_ADMIT);
		for (i = 0; i < nadmissions; i++) {
			if (admissions[i].status) {
				printf("  %-14s failed: %s\n",
				       admissions[i].engine,
				       tk_strerrorname(admissions[i].status));
				continue;
			}
			printf("  %-14s %u%c  admitted %7llu  one limit: at "
			       "most %7llu  (%.2fx)\n",
			       admissions[i].engine, admissions[i].workers,
			       admissions[i].mode,
			       (unsigned long long)admissions[i].admitted,
			       (unsigned long long)admissions[i].expected,
			       (double)admissions[i].admitted /
				       (double)admissions[i].expected);
		}
	}
	if (nmemrows) {
		printf("\nBytes of table per key:\n");
		for (i = 0; i < nmemrows; i++)
			printf("  %-12s %-44s %8.1f  %s\n", memrows[i].store,
			       memrows[i].what, memrows[i].bytes_per_key,
			       memrows[i].note);
	}
	printf("\nlibthrottlekit %s (%s), CFLAGS %s.\n", tk_version(),
	       cfg.lib_id ? cfg.lib_id : "binary not identified",
	       cfg.lib_cflags ? cfg.lib_cflags : "unknown");
	printf("Noise: other processes used %.1f%% of the machine's CPU time "
	       "during the run\n(steal by the hypervisor: %.1f%%); load "
	       "average at the start %s, at the end %s\n(%ld CPUs).\n",
	       100 * others_share, 100 * steal_share, load_start, load_end,
	       sysconf(_SC_NPROCESSORS_ONLN));
	if (others_share > 0.05)
		printf("The machine was busy: other processes shared the CPUs "
		       "with the workers, and\nthe 2-worker cases suffer most "
		       "(they may time-share one CPU).\n");
	printf("\nTargets:\n");
	for (i = 0; i < 4; i++)
		printf("  [%s] %s: %s\n",
		       targets[i].met < 0 ? "not measured"
		       : targets[i].met	  ? "met"
					  : "MISSED",
		       targets[i].text, targets[i].detail);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void cpu_model(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512], *p;

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "model name", 10) != 0)
			continue;
		p = strchr(line, ':');
		if (!p)
			break;
		p += 1 + strspn(p + 1, " \t");
		p[strcspn(p, "\n")] = 0;
		snprintf(buf, len, "%s", p);
		break;
	}
	fclose(f);
}

static void write_json(const char *path)
{
	char cpu[256], date[64];
	struct utsname u;
	const struct result *r;
	time_t now = time(NULL);
	FILE *f = fopen(path, "w");
	int i;

	if (!f) {
		fprintf(stderr, "tk-bench: %s: %s\n", path, strerror(errno));
		return;
	}
	cpu_model(cpu, sizeof(cpu));
	uname(&u);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	fprintf(f, "{\n  \"machine\": {\"nproc\": %ld, \"cpu\": ",
		sysconf(_SC_NPROCESSORS_ONLN));
	json_str(f, cpu);
	fprintf(f, ", \"kernel\": ");
	json_str(f, u.release);
	fprintf(f,
		", \"date\": \"%s\", \"loadavg_start\": \"%s\", "
		"\"loadavg_end\": \"%s\", \"others_cpu_share\": %.4f, "
		"\"steal_share\": %.4f},\n",
		date, load_start, load_end, others_share, steal_share);
	fprintf(f, "  \"library\": {\"version\": ");
	json_str(f, tk_version());
	fprintf(f, ", \"cflags\": ");
	json_str(f, cfg.lib_cflags);
	fprintf(f, ", \"binary\": ");
	json_str(f, cfg.lib_id);
	fprintf(f,
		"},\n  \"config\": {\"rounds\": %u, \"round_ms\": %u, "
		"\"warmup_ms\": %u, \"admit_ms\": %u, \"batch\": %u, "
		"\"settle_ms\": %u, "
		"\"mid_keys\": %u, \"big_keys\": %u, \"zipf_s\": %.3f, "
		"\"stream_len\": %llu, \"filter\": ",
		cfg.rounds, cfg.round_ms, cfg.warmup_ms, cfg.admit_ms,
		cfg.batch, cfg.settle_ms, cfg.mid_keys, cfg.big_keys,
		cfg.zipf_s, (unsigned long long)STREAM_LEN);
	json_str(f, cfg.filter ? cfg.filter : "");
	fprintf(f, "},\n  \"cases\": [\n");
	for (i = 0; i < nresults; i++) {
		r = &results[i];
		fprintf(f, "    {\"name\": ");
		json_str(f, r->name);
		fprintf(f, ", \"engine\": ");
		json_str(f, r->engine);
		fprintf(f, ", \"policy\": ");
		if (r->policy)
			json_str(f, r->policy);
		else
			fputs("null", f);
		fprintf(f, ", \"path\": ");
		if (r->path)
			json_str(f, r->path);
		else
			fputs("null", f);
		fprintf(f, ", \"keyset\": ");
		json_str(f, r->keyset);
		fprintf(f,
			", \"keys\": %u, \"dist\": \"%s\", \"workers\": %u, "
			"\"mode\": \"%s\", \"batch\": %u",
			r->nkeys, r->dist, r->workers,
			r->mode == 't' ? "threads" : "processes", r->batch);
		if (r->status) {
			fprintf(f,
				", \"status\": \"n/a\", \"error\": \"%s\", "
				"\"note\": ",
				tk_strerrorname(r->status));
			json_str(f, r->note);
		} else {
			fprintf(f,
				", \"status\": \"ok\", \"others_cpu_share\": "
				"%.4f, \"rounds\": %u, "
				"\"ns_per_check\": {\"median\": %.2f, "
				"\"min\": %.2f, \"max\": %.2f}, "
				"\"checks_per_s\": {\"median\": %.0f, "
				"\"min\": %.0f, \"max\": %.0f}, "
				"\"admitted\": %.6f, \"admitted_checks\": "
				"%llu, "
				"\"checks\": %llu, "
				"\"errors\": %llu",
				r->noise, r->rounds, r->ns_med, r->ns_min,
				r->ns_max, r->cps_med, r->cps_min, r->cps_max,
				r->admitted, (unsigned long long)r->admitted_n,
				(unsigned long long)r->checks,
				(unsigned long long)r->errors);
			if (ratio(r) > 0)
				fprintf(f, ", \"ratio_to_floor\": %.3f",
					ratio(r));
			if (r->has_stats)
				fprintf(f,
					", \"store\": {\"keys\": %llu, "
					"\"inserts\": %llu, \"evictions\": "
					"%llu, \"expirations\": %llu}",
					(unsigned long long)r->stats.keys,
					(unsigned long long)r->stats.inserts,
					(unsigned long long)r->stats.evictions,
					(unsigned long long)
						r->stats.expirations);
			if (r->note[0]) {
				fprintf(f, ", \"note\": ");
				json_str(f, r->note);
			}
		}
		fprintf(f, "}%s\n", i + 1 < nresults ? "," : "");
	}
	fprintf(f, "  ],\n  \"admission\": {\"policy\": \"%s\", \"cases\": [",
		GCRA_ADMIT);
	for (i = 0; i < nadmissions; i++)
		fprintf(f,
			"%s\n    {\"engine\": \"%s\", \"workers\": %u, "
			"\"mode\": \"%s\", \"status\": \"%s\", \"admitted\": "
			"%llu, \"one_limit_allows\": %llu, \"seconds\": %.3f}",
			i ? "," : "", admissions[i].engine,
			admissions[i].workers,
			admissions[i].mode == 't' ? "threads" : "processes",
			admissions[i].status ? "failed" : "ok",
			(unsigned long long)admissions[i].admitted,
			(unsigned long long)admissions[i].expected,
			admissions[i].seconds);
	fprintf(f, "\n  ]},\n  \"memory\": [");
	for (i = 0; i < nmemrows; i++) {
		fprintf(f,
			"%s\n    {\"id\": \"%s\", \"store\": \"%s\", "
			"\"what\": ",
			i ? "," : "", memrows[i].id, memrows[i].store);
		json_str(f, memrows[i].what);
		fprintf(f, ", \"bytes_per_key\": %.2f, \"note\": ",
			memrows[i].bytes_per_key);
		json_str(f, memrows[i].note);
		fputc('}', f);
	}
	fprintf(f, "\n  ],\n  \"targets\": [");
	for (i = 0; i < 4; i++) {
		fprintf(f,
			"%s\n    {\"id\": \"%s\", \"target\": ", i ? "," : "",
			targets[i].id);
		json_str(f, targets[i].text);
		fprintf(f,
			", \"limit\": %.2f, \"value\": %.3f, \"met\": %s, "
			"\"detail\": ",
			targets[i].limit, targets[i].value,
			targets[i].met < 0 ? "null"
			: targets[i].met   ? "true"
					   : "false");
		json_str(f, targets[i].detail);
		fputc('}', f);
	}
	fprintf(f, "\n  ]\n}\n");
	fclose(f);
}

/* Gnuplot data: ns/check by key set (1 worker), throughput by workers. */
static void write_dat(const char *dir)
{
	static const char *const cols[] = { "floor", "tk-shm", "tk-mem",
					    "mutex", "per-process" };
	static const char *const paths[] = { "allow", "deny" };
	const struct result *r;
	char path[4096], name[600];
	int k, c, p, w;
	FILE *f;

	for (p = 0; p < 2; p++) {
		snprintf(path, sizeof(path), "%s/ns-%s.dat", dir, paths[p]);
		f = fopen(path, "w");
		if (!f)
			return;
		fprintf(f, "# keyset floor tk-shm tk-mem mutex per-process "
			   "(ns/check, GCRA, 1 worker)\n");
		for (k = 0; k < 5; k++) {
			fprintf(f, "%s", keysets[k].name);
			for (c = 0; c < 5; c++) {
				if (c == 0)
					snprintf(name, sizeof(name),
						 "floor/%s/1p",
						 keysets[k].name);
				else
					snprintf(name, sizeof(name),
						 "%s/gcra/%s/%s/1%c", cols[c],
						 paths[p], keysets[k].name,
						 c == 2 ? 't' : 'p');
				r = find(name);
				fprintf(f, " %.2f", r ? r->ns_med : NAN);
			}
			fputc('\n', f);
		}
		fclose(f);
	}
	for (k = 0; k < 2; k++) {
		snprintf(path, sizeof(path), "%s/tput-%s.dat", dir,
			 k ? "mid" : "hot");
		f = fopen(path, "w");
		if (!f)
			return;
		fprintf(f,
			"# workers floor tk-shm tk-mem mutex per-process "
			"(M checks/s, GCRA allow, %s)\n",
			keysets[k].name);
		for (w = 1; w <= 2; w++) {
			fprintf(f, "%d", w);
			for (c = 0; c < 5; c++) {
				if (c == 0)
					snprintf(name, sizeof(name),
						 "floor/%s/%dp",
						 keysets[k].name, w);
				else
					snprintf(name, sizeof(name),
						 "%s/gcra/allow/%s/%d%c",
						 cols[c], keysets[k].name, w,
						 c == 2 ? 't' : 'p');
				r = find(name);
				fprintf(f, " %.3f", r ? r->cps_med / 1e6 : NAN);
			}
			fputc('\n', f);
		}
		fclose(f);
	}
}

static void usage(void)
{
	fprintf(stderr,
		"usage: tk-bench [--json FILE] [--dat DIR] [--list]\n"
		"       tk-bench --callgrind N   (with TK_BENCH_FILTER)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int i;

	cfg.rounds =
		(unsigned int)env_ulong("TK_BENCH_ROUNDS", 5, 1, MAX_ROUNDS);
	cfg.round_ms =
		(unsigned int)env_ulong("TK_BENCH_ROUND_MS", 150, 1, 600000);
	cfg.warmup_ms =
		(unsigned int)env_ulong("TK_BENCH_WARMUP_MS", 100, 0, 600000);
	cfg.admit_ms =
		(unsigned int)env_ulong("TK_BENCH_ADMIT_MS", 500, 1, 600000);
	cfg.batch = (unsigned int)env_ulong("TK_BENCH_BATCH", 16, 1, BATCH_MAX);
	cfg.settle_ms =
		(unsigned int)env_ulong("TK_BENCH_SETTLE_MS", 1500, 0, 60000);
	cfg.mid_keys = (uint32_t)env_ulong("TK_BENCH_MID_KEYS", 100000, 2,
					   UINT32_C(1) << 26);
	cfg.big_keys = (uint32_t)env_ulong("TK_BENCH_BIG_KEYS", 1000000, 2,
					   UINT32_C(1) << 26);
	cfg.zipf_s = getenv("TK_BENCH_ZIPF_S") ? atof(getenv("TK_BENCH_ZIPF_S"))
					       : 0.99;
	cfg.filter = getenv("TK_BENCH_FILTER");
	cfg.lib_cflags = getenv("TK_BENCH_LIB_CFLAGS");
	cfg.lib_id = getenv("TK_BENCH_LIB_ID");
	if (BENCH_CALLS % cfg.batch) {
		fprintf(stderr, "tk-bench: TK_BENCH_BATCH must divide %d\n",
			BENCH_CALLS);
		return 2;
	}
	if (cfg.zipf_s <= 0 || cfg.zipf_s > 5) {
		fprintf(stderr,
			"tk-bench: TK_BENCH_ZIPF_S must be in (0, 5]\n");
		return 2;
	}
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
			cfg.json = argv[++i];
		else if (strcmp(argv[i], "--dat") == 0 && i + 1 < argc)
			cfg.dat = argv[++i];
		else if (strcmp(argv[i], "--list") == 0)
			cfg.list = 1;
		else if (strcmp(argv[i], "--callgrind") == 0 && i + 1 < argc)
			cfg.cg_checks = strtoull(argv[++i], NULL, 10) /
					BENCH_CALLS * BENCH_CALLS;
		else
			usage();
	}
	if (argc > 1 && cfg.cg_checks == 0 && !cfg.json && !cfg.dat &&
	    !cfg.list)
		usage();
	keysets_init();
	if (cfg.list) {
		static const char *const other[] = {
			"memory/zone",
			"memory/tk-mem/gcra",
			"memory/tk-mem/fixed-window",
			"memory/tk-mem/sliding-window",
			"memory/mutex",
			"memory/per-process",
			"admission/tk-shm/2p",
			"admission/tk-mem/2t",
			"admission/mutex/2p",
			"admission/per-process/2p"
		};

		run_matrix();
		for (i = 0; i < (int)(sizeof(other) / sizeof(other[0])); i++)
			if (selected(other[i]))
				printf("%s\n", other[i]);
		return 0;
	}
	if (cfg.cg_checks) {
		run_matrix();
		for (i = 0; i < nresults; i++)
			printf("%s %llu\n", results[i].name,
			       (unsigned long long)results[i].checks);
		return nresults ? 0 : 1;
	}
	fprintf(stderr,
		"tk-bench: libthrottlekit %s; %u rounds of %u ms after %u ms "
		"of warm-up per case\n",
		tk_version(), cfg.rounds, cfg.round_ms, cfg.warmup_ms);
	read_load(load_start, sizeof(load_start));
	cpu_sample(&cpu_start);
	/* Memory first: fresh children, before any case fragments the heap. */
	memory_run();
	run_matrix();
	fprintf(stderr, "tk-bench: admission\n");
	admission_run(E_TK_SHM);
	admission_run(E_TK_MEM);
	admission_run(E_MUTEX);
	admission_run(E_PRIVATE);
	read_load(load_end, sizeof(load_end));
	others_share = cpu_others_since(&cpu_start, &steal_share);
	judge_targets();
	print_table();
	print_sections();
	if (cfg.json)
		write_json(cfg.json);
	if (cfg.dat)
		write_dat(cfg.dat);
	return 0;
}
