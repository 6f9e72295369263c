/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * slots-naive.pml -- a deliberately broken slot protocol that spin must
 * reject (tests/model/check-model.sh fails if it finds no error).
 *
 * The naive table of docs/shm-protocol.md, "Why the races are safe": an
 * insert scans the window, finds the key absent, claims an EMPTY slot and
 * writes {MEM|1|fp,0} into it directly, with no tentative INS, no ticket
 * and no collide/commit step.  Two processes that both find the key absent
 * then insert it into two slots (and a reclaimer freeing another slot in
 * between makes the same happen even with "first free slot" claims): a
 * duplicate key, each copy admitting its own L requests.
 *
 * Everything else (table, torn reads, death, janitor, clock, assertions) is
 * slots.pml itself, so the two models differ only in the claim.
 */
#define NAIVE
#include "slots.pml"
