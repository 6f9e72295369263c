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

/* {"allowed":...} as one line, the replay output format. */
void ctl_print_decision(FILE *f, const struct tk_decision *d);

#endif
