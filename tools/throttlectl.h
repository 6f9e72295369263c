/* SPDX-License-Identifier: BSD-2-Clause */
/* throttlectl.h - shared by the subcommands of the admin tool. */
#ifndef TK_THROTTLECTL_H
#define TK_THROTTLECTL_H

#include <stdint.h>
#include <stdio.h>

#include <throttlekit.h>

/* Exit codes, stable for scripts: the table of throttlectl(1), EXIT STATUS. */
#define CTL_OK 0
#define CTL_DENIED 1
/* The command line is wrong, whatever any store holds. */
#define CTL_USAGE 2
/* A store or zone failed, or output could not be written. */
#define CTL_ERROR 3

int ctl_simulate(int argc, char **argv);
int ctl_create(int argc, char **argv);
int ctl_info(int argc, char **argv);
int ctl_ls(int argc, char **argv);
int ctl_get(int argc, char **argv);
int ctl_check(int argc, char **argv);
int ctl_reset(int argc, char **argv);
int ctl_stats(int argc, char **argv);
int ctl_verify(int argc, char **argv);
int ctl_sweep(int argc, char **argv);
int ctl_destroy(int argc, char **argv);
int ctl_ping(int argc, char **argv);
int ctl_top(int argc, char **argv);

/*
 * The zone commands' ways (throttlectl-zone.c), for commands in other
 * files: is @name a zone's name (else a message, 0); --group (@ch 'g')
 * or --owner (@ch 'o') into @o's trusted group or owner (0, or -1 after a
 * message); a zone refused with @rc, said as the zone commands say it,
 * with the option that would trust it (returns CTL_ERROR, or CTL_USAGE).
 */
int ctl_zone_name_ok(const char *name);
int ctl_zone_trust(int ch, const char *arg, struct tk_options *o);
int ctl_zone_failed(int rc, const char *name, const struct tk_options *o);

/* throttlectl-stats.c: info's output of zone @zone in @format ("text",
 * "json" or "prometheus"), its rules read with @o: 0 or the error of
 * reading them. */
int ctl_print_info(const char *zone, const struct tk_options *o,
		   const struct tk_zone_info *i, const char *format);
/* stats' output, its rules read with @o (tk_zone_rules()): 0 or the
 * error of reading them. */
int ctl_print_stats(const char *zone, const struct tk_options *o,
		    const struct tk_zone_info *i, const char *format);

/*
 * {"allowed":...} as one line, the replay output format; @delay appends
 * "delay", which policies with a shaper dimension report.
 */
void ctl_print_decision(FILE *f, const struct tk_decision *d, int delay,
			int ns_strings);

/*
 * Whether the policy string @policy has a shaper (leaky) dimension: 1 or
 * 0, or a negative errno (-EINVAL for a policy that does not parse).
 */
int ctl_has_shaper(const char *policy);

/* @spec as messages may show it, by tk_spec_redact(); returns @buf. */
const char *ctl_redact(const char *spec, char *buf, size_t len);

/*
 * A store spec that failed with @rc, on standard error: the spec as
 * ctl_redact() shows it, the error, and for a spec whose text the library
 * refuses (tk_store_validate() fails with @rc) its reason.  Returns
 * CTL_USAGE for such a spec, CTL_ERROR for a store that failed.
 */
int ctl_store_error(const char *spec, int rc);

/*
 * The exit status for an operation that failed with @rc: CTL_USAGE for an
 * error of the caller's (tk_error_is_caller(): a cost the policy never
 * admits, ...), CTL_ERROR for one of the store or clock.
 */
int ctl_status(int rc);

/* The usage line of command @cmd, without "usage: throttlectl ". */
const char *ctl_usage(const char *cmd);

/* "usage: throttlectl " and @cmd's usage line on standard error;
 * returns CTL_USAGE. */
int ctl_usage_error(const char *cmd);

/*
 * The one reader of numbers on the command line: digits of @base (2 to
 * 16), or with @base 0 as C writes them (decimal, hexadecimal after 0x,
 * octal after a leading 0), and nothing else: no space, no sign, no
 * suffix.  Returns 0 with *@out <= @max, or -1.
 */
int ctl_parse_number(const char *s, unsigned int base, uint64_t max,
		     uint64_t *out);

#endif
