/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz-zone-contents.c - libFuzzer harness for the contents of a zone:
 * slots, block references, block headers and cells, descriptors of
 * multi-key updates and the page table.
 *
 * A small valid zone (64 slots, 4 arena pages) is made once and filled
 * with real keys of every algorithm and of composites.  Each input is a
 * list of edits applied to a copy of it; the header is never touched, so
 * the zone always attaches and what is fuzzed is what lies behind it.
 * Then every policy checks, peeks, forecasts and resets the same keys
 * (with 64 slots every key's windows cover half the table, so they meet
 * the edits), and the zone is verified, walked and swept.  Nothing may
 * crash, hang, or trip a sanitizer, whatever the contents.
 *
 * An edit is 4 bytes, op and a 24-bit position, then up to 8 bytes of
 * data for raw edits:
 *   op % 4 == 0  raw bytes into the slots       (op & 4: at a word)
 *   op % 4 == 1  raw bytes into the page table
 *   op % 4 == 2  raw bytes into the arena
 *   op % 4 == 3  a structured edit (see smart()): a reference to a real
 *                block or descriptor in a slot, a copied slot word, a
 *                header's used bit flipped, a page given another class
 * The last byte of an input moves the clock on (by that many 100 ms).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <throttlekit.h>

#include "../../shm/layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define T0 UINT64_C(1700000000000000000)
#define MS UINT64_C(1000000)
#define CAPACITY 64
#define PAGES 4
#define SLOTS_AT TKZ_HEADER_SIZE
#define SLOTS_SIZE (CAPACITY * 16)
#define PT_AT (SLOTS_AT + SLOTS_SIZE)
#define PT_SIZE (PAGES * 8)
#define CELLS_AT (PT_AT + 64)
#define CELLS (PAGES * TKZ_PAGE_CELLS)
/* Then the rings of recent keys and the rule directory (layout.h). */
#define ZONE_SIZE                                                              \
	(CELLS_AT + CELLS * 16 + TKZ_RECENT_SIZE + TKZ_RULES * TKZ_RULE_SIZE)

/* Every algorithm, in a slot and in a block, and composites. */
static const char *const policies[] = {
	"gcra:5/1s",
	"token-bucket:capacity=5,refill=1/s",
	"leaky:5/1s,max-queue=3s",
	"fixed-window:5/1s",  /* packs into the slot */
	"fixed-window:5/1ms", /* too short to pack: a block */
	"quota:5/day",
	"quota:70000000/1h", /* too large a limit to pack: a block */
	"sliding-window:5/1s,buckets=4",
	"sliding-log:5/1s",
	"sliding-log:40/1s",
	"all(sliding-window:5/1s,buckets=4,sliding-log:4/1s)",
	"any(fixed-window:5/1ms,gcra:3/1s)",
	"all(gcra:9/1s,fixed-window:5/1s,sliding-log:3/1s)",
};
#define NPOLICIES (sizeof(policies) / sizeof(policies[0]))

static const char *const keys[] = { "a", "b", "c", "d", "e" };
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static char dir[64], path[128];
static unsigned char base[ZONE_SIZE], zone[ZONE_SIZE];
static struct tk_clock *clk;

/* Leave no file behind (libFuzzer exits through exit()). */
static void cleanup(void)
{
	unlink(path);
	rmdir(dir);
}

static int ignore_key(void *ctx, uint64_t slot, uint64_t fp, uint64_t state)
{
	(void)slot;
	(void)fp;
	(void)state;
	++*(int *)ctx;
	return 0;
}

/* Every operation of @policy on every key; @write: checks too. */
static void drive(const char *policy, int write)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_limiter *l;
	struct tk_policy *p;
	struct tk_decision d;
	struct tk_key two[3];
	size_t i, n;

	if (tk_policy_parse(&p, policy, NULL) != 0)
		abort();
	n = tk_policy_dimensions(p);
	tk_policy_free(p);
	o.clock = clk;
	o.flags = TK_OPT_ZONE_NO_CREATE | TK_OPT_NO_RECLAIMER;
	if (tk_limiter_open(&l, policy, "shm:f", &o) != 0)
		return;
	for (i = 0; i < NKEYS; i++) {
		tk_limiter_peek(l, keys[i], 1, &d);
		tk_limiter_forecast(l, keys[i], 1, 2, &d);
		if (!write)
			continue;
		tk_limiter_check(l, keys[i], 1, 1, &d);
		if (n > 1 && n <= 3) {
			two[0].key = keys[i];
			two[1].key = keys[(i + 1) % NKEYS];
			two[2].key = keys[(i + 2) % NKEYS];
			two[0].key_len = two[1].key_len = two[2].key_len = 1;
			tk_limiter_check_keys(l, two, n, 1, &d);
		}
	}
	if (write)
		tk_limiter_reset(l, keys[NKEYS - 1], 1);
	tk_limiter_close(l);
}

static void save(const unsigned char *bytes)
{
	int fd = open(path, O_RDWR | O_CREAT, 0600);

	if (fd < 0 || pwrite(fd, bytes, ZONE_SIZE, 0) != ZONE_SIZE)
		abort();
	close(fd);
}

/* The zone every input starts from: real states of every policy. */
static void setup(void)
{
	struct tk_options o = TK_OPTIONS_INIT;
	size_t i;
	int fd;

	strcpy(dir, "/tmp/tk-fuzz-contents-XXXXXX");
	if (!mkdtemp(dir))
		abort();
	setenv("TK_SHM_DIR", dir, 1);
	snprintf(path, sizeof(path), "%s/throttlekit.f", dir);
	if (tk_clock_manual_new(&clk, T0) != 0)
		abort();
	atexit(cleanup);
	o.zone_capacity = CAPACITY;
	o.zone_arena = PAGES * TKZ_PAGE_CELLS * 16;
	o.clock = clk;
	if (tk_zone_create("f", &o) != 0)
		abort();
	for (i = 0; i < NPOLICIES; i++)
		drive(policies[i], 1);
	tk_clock_set(clk, T0 + 300 * MS);
	for (i = 0; i < NPOLICIES; i++)
		drive(policies[i], 1);
	fd = open(path, O_RDONLY);
	if (fd < 0 || read(fd, base, ZONE_SIZE) != ZONE_SIZE ||
	    lseek(fd, 0, SEEK_END) != ZONE_SIZE)
		abort();
	close(fd);
}

static uint64_t get64(size_t at)
{
	uint64_t v;

	memcpy(&v, zone + at, 8);
	return v;
}

static void put64(size_t at, uint64_t v)
{
	memcpy(zone + at, &v, 8);
}

/* A structured edit: what random bytes would seldom hit. */
static void smart(uint32_t pos)
{
	size_t slot = SLOTS_AT + (pos & 63) * 16;
	uint64_t cell = ((pos >> 6) & 0x3ff) * TKZ_CLASS_MIN % CELLS;
	size_t at = CELLS_AT + cell * 16;
	uint64_t h0 = get64(at), v;

	switch ((pos >> 16) % 7) {
	case 0: /* a reference to the block there, of its gen */
		put64(slot + 8, tkz_ref(cell, h0 & TKZ_BLK_GEN_MASK));
		break;
	case 1: /* the same, as a descriptor */
		put64(slot + 8,
		      tkz_ref(cell, h0 & TKZ_BLK_GEN_MASK) | TKZ_DESC);
		break;
	case 2: /* a header's used bit flipped */
		put64(at, h0 ^ TKZ_BLK_USED);
		break;
	case 3: /* two slots with one reference */
		put64(slot + 8, get64(SLOTS_AT + ((pos >> 10) & 63) * 16 + 8));
		break;
	case 4: /* two slots with one key */
		put64(slot, get64(SLOTS_AT + ((pos >> 10) & 63) * 16));
		break;
	case 5: /* a page of another class, or none, in any state */
		v = (pos >> 8) & 15;
		v = v < 9 ? (uint64_t)TKZ_CLASS_MIN << v : v * 0x1111;
		v |= (uint64_t)((pos >> 14) & 3) << 11 |
		     (uint64_t)(pos >> 20) << TKZ_PAGE_EPOCH_SHIFT;
		put64(PT_AT + ((pos >> 12) % PAGES) * 8, v);
		break;
	case 6: /* a header bound to another slot */
		put64(at + 8, (uint64_t)((pos >> 8) & 127) << 32 |
				      (get64(at + 8) & 0xffffffffu));
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t at[3] = { SLOTS_AT, PT_AT, CELLS_AT };
	static const size_t len[3] = { SLOTS_SIZE, PT_SIZE, CELLS * 16 };
	struct tk_zone_info info;
	size_t i = 0, n, off;
	uint32_t pos;
	uint8_t op;
	uint64_t later = 0;
	int walked = 0;

	if (!clk)
		setup();
	memcpy(zone, base, ZONE_SIZE);
	if (size > 0)
		later = data[--size] * 100 * MS;
	while (i + 4 <= size) {
		op = data[i];
		pos = data[i + 1] | data[i + 2] << 8 |
		      (uint32_t)data[i + 3] << 16;
		i += 4;
		if (op % 4 == 3) {
			smart(pos);
			continue;
		}
		off = pos % len[op % 4];
		if (op & 4)
			off &= ~(size_t)7;
		n = size - i < 8 ? size - i : 8;
		if (n > len[op % 4] - off)
			n = len[op % 4] - off;
		memcpy(zone + at[op % 4] + off, data + i, n);
		i += n;
	}
	save(zone);
	tk_clock_set(clk, T0 + 300 * MS + later);
	for (i = 0; i < NPOLICIES; i++)
		drive(policies[i], 0);
	for (i = 0; i < NPOLICIES; i++)
		drive(policies[i], 1);
	tk_zone_verify("f", &info, sizeof(info));
	tk_zone_walk("f", ignore_key, &walked);
	tk_zone_sweep("f", T0 + 300 * MS + later);
	/* Everything expired: whatever is left goes, or is left alone. */
	tk_zone_sweep("f", T0 + UINT64_C(86400000000000) * 40);
	tk_zone_verify("f", &info, sizeof(info));
	return 0;
}
