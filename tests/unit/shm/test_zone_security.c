/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_zone_security.c - zones under hostile local users: the trust rules
 * that decide which zone files a process attaches (shm/segment.c).
 *
 * The second user is real: the test copies itself into its zone directory
 * and runs the copy as uid and gid 65534 with setpriv(1) ("helper" mode),
 * to create zones as that user and to attach as that user.  That needs
 * root; as another user, or without setpriv, the cases skip.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <throttlekit.h>

#include "workers.h"
#include "../../shm/zone.h"

#define OTHER 65534	  /* the other user: uid and gid */
#define FOREIGN_GID 54321 /* a group neither user is in */

static char dir[] = "/tmp/tk-zsec-XXXXXX";
static char helper[300];
static int usable; /* root, setpriv present, helper copied */

static int open_rc(const char *name, const struct tk_options *opts)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_store *s;
	char spec[700];
	int rc;

	if (opts)
		o = *opts;
	o.flags |= TK_OPT_ZONE_NO_CREATE;
	snprintf(spec, sizeof(spec), "shm:%s", name);
	rc = tk_store_open(&s, spec, &o);
	if (rc == 0)
		tk_store_close(s);
	return rc;
}

/* Helper mode, as the other user: "create NAME MODE" (created 0600, then
 * chmod, since the library makes no world-writable zone), "attach NAME",
 * "mkzone NAME" (tk_zone_create()), "squat PATH" (a plain file) or
 * "why NAME FILE" (tk_zone_access()'s reason into FILE).
 * Exits with -rc. */
static int helper_main(int argc, char **argv)
{
	char path[512];
	int rc = -EINVAL;

	if (argc == 5 && strcmp(argv[2], "create") == 0) {
		rc = tk_zone_create(argv[3], NULL);
		kit_zone_path(path, sizeof(path), argv[3]);
		if (rc == 0 && chmod(path, strtoul(argv[4], NULL, 8)) != 0)
			rc = -errno;
	} else if (argc == 4 && strcmp(argv[2], "attach") == 0) {
		rc = open_rc(argv[3], NULL);
	} else if (argc == 5 && strcmp(argv[2], "why") == 0) {
		char why[512] = "";
		FILE *f = fopen(argv[4], "w");

		rc = tk_zone_access(argv[3], NULL, why, sizeof(why));
		if (f) {
			fputs(why, f);
			fclose(f);
		}
	} else if (argc == 4 && strcmp(argv[2], "mkzone") == 0) {
		rc = tk_zone_create(argv[3], NULL);
	} else if (argc == 4 && strcmp(argv[2], "squat") == 0) {
		/* A squatter needs no library: any file at the name. */
		rc = open(argv[3], O_RDWR | O_CREAT | O_EXCL, 0666);
		rc = rc < 0 ? -errno : close(rc);
	}
	return -rc;
}

/* Run the helper as the other user; its exit status (-rc), or -1. */
static int as_other(const char *op, const char *name, const char *mode)
{
	char cmd[2048];
	int st;

	snprintf(cmd, sizeof(cmd),
		 "setpriv --reuid=%d --regid=%d --clear-groups %s helper %s "
		 "%s %s",
		 OTHER, OTHER, helper, op, name, mode ? mode : "");
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void need_root(void)
{
	if (!usable)
		skip();
}

static struct tk_options owner_opts(int64_t uid)
{
	struct tk_options o = TK_OPTIONS_INIT;

	o.zone_uid = uid;
	o.flags = TK_OPT_ZONE_UID;
	return o;
}

/* Another user squats the name first, world-writable: a server with
 * default options must not attach it; naming that owner trusts it. */
static void test_squatted_name(void **state)
{
	struct tk_options o = owner_opts(OTHER), plain = TK_OPTIONS_INIT;
	struct tk_zone_info info;
	struct tk_store *s;
	char why[256];

	(void)state;
	need_root();
	assert_int_equal(as_other("create", "api", "0666"), 0);
	/* Defaults, creation allowed: refused, not silently attached. */
	assert_int_equal(tk_store_open(&s, "shm:api", &plain), -EACCES);
	assert_int_equal(open_rc("api", NULL), -EACCES);
	assert_int_equal(tk_zone_info("api", &info, sizeof(info)), -EACCES);
	assert_int_equal(tk_zone_verify("api", &info, sizeof(info)), -EACCES);
	assert_int_equal(tk_zone_sweep("api", 1), -EACCES);
	assert_int_equal(tk_zone_destroy("api"), -EACCES);
	assert_int_equal(tk_zone_access("api", NULL, why, sizeof(why)),
			 -EACCES);
	assert_non_null(strstr(why, "owned by uid 65534"));
	/* The owner named: trusted as that user made it. */
	assert_int_equal(open_rc("api", &o), 0);
	assert_int_equal(tk_zone_info_opts("api", &o, &info, sizeof(info)), 0);
	assert_int_equal(info.uid, OTHER);
	assert_int_equal(info.mode, 0666);
	assert_int_equal(tk_zone_verify_opts("api", &o, &info, sizeof(info)),
			 0);
	assert_int_equal(tk_zone_sweep_opts("api", &o, 1), 0);
	assert_int_equal(tk_zone_access("api", &o, why, sizeof(why)), 0);
	/* Another owner named does not help. */
	o = owner_opts(OTHER - 1);
	assert_int_equal(open_rc("api", &o), -EACCES);
	o = owner_opts(OTHER);
	assert_int_equal(tk_zone_destroy_opts("api", &o), 0);
	assert_int_equal(tk_zone_info("api", &info, sizeof(info)), -ENOENT);
}

/* The other user's zone, 0600: root needs to name the owner; the owner
 * itself attaches it. */
static void test_other_owner_private(void **state)
{
	struct tk_options o = owner_opts(OTHER);

	(void)state;
	need_root();
	assert_int_equal(as_other("create", "priv", "0600"), 0);
	assert_int_equal(open_rc("priv", NULL), -EACCES);
	assert_int_equal(open_rc("priv", &o), 0);
	assert_int_equal(as_other("attach", "priv", NULL), 0);
	assert_int_equal(tk_zone_destroy_opts("priv", &o), 0);
}

/* Root creates a zone for a server's user: owner given at creation. */
static void test_create_for_owner(void **state)
{
	struct tk_options o = owner_opts(OTHER);
	struct tk_zone_info info;

	(void)state;
	need_root();
	o.zone_capacity = 64;
	assert_int_equal(tk_zone_create("given", &o), 0);
	assert_int_equal(tk_zone_info_opts("given", &o, &info, sizeof(info)),
			 0);
	assert_int_equal(info.uid, OTHER);
	assert_int_equal(info.mode, 0600);
	assert_int_equal(as_other("attach", "given", NULL), 0);
	assert_int_equal(open_rc("given", NULL), -EACCES);
	assert_int_equal(tk_zone_destroy_opts("given", &o), 0);
}

/* Group-writable by a group not ours: refused unless that group is
 * named; by our own group, or shared with the other user's group. */
static void test_group_writable(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	char why[256];

	(void)state;
	need_root();
	o.zone_capacity = 64;
	o.zone_mode = 0620;
	o.zone_gid = FOREIGN_GID;
	o.flags = TK_OPT_ZONE_GID;
	/* The creator names the group: its own attach trusts it. */
	assert_int_equal(tk_zone_create("grp", &o), 0);
	assert_int_equal(open_rc("grp", &o), 0);
	assert_int_equal(open_rc("grp", NULL), -EACCES);
	assert_int_equal(tk_zone_access("grp", NULL, why, sizeof(why)),
			 -EACCES);
	assert_non_null(strstr(why, "writable by group 54321"));
	assert_int_equal(tk_zone_destroy("grp"), -EACCES);
	assert_int_equal(tk_zone_destroy_opts("grp", &o), 0);
	/* Root's zone, 0660, group of the other user: the other user (in
	 * that group) attaches; root, not in it, names it. */
	o.zone_mode = 0660;
	o.zone_gid = OTHER;
	assert_int_equal(tk_zone_create("shared", &o), 0);
	assert_int_equal(as_other("attach", "shared", NULL), 0);
	assert_int_equal(open_rc("shared", &o), 0);
	assert_int_equal(tk_zone_destroy_opts("shared", &o), 0);
	/* Group-readable only: nothing to trust. */
	o.zone_mode = 0640;
	o.flags = 0;
	assert_int_equal(tk_zone_create("ro", &o), 0);
	assert_int_equal(open_rc("ro", NULL), 0);
	/* The other user may not write it: -EACCES. */
	assert_int_equal(chmod(dir, 01777), 0);
	assert_int_equal(as_other("attach", "ro", NULL), EACCES);
	assert_int_equal(tk_zone_destroy("ro"), 0);
}

/* Our own zone is accepted; our own world-writable one is not made, and
 * one made so by hand is refused. */
static void test_own_zone(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	char path[512];

	(void)state;
	o.zone_capacity = 64;
	assert_int_equal(tk_zone_create("mine", &o), 0);
	assert_int_equal(open_rc("mine", NULL), 0);
	assert_int_equal(tk_zone_access("mine", NULL, NULL, 0), 0);
	o.zone_mode = 0666;
	assert_int_equal(tk_zone_create("open", &o), -EINVAL);
	o.zone_mode = 0602;
	assert_int_equal(tk_zone_create("open", &o), -EINVAL);
	kit_zone_path(path, sizeof(path), "mine");
	assert_int_equal(chmod(path, 0606), 0);
	assert_int_equal(open_rc("mine", NULL), -EACCES);
	o = owner_opts(geteuid());
	assert_int_equal(open_rc("mine", &o), 0);
	assert_int_equal(tk_zone_destroy("mine"), -EACCES);
	assert_int_equal(tk_zone_destroy_opts("mine", &o), 0);
}

/* Rewrite zone @name's header with layout @version and a check word
 * that matches: a zone a build of that layout made. */
static void set_layout(const char *name, uint32_t version)
{
	struct tkz_header h;
	char path[512];
	int fd;

	kit_zone_path(path, sizeof(path), name);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
	h.version = version;
	h.check = tk__zone_header_check(&h);
	assert_int_equal(pwrite(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
	close(fd);
}

/*
 * A zone of the previous layout, whole and with a check word that
 * matches, is refused (-EPROTO): a build of it places keys elsewhere, and
 * the two would count one key in two places.  The same header written
 * back with this layout attaches again, so the version alone refused it.
 */
static void test_previous_layout(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;

	(void)state;
	o.zone_capacity = 64;
	assert_int_equal(tk_zone_create("old", &o), 0);
	set_layout("old", TKZ_VERSION - 1);
	assert_int_equal(open_rc("old", NULL), -EPROTO);
	set_layout("old", TKZ_VERSION);
	assert_int_equal(open_rc("old", NULL), 0);
	assert_int_equal(tk_zone_destroy("old"), 0);
}

/* A symbolic link is never followed: not to attach, not to create
 * through it, not to destroy its target. */
static void test_symlink(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	struct tk_zone_info info;
	struct tk_store *s;
	char real[512], link[512], why[256];
	struct stat st;

	(void)state;
	o.zone_capacity = 64;
	assert_int_equal(tk_zone_create("admin", &o), 0);
	kit_zone_path(real, sizeof(real), "admin");
	kit_zone_path(link, sizeof(link), "public");
	assert_int_equal(symlink(real, link), 0);
	assert_int_equal(open_rc("public", NULL), -EACCES);
	assert_int_equal(tk_store_open(&s, "shm:public", &o), -EACCES);
	assert_int_equal(tk_zone_info("public", &info, sizeof(info)), -EACCES);
	assert_int_equal(tk_zone_access("public", NULL, why, sizeof(why)),
			 -EACCES);
	assert_non_null(strstr(why, "symbolic link"));
	assert_int_equal(tk_zone_destroy("public"), -EACCES);
	assert_int_equal(lstat(link, &st), 0);
	assert_int_equal(stat(real, &st), 0);
	/* A dangling link: nothing is created through it. */
	assert_int_equal(unlink(real), 0);
	assert_int_equal(tk_store_open(&s, "shm:public", &o), -EACCES);
	assert_int_equal(stat(real, &st), -1);
	assert_int_equal(unlink(link), 0);
}

/* File @path's text into @buf ("" if it cannot be read). */
static void slurp(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	if (f) {
		n = fread(buf, 1, len - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
}

/* @path under the test's directory. */
static void in_dir(char *buf, size_t len, const char *rel)
{
	snprintf(buf, len, "%s/%s", dir, rel);
}

/* A directory @rel of the test's, with @mode (after the umask). */
static void make_dir(const char *rel, mode_t mode, char *path, size_t len)
{
	in_dir(path, len, rel);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(chmod(path, mode), 0);
}

/* throttlectl: the same rules, --owner and --group to trust, and a
 * message that says which rule refused the zone. */
static int ctl(const char *args, char *err, size_t len)
{
	char cmd[1024], errfile[400];
	const char *top = getenv("top_builddir");
	int st;

	snprintf(errfile, sizeof(errfile), "%s/ctl.err", dir);
	snprintf(cmd, sizeof(cmd), "%s/tools/throttlectl %s >/dev/null 2>%s",
		 top ? top : ".", args, errfile);
	st = system(cmd);
	slurp(errfile, err, len);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_throttlectl(void **state)
{
	char err[1024], d[512], args[700];

	(void)state;
	need_root();
	if (ctl("--version", err, sizeof(err)) != 0)
		skip();
	assert_int_equal(as_other("create", "srv", "0660"), 0);
	assert_int_equal(ctl("info srv", err, sizeof(err)), 3);
	assert_non_null(strstr(err, "EACCES"));
	assert_non_null(strstr(err, "owned by uid 65534"));
	assert_int_equal(ctl("info srv --owner 65534", err, sizeof(err)), 0);
	assert_int_equal(ctl("verify srv --owner 65534", err, sizeof(err)), 0);
	assert_int_equal(ctl("ls srv --owner 65534", err, sizeof(err)), 0);
	assert_int_equal(ctl("sweep srv --owner 65534", err, sizeof(err)), 0);
	assert_int_equal(
		ctl("check srv k --policy gcra:5/1s", err, sizeof(err)), 3);
	assert_int_equal(ctl("check srv k --policy gcra:5/1s --owner 65534",
			     err, sizeof(err)),
			 0);
	assert_int_equal(ctl("reset srv k --owner 65534", err, sizeof(err)), 0);
	assert_int_equal(ctl("destroy srv", err, sizeof(err)), 3);
	assert_int_equal(ctl("destroy srv --owner 65534", err, sizeof(err)), 0);
	/* Root's zone writable by a foreign group: --group trusts it. */
	assert_int_equal(
		ctl("create gz --capacity 64 --mode 0660 --group 54321", err,
		    sizeof(err)),
		0);
	assert_int_equal(ctl("info gz", err, sizeof(err)), 3);
	assert_non_null(strstr(err, "writable by group 54321"));
	assert_int_equal(ctl("info gz --group 54321", err, sizeof(err)), 0);
	assert_int_equal(ctl("destroy gz --group 54321", err, sizeof(err)), 0);
	/* Root creates a zone owned by the server's user. */
	assert_int_equal(
		ctl("create own --capacity 64 --owner 65534", err, sizeof(err)),
		0);
	assert_int_equal(as_other("attach", "own", NULL), 0);
	assert_int_equal(ctl("destroy own --owner 65534", err, sizeof(err)), 0);
	/* A zone in a directory of its own, by its path. */
	make_dir("ctl", 0755, d, sizeof(d));
	snprintf(args, sizeof(args), "create %s/z --capacity 64", d);
	assert_int_equal(ctl(args, err, sizeof(err)), 0);
	snprintf(args, sizeof(args), "check %s/z k --policy gcra:5/1s", d);
	assert_int_equal(ctl(args, err, sizeof(err)), 0);
	snprintf(args, sizeof(args), "info %s/z", d);
	assert_int_equal(ctl(args, err, sizeof(err)), 0);
	snprintf(args, sizeof(args), "destroy %s/z", d);
	assert_int_equal(ctl(args, err, sizeof(err)), 0);
	assert_int_equal(chmod(d, 0777), 0);
	snprintf(args, sizeof(args), "create %s/z --capacity 64", d);
	assert_int_equal(ctl(args, err, sizeof(err)), 3);
	assert_non_null(strstr(err, "writable by every user"));
	assert_int_equal(rmdir(d), 0);
}

/* A server's directory @rel (root's, 0755) and its zone "api". */
static void server_dir(const char *rel, char srv[512], char zone[600])
{
	make_dir(rel, 0755, srv, 512);
	snprintf(zone, 600, "%s/api", srv);
}

/*
 * A server's own directory (root's, 0755) is where squatting ends: the
 * other user, who could take a name in the shared directory first and so
 * stop the server (refused there, -EACCES), cannot create anything in it,
 * and the server's zone is made and used there whatever that user did.
 */
static void test_dir_squatter(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	char srv[512], zone[600], spec[700];
	struct tk_store *s;

	(void)state;
	need_root();
	o.zone_capacity = 64;
	server_dir("srv", srv, zone);
	snprintf(spec, sizeof(spec), "shm:%s", zone);
	/* The same name in the shared directory: squatted, so refused. */
	assert_int_equal(as_other("create", "api", "0644"), 0);
	assert_int_equal(tk_store_open(&s, "shm:api", &o), -EACCES);
	/* In the server's directory the squatter can do nothing. */
	assert_int_equal(as_other("squat", zone, NULL), EACCES);
	assert_int_equal(as_other("mkzone", zone, NULL), EACCES);
	assert_int_equal(tk_store_open(&s, spec, &o), 0);
	tk_store_close(s);
	assert_int_equal(tk_zone_access(zone, NULL, NULL, 0), 0);
	assert_int_equal(tk_zone_destroy(zone), 0);
	o = owner_opts(OTHER);
	assert_int_equal(tk_zone_destroy_opts("api", &o), 0);
	/* Made for the server's user, who attaches it by its path. */
	o.zone_capacity = 64;
	assert_int_equal(tk_zone_create(zone, &o), 0);
	assert_int_equal(as_other("attach", zone, NULL), 0);
	assert_int_equal(tk_zone_destroy_opts(zone, &o), 0);
	assert_int_equal(rmdir(srv), 0);
}

/* A directory reached through a symbolic link, anywhere on the path, is
 * refused (-EACCES): what is judged must be what is used. */
static void test_dir_symlink(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	char real[512], link[512], zone[600], spec[700], why[512];
	struct tk_store *s;
	struct stat st;

	(void)state;
	o.zone_capacity = 64;
	make_dir("real", 0755, real, sizeof(real));
	in_dir(link, sizeof(link), "link");
	assert_int_equal(symlink(real, link), 0);
	snprintf(zone, sizeof(zone), "%s/api", link);
	snprintf(spec, sizeof(spec), "shm:%s", zone);
	assert_int_equal(tk_store_open(&s, spec, &o), -EACCES);
	assert_int_equal(tk_zone_create(zone, &o), -EACCES);
	assert_int_equal(tk_zone_access(zone, NULL, why, sizeof(why)), -EACCES);
	assert_non_null(strstr(why, "symbolic link"));
	/* Nothing was made through it. */
	snprintf(zone, sizeof(zone), "%s/api", real);
	assert_int_equal(lstat(zone, &st), -1);
	/* A link higher up: refused as well. */
	assert_int_equal(mkdir(zone, 0755), 0);
	snprintf(zone, sizeof(zone), "%s/api/x", link);
	assert_int_equal(tk_zone_create(zone, &o), -EACCES);
	snprintf(zone, sizeof(zone), "%s/api", real);
	assert_int_equal(rmdir(zone), 0);
	/* The real path works. */
	snprintf(zone, sizeof(zone), "%s/api", real);
	assert_int_equal(tk_zone_create(zone, &o), 0);
	assert_int_equal(tk_zone_destroy(zone), 0);
	assert_int_equal(unlink(link), 0);
	assert_int_equal(rmdir(real), 0);
}

/* A zone's directory that others may write, or that another user owns,
 * is refused (-EACCES) with the reason; naming the group or the owner
 * trusts it; bad paths are -EINVAL. */
static void test_dir_writable(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT, g;
	char d[512], zone[600], why[512];

	(void)state;
	o.zone_capacity = 64;
	/* The shared directory itself (01777, like /dev/shm) as a path. */
	snprintf(zone, sizeof(zone), "%s/api", dir);
	assert_int_equal(tk_zone_create(zone, &o), -EACCES);
	assert_int_equal(tk_zone_access(zone, NULL, why, sizeof(why)), -EACCES);
	assert_non_null(strstr(why, "writable by every user"));
	make_dir("open", 0777, d, sizeof(d));
	snprintf(zone, sizeof(zone), "%s/api", d);
	assert_int_equal(tk_zone_create(zone, &o), -EACCES);
	assert_int_equal(rmdir(d), 0);
	make_dir("gw", 0775, d, sizeof(d));
	snprintf(zone, sizeof(zone), "%s/api", d);
	if (geteuid() == 0) {
		assert_int_equal(chown(d, 0, FOREIGN_GID), 0);
		assert_int_equal(tk_zone_create(zone, &o), -EACCES);
		assert_int_equal(tk_zone_access(zone, NULL, why, sizeof(why)),
				 -EACCES);
		assert_non_null(strstr(why, "writable by group 54321"));
		g = o;
		g.zone_gid = FOREIGN_GID;
		g.flags = TK_OPT_ZONE_GID;
		assert_int_equal(tk_zone_create(zone, &g), 0);
		assert_int_equal(tk_zone_destroy_opts(zone, &g), 0);
		/* Owned by another user: that user could put anything at
		 * the name. */
		assert_int_equal(chown(d, OTHER, 0), 0);
		assert_int_equal(chmod(d, 0755), 0);
		assert_int_equal(tk_zone_create(zone, &o), -EACCES);
		assert_int_equal(tk_zone_access(zone, NULL, why, sizeof(why)),
				 -EACCES);
		assert_non_null(strstr(why, "owned by uid 65534"));
		g = owner_opts(OTHER);
		g.zone_capacity = 64;
		assert_int_equal(tk_zone_create(zone, &g), 0);
		assert_int_equal(tk_zone_destroy_opts(zone, &g), 0);
	}
	assert_int_equal(rmdir(d), 0);
	assert_int_equal(tk_zone_create("/", &o), -EINVAL);
	assert_int_equal(tk_zone_create("/tmp/../tmp/x", &o), -EINVAL);
	assert_int_equal(tk_zone_create("/tmp//x", &o), -EINVAL);
	assert_int_equal(tk_zone_create("/tmp/.x", &o), -EINVAL);
	assert_int_equal(tk_zone_create("tmp/x", &o), -EINVAL);
	assert_int_equal(tk_store_validate("shm:/run/x/api", NULL, 0), 0);
	assert_int_equal(tk_store_validate("shm:/run/x/", NULL, 0), -EINVAL);
	assert_int_equal(
		tk_zone_access("/nonexistent-tk/api", NULL, why, sizeof(why)),
		-ENOENT);
	assert_non_null(strstr(why, "no directory /nonexistent-tk"));
}

/*
 * A zone a root script made, used by a server's user, and the reverse:
 * the reason names the owner and the one thing that fixes it.
 */
static void test_whose_zone(void **state)
{
	struct tk_options o = TK_OPTIONS_INIT;
	char srv[512], zone[600], file[600], why[512], fix[700];

	(void)state;
	need_root();
	o.zone_capacity = 64;
	server_dir("whose", srv, zone);
	snprintf(file, sizeof(file), "%s/why", dir);
	assert_int_equal(tk_zone_create(zone, &o), 0);
	assert_int_equal(as_other("attach", zone, NULL), EACCES);
	assert_int_equal(as_other("why", zone, file), EACCES);
	slurp(file, why, sizeof(why));
	assert_non_null(strstr(why, "belongs to uid 0, group 0, mode 0600"));
	snprintf(fix, sizeof(fix), "as root: chown 65534 %s", zone);
	assert_non_null(strstr(why, fix));
	/* That command is the fix. */
	assert_int_equal(chown(zone, OTHER, OTHER), 0);
	assert_int_equal(as_other("attach", zone, NULL), 0);
	/* Root meets the user's zone: the option to name. */
	assert_int_equal(tk_zone_access(zone, NULL, why, sizeof(why)), -EACCES);
	assert_non_null(strstr(why, "throttlectl --owner 65534"));
	o = owner_opts(OTHER);
	assert_int_equal(tk_zone_access(zone, &o, why, sizeof(why)), 0);
	assert_int_equal(tk_zone_destroy_opts(zone, &o), 0);
	assert_int_equal(rmdir(srv), 0);
}

/* Not a regular file: refused at once (a fifo must not block). */
static void test_not_regular(void **state)
{
	char path[512], why[256];

	(void)state;
	kit_zone_path(path, sizeof(path), "fifo");
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(open_rc("fifo", NULL), -EACCES);
	assert_int_equal(tk_zone_access("fifo", NULL, why, sizeof(why)),
			 -EACCES);
	assert_non_null(strstr(why, "not a regular file"));
	assert_int_equal(tk_zone_destroy("fifo"), -EACCES);
	assert_int_equal(unlink(path), 0);
	kit_zone_path(path, sizeof(path), "dir");
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(open_rc("dir", NULL), -EACCES);
	assert_int_equal(tk_zone_destroy("dir"), -EACCES);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(tk_zone_access("nosuch", NULL, why, sizeof(why)),
			 -ENOENT);
}

static int setup(void **state)
{
	char cmd[1024];

	(void)state;
	/* Like /dev/shm: anyone may create, only owners remove. */
	if (kit_zone_dir(dir) != 0 || chmod(dir, 01777) != 0)
		return -1;
	if (geteuid() != 0 || system("setpriv --version >/dev/null 2>&1"))
		return 0;
	snprintf(helper, sizeof(helper), "%s/helper", dir);
	snprintf(cmd, sizeof(cmd), "cp /proc/%ld/exe %s && chmod 755 %s",
		 (long)getpid(), helper, helper);
	usable = system(cmd) == 0;
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_squatted_name),
		cmocka_unit_test(test_other_owner_private),
		cmocka_unit_test(test_create_for_owner),
		cmocka_unit_test(test_group_writable),
		cmocka_unit_test(test_own_zone),
		cmocka_unit_test(test_previous_layout),
		cmocka_unit_test(test_symlink),
		cmocka_unit_test(test_not_regular),
		cmocka_unit_test(test_dir_squatter),
		cmocka_unit_test(test_dir_symlink),
		cmocka_unit_test(test_dir_writable),
		cmocka_unit_test(test_whose_zone),
		cmocka_unit_test(test_throttlectl),
	};

	if (argc > 1 && strcmp(argv[1], "helper") == 0)
		return helper_main(argc, argv);
	return cmocka_run_group_tests(tests, setup, kit_zone_dir_remove);
}
