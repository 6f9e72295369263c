/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * zone.c - the administrative face of zones: create, inspect, verify,
 * walk, read the recent keys of, sweep and destroy them by name (what
 * throttlectl's zone commands use).  Each opens the zone under the same trust
 * rules as a store (shm/segment.c) and touches it only under a fault guard
 * (tk__zone_run()), so a zone truncated meanwhile gives -EPROTO.
 */
#include "algo/algo.h"
#include "store/store-ops.h"
#include "error.h"
#include "options.h"
#include "rule.h"
#include "store/store-key.h"
#include "store/tally.h"
#include "../shm/recent.h"
#include "../shm/zone.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The zone configuration @opts describe (trusted owner and group). */
static int config_of(const struct tk_options *opts, struct tk__zone_config *c)
{
	struct tk_options o;
	int rc;

	rc = tk__options_read(&o, opts);
	return rc ? rc : tk__zone_config_from(&o, c);
}

/* Attach @name as an administrator: never creates. */
int tk__zone_attach_admin(struct tk__zone **z, const char *name,
			  const struct tk_options *opts)
{
	struct tk__zone_config cfg;
	int rc;

	rc = config_of(opts, &cfg);
	return rc ? rc : tk__zone_attach(z, name, &cfg, 0);
}

/*
 * Attach @name (into *@z, which @ctx may hold), run @fn(@ctx) under its
 * fault guard, detach: @fn's result, -EPROTO for a fault, or the attach's
 * error.
 */
static int on_zone(const char *name, const struct tk_options *opts,
		   struct tk__zone **z, int (*fn)(void *ctx), void *ctx)
{
	int rc = tk__zone_attach_admin(z, name, opts);

	if (rc)
		return tk__rc(rc);
	rc = tk__zone_run(*z, fn, ctx);
	tk__zone_detach(*z);
	return rc;
}

TK_API int tk_zone_create(const char *name, const struct tk_options *opts)
{
	struct tk__zone_config cfg;
	struct tk__zone *z;
	int rc;

	rc = config_of(opts, &cfg);
	if (rc)
		return tk__rc(rc);
	/* Only a zone that is not there yet: exactly one racer wins. */
	rc = tk__zone_attach(&z, name, &cfg, TK__ZONE_CREATE | TK__ZONE_EXCL);
	if (rc)
		return tk__rc(rc);
	tk__zone_detach(z);
	return 0;
}

/* verify's judge of states: the algorithm named in the slot, without
 * the policy (no process knows it). */
static int state_valid(unsigned int alg, uint32_t words, const uint64_t *state)
{
	const struct tk__algorithm *a =
		tk__algorithm_of(alg ? alg : TK__ALG_USER); /* algo.h */

	return a && a->valid(NULL, words, state);
}

struct info_call {
	struct tk__zone *z;
	struct tk_zone_info *info;
};

static int fill_info(void *ctx)
{
	struct info_call *call = ctx;
	struct tk__zone *z = call->z;
	struct tk_zone_info *info = call->info;
	struct tk__zone_census c = { .valid = state_valid };
	uint64_t n[TKZ_COUNTERS];
	int rc;

	memset(info, 0, sizeof(*info));
	rc = tk__zone_census(z, &c);
	if (rc)
		return rc;
	info->capacity = tk__zone_geo(z)->capacity;
	info->shards = tk__zone_geo(z)->shards;
	info->window = tk__zone_geo(z)->window;
	info->segment_size = tk__zone_geo(z)->segment_size;
	info->created = tk__zone_geo(z)->created;
	info->grace = tk__zone_geo(z)->grace;
	info->refuse_full = !!(tk__zone_geo(z)->flags & TKZ_FLAG_REFUSE_FULL);
	info->keys = c.mem;
	info->tentative = c.ins;
	info->garbage = c.col;
	info->violations = c.violations;
	tk__zone_counters(z, n);
	info->checks = n[TKZ_CHECKS];
	info->denies = n[TKZ_DENIES];
	info->inserts = n[TKZ_INSERTS];
	info->reclaims = n[TKZ_RECLAIMS];
	info->evictions = n[TKZ_EVICTIONS];
	info->resets = n[TKZ_RESETS];
	info->arena_size = tk__zone_geo(z)->pages * TKZ_PAGE_CELLS *
			   sizeof(struct tkz_cell);
	info->blocks = c.blocks;
	info->arena_used = c.block_bytes;
	info->corrupt = c.invalid;
	info->siphash = !!(tk__zone_geo(z)->flags & TKZ_FLAG_SIPHASH);
	return tk__zone_file_owner(z, &info->uid, &info->gid, &info->mode);
}

static int info_of(const char *name, const struct tk_options *opts,
		   struct tk_zone_info *out, size_t size, int verify)
{
	struct tk_zone_info info;
	struct info_call call = { NULL, &info };
	int rc;

	if (!out)
		return -EINVAL;
	rc = tk__zone_attach_admin(&call.z, name, opts);
	if (rc)
		return tk__rc(rc);
	/* What this process has counted there, first. */
	tk__tally_flush_named(name);
	rc = tk__zone_run(call.z, fill_info, &call);
	tk__zone_detach(call.z);
	if (rc)
		return tk__rc(rc);
	memcpy(out, &info, size < sizeof(info) ? size : sizeof(info));
	return verify && (info.violations || info.corrupt) ? -EBADMSG : 0;
}

TK_API int tk_zone_info(const char *name, struct tk_zone_info *out, size_t size)
{
	return info_of(name, NULL, out, size, 0);
}

TK_API int tk_zone_info_opts(const char *name, const struct tk_options *opts,
			     struct tk_zone_info *out, size_t size)
{
	return info_of(name, opts, out, size, 0);
}

TK_API int tk_zone_verify(const char *name, struct tk_zone_info *out,
			  size_t size)
{
	return info_of(name, NULL, out, size, 1);
}

TK_API int tk_zone_verify_opts(const char *name, const struct tk_options *opts,
			       struct tk_zone_info *out, size_t size)
{
	return info_of(name, opts, out, size, 1);
}

struct walk_call {
	struct tk__zone *z;
	int (*fn)(void *ctx, uint64_t slot, uint64_t fingerprint,
		  uint64_t state);
	void *ctx;
};

static int walk(void *ctx)
{
	struct walk_call *call = ctx;

	return tk__zone_walk(call->z, call->fn, call->ctx);
}

TK_API int tk_zone_walk_opts(const char *name, const struct tk_options *opts,
			     int (*fn)(void *ctx, uint64_t slot,
				       uint64_t fingerprint, uint64_t state),
			     void *ctx)
{
	struct walk_call call = { NULL, fn, ctx };

	if (!fn)
		return -EINVAL;
	/* @fn's own non-zero result passes as it is. */
	return on_zone(name, opts, &call.z, walk, &call);
}

TK_API int tk_zone_walk(const char *name,
			int (*fn)(void *ctx, uint64_t slot,
				  uint64_t fingerprint, uint64_t state),
			void *ctx)
{
	return tk_zone_walk_opts(name, NULL, fn, ctx);
}

struct recent_call {
	struct tk__zone *z;
	int (*fn)(void *ctx, const struct tk_zone_recent *r);
	void *ctx;
	int denied;
};

/*
 * The parts of store key @k (@kept bytes of it kept, store-key.h) into
 * @r; bytes that do not read as a store key are shown whole as the key.
 */
static void parts_of(const unsigned char *k, size_t kept,
		     struct tk_zone_recent *r)
{
	size_t at, plen;

	r->prefix = "";
	r->prefix_len = 0;
	r->dimension = -1;
	r->key = (const char *)k;
	r->key_len = kept;
	if (kept < 2)
		return;
	plen = (size_t)(k[0] & 1) << 8 | k[1];
	at = 2 + plen;
	if (at + !!(k[0] & TK__STORE_KEY_DIM) > kept)
		return;
	if (k[0] & TK__STORE_KEY_DIM)
		r->dimension = k[at++];
	if (k[0] & TK__STORE_KEY_TAG) {
		if (at >= kept || at + 1 + k[at] > kept)
			return;
		at += 1 + (size_t)k[at];
	}
	r->prefix = (const char *)k + 2;
	r->prefix_len = plen;
	r->key = (const char *)k + at;
	r->key_len = kept - at;
}

static int recent_one(void *ctx, const struct tk__recent_rec *rec)
{
	struct recent_call *call = ctx;
	struct tk_zone_recent r;

	memset(&r, 0, sizeof(r));
	parts_of(rec->key, rec->kept, &r);
	r.denied = call->denied;
	r.truncated = rec->len > rec->kept;
	r.ticket = rec->ticket;
	r.count = rec->count;
	return call->fn(call->ctx, &r);
}

static int recent(void *ctx)
{
	struct recent_call *call = ctx;
	struct tkz_recent *rings = tk__zone_recent(call->z);
	int rc;

	call->denied = 1;
	rc = tk__recent_read(&rings->ring[TKZ_RECENT_DENIED], NULL, recent_one,
			     call);
	if (rc)
		return rc;
	call->denied = 0;
	return tk__recent_read(&rings->ring[TKZ_RECENT_SAMPLED], NULL,
			       recent_one, call);
}

TK_API int tk_zone_recent_opts(const char *name, const struct tk_options *opts,
			       int (*fn)(void *ctx,
					 const struct tk_zone_recent *r),
			       void *ctx)
{
	struct recent_call call = { NULL, fn, ctx, 0 };

	if (!fn)
		return -EINVAL;
	/* @fn's own non-zero result passes as it is. */
	return on_zone(name, opts, &call.z, recent, &call);
}

TK_API int tk_zone_recent(const char *name,
			  int (*fn)(void *ctx, const struct tk_zone_recent *r),
			  void *ctx)
{
	return tk_zone_recent_opts(name, NULL, fn, ctx);
}

struct sweep_call {
	struct tk__zone *z;
	uint64_t now;
};

static int sweep(void *ctx)
{
	struct sweep_call *call = ctx;

	tk__zone_sweep_all(call->z, call->now);
	return 0;
}

TK_API int tk_zone_sweep_opts(const char *name, const struct tk_options *opts,
			      uint64_t now)
{
	struct sweep_call call = { NULL, now };

	/* No clock reads such a time; swept at it, every live key would
	 * go. */
	if (now >= UINT64_C(1) << 63)
		return -EINVAL;
	return tk__rc(on_zone(name, opts, &call.z, sweep, &call));
}

TK_API int tk_zone_sweep(const char *name, uint64_t now)
{
	return tk_zone_sweep_opts(name, NULL, now);
}

TK_API int tk_zone_destroy_opts(const char *name, const struct tk_options *opts)
{
	struct tk__zone_config cfg;
	int rc;

	rc = config_of(opts, &cfg);
	return tk__rc(rc ? rc : tk__zone_destroy(name, &cfg));
}

TK_API int tk_zone_destroy(const char *name)
{
	return tk_zone_destroy_opts(name, NULL);
}

TK_API int tk_zone_access(const char *name, const struct tk_options *opts,
			  char *why, size_t len)
{
	struct tk__zone_config cfg;
	int rc;

	if (len && !why)
		return -EINVAL;
	rc = config_of(opts, &cfg);
	if (rc) {
		if (len)
			snprintf(why, len, "invalid options");
		return tk__rc(rc);
	}
	return tk__rc(tk__zone_access(name, &cfg, why, len));
}
