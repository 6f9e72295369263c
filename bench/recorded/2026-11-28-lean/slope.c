/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * slope.c - what an instruction costs between the system clock's read
 * and a 16-byte CAS: tk-bench's floor (clock_gettime(CLOCK_REALTIME), a
 * lock cmpxchg16b of a word) with 0, 100, 200 or 400 independent moves
 * between the two.  cc -O2 slope.c && ./a.out
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static unsigned __int128 slot __attribute__((aligned(16)));

static void cas16(unsigned __int128 *p, unsigned __int128 old,
		  unsigned __int128 nw)
{
	uint64_t lo = (uint64_t)old, hi = (uint64_t)(old >> 64);

	__asm__ __volatile__("lock cmpxchg16b %0"
			     : "+m"(*p), "+a"(lo), "+d"(hi)
			     : "b"((uint64_t)nw), "c"((uint64_t)(nw >> 64))
			     : "memory", "cc");
}

#define PAD(n)                                                                 \
	__asm__ volatile(".rept " #n "\n mov $1, %%r8\n mov $1, %%r9\n"        \
			 " mov $1, %%r10\n mov $1, %%r11\n.endr" ::           \
				 : "r8", "r9", "r10", "r11")

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(void)
{
	static const int pad[4] = { 0, 100, 200, 400 };
	uint64_t i, n = 5000000, t0, now;
	int r, v;

	for (r = 0; r < 5; r++) {
		for (v = 0; v < 4; v++) {
			t0 = now_ns();
			for (i = 0; i < n; i++) {
				now = now_ns();
				if (v == 1)
					PAD(25);
				else if (v == 2)
					PAD(50);
				else if (v == 3)
					PAD(100);
				cas16(&slot, slot, slot + now);
			}
			printf("pad %3d: %.2f ns  ", pad[v],
			       (double)(now_ns() - t0) / (double)n);
		}
		printf("\n");
	}
	return 0;
}
