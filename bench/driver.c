/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * driver.c - tk-bench's driver: the configuration, running one case
 * (workers as threads or processes, rounds at a barrier, callgrind mode)
 * and main().
 */
#define _GNU_SOURCE
#include "tk-bench.h"

/* /proc/loadavg at the start and the end of the run: noise to report. */
char load_start[64], load_end[64];

static struct cpu_sample cpu_start;

double others_share = -1, steal_share = -1; /* of the machine */

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

struct bench_config cfg;

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

int selected(const char *name)
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

struct result results[MAX_RESULTS];

int nresults;

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
int spawn(struct job *j)
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

double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int policy_order(const char *p)
{
	if (!p)
		return 0;
	if (strcmp(p, "gcra") == 0)
		return 1;
	if (strcmp(p, "fixed-window") == 0)
		return 2;
	if (strcmp(p, "sliding-window") == 0)
		return 3;
	return 4;
}

void case_name(char *buf, size_t len, const struct group *g,
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

struct run_shared *shared_new(unsigned int workers)
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

void shared_free(struct run_shared *sh)
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

void run_case(struct group *g, struct keyset *ks, unsigned int workers,
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
void skip_case(struct group *g, struct keyset *ks, unsigned int workers,
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

static void usage(void)
{
	fprintf(stderr,
		"usage: tk-bench [--json FILE] [--dat DIR] [--list]\n"
		"       tk-bench --callgrind N   (with TK_BENCH_FILTER)\n");
	exit(2);
}

/* TK_BENCH_CLOCK: the clock the library's limiters read ("system", the
 * default, "coarse" or "tsc"; tsc says when it is the system clock). */
static int bench_clock(const char *name)
{
	if (!name || strcmp(name, "system") == 0) {
		cfg.clock = tk_clock_system();
	} else if (strcmp(name, "coarse") == 0) {
		cfg.clock = tk_clock_coarse();
	} else if (strcmp(name, "tsc") == 0) {
		cfg.clock = tk_clock_tsc();
		if (tk_clock_kind(cfg.clock) != TK_CLOCK_TSC)
			fprintf(stderr, "tk-bench: no invariant TSC here: "
					"the system clock\n");
	} else {
		fprintf(stderr, "tk-bench: TK_BENCH_CLOCK: system, coarse or "
				"tsc\n");
		return -1;
	}
	return 0;
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
	cfg.zone_min = (uint32_t)env_ulong("TK_BENCH_ZONE_MIN", 65536, 64,
					   UINT32_C(1) << 26);
	cfg.zipf_s = getenv("TK_BENCH_ZIPF_S") ? atof(getenv("TK_BENCH_ZIPF_S"))
					       : 0.99;
	cfg.filter = getenv("TK_BENCH_FILTER");
	cfg.lib_cflags = getenv("TK_BENCH_LIB_CFLAGS");
	cfg.lib_id = getenv("TK_BENCH_LIB_ID");
	if (bench_clock(getenv("TK_BENCH_CLOCK")))
		return 2;
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
