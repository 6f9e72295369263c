/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * replay.h - one line of the replay format:
 *   {"t": <ns>, "key": "<string>", "cost": <int>, "op": "check"|"peek"|"reset"}
 */
#ifndef TK_REPLAY_H
#define TK_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include <throttlekit.h>

enum replay_op { REPLAY_CHECK, REPLAY_PEEK, REPLAY_RESET };

struct replay_line {
	uint64_t t;
	uint64_t cost;
	enum replay_op op;
	size_t key_len;
	char key[TK_KEY_MAX + 1];
};

/* Returns 0, or -1 with a message in @err. */
int replay_parse(const char *line, struct replay_line *out, char *err,
		 size_t errlen);

#endif
