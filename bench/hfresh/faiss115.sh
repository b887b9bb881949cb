#!/bin/sh
# Build bench_faiss against faiss built from its release source (issue 30:
# the strongest IVF peer, not packaged in Debian), beside the Debian one.
# faiss's source never enters this repository: fetch the v1.15.0 tag
# elsewhere, then in it (libopenblas-dev installed; ~25 min on 2 cores):
#   cmake -B build -DFAISS_ENABLE_GPU=OFF -DFAISS_ENABLE_PYTHON=OFF -DBUILD_TESTING=OFF \
#         -DFAISS_OPT_LEVEL=avx512 -DCMAKE_BUILD_TYPE=Release -DBLA_VENDOR=OpenBLAS
#   make -C build faiss_avx2      # or faiss_avx512 where the CPU has AVX-512
#   bench/hfresh/faiss115.sh FAISS_SRC BUILD OUT [avx2|avx512]
# BUILD: the README's release build (its libcoldvec.a and libcs_common.a give
# the datasets, ground truth and quantiles). OUT: the binary to write. It takes
# bench_faiss's arguments; cli_pairs.sh runs it as BENCH_FAISS.
set -eu
SRC=$1 BUILD=$2 OUT=$3 LEVEL=${4:-avx2}
HERE=$(dirname "$0")
LIB="$SRC/build/faiss/libfaiss_$LEVEL.a"
[ -f "$LIB" ] || { echo "faiss115.sh: $LIB: missing (make -C $SRC/build faiss_$LEVEL)" >&2; exit 2; }
ISA=-mavx2
[ "$LEVEL" = avx512 ] && ISA=-mavx512f
g++ -O2 -std=c++17 "$ISA" -mfma \
	-I"$SRC" -I"$HERE/../../engine" -I"$HERE/../../common" \
	"$HERE/bench_faiss.cpp" -o "$OUT" \
	"$LIB" "$BUILD/engine/libcoldvec.a" "$BUILD/common/libcs_common.a" \
	-fopenmp -lopenblas -llapack -lhdf5_serial -lz -lcrypto -luring -lpthread -lm
echo "$OUT: bench_faiss against $LIB"
