/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tk-bench.h - shared by the files of tk-bench (driver, keys, engines,
 * scenarios, report): what a check costs, next to the floor and the designs
 * users would pick instead, all measured in the same run.
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
#ifndef TK_BENCH_DRIVER_H
#define TK_BENCH_DRIVER_H

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

/*
 * CPU time of the whole machine (/proc/stat) against our own (getrusage
 * of this process and its reaped children): the difference is what other
 * processes used while we ran, the noise that matters most on a small
 * machine.  In clock ticks.
 */
struct cpu_sample {
	double busy, total, steal, ours;
};

/* What the environment and the command line ask for. */
struct bench_config {
	unsigned int rounds, round_ms, warmup_ms, admit_ms, batch, settle_ms;
	uint32_t mid_keys, big_keys;
	uint32_t zone_min; /* slots of the smallest zone a case opens */
	double zipf_s;
	const char *filter;
	const char *lib_cflags;
	const char *lib_id;	/* which binary: set by run.sh */
	struct tk_clock *clock; /* the library's limiters' (TK_BENCH_CLOCK) */
	const char *json, *dat;
	uint64_t cg_checks; /* callgrind mode when non-zero */
	int list;	    /* --list: print the case names, run nothing */
};

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

enum { E_HARNESS, E_FLOOR, E_TK_SHM, E_TK_MEM, E_MUTEX, E_PRIVATE };

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

struct admission {
	const char *engine;
	unsigned int workers;
	char mode;
	uint64_t admitted, expected;
	double seconds;
	int status;
};

struct memrow {
	char id[32]; /* stable, for the targets and the JSON */
	char store[32];
	char what[96];
	double bytes_per_key;
	char note[200];
};

struct target {
	const char *id, *text;
	double value, limit;
	int met; /* 1 met, 0 missed, -1 not measured */
	char detail[240];
};

/* driver.c */
int selected(const char *name);
int spawn(struct job *j);
double median(double *v, unsigned int n);
int policy_order(const char *p);
void case_name(char *buf, size_t len, const struct group *g,
	       const struct keyset *ks, unsigned int workers,
	       unsigned int batch);
struct run_shared *shared_new(unsigned int workers);
void shared_free(struct run_shared *sh);
void run_case(struct group *g, struct keyset *ks, unsigned int workers,
	      unsigned int batch);
void skip_case(struct group *g, struct keyset *ks, unsigned int workers,
	       unsigned int batch, int rc);

/* keys.c */
uint64_t pow2_at_least(uint64_t n);
void *xmalloc(size_t n);
void keyset_ready(struct keyset *ks);
void keysets_init(void);

/* engines.c */
uint64_t populate(bench_run_fn run, void *arg, struct sizeclass *sc,
		  int *first_error);
uint64_t zone_capacity_for(uint32_t nkeys);
uint64_t table_capacity_for(uint32_t nkeys);
const char *policy_spec(const char *policy, int path);
struct bench_gcra policy_gcra(int path);

/* scenarios.c */
void run_matrix(void);
void admission_run(int e);
void memory_run(void);

/* report.c */
void print_table(void);
void judge_targets(void);
void print_sections(void);
void write_json(const char *path);
void write_dat(const char *dir);

extern char load_start[64], load_end[64];
extern double others_share, steal_share;
extern struct bench_config cfg;
extern struct sizeclass sizes[3];
extern struct keyset keysets[5];
extern const struct engine engines[];
extern struct result results[MAX_RESULTS];
extern int nresults;
extern struct admission admissions[8];
extern int nadmissions;
extern struct memrow memrows[16];
extern int nmemrows;

#endif
