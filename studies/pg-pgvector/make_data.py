#!/usr/bin/env python3
"""The pg-pgvector study's rows for PostgreSQL's COPY: OUT/base.csv (id, pgvector
text) from Debian's fashion-mnist (dataset-fashion-mnist), the first N training
images, id = row number, so the run's recall against coldstudy's ground truth
(base "fashion-mnist:train") compares ids.

usage: make_data.py OUT [N]"""
import gzip
import struct
import sys

out = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 60000
src = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
with gzip.open(src, "rb") as f:
    magic, count, rows, cols = struct.unpack(">IIII", f.read(16))
    if magic != 2051:
        sys.exit(f"{src}: not an idx3 image file (magic {magic:#x})")
    d = rows * cols
    n = min(n, count)
    with open(f"{out}/base.csv", "w") as fc:
        for i in range(n):
            v = f.read(d)
            fc.write(f'{i},"[' + ",".join(str(b) for b in v) + ']"\n')
print(f"{n} rows of {d} dimensions")
