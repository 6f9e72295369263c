/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * keys.c - key sets and request streams: sizes, uniform and Zipf-skewed
 * index streams, built once per run.
 */
#define _GNU_SOURCE
#include "tk-bench.h"

struct sizeclass sizes[3];

struct keyset keysets[5];

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

uint64_t pow2_at_least(uint64_t n)
{
	uint64_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

void *xmalloc(size_t n)
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

void keyset_ready(struct keyset *ks)
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

void keysets_init(void)
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
