/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * where.c - where a zone's file is, and which directories may hold one.
 *
 * A zone named by an absolute path ("/run/throttlekit/apache2/api") is the
 * file at that path, in a directory that must keep others from creating
 * the name first (a squatter whose file is refused would stop the server
 * that needed the zone):
 *   - the directory is reached from "/" one component at a time
 *     (openat(O_NOFOLLOW)), so a symbolic link anywhere on the way is
 *     refused, not followed, and what is judged is what is used;
 *   - every directory on the way is owned by root, by us or by the named
 *     owner, and writable by no other user (sticky ancestors such as /tmp
 *     excepted: others cannot rename or remove our entries there);
 *   - the zone's own directory is writable by no other user at all, and
 *     by its group only if that group is ours or named;
 *   - every later step (create, link, attach, unlink) is relative to the
 *     directory's descriptor.
 * A bare NAME is /dev/shm/throttlekit.NAME (or TK_SHM_DIR's), as always:
 * /dev/shm is writable by everyone, where only the file's judgement
 * protects a zone.
 */
#define _GNU_SOURCE
#include "where.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *tk__zone_dir(void)
{
	const char *d = getenv("TK_SHM_DIR");

	return d && *d ? d : "/dev/shm";
}

static int valid_name(const char *name)
{
	size_t i, n = name ? strlen(name) : 0;

	if (n == 0 || n > TKZ_NAME_MAX_LEN || name[0] == '.')
		return 0;
	for (i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return 0;
	}
	return 1;
}

/* An absolute path whose every component is a plain name ("." and ".."
 * and empty ones are not) and whose last one is a zone's name. */
static int valid_path(const char *name)
{
	const char *p = name, *base = strrchr(name, '/');
	size_t n;

	if (!base || name[0] != '/' || strlen(name) > TKZ_PATH_MAX_LEN ||
	    !valid_name(base + 1))
		return 0;
	while (p < base) {
		p++;
		n = strcspn(p, "/");
		if (n == 0 || n > NAME_MAX || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return 0;
		p += n;
	}
	return 1;
}

int tk__zone_name_valid(const char *name)
{
	return name && (name[0] == '/' ? valid_path(name) : valid_name(name));
}

int tk__zone_errno(void)
{
	switch (errno) {
	case EACCES:
	case EPERM:
	case ELOOP:  /* O_NOFOLLOW met a symbolic link */
	case EISDIR: /* not a regular file */
	case ENXIO:
		return -EACCES;
	case ENOENT:
		return -ENOENT;
	case ENOMEM:
		return -ENOMEM;
	case ENAMETOOLONG:
		return -ENAMETOOLONG;
	default:
		return -EIO;
	}
}

int tk__zone_our_group(gid_t g, const struct tk__zone_config *cfg)
{
	return g == getegid() || group_member(g) ||
	       (cfg && cfg->gid != (gid_t)-1 && g == cfg->gid);
}

void tk__zone_say(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

/*
 * Judge directory @st, @shown[0..@n) of a zone's path, by the rules at
 * the top of this file; @last: the zone's own directory.
 */
static int judge_dir(const struct stat *st, const struct tk__zone_config *cfg,
		     int last, const char *shown, size_t n, char *why,
		     size_t len)
{
	unsigned int mode = st->st_mode & 07777;
	int sticky = !last && (mode & S_ISVTX);
	int n_shown = n ? (int)n : 1;

	if (S_ISLNK(st->st_mode)) {
		tk__zone_say(
			why, len,
			"%.*s is a symbolic link, which a zone's path never "
			"follows; name the directory it leads to",
			n_shown, shown);
		return -EACCES;
	}
	if (!S_ISDIR(st->st_mode)) {
		tk__zone_say(why, len, "%.*s is not a directory", n_shown,
			     shown);
		return -EACCES;
	}
	if (st->st_uid != 0 && st->st_uid != geteuid() &&
	    !(cfg && cfg->uid != (uid_t)-1 && st->st_uid == cfg->uid)) {
		tk__zone_say(
			why, len,
			"directory %.*s is owned by uid %lu, neither root nor "
			"this process's (%lu) nor the named owner: that user "
			"could put any file at the zone's name",
			n_shown, shown, (unsigned long)st->st_uid,
			(unsigned long)geteuid());
		return -EACCES;
	}
	if ((mode & 0002) && !sticky) {
		tk__zone_say(
			why, len,
			"directory %.*s is writable by every user (mode %04o): "
			"anyone could take the zone's name first; make it 0755",
			n_shown, shown, mode);
		return -EACCES;
	}
	if ((mode & 0020) && !sticky && !tk__zone_our_group(st->st_gid, cfg)) {
		tk__zone_say(why, len,
			     "directory %.*s is writable by group %lu (mode "
			     "%04o), not "
			     "one of this process's groups nor the named group",
			     n_shown, shown, (unsigned long)st->st_gid, mode);
		return -EACCES;
	}
	return 0;
}

/*
 * Open the directory of absolute zone path @name from "/", one component
 * at a time, never through a link, judging each (judge_dir()).  The
 * descriptor, or a negative errno with the reason in @why.
 */
static int open_dir(const char *name, const struct tk__zone_config *cfg,
		    char *why, size_t len)
{
	const char *base = strrchr(name, '/');
	char comp[NAME_MAX + 1];
	size_t i = 1, n;
	struct stat st;
	int fd, next, rc;

	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return tk__zone_errno();
	rc = fstat(fd, &st)
		     ? tk__zone_errno()
		     : judge_dir(&st, cfg, base == name, name, 1, why, len);
	while (rc == 0 && name + i < base) {
		n = strcspn(name + i, "/");
		memcpy(comp, name + i, n);
		comp[n] = '\0';
		i += n;
		next = openat(fd, comp,
			      O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT) {
			tk__zone_say(why, len, "no directory %.*s", (int)i,
				     name);
			rc = -ENOENT;
		} else if (next < 0 && (errno == ENOTDIR || errno == ELOOP)) {
			/* Say which: a link, or no directory at all. */
			rc = fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW)
				     ? -EACCES
				     : judge_dir(&st, cfg, 0, name, i, why,
						 len);
			if (rc == 0)
				rc = -EACCES;
		} else if (next < 0) {
			rc = tk__zone_errno();
			tk__zone_say(why, len, "directory %.*s: %s", (int)i,
				     name, strerror(errno));
		} else {
			close(fd);
			fd = next;
			rc = fstat(fd, &st)
				     ? tk__zone_errno()
				     : judge_dir(&st, cfg, name + i == base,
						 name, i, why, len);
		}
		i++;
	}
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

/* Find zone @name's directory and file name; close w->dir after. */
int tk__zone_where(struct tk__zone_where *w, const char *name,
		   const struct tk__zone_config *cfg, char *why, size_t len)
{
	if (!tk__zone_name_valid(name)) {
		tk__zone_say(
			why, len, "%s",
			"not a zone's name (1 to 200 of A-Z a-z 0-9 . _ -, not "
			"beginning with '.'), nor an absolute path ending in "
			"one");
		return -EINVAL;
	}
	if (name[0] == '/') {
		snprintf(w->file, sizeof(w->file), "%s",
			 strrchr(name, '/') + 1);
		w->dir = open_dir(name, cfg, why, len);
	} else {
		snprintf(w->file, sizeof(w->file), "throttlekit.%s", name);
		w->dir = open(tk__zone_dir(), O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (w->dir < 0) {
			w->dir = tk__zone_errno();
			tk__zone_say(why, len, "%s: %s", tk__zone_dir(),
				     strerror(errno));
		}
	}
	return w->dir < 0 ? w->dir : 0;
}
