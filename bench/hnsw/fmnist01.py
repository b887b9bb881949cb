#!/usr/bin/env python3
"""fashion-mnist scaled to [0, 1]: each pixel k becomes the float32 nearest
k / 255, so the vectors are fractional and take the float32 path (whole
numbers would be held as exact bytes). Writes OUTDIR/train.fvecs and
OUTDIR/test.fvecs from Debian's dataset-fashion-mnist.
    bench/hnsw/fmnist01.py OUTDIR"""
import gzip
import os
import struct
import sys

SRC = "/usr/share/datasets/fashion-mnist"


def convert(name, out):
    with gzip.open(os.path.join(SRC, name + "-images-idx3-ubyte.gz"), "rb") as f:
        magic, n, rows, cols = struct.unpack(">IIII", f.read(16))
        if magic != 0x803:
            sys.exit("%s: not an idx3 image file" % name)
        d = rows * cols
        px = f.read(n * d)
    if len(px) != n * d:
        sys.exit("%s: short file" % name)
    table = [struct.pack("<f", k / 255.0) for k in range(256)]
    head = struct.pack("<i", d)
    tmp = out + ".part"
    with open(tmp, "wb") as f:
        for i in range(n):
            f.write(head)
            f.write(b"".join(table[b] for b in px[i * d:(i + 1) * d]))
    os.replace(tmp, out)


if len(sys.argv) != 2:
    sys.exit(__doc__)
os.makedirs(sys.argv[1], exist_ok=True)
convert("train", os.path.join(sys.argv[1], "train.fvecs"))
convert("t10k", os.path.join(sys.argv[1], "test.fvecs"))
