/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * scenarios.c - what is measured: the matrix of key sets, policies,
 * paths and workers, the admission experiment and bytes per key.
 */
#define _GNU_SOURCE
#include "tk-bench.h"

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

void run_matrix(void)
{
	static const char *const windows[] = { "fixed-window",
					       "sliding-window",
					       "sliding-window-100" };
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
		/* The ring of 100 buckets, the most a sliding window has, on
		 * the hot key only: what a check costs as its state grows. */
		for (i = 0; i < (ishot ? 3 : 2); i++) {
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

struct admission admissions[8];

int nadmissions;

void admission_run(int e)
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

struct memrow memrows[16];

int nmemrows;

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

void memory_run(void)
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
			snprintf(
				m->note, sizeof(m->note),
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
