/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * load16.c - whether this CPU reads 16 aligned bytes atomically with one
 * SSE load (load16.h), decided once when the library is loaded.
 */
#include "load16.h"

int tk__load16_sse;

static int cpu_has_atomic_sse_load(void)
{
#ifdef TK__LOAD16_SSE
	__builtin_cpu_init();
	/* The vendors that document the guarantee, for CPUs with AVX. */
	return __builtin_cpu_supports("avx") &&
	       (__builtin_cpu_is("intel") || __builtin_cpu_is("amd"));
#else
	return 0;
#endif
}

__attribute__((constructor)) static void load16_init(void)
{
	tk__load16_sse = cpu_has_atomic_sse_load();
}

void tk__load16_use_sse(int on)
{
	tk__load16_sse = on && cpu_has_atomic_sse_load();
}
