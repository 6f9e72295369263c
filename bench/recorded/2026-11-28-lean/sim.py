# SPDX-License-Identifier: BSD-2-Clause
# sim.py - the slot table's placement (a key's two windows of 16 slots and
# its turn from its position; the key takes its first free candidate) with
# the position by fmix64 or by this pass's functions: the keys left
# without a free candidate, three seeds a case.  python3 sim.py
import collections
import random

M = (1 << 64) - 1
C = 0x9e3779b97f4a7c15


def fmix(m):
    m ^= m >> 33
    m = (m * 0xff51afd7ed558ccd) & M
    m ^= m >> 33
    m = (m * 0xc4ceb9fe1a85ec53) & M
    m ^= m >> 33
    return m


def mul(m):  # tk__table_pos(): a fingerprint's 56 bits times C
    return (m * C) & M


def fold(h):  # tk__zone_pos(): the 128-bit product's halves xored
    p = h * C
    return (p & M) ^ (p >> 64)


def run(posf, bits, slots, load, seed, shards=1):
    rnd = random.Random(seed)
    per = slots // shards
    mask = per // 16 - 1
    used = bytearray(slots)
    over = 0
    for _ in range(int(slots * load)):
        pos = posf(rnd.getrandbits(bits))
        base = (pos & (shards - 1)) * per
        a, b = (pos >> 8) & mask, (pos >> 36) & mask
        if b == a:
            b = (a + 1) & mask
        turn = (pos >> 60) & 15
        for i in range(32):
            s = base + (a if i < 16 else b) * 16 + ((i + turn) & 15)
            if not used[s]:
                used[s] = 1
                break
        else:
            over += 1
    return over


CASES = ((1 << 16, 0.75, 1), (1 << 16, 0.75, 16), (1 << 14, 0.8, 4))
for name, bits, fns in (("memory store (56-bit fingerprint)", 56,
                         (("fmix64", fmix), ("fp*C", mul))),
                        ("zone (64-bit hash)", 64,
                         (("fmix64", fmix), ("fold(h*C)", fold)))):
    print(name)
    for slots, load, shards in CASES:
        print(" ", slots, "slots", load, "full", shards, "shards:",
              "; ".join("%s %s" % (f, [run(fn, bits, slots, load, s, shards)
                                      for s in range(3)]) for f, fn in fns))
rnd = random.Random(1)
turns = collections.Counter((fold(rnd.getrandbits(64)) >> 60) & 15
                            for _ in range(200000))
print("fold's turn, 200,000 draws: each value", min(turns.values()), "to",
      max(turns.values()), "times (12,500 even)")
