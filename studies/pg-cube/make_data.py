#!/usr/bin/env python3
"""Synthetic vectors for the pg-cube study (seeded, so every run makes the same):
OUT/base.fvecs and OUT/queries.fvecs for coldstudy's ground truth, OUT/base.csv
(id, cube text) for PostgreSQL's COPY; id = row number, so recall compares ids.

usage: make_data.py OUT [N] [D] [NQ]"""
import random
import struct
import sys

out = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
d = int(sys.argv[3]) if len(sys.argv) > 3 else 64
nq = int(sys.argv[4]) if len(sys.argv) > 4 else 40
rnd = random.Random(18)
centres = [[rnd.gauss(0, 1) for _ in range(d)] for _ in range(16)]


def vec():
    c = centres[rnd.randrange(16)]
    # float32 values, so PostgreSQL's float8 cube holds exactly what the fvecs file does
    return [struct.unpack("f", struct.pack("f", x + rnd.gauss(0, 0.3)))[0] for x in c]


with open(f"{out}/base.fvecs", "wb") as fb, open(f"{out}/base.csv", "w") as fc:
    for i in range(n):
        v = vec()
        fb.write(struct.pack("<i", d) + struct.pack(f"<{d}f", *v))
        fc.write(f'{i},"(' + ", ".join(repr(x) for x in v) + ')"\n')
with open(f"{out}/queries.fvecs", "wb") as fq:
    for _ in range(nq):
        fq.write(struct.pack("<i", d) + struct.pack(f"<{d}f", *vec()))
