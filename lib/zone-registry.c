/*
 * zone-registry.c - the zones this process has mapped, shared by every
 * store that opens the same name.
 *
 * Opening "shm:NAME" twice in one process must not map the zone twice
 * (each mapping would batch its own counters and cost its own address
 * space), so stores share one mapping per name.  The registry is a
 * process-local list read under RCU and changed under a mutex: lookups
 * never block on an open or close elsewhere, and an entry is freed only
 * after a grace period.  This is the right place for RCU; the zone's slots
 * are not: RCU grace periods do not span processes, so the slot protocol
 * (docs/shm-protocol.md) protects what lives in shared memory.
 *
 * After fork() the child inherits the list and the mappings (MAP_SHARED):
 * it keeps using them as they are.
 */
#include "internal.h"
#include "atomic.h"
#include "rcu.h"
#include "../shm/guard.h"
#include "../shm/zone.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <urcu/rculist.h>

struct entry {
	struct cds_list_head node;
	tk_atomic_u64 refs; /* 0: being removed; do not take */
	struct tk__zone *zone;
	char name[];
};

static CDS_LIST_HEAD(zones);
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* A reference to an entry that is not being removed. */
static int take(struct entry *e)
{
	uint64_t r = tk_atomic_load_u64(&e->refs, TK_MO_RELAXED);

	while (r != 0)
		if (tk_atomic_cas_u64(&e->refs, &r, r + 1, TK_MO_ACQUIRE))
			return 1;
	return 0;
}

static struct tk__zone *find(const char *name,
			     const struct tk__zone_config *cfg)
{
	struct tk__zone *z = NULL;
	struct entry *e;

	tk__rcu_read_lock();
	cds_list_for_each_entry_rcu(e, &zones, node)
	{
		/* A broken mapping, or one of a file destroyed or replaced
		 * since, serves its stores until they close; a new open
		 * maps the name afresh, as any other process would, and is
		 * judged by the trust rules with its own options. */
		if (strcmp(e->name, name) == 0 && !tk__zone_broken(e->zone) &&
		    tk__zone_current(e->zone, cfg) && take(e)) {
			z = e->zone;
			break;
		}
	}
	tk__rcu_read_unlock();
	return z;
}

int tk__zone_open_shared(struct tk__zone **out, const char *name,
			 const struct tk__zone_config *cfg, int flags)
{
	struct entry *e;
	int rc;

	tk__rcu_setup();
	/* Every store open, also of a zone already mapped: a server may
	 * have replaced the handler since (see shm/guard.c). */
	tk__guard_install();
	*out = find(name, cfg);
	if (*out)
		return 0;
	pthread_mutex_lock(&lock);
	/* Again, under the lock: another thread may have just mapped it. */
	*out = find(name, cfg);
	if (*out) {
		pthread_mutex_unlock(&lock);
		return 0;
	}
	e = calloc(1, sizeof(*e) + strlen(name) + 1);
	rc = e ? tk__zone_attach(&e->zone, name, cfg, flags) : -ENOMEM;
	if (rc) {
		free(e);
		pthread_mutex_unlock(&lock);
		return rc;
	}
	strcpy(e->name, name);
	atomic_init(&e->refs, 1);
	cds_list_add_rcu(&e->node, &zones);
	pthread_mutex_unlock(&lock);
	*out = e->zone;
	return 0;
}

void tk__zone_close_shared(struct tk__zone *z)
{
	struct entry *e, *found = NULL;

	pthread_mutex_lock(&lock);
	cds_list_for_each_entry(e, &zones, node)
	{
		if (e->zone == z) {
			found = e;
			break;
		}
	}
	if (found &&
	    atomic_fetch_sub_explicit(&found->refs, 1, TK_MO_ACQ_REL) == 1)
		cds_list_del_rcu(&found->node);
	else
		found = NULL;
	pthread_mutex_unlock(&lock);
	if (!found)
		return;
	/* Readers that found it before the unlink are done after this. */
	tk__rcu_synchronize();
	tk__zone_detach(found->zone);
	free(found);
}
