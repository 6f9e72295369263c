/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * segment.c - creating, attaching to and destroying zones.
 *
 * A zone is a file in /dev/shm (TK_SHM_DIR overrides the directory).  It is
 * created whole under a temporary name and published with link(2), which
 * fails atomically if the final name exists: two creators racing yield one
 * zone, and a creator killed half-way leaves only a temporary file that no
 * one attaches to.  Attaching validates every header field before anything
 * else reads the zone.
 *
 * Whoever can write a zone can reset its keys or corrupt it, so a process
 * uses only a zone it can trust, as OpenSSH's StrictModes judges files: a
 * regular file reached without following a symbolic link (O_NOFOLLOW),
 * owned by us, by root or by the owner the caller names, and writable by
 * no one else: not by every user, and by its group only if that group is
 * ours or named.  A zone whose owner the caller names is trusted as its
 * owner made it.  The opened descriptor is judged (fstat), never the path,
 * so a name swapped between the check and the use changes nothing.
 *
 * Where a zone's file is, and which directories may hold one, is
 * where.c's.
 */
#define _GNU_SOURCE
#include "zone.h"
#include "guard.h"
#include "recent.h"
#include "where.h"

#include <ck_pr.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_CAPACITY 65536
#define DEFAULT_GRACE (UINT64_C(60) * 1000000000)
#define SLOTS_PER_SHARD 4096
/* Bytes of arena per slot by default: a two-word state per key at load
 * 0.5 (a 64-byte block). */
#define DEFAULT_ARENA 32
/* A transparent huge page of x86-64 and (4 KiB pages) arm64, bytes. */
#define HUGE_PAGE (UINT64_C(2) << 20)

struct tk__zone {
	struct tkz_geo geo; /* first: see tk__zone_geo() */
	int broken; /* 1 once a fault showed the file truncated (ck_pr) */
	struct tkz_header *h;
	struct tkz_slot *slots;
	struct tk__zone *next, *old; /* see struct tk__zone_head */
	int may_grow;
	uint64_t move_cursor, move_done;
	uint8_t *moved;
	uint64_t index;
	struct tk__table *table;
	uint64_t carried;
	int may_grow_slots;
	uint64_t budget[2];
	uint64_t max_keys;
	uint64_t *pagetable;
	struct tkz_cell *cells;
	struct tkz_recent *recent;
	char name[TKZ_PATH_MAX_LEN + 1];
	uint32_t uid, gid, mode; /* of the file, when attached */
	dev_t dev;		 /* and which file it was */
	ino_t ino;
	void *base;
	uint64_t size;
};

_Static_assert(offsetof(struct tk__zone, geo) ==
			       offsetof(struct tk__zone_head, geo) &&
		       offsetof(struct tk__zone, broken) ==
			       offsetof(struct tk__zone_head, broken) &&
		       offsetof(struct tk__zone, h) ==
			       offsetof(struct tk__zone_head, h) &&
		       offsetof(struct tk__zone, slots) ==
			       offsetof(struct tk__zone_head, slots) &&
		       offsetof(struct tk__zone, next) ==
			       offsetof(struct tk__zone_head, next) &&
		       offsetof(struct tk__zone, old) ==
			       offsetof(struct tk__zone_head, old) &&
		       offsetof(struct tk__zone, may_grow) ==
			       offsetof(struct tk__zone_head, may_grow) &&
		       offsetof(struct tk__zone, index) ==
			       offsetof(struct tk__zone_head, index) &&
		       offsetof(struct tk__zone, table) ==
			       offsetof(struct tk__zone_head, table) &&
		       offsetof(struct tk__zone, carried) ==
			       offsetof(struct tk__zone_head, carried) &&
		       offsetof(struct tk__zone, may_grow_slots) ==
			       offsetof(struct tk__zone_head, may_grow_slots) &&
		       offsetof(struct tk__zone, budget) ==
			       offsetof(struct tk__zone_head, budget) &&
		       offsetof(struct tk__zone, max_keys) ==
			       offsetof(struct tk__zone_head, max_keys) &&
		       offsetof(struct tk__zone, pagetable) ==
			       offsetof(struct tk__zone_head, pagetable) &&
		       offsetof(struct tk__zone, cells) ==
			       offsetof(struct tk__zone_head, cells) &&
		       offsetof(struct tk__zone, recent) ==
			       offsetof(struct tk__zone_head, recent),
	       "struct tk__zone_head");

/* FNV-1a: the header check word catches corruption, not attackers. */
uint64_t tk__zone_header_check(const struct tkz_header *h)
{
	const unsigned char *p = (const unsigned char *)h;
	uint64_t x = UINT64_C(0xcbf29ce484222325);
	size_t i;

	for (i = 0; i < offsetof(struct tkz_header, check); i++) {
		x ^= p[i];
		x *= UINT64_C(0x100000001b3);
	}
	return x;
}

static int power_of_two(uint64_t x)
{
	return x && !(x & (x - 1));
}

/* The geometry rules; also applied to the private copy. */
int tk__zone_check_geo(const struct tkz_geo *g, uint64_t size)
{
	if (!power_of_two(g->capacity) || g->capacity < TKZ_CAPACITY_MIN ||
	    g->capacity > TKZ_CAPACITY_MAX || !power_of_two(g->shards) ||
	    g->shards > TKZ_SHARDS_MAX ||
	    g->capacity / g->shards < 4 * TKZ_WINDOW || g->grace == 0 ||
	    g->pages < TKZ_PAGES_MIN || g->pages > TKZ_PAGES_MAX ||
	    g->window != TKZ_WINDOW || (g->flags & ~TKZ_FLAGS_KNOWN))
		return -EPROTO;
	/* Truncated or resized since it was made. */
	if (g->segment_size != tkz_segment_size(g->capacity, g->pages) ||
	    g->segment_size != size)
		return -EPROTO;
	return 0;
}

int tk__zone_validate(const struct tkz_header *h, uint64_t size)
{
	struct tkz_geo g;

	if (size < TKZ_HEADER_SIZE)
		return -EPROTO;
	if (h->magic != TKZ_MAGIC)
		return -EINVAL;
	if (h->version != TKZ_VERSION || h->header_size != TKZ_HEADER_SIZE ||
	    h->window != TKZ_WINDOW)
		return -EPROTO;
	if (h->check != tk__zone_header_check(h))
		return -EPROTO;
	g = (struct tkz_geo){ .capacity = h->capacity,
			      .shards = h->shards,
			      .pages = h->pages,
			      .grace = h->grace,
			      .flags = h->flags,
			      .segment_size = h->segment_size,
			      .window = h->window };
	return tk__zone_check_geo(&g, size);
}

static void fill_header(struct tkz_header *h, const struct tk__zone_config *c,
			uint64_t capacity, uint64_t pages)
{
	uint64_t shards = capacity / SLOTS_PER_SHARD;

	if (shards < 1)
		shards = 1;
	if (shards > TKZ_SHARDS_MAX)
		shards = TKZ_SHARDS_MAX;
	h->magic = TKZ_MAGIC;
	h->version = TKZ_VERSION;
	h->header_size = TKZ_HEADER_SIZE;
	h->segment_size = tkz_segment_size(capacity, pages);
	h->created = c ? c->now : 0;
	h->flags = c ? c->flags : 0;
	h->capacity = capacity;
	h->shards = (uint32_t)shards;
	h->window = TKZ_WINDOW;
	h->grace = c && c->grace ? c->grace : DEFAULT_GRACE;
	h->pages = pages;
	h->check = tk__zone_header_check(h);
}

/* Pages of arena for @c: 0 if the size asked for is out of range. */
static uint64_t arena_pages(const struct tk__zone_config *c, uint64_t capacity)
{
	const uint64_t page = TKZ_PAGE_CELLS * sizeof(struct tkz_cell);
	uint64_t bytes = c && c->arena ? c->arena : capacity * DEFAULT_ARENA;
	uint64_t pages = bytes / page + (bytes % page != 0);

	if (c && c->arena && pages > TKZ_PAGES_MAX)
		return 0;
	if (pages < TKZ_PAGES_MIN)
		pages = TKZ_PAGES_MIN;
	return pages < TKZ_PAGES_MAX ? pages : TKZ_PAGES_MAX;
}

/*
 * Temporary files of creators that died half-way: nobody attaches to
 * them, and the next creator of the same zone removes those older than a
 * minute (younger ones may belong to a creator still at work).
 */
static void remove_stale(const struct tk__zone_where *w)
{
	char prefix[TKZ_NAME_MAX_LEN + 32];
	struct dirent *d;
	struct stat st;
	size_t n;
	DIR *dir;
	int fd;
	time_t now = time(NULL);

	snprintf(prefix, sizeof(prefix), ".%s.", w->file);
	n = strlen(prefix);
	fd = openat(w->dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dir = fd < 0 ? NULL : fdopendir(fd);
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((d = readdir(dir)) != NULL) {
		if (strncmp(d->d_name, prefix, n) != 0)
			continue;
		if (fstatat(w->dir, d->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode) && st.st_mtime + 60 < now)
			unlinkat(w->dir, d->d_name, 0);
	}
	closedir(dir);
}

/*
 * Ask for transparent huge pages on the mapping of a zone of 2 MiB or
 * more: its slots and blocks are touched at random, one TLB entry per
 * 4 KiB page otherwise.  Only advice: the kernel heeds it on a tmpfs
 * mounted huge=advise (huge=within_size and huge=always need none), not
 * on one mounted huge=never (the default, /dev/shm's too), nor with
 * shmem_enabled=deny; and it maps a huge page only where a whole aligned
 * 2 MiB of the file lies in the mapping (mmap() aligns such a mapping
 * then).  The whole mapping is advised, so it stays one area.  A kernel
 * without THP refuses (EINVAL): nothing changes then.  create() writes
 * the header through such a mapping too: a small page there would keep
 * the file's first 2 MiB, all a zone of 2 to 4 MiB has, off huge pages.
 */
static void advise_huge(void *base, uint64_t size)
{
	if (size >= HUGE_PAGE)
		(void)madvise(base, size, MADV_HUGEPAGE);
}

/* Make the zone under a temporary name, then publish it.  -EEXIST if
 * another creator published first. */
static int create(const struct tk__zone_where *w,
		  const struct tk__zone_config *c)
{
	char tmp[PATH_MAX];
	uint64_t capacity = c && c->capacity ? c->capacity : DEFAULT_CAPACITY;
	unsigned int mode = c && c->mode ? c->mode : 0600;
	uint64_t pages = arena_pages(c, capacity);
	uint64_t size = tkz_segment_size(capacity, pages), map;
	struct tkz_header *h;
	uint32_t nonce;
	int fd, rc = 0, n, broken = 0;

	/* A world-writable zone is one any user may reset or corrupt: it is
	 * refused at attach, so it is not made. */
	if (!power_of_two(capacity) || capacity < TKZ_CAPACITY_MIN ||
	    capacity > TKZ_CAPACITY_MAX || (mode & ~0777u) || (mode & 0002) ||
	    !pages)
		return -EINVAL;
	if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce))
		return -EIO;
	remove_stale(w);
	n = snprintf(tmp, sizeof(tmp), ".%s.%ld.%08x", w->file, (long)getpid(),
		     nonce);
	if (n <= 0 || (size_t)n >= sizeof(tmp))
		return -ENAMETOOLONG;
	/* Private until complete; owner and group before the mode, on the
	 * descriptor; fchmod() so the umask does not narrow the mode. */
	fd = openat(w->dir, tmp,
		    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return tk__zone_errno();
	if ((c && (c->uid != (uid_t)-1 || c->gid != (gid_t)-1) &&
	     fchown(fd, c->uid, c->gid) != 0) ||
	    fchmod(fd, mode) != 0 || ftruncate(fd, (off_t)size) != 0) {
		rc = tk__zone_errno();
		goto out;
	}
	map = size >= HUGE_PAGE ? size : TKZ_HEADER_SIZE;
	h = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED) {
		rc = tk__zone_errno();
		goto out;
	}
	advise_huge(h, map);
	/* Our user may truncate even the temporary file: guarded too. */
	rc = tk__guard_add(h, map, &broken);
	/* The slots are zero: a zero slot is EMPTY.  Only the header. */
	if (rc == 0 &&
	    getrandom(h->seed, sizeof(h->seed), 0) != sizeof(h->seed))
		rc = -EIO;
	else if (rc == 0)
		fill_header(h, c, capacity, pages);
	tk__guard_remove(h);
	munmap(h, map);
	if (rc == 0 && ck_pr_load_int(&broken))
		rc = -EIO;
	if (rc)
		goto out;
	if (linkat(w->dir, tmp, w->dir, w->file, 0) != 0)
		rc = errno == EEXIST ? -EEXIST : tk__zone_errno();
out:
	unlinkat(w->dir, tmp, 0);
	close(fd);
	return rc;
}

/*
 * The trust rules (see the top of this file), on the file as opened.
 * 0, or -EACCES with the reason in @why.
 */
static int judge(const struct stat *st, const struct tk__zone_config *cfg,
		 char *why, size_t len)
{
	uid_t owner = cfg ? cfg->uid : (uid_t)-1;
	unsigned int mode = st->st_mode & 07777;

	if (S_ISLNK(st->st_mode)) {
		tk__zone_say(why, len,
			     "it is a symbolic link, which zones never follow");
		return -EACCES;
	}
	if (!S_ISREG(st->st_mode)) {
		tk__zone_say(why, len, "it is not a regular file");
		return -EACCES;
	}
	if (owner != (uid_t)-1 && st->st_uid == owner)
		return 0;
	if (st->st_uid != geteuid() && st->st_uid != 0) {
		tk__zone_say(
			why, len,
			"it is owned by uid %lu, neither this process's (%lu) "
			"nor root; name that owner to trust it (zone_uid with "
			"TK_OPT_ZONE_UID; throttlectl --owner %lu)",
			(unsigned long)st->st_uid, (unsigned long)geteuid(),
			(unsigned long)st->st_uid);
		return -EACCES;
	}
	if (mode & 0002) {
		tk__zone_say(why, len,
			     "it is writable by every user (mode %04o); name "
			     "its owner "
			     "(uid %lu) to trust it anyway",
			     mode, (unsigned long)st->st_uid);
		return -EACCES;
	}
	if ((mode & 0020) && !tk__zone_our_group(st->st_gid, cfg)) {
		tk__zone_say(why, len,
			     "it is writable by group %lu (mode %04o), not one "
			     "of this "
			     "process's groups; name that group to trust it",
			     (unsigned long)st->st_gid, mode);
		return -EACCES;
	}
	return 0;
}

/* Open zone file @path as attaching does: never through a link, never a
 * device's side effects. */
static int open_zone(const struct tk__zone_where *w)
{
	return openat(w->dir, w->file,
		      O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
}

/* Validate the mapped header and copy the geometry (under a guard: the
 * file may shrink under us even now). */
static int read_header(void *ctx)
{
	struct tk__zone *z = ctx;
	int rc = tk__zone_validate(z->h, z->size);

	if (rc)
		return rc;
	z->geo = (struct tkz_geo){
		.capacity = z->h->capacity,
		.shards = z->h->shards,
		.pages = z->h->pages,
		.grace = z->h->grace,
		.flags = z->h->flags,
		.seed = { z->h->seed[0], z->h->seed[1] },
		.segment_size = z->h->segment_size,
		.created = z->h->created,
		.window = z->h->window,
	};
	/* Validated, then copied: a check of a header another process is
	 * rewriting could pass with values that differ from those copied. */
	rc = tk__zone_check_geo(&z->geo, z->size);
	if (rc == 0) {
		z->geo.per_shard = z->geo.capacity / z->geo.shards;
		z->geo.shard_mask = z->geo.shards - 1;
		z->geo.window_mask = z->geo.per_shard / TKZ_WINDOW - 1;
	}
	return rc;
}

/* Where the slots, page table, cells and rings of mapped zone @z are. */
static void lay_out(struct tk__zone *z)
{
	z->slots = (struct tkz_slot *)((char *)z->base + TKZ_HEADER_SIZE);
	z->pagetable = (uint64_t *)(z->slots + z->geo.capacity);
	z->cells = (struct tkz_cell *)((char *)z->pagetable +
				       tkz_pagetable_size(z->geo.pages));
	z->recent =
		(struct tkz_recent *)(z->cells + z->geo.pages * TKZ_PAGE_CELLS);
}

static int map_zone(struct tk__zone *z, int fd,
		    const struct tk__zone_config *cfg)
{
	struct stat st;
	int rc;

	if (fstat(fd, &st) != 0)
		return tk__zone_errno();
	rc = judge(&st, cfg, NULL, 0);
	if (rc)
		return rc;
	z->uid = (uint32_t)st.st_uid;
	z->gid = (uint32_t)st.st_gid;
	z->mode = (uint32_t)(st.st_mode & 07777);
	z->dev = st.st_dev;
	z->ino = st.st_ino;
	if ((uint64_t)st.st_size < TKZ_HEADER_SIZE)
		return -EPROTO;
	z->size = (uint64_t)st.st_size;
	z->base =
		mmap(NULL, z->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (z->base == MAP_FAILED) {
		z->base = NULL;
		return tk__zone_errno();
	}
	z->h = z->base;
	rc = tk__guard_add(z->base, z->size, &z->broken);
	if (rc == 0) {
		rc = tk__zone_run(z, read_header, z);
		if (rc)
			tk__guard_remove(z->base);
	}
	if (rc) {
		munmap(z->base, z->size);
		z->base = NULL;
		return rc;
	}
	advise_huge(z->base, z->size);
	lay_out(z);
	return 0;
}

int tk__zone_attach(struct tk__zone **out, const char *name,
		    const struct tk__zone_config *cfg, int flags)
{
	struct tk__zone_where w;
	struct tk__zone *z;
	int fd, rc, tries;

	rc = tk__zone_where(&w, name, cfg, NULL, 0);
	if (rc)
		return rc;
	z = calloc(1, sizeof(*z));
	if (!z) {
		close(w.dir);
		return -ENOMEM;
	}
	strcpy(z->name, name);
	for (tries = 0; tries < 3; tries++) {
		fd = open_zone(&w);
		if (fd < 0 && errno == ENOENT && (flags & TK__ZONE_CREATE)) {
			rc = create(&w, cfg);
			if (rc == -EEXIST && (flags & TK__ZONE_EXCL))
				break;
			/* -ENOENT: our temporary file was taken for a dead
			 * creator's (we were stopped for a minute): again. */
			if (rc == -ENOENT)
				continue;
			if (rc && rc != -EEXIST)
				break;
			/* Ours, or the winner's: attach it. */
			flags &= ~TK__ZONE_EXCL;
			continue;
		}
		if (fd < 0) {
			rc = tk__zone_errno();
			break;
		}
		if (flags & TK__ZONE_EXCL) {
			close(fd);
			rc = -EEXIST;
			break;
		}
		rc = map_zone(z, fd, cfg);
		close(fd);
		break;
	}
	close(w.dir);
	if (rc || !z->base) {
		free(z);
		return rc ? rc : -EIO;
	}
	*out = z;
	return 0;
}

int tk__zone_private(struct tk__zone **out, const struct tk__zone_config *cfg,
		     const uint64_t seed[2])
{
	uint64_t capacity = cfg->capacity ? cfg->capacity : DEFAULT_CAPACITY;
	uint64_t pages = arena_pages(cfg, capacity);
	struct tk__zone *z;
	int rc;

	if (!power_of_two(capacity) || capacity < TKZ_CAPACITY_MIN ||
	    capacity > TKZ_CAPACITY_MAX || !pages)
		return -EINVAL;
	z = calloc(1, sizeof(*z));
	if (!z)
		return -ENOMEM;
	z->size = tkz_segment_size(capacity, pages);
	/* Anonymous pages are zero, and a zero slot is EMPTY; untouched
	 * ones cost nothing. */
	z->base = mmap(NULL, z->size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (z->base == MAP_FAILED) {
		free(z);
		return -ENOMEM;
	}
	z->h = z->base;
	z->h->seed[0] = seed[0];
	z->h->seed[1] = seed[1];
	fill_header(z->h, cfg, capacity, pages);
	rc = read_header(z);
	if (rc) {
		munmap(z->base, z->size);
		free(z);
		return rc;
	}
	advise_huge(z->base, z->size);
	lay_out(z);
	z->uid = (uint32_t)getuid();
	z->gid = (uint32_t)getgid();
	z->mode = 0600;
	z->max_keys = cfg->max_keys;
	*out = z;
	return 0;
}

void tk__zone_detach(struct tk__zone *z)
{
	if (!z)
		return;
	tk__guard_remove(z->base);
	munmap(z->base, z->size);
	free(z);
}

/*
 * Judge the file at @path by the trust rules without needing to write it
 * (O_PATH): what destroy removes and what tk__zone_access() explains.
 */
static int judge_path(const struct tk__zone_where *w,
		      const struct tk__zone_config *cfg, char *why, size_t len)
{
	struct stat st;
	int fd, rc;

	fd = openat(w->dir, w->file, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		rc = tk__zone_errno();
		tk__zone_say(why, len, "%s",
			     rc == -ENOENT ? "no such zone" : strerror(errno));
		return rc;
	}
	rc = fstat(fd, &st) == 0 ? judge(&st, cfg, why, len) : tk__zone_errno();
	close(fd);
	return rc;
}

int tk__zone_destroy(const char *name, const struct tk__zone_config *cfg)
{
	struct tk__zone_where w;
	int rc;

	rc = tk__zone_where(&w, name, cfg, NULL, 0);
	if (rc)
		return rc;
	rc = judge_path(&w, cfg, NULL, 0);
	/* A name replaced since the judgement can only be replaced by its
	 * directory's writers; unlink(2) never follows a link. */
	if (rc == 0 && unlinkat(w.dir, w.file, 0) != 0)
		rc = tk__zone_errno();
	close(w.dir);
	return rc;
}

/*
 * Why a trusted zone may not be written: whose it is, and the one
 * command that gives it to us (a root script's zone used by a server's
 * user is the common case).
 */
static void not_ours(const struct tk__zone_where *w, const char *name,
		     char *why, size_t len)
{
	unsigned long me = (unsigned long)geteuid();
	struct stat st;

	if (fstatat(w->dir, w->file, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		tk__zone_say(why, len,
			     "it cannot be opened for reading and writing");
		return;
	}
	/* Its counts stay: the file changes hands, not its contents. */
	tk__zone_say(why, len,
		     "it belongs to uid %lu, group %lu, mode %04o, which this "
		     "process "
		     "(uid %lu) may not write; give it to this user, as root: "
		     "chown %lu %s%s%s",
		     (unsigned long)st.st_uid, (unsigned long)st.st_gid,
		     (unsigned int)(st.st_mode & 07777), me, me,
		     name[0] == '/' ? "" : tk__zone_dir(),
		     name[0] == '/' ? "" : "/",
		     name[0] == '/' ? name : w->file);
}

int tk__zone_access(const char *name, const struct tk__zone_config *cfg,
		    char *why, size_t len)
{
	struct tk__zone_where w;
	int fd, rc;

	tk__zone_say(why, len, "%s", "the zone may be used");
	rc = tk__zone_where(&w, name, cfg, why, len);
	if (rc)
		return rc;
	rc = judge_path(&w, cfg, why, len);
	/* Trusted: but may we also read and write it? */
	if (rc == 0 && (fd = open_zone(&w)) < 0) {
		rc = tk__zone_errno();
		if (rc == -EACCES)
			not_ours(&w, name, why, len);
		else
			tk__zone_say(why, len,
				     "it cannot be opened for reading and "
				     "writing: %s",
				     strerror(errno));
	} else if (rc == 0) {
		close(fd);
	}
	close(w.dir);
	return rc;
}

int tk__zone_current(const struct tk__zone *z,
		     const struct tk__zone_config *cfg)
{
	struct tk__zone_where w;
	struct stat st;
	int ok;

	if (tk__zone_where(&w, z->name, cfg, NULL, 0))
		return 0;
	/* A link at the name is another file, never followed. */
	ok = fstatat(w.dir, w.file, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	     st.st_dev == z->dev && st.st_ino == z->ino &&
	     judge(&st, cfg, NULL, 0) == 0;
	close(w.dir);
	return ok;
}

const char *tk__zone_name(const struct tk__zone *z)
{
	return z->name;
}

int tk__zone_file_owner(struct tk__zone *z, uint32_t *uid, uint32_t *gid,
			uint32_t *mode)
{
	*uid = z->uid;
	*gid = z->gid;
	*mode = z->mode;
	return 0;
}
