/* throttlectl.h - shared by the subcommands of the admin tool. */
#ifndef TK_THROTTLECTL_H
#define TK_THROTTLECTL_H

#include <stdio.h>

#include <throttlekit.h>

/* Exit codes, stable for scripts. */
#define CTL_OK 0
#define CTL_DENIED 1
#define CTL_USAGE 2
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

/* {"allowed":...} as one line, the replay output format. */
void ctl_print_decision(FILE *f, const struct tk_decision *d);

#endif
