/*
 * hfreshformat.c - HFresh's bytes on disk: posting records, the manifest,
 * the vector store, and the small I/O helpers they share.
 *
 * Every multi-byte field is little-endian (the host order of every target
 * coldstudy builds for; the manifest's magic would read wrong otherwise).
 * Checksums: one per posting record, CRC-32C (Castagnoli) in records of
 * version 2 (what is written) and zlib's CRC-32 in version 1 (still
 * read); one zlib CRC-32 per vector slot and one over the whole manifest.
 * Queries check every posting they read, so the posting checksum is the
 * one on the hot path: CRC-32C folds 256 bytes a step with carry-less
 * multiplies (VPCLMULQDQ on AVX-512) where the CPU has them, else runs on
 * SSE4.2's crc32 instruction (about 0.15 instructions a byte, against 3.8
 * for zlib's tables), with a table fallback on CPUs without either. zlib's
 * CRC-32 folds on PCLMULQDQ too (hfr_crc32z, zlib's value bit for bit): a
 * query checks every vector slot it rescores. The layout is in
 * ARCHITECTURE.md.
 *
 * Invariants the readers check (hfr_post_check, hfr_meta_read): magic and
 * format version first; every length is derived from counts and checked
 * against the bytes actually present before anything is indexed, so a
 * truncated or bit-flipped file gives -EBADMSG and a message naming the
 * file and byte offset, never an out-of-bounds read.
 */
#include "hfresh.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* ---- CRC-32C ---- */

static uint32_t c32c_tab[256];
static unsigned c32c_hw; /* the best path the CPU has: 0 table, 1 SSE4.2, 2 and 3 VPCLMULQDQ */
static pthread_once_t c32c_once = PTHREAD_ONCE_INIT;

/*
 * The SSE4.2 path runs three crc32 chains at once over three stretches of
 * C32C_SPAN bytes (the instruction's latency is three cycles, its
 * throughput one a cycle) and joins them: for a raw state, crc(s, A||B) =
 * shift_|B|(crc(s, A)) ^ crc(0, B), with shift_n(x) = x times x^(8n)
 * modulo the polynomial, linear in x, so a table of 4 x 256 words per
 * length (C32C_SPAN and twice it) does it.
 */
#define C32C_SPAN 256u
static uint32_t c32c_shift1[4][256], c32c_shift2[4][256];

/*
 * The folding paths' constants: k(e) = x^e mod P in the reflected layout a
 * 64-bit carry-less multiply wants (see c32c_fold), for the fold distances
 * they use: 2048 bits (four 512-bit registers a step), 512 (one register
 * into the next), 384, 256 and 128 (a register's 128-bit lanes into its
 * last; c32c_klanes lays them out lane by lane, lane 3's zero); on 256-bit
 * registers 1024 (four a step), then 256 and 128, which are c32c_klanes'
 * lanes 1 and 2. Each distance D needs two: x^(D+63) for a lane's first
 * 64 bits and x^(D-1) for its second.
 */
static uint64_t c32c_k2048[2], c32c_k512[2], c32c_klanes[8], c32c_k1024[2];

/*
 * zlib's CRC-32 (the vector slots' and the manifest's checksum) folds on
 * PCLMULQDQ the same way, four 128-bit registers 64 bytes a step: its
 * constants for 512 bits and 128, and whether the CPU has the instruction.
 */
static uint64_t crcz_k512[2], crcz_k128[2];
static unsigned crcz_hw;

/*
 * x^e mod P, bit-reversed into the top half of 64 bits; P is given with its
 * x^32 term (0x11EDC6F41 for CRC-32C, 0x104C11DB7 for zlib's CRC-32).
 */
static uint64_t crc_xpow(uint64_t poly, uint32_t e)
{
	uint64_t r = 1, out = 0;

	while (e--) {
		r <<= 1;
		if (r & 0x100000000ull)
			r ^= poly;
	}
	for (uint32_t d = 0; d < 32; d++) /* coefficient of x^d at bit 63 - d */
		if ((r >> d) & 1)
			out |= 1ull << (63 - d);
	return out;
}

static uint64_t c32c_xpow(uint32_t e)
{
	return crc_xpow(0x11EDC6F41ull, e);
}

/* Table update of a raw (not inverted) CRC-32C state. */
static uint32_t c32c_sw(uint32_t c, const uint8_t *p, size_t n)
{
	while (n--)
		c = c32c_tab[(c ^ *p++) & 0xffu] ^ (c >> 8);
	return c;
}

/* Build the reflected table (polynomial 0x82F63B78), the shift tables, probe for SSE4.2. */
static void c32c_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		c32c_tab[i] = c;
	}
	for (uint32_t k = 0; k < 4; k++)
		for (uint32_t b = 0; b < 256; b++) {
			uint32_t c = b << (8 * k);

			for (uint32_t z = 0; z < C32C_SPAN; z++) /* C32C_SPAN zero bytes */
				c = c32c_tab[c & 0xffu] ^ (c >> 8);
			c32c_shift1[k][b] = c;
			for (uint32_t z = 0; z < C32C_SPAN; z++)
				c = c32c_tab[c & 0xffu] ^ (c >> 8);
			c32c_shift2[k][b] = c;
		}
	c32c_k2048[0] = c32c_xpow(2048 + 63);
	c32c_k2048[1] = c32c_xpow(2048 - 1);
	c32c_k512[0] = c32c_xpow(512 + 63);
	c32c_k512[1] = c32c_xpow(512 - 1);
	for (uint32_t l = 0; l < 3; l++) {
		c32c_klanes[2 * l] = c32c_xpow(128 * (3 - l) + 63);
		c32c_klanes[2 * l + 1] = c32c_xpow(128 * (3 - l) - 1);
	}
	c32c_k1024[0] = c32c_xpow(1024 + 63);
	c32c_k1024[1] = c32c_xpow(1024 - 1);
#if defined(__x86_64__)
	__builtin_cpu_init();
	/* GCC returns the feature's bit (256 for sse4.2), not 1: a path number needs 0 or 1 */
	c32c_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
#if defined(__clang__) || __GNUC__ >= 9
	if (c32c_hw && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("vpclmulqdq") &&
	    __builtin_cpu_supports("pclmul"))
		c32c_hw = 2;
	if (c32c_hw == 2 && __builtin_cpu_supports("avx512f"))
		c32c_hw = 3;
	crcz_hw = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1") ? 1 : 0;
#endif
#endif
	crcz_k512[0] = crc_xpow(0x104C11DB7ull, 512 + 63);
	crcz_k512[1] = crc_xpow(0x104C11DB7ull, 512 - 1);
	crcz_k128[0] = crc_xpow(0x104C11DB7ull, 128 + 63);
	crcz_k128[1] = crc_xpow(0x104C11DB7ull, 128 - 1);
}

static inline uint32_t c32c_shift(const uint32_t t[4][256], uint32_t c)
{
	return t[0][c & 0xffu] ^ t[1][(c >> 8) & 0xffu] ^ t[2][(c >> 16) & 0xffu] ^ t[3][c >> 24];
}

#if defined(__x86_64__)
/* SSE4.2 update of a raw CRC-32C state, 8 bytes an instruction, three chains at once. */
__attribute__((target("sse4.2"))) static uint32_t c32c_sse42(uint32_t c, const uint8_t *p,
							      size_t n)
{
	uint64_t c64 = c;

	while (n >= 3 * C32C_SPAN) {
		uint64_t c1 = 0, c2 = 0;

		for (uint32_t i = 0; i < C32C_SPAN; i += 8) {
			uint64_t v0, v1, v2;

			memcpy(&v0, p + i, 8);
			memcpy(&v1, p + C32C_SPAN + i, 8);
			memcpy(&v2, p + 2 * C32C_SPAN + i, 8);
			c64 = _mm_crc32_u64(c64, v0);
			c1 = _mm_crc32_u64(c1, v1);
			c2 = _mm_crc32_u64(c2, v2);
		}
		c64 = c32c_shift(c32c_shift2, (uint32_t) c64) ^
		      c32c_shift(c32c_shift1, (uint32_t) c1) ^ (uint32_t) c2;
		p += 3 * C32C_SPAN;
		n -= 3 * C32C_SPAN;
	}
	while (n >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c64 = _mm_crc32_u64(c64, v);
		p += 8;
		n -= 8;
	}
	c = (uint32_t) c64;
	while (n--)
		c = _mm_crc32_u8(c, *p++);
	return c;
}
#endif

#if defined(__x86_64__) && (defined(__clang__) || __GNUC__ >= 9)
#define C32C_HAVE_FOLD 1
#ifndef PFD
#define PFD 4096
#endif
/*
 * Fold lanes of a toward data D bits later: k holds, in every 128-bit lane,
 * x^(D+63) mod P then x^(D-1) mod P (c32c_xpow's layout).
 *
 * Why those powers. A 128-bit lane loaded from the message, little-endian,
 * holds the polynomial whose x^127 term is the first byte's lowest bit, so
 * the lane is A = H x^64 + L, H in its first 64 bits. A lane D bits before
 * the end of another contributes A x^D to it, and A x^D = H x^(64+D) + L x^D
 * modulo P, a polynomial under 96 bits that can be XORed into the later
 * lane. The carry-less product of two reflected 64-bit operands lands one
 * degree low in the 128-bit lane (bit k holds degree 126 - k, the lane
 * wants 127 - k), which the constants make up: x^(D+63) and x^(D-1).
 */
__attribute__((target("avx512f,vpclmulqdq"))) static inline __m512i c32c_fold512(__m512i a,
										   __m512i k)
{
	return _mm512_xor_si512(_mm512_clmulepi64_epi128(a, k, 0x00),
				_mm512_clmulepi64_epi128(a, k, 0x11));
}

/*
 * n >= 256: four 512-bit registers folded 256 bytes a step, joined into one
 * register, its four lanes into one; the CRC of those 16 bytes (from state
 * 0: they already carry the state, XORed into the first four bytes) and of
 * the tail under 64 bytes on the crc32 instruction.
 */
__attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2"))) static uint32_t c32c_fold(
	uint32_t c, const uint8_t *p, size_t n)
{
	const __m512i k2048 = _mm512_broadcast_i32x4(_mm_loadu_si128((const void *) c32c_k2048));
	const __m512i k512 = _mm512_broadcast_i32x4(_mm_loadu_si128((const void *) c32c_k512));
	__m512i a0 = _mm512_loadu_si512(p), a1 = _mm512_loadu_si512(p + 64),
		a2 = _mm512_loadu_si512(p + 128), a3 = _mm512_loadu_si512(p + 192);
	__m128i x;
	uint64_t lo, hi, c64;

	a0 = _mm512_xor_si512(a0, _mm512_maskz_set1_epi32(1, (int) c));
	p += 256;
	n -= 256;
	while (n >= 256) {
		/*
		 * 2 KiB ahead, as c32c_fold2 does (its comment says why): on a
		 * Zen 5 core +4% to a mapped query at 1M (1 and 4 KiB: no better)
		 */
		__builtin_prefetch(p + 2048);
		__builtin_prefetch(p + 2048 + 64);
		__builtin_prefetch(p + 2048 + 128);
		__builtin_prefetch(p + 2048 + 192);
		a0 = _mm512_xor_si512(c32c_fold512(a0, k2048), _mm512_loadu_si512(p));
		a1 = _mm512_xor_si512(c32c_fold512(a1, k2048), _mm512_loadu_si512(p + 64));
		a2 = _mm512_xor_si512(c32c_fold512(a2, k2048), _mm512_loadu_si512(p + 128));
		a3 = _mm512_xor_si512(c32c_fold512(a3, k2048), _mm512_loadu_si512(p + 192));
		p += 256;
		n -= 256;
	}
	a1 = _mm512_xor_si512(c32c_fold512(a0, k512), a1);
	a2 = _mm512_xor_si512(c32c_fold512(a1, k512), a2);
	a3 = _mm512_xor_si512(c32c_fold512(a2, k512), a3);
	while (n >= 64) {
		a3 = _mm512_xor_si512(c32c_fold512(a3, k512), _mm512_loadu_si512(p));
		p += 64;
		n -= 64;
	}
	/* lanes 0-2 toward lane 3 (384, 256 and 128 bits); lane 3 as it is */
	a0 = _mm512_mask_mov_epi64(c32c_fold512(a3, _mm512_loadu_si512(c32c_klanes)), 0xc0, a3);
	x = _mm_xor_si128(_mm_xor_si128(_mm512_extracti32x4_epi32(a0, 0),
					_mm512_extracti32x4_epi32(a0, 1)),
			  _mm_xor_si128(_mm512_extracti32x4_epi32(a0, 2),
					_mm512_extracti32x4_epi32(a0, 3)));
	lo = (uint64_t) _mm_cvtsi128_si64(x);
	hi = (uint64_t) _mm_extract_epi64(x, 1);
	c64 = _mm_crc32_u64(_mm_crc32_u64(0, lo), hi);
	return c32c_sse42((uint32_t) c64, p, n);
}

__attribute__((target("avx2,vpclmulqdq"))) static inline __m256i c32c_fold256(__m256i a,
									      __m256i k)
{
	return _mm256_xor_si256(_mm256_clmulepi64_epi128(a, k, 0x00),
				_mm256_clmulepi64_epi128(a, k, 0x11));
}

/*
 * c32c_fold on 256-bit registers, for CPUs with VPCLMULQDQ but no AVX-512
 * (AMD Zen 3, Intel Alder Lake): n >= 128, four registers folded 128
 * bytes a step, joined into one, its two lanes into one. On a Zen 3 it
 * runs at 25 GB/s where the three crc32 chains run at 20 (80 KB buffers in
 * L2; bench/hfresh/README.md).
 */
__attribute__((target("avx2,vpclmulqdq,pclmul,sse4.2"))) static uint32_t c32c_fold2(
	uint32_t c, const uint8_t *p, size_t n)
{
	const __m256i k1024 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const void *) c32c_k1024));
	const __m256i k256 =
		_mm256_broadcastsi128_si256(_mm_loadu_si128((const void *) (c32c_klanes + 2)));
	const __m128i k128 = _mm_loadu_si128((const void *) (c32c_klanes + 4));
	__m256i a0 = _mm256_loadu_si256((const void *) p),
		a1 = _mm256_loadu_si256((const void *) (p + 32)),
		a2 = _mm256_loadu_si256((const void *) (p + 64)),
		a3 = _mm256_loadu_si256((const void *) (p + 96));
	__m128i lo, x;
	uint64_t c64;

	a0 = _mm256_xor_si256(a0, _mm256_zextsi128_si256(_mm_cvtsi32_si128((int) c)));
	p += 128;
	n -= 128;
	while (n >= 128) {
		/*
		 * 2 KiB ahead, where the bytes come straight from memory (a mapped
		 * posting): the hardware's stream prefetch stops at every 4 KiB
		 * page and starts again only after misses. Prefetches do not
		 * fault, so running past the end is harmless.
		 */
		__builtin_prefetch(p + 2048);
		__builtin_prefetch(p + 2048 + 64);
		a0 = _mm256_xor_si256(c32c_fold256(a0, k1024), _mm256_loadu_si256((const void *) p));
		a1 = _mm256_xor_si256(c32c_fold256(a1, k1024),
				      _mm256_loadu_si256((const void *) (p + 32)));
		a2 = _mm256_xor_si256(c32c_fold256(a2, k1024),
				      _mm256_loadu_si256((const void *) (p + 64)));
		a3 = _mm256_xor_si256(c32c_fold256(a3, k1024),
				      _mm256_loadu_si256((const void *) (p + 96)));
		p += 128;
		n -= 128;
	}
	a1 = _mm256_xor_si256(c32c_fold256(a0, k256), a1);
	a2 = _mm256_xor_si256(c32c_fold256(a1, k256), a2);
	a3 = _mm256_xor_si256(c32c_fold256(a2, k256), a3);
	while (n >= 32) {
		a3 = _mm256_xor_si256(c32c_fold256(a3, k256), _mm256_loadu_si256((const void *) p));
		p += 32;
		n -= 32;
	}
	/* lane 0 toward lane 1 (128 bits), then the CRC of those 16 bytes from state 0 */
	lo = _mm256_castsi256_si128(a3);
	x = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(lo, k128, 0x00),
					_mm_clmulepi64_si128(lo, k128, 0x11)),
			  _mm256_extracti128_si256(a3, 1));
	c64 = _mm_crc32_u64(_mm_crc32_u64(0, (uint64_t) _mm_cvtsi128_si64(x)),
			    (uint64_t) _mm_extract_epi64(x, 1));
	return c32c_sse42((uint32_t) c64, p, n);
}
#endif

/*
 * Continue a raw CRC-32C state over n bytes on the given path (0 table,
 * 1 SSE4.2, 2 folding 256 bits, 3 folding 512 bits).
 */
static uint32_t c32c_run(unsigned path, uint32_t c, const void *p, size_t n)
{
#ifdef C32C_HAVE_FOLD
	if (path >= 3 && n >= 256)
		return c32c_fold(c, p, n);
	if (path == 2 && n >= 128)
		return c32c_fold2(c, p, n);
#endif
#if defined(__x86_64__)
	if (path >= 1)
		return c32c_sse42(c, p, n);
#endif
	(void) path;
	return c32c_sw(c, p, n);
}

/* Continue a raw CRC-32C state over n bytes on the best path the CPU has. */
static uint32_t c32c_update(uint32_t c, const void *p, size_t n)
{
	pthread_once(&c32c_once, c32c_init);
	return c32c_run(c32c_hw, c, p, n);
}

unsigned hfr_crc32c_paths(void)
{
	pthread_once(&c32c_once, c32c_init);
	return c32c_hw + 1;
}

uint32_t hfr_crc32c_path(unsigned path, uint32_t state, const void *p, size_t n)
{
	pthread_once(&c32c_once, c32c_init);
	return c32c_run(path < c32c_hw ? path : c32c_hw, state, p, n);
}

uint32_t hfr_crc32c(const void *p, size_t n)
{
	return ~c32c_update(~0u, p, n);
}

uint32_t hfr_crc32c_sw(const void *p, size_t n)
{
	pthread_once(&c32c_once, c32c_init);
	return ~c32c_sw(~0u, p, n);
}

/* ---- zlib's CRC-32 ---- */

#if defined(__x86_64__) && (defined(__clang__) || __GNUC__ >= 9)
#define CRCZ_HAVE_FOLD 1
__attribute__((target("pclmul,sse4.1"))) static inline __m128i crcz_fold128(__m128i a, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00), _mm_clmulepi64_si128(a, k, 0x11));
}

/*
 * n >= 64, c a raw state: four registers folded 64 bytes a step (c32c_fold's
 * scheme on 128-bit registers, zlib's polynomial), joined into one, then 16
 * bytes at a time; the raw CRC from state 0 of the 16 bytes left in the
 * register is the state, which zlib's crc32 (its pre- and post-inversion
 * undone) continues over the tail under 16 bytes.
 */
__attribute__((target("pclmul,sse4.1"))) static uint32_t crcz_fold(uint32_t c, const uint8_t *p,
								    size_t n)
{
	const __m128i k512 = _mm_loadu_si128((const void *) crcz_k512);
	const __m128i k128 = _mm_loadu_si128((const void *) crcz_k128);
	__m128i a0 = _mm_loadu_si128((const void *) p), a1 = _mm_loadu_si128((const void *) (p + 16)),
		a2 = _mm_loadu_si128((const void *) (p + 32)),
		a3 = _mm_loadu_si128((const void *) (p + 48));
	uint8_t last[16];

	a0 = _mm_xor_si128(a0, _mm_cvtsi32_si128((int) c));
	p += 64;
	n -= 64;
	while (n >= 64) {
		a0 = _mm_xor_si128(crcz_fold128(a0, k512), _mm_loadu_si128((const void *) p));
		a1 = _mm_xor_si128(crcz_fold128(a1, k512), _mm_loadu_si128((const void *) (p + 16)));
		a2 = _mm_xor_si128(crcz_fold128(a2, k512), _mm_loadu_si128((const void *) (p + 32)));
		a3 = _mm_xor_si128(crcz_fold128(a3, k512), _mm_loadu_si128((const void *) (p + 48)));
		p += 64;
		n -= 64;
	}
	a1 = _mm_xor_si128(crcz_fold128(a0, k128), a1);
	a2 = _mm_xor_si128(crcz_fold128(a1, k128), a2);
	a3 = _mm_xor_si128(crcz_fold128(a2, k128), a3);
	while (n >= 16) {
		a3 = _mm_xor_si128(crcz_fold128(a3, k128), _mm_loadu_si128((const void *) p));
		p += 16;
		n -= 16;
	}
	_mm_storeu_si128((void *) last, a3);
	c = ~(uint32_t) crc32(0xffffffffUL, last, 16);
	return ~(uint32_t) crc32(~c, p, (uInt) n);
}
#endif

/* Continue a raw zlib CRC-32 state on the given path (0 zlib's tables, 1 folding). */
static uint32_t crcz_run(unsigned path, uint32_t c, const uint8_t *p, size_t n)
{
#ifdef CRCZ_HAVE_FOLD
	if (path >= 1 && n >= 64)
		return crcz_fold(c, p, n);
#endif
	(void) path;
	while (n) { /* zlib's length is an unsigned int */
		uInt k = n > 0x40000000u ? 0x40000000u : (uInt) n;

		c = ~(uint32_t) crc32(~c, p, k);
		p += k;
		n -= k;
	}
	return c;
}

uint32_t hfr_crc32z(uint32_t crc, const void *p, size_t n)
{
	pthread_once(&c32c_once, c32c_init);
	return ~crcz_run(crcz_hw, ~crc, p, n);
}

unsigned hfr_crc32z_paths(void)
{
	pthread_once(&c32c_once, c32c_init);
	return crcz_hw + 1;
}

uint32_t hfr_crc32z_path(unsigned path, uint32_t crc, const void *p, size_t n)
{
	pthread_once(&c32c_once, c32c_init);
	return ~crcz_run(path, ~crc, p, n);
}

/* A posting's checksum (crc field taken as 0) by its record version. */
static uint32_t post_crc(const hfr_post_hdr *h, const uint8_t *body, size_t n)
{
	hfr_post_hdr z = *h;

	z.crc = 0;
	if (h->version == HFR_POST_VERSION_ZLIB) {
		return hfr_crc32z(hfr_crc32z(0, &z, sizeof(z)), body, n);
	}
	return ~c32c_update(c32c_update(~0u, &z, sizeof(z)), body, n);
}

/* ---- the directory sync ---- */

int hfr_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

/* ---- posting records ---- */

void hfr_entry_put(uint8_t *ent, uint32_t dp, unsigned bits, uint32_t id, uint32_t ver,
		   const hfr_fac *f, const uint64_t *code, const uint8_t *ex)
{
	uint16_t pad = 0;

	memcpy(ent + 0, &id, 4);
	memcpy(ent + 4, &ver, 4);
	memcpy(ent + HFR_ENT_ADD, &f->add, 4);
	if (bits > 1) {
		memcpy(ent + HFR_ENT_RESCALE_EX, &f->rescale_ex, 4);
		memcpy(ent + HFR_ENT_ERR_EX, &f->err_ex, 4);
		memcpy(ent + HFR_ENT_QERR_EX, &f->qerr_ex, 4);
		memcpy(ent + HFR_ENTRY_HDR, ex, hfr_ex_code_bytes(dp, bits));
		return;
	}
	memcpy(ent + 12, &f->rescale, 4);
	memcpy(ent + 16, &f->err, 4);
	memcpy(ent + 20, &f->pop, 2);
	memcpy(ent + 22, &pad, 2);
	memcpy(ent + HFR_ENTRY_HDR, code, dp / 8);
}

void hfr_entry_get(const uint8_t *ent, uint32_t dp, unsigned bits, uint32_t *id, uint32_t *ver,
		   hfr_fac *f)
{
	(void) dp;
	memcpy(id, ent + 0, 4);
	memcpy(ver, ent + 4, 4);
	memcpy(&f->add, ent + HFR_ENT_ADD, 4);
	if (bits > 1) {
		memcpy(&f->rescale_ex, ent + HFR_ENT_RESCALE_EX, 4);
		memcpy(&f->err_ex, ent + HFR_ENT_ERR_EX, 4);
		memcpy(&f->qerr_ex, ent + HFR_ENT_QERR_EX, 4);
		f->rescale = f->err = 0;
		f->pop = 0;
		return;
	}
	memcpy(&f->rescale, ent + 12, 4);
	memcpy(&f->err, ent + 16, 4);
	memcpy(&f->pop, ent + 20, 2);
	f->rescale_ex = f->err_ex = f->qerr_ex = 0;
}

void hfr_post_seal(void *post, uint32_t posting_id, uint32_t count, uint32_t dp, unsigned bits)
{
	hfr_post_hdr h = {
		.magic = HFR_POST_MAGIC,
		.version = bits > 1 ? HFR_POST_VERSION_EX : HFR_POST_VERSION,
		.entry_size = (uint16_t) hfr_entry_size(dp, bits),
		.posting_id = posting_id,
		.count = count,
		.dp = dp,
		.crc = 0,
		.code_bits = bits > 1 ? bits : 0,
		.reserved = 0,
	};
	size_t body = HFR_POST_HDR + (size_t) count * hfr_entry_size(dp, bits);

	h.crc = post_crc(&h, (const uint8_t *) post + HFR_POST_HDR, body - HFR_POST_HDR);
	memcpy(post, &h, sizeof(h));
}

int hfr_post_check(const void *buf, size_t len, uint32_t dp, unsigned bits, uint32_t expect_id,
		   uint32_t expect_count, int check_crc, hfr_post_hdr *out, cv_err *e)
{
	hfr_post_hdr h;
	size_t body;

	if (len < HFR_POST_HDR)
		return cv_err_set(e, -EBADMSG, "posting record truncated: %zu bytes, header needs %u",
				  len, HFR_POST_HDR);
	memcpy(&h, buf, sizeof(h));
	if (h.magic != HFR_POST_MAGIC)
		return cv_err_set(e, -EBADMSG, "bad posting magic 0x%08x at byte 0", h.magic);
	if (bits > 1 ? h.version != HFR_POST_VERSION_EX :
		       h.version != HFR_POST_VERSION && h.version != HFR_POST_VERSION_ZLIB)
		return cv_err_set(e, -EBADMSG,
				  "posting format version %u at byte 4, expected %s", h.version,
				  bits > 1 ? "3 (extended codes)" : "1 or 2 (1-bit codes)");
	if (h.code_bits != (bits > 1 ? bits : 0u))
		return cv_err_set(e, -EBADMSG, "posting code bits %u at byte 24, the index has %u",
				  h.code_bits, bits);
	if (h.dp != dp || dp == 0 || dp % 64 || h.entry_size != hfr_entry_size(dp, bits))
		return cv_err_set(e, -EBADMSG,
				  "posting dims %u / entry size %u at byte 16, expected %u / %u", h.dp,
				  h.entry_size, dp, hfr_entry_size(dp, bits));
	if (expect_id != UINT32_MAX && h.posting_id != expect_id)
		return cv_err_set(e, -EBADMSG, "posting id %u at byte 8, expected %u", h.posting_id,
				  expect_id);
	if (expect_count != UINT32_MAX && h.count != expect_count)
		return cv_err_set(e, -EBADMSG, "posting count %u at byte 12, manifest says %u",
				  h.count, expect_count);
	if (h.count > (len - HFR_POST_HDR) / h.entry_size)
		return cv_err_set(e, -EBADMSG,
				  "posting of %u entries does not fit in %zu bytes (truncated?)",
				  h.count, len);
	body = HFR_POST_HDR + (size_t) h.count * h.entry_size;
	if (check_crc) {
		uint32_t c = post_crc(&h, (const uint8_t *) buf + HFR_POST_HDR, body - HFR_POST_HDR);

		if (c != h.crc)
			return cv_err_set(e, -EBADMSG,
					  "posting checksum mismatch (stored 0x%08x, computed 0x%08x)",
					  h.crc, c);
	}
	if (out)
		*out = h;
	return 0;
}

void hfr_postings_path(const char *dir, uint32_t gen, char *buf, size_t n)
{
	snprintf(buf, n, "%s/postings.%u.dat", dir, gen);
}

/* ---- manifest ---- */

void hfr_meta_sizes(hfr_meta *m)
{
	uint32_t es, slot;

	m->di = m->metric == CV_METRIC_IP ? m->d + 1 : m->d;
	m->dp = hfr_dp(m->di);
	if (m->code_bits < HFR_MIN_CODE_BITS)
		m->code_bits = HFR_MIN_CODE_BITS;
	es = hfr_entry_size(m->dp, m->code_bits);
	m->max_entries = (m->max_posting_kb * 1024u - HFR_POST_HDR) / es;
	if (m->max_entries < 4)
		m->max_entries = 4;
	m->min_entries = m->max_entries / 4;
	if (m->min_entries < 1)
		m->min_entries = 1;
	slot = (m->d * 4u + 4u + 15u) / 16u * 16u;
	if (slot > HFR_BLOCK) {
		m->vec_slot = (slot + HFR_BLOCK - 1) / HFR_BLOCK * HFR_BLOCK;
		m->vec_per_block = 1;
	} else {
		m->vec_slot = slot;
		m->vec_per_block = HFR_BLOCK / slot;
	}
}

void hfr_meta_free(hfr_meta *m)
{
	if (!m)
		return;
	free(m->posts);
	free(m->cent);
	free(m->ver);
	m->posts = NULL;
	m->cent = NULL;
	m->ver = NULL;
}

/* Bytes of a manifest with these counts (0 on overflow). */
static uint64_t meta_len(uint64_t nposts, uint64_t di, uint64_t nids)
{
	if (nposts > (1ull << 31) || nids > (1ull << 32) || di > (1ull << 20))
		return 0;
	return HFR_META_HDR + nposts * sizeof(hfr_post) + nposts * di * 4 + nids * 4 + 8;
}

#define PUT(off, v) memcpy(buf + (off), &(v), sizeof(v))
#define GET(off, v) memcpy(&(v), buf + (off), sizeof(v))

int hfr_meta_write(const char *dir, const hfr_meta *m, cv_err *e)
{
	uint64_t total = meta_len(m->nposts, m->di, m->nids);
	char tmp[4096], path[4096];
	uint8_t *buf = NULL;
	uint32_t fmt = m->code_bits > 1 ? HFR_FORMAT_VERSION_EX : HFR_FORMAT_VERSION,
		 hs = HFR_META_HDR, met = (uint32_t) m->metric, crc,
		 endm = 0x444e4548u; /* "HEND" */
	size_t off;
	int fd = -1, rc;

	if (!total)
		return cv_err_set(e, -EOVERFLOW, "%s: index too large for the manifest", dir);
	buf = calloc(1, total);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, HFR_META_MAGIC, 8);
	PUT(8, fmt);
	PUT(12, hs);
	PUT(16, m->d);
	PUT(20, m->di);
	PUT(24, m->dp);
	PUT(28, met);
	PUT(32, m->max_posting_kb);
	PUT(36, m->replicas);
	PUT(40, m->rng_factor);
	PUT(48, m->max_entries);
	PUT(52, m->min_entries);
	PUT(56, m->rot_seed);
	PUT(64, m->ip_m);
	PUT(68, m->postings_gen);
	PUT(72, m->generation);
	PUT(80, m->nids);
	PUT(84, m->live);
	PUT(88, m->nposts);
	PUT(92, m->vec_slot);
	PUT(96, m->vec_per_block);
	if (m->code_bits > 1)
		PUT(100, m->code_bits);
	PUT(104, m->postings_end);
	PUT(112, total);
	off = HFR_META_HDR;
	memcpy(buf + off, m->posts, (size_t) m->nposts * sizeof(hfr_post));
	off += (size_t) m->nposts * sizeof(hfr_post);
	memcpy(buf + off, m->cent, (size_t) m->nposts * m->di * 4);
	off += (size_t) m->nposts * m->di * 4;
	memcpy(buf + off, m->ver, (size_t) m->nids * 4);
	off += (size_t) m->nids * 4;
	crc = hfr_crc32z(0, buf, off);
	PUT(off, crc);
	PUT(off + 4, endm);

	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, HFR_META_NAME);
	snprintf(path, sizeof(path), "%s/%s", dir, HFR_META_NAME);
	fd = cv_open_new(tmp, O_WRONLY, 0644);
	if (fd < 0) {
		rc = cv_err_set(e, -errno, "%s: cannot create: %s", tmp, strerror(errno));
		goto out;
	}
	rc = cvu_pwrite_full(fd, buf, total, 0);
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	if (rc) {
		cv_err_set(e, rc, "%s: write failed: %s", tmp, strerror(-rc));
		goto out;
	}
	close(fd);
	fd = -1;
	hfr_crash_point();
	if (rename(tmp, path) < 0) {
		rc = cv_err_set(e, -errno, "%s: rename failed: %s", path, strerror(errno));
		goto out;
	}
	rc = hfr_fsync_dir(dir);
	if (rc)
		cv_err_set(e, rc, "%s: fsync failed", dir);
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}

int hfr_meta_read(const char *dir, hfr_meta *m, cv_err *e)
{
	char path[4096], magic[8];
	uint8_t *buf = NULL;
	uint64_t total, want;
	uint32_t fmt, hs, met, crc, c;
	struct stat st;
	size_t off;
	int fd, rc;

	memset(m, 0, sizeof(*m));
	snprintf(path, sizeof(path), "%s/%s", dir, HFR_META_NAME);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return cv_err_set(e, errno == ENOENT ? -EBADMSG : -errno, "%s: cannot open: %s",
				  path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		rc = cv_err_set(e, -errno, "%s: stat failed", path);
		goto out;
	}
	if ((uint64_t) st.st_size < HFR_META_HDR + 8) {
		rc = cv_err_set(e, -EBADMSG, "%s: truncated manifest (%lld bytes)", path,
				(long long) st.st_size);
		goto out;
	}
	buf = malloc((size_t) st.st_size);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	rc = cvu_pread_exact(fd, buf, (size_t) st.st_size, 0);
	if (rc) {
		cv_err_set(e, rc, "%s: read failed", path);
		goto out;
	}
	rc = -EBADMSG;
	memcpy(magic, buf, 8);
	if (memcmp(magic, HFR_META_MAGIC, 8)) {
		cv_err_set(e, rc, "%s: bad magic at byte 0 (not an hfresh manifest)", path);
		goto out;
	}
	GET(8, fmt);
	GET(12, hs);
	if ((fmt != HFR_FORMAT_VERSION && fmt != HFR_FORMAT_VERSION_EX) || hs != HFR_META_HDR) {
		cv_err_set(e, rc, "%s: format version %u at byte 8, expected %u or %u", path, fmt,
			   HFR_FORMAT_VERSION, HFR_FORMAT_VERSION_EX);
		goto out;
	}
	GET(112, total);
	if (total != (uint64_t) st.st_size) {
		cv_err_set(e, rc, "%s: length %lld, header at byte 112 says %llu (truncated?)", path,
			   (long long) st.st_size, (unsigned long long) total);
		goto out;
	}
	GET(total - 8, crc);
	c = hfr_crc32z(0, buf, total - 8);
	if (c != crc) {
		cv_err_set(e, rc, "%s: manifest checksum mismatch at byte %llu", path,
			   (unsigned long long) (total - 8));
		goto out;
	}
	GET(16, m->d);
	GET(20, m->di);
	GET(24, m->dp);
	GET(28, met);
	GET(32, m->max_posting_kb);
	GET(36, m->replicas);
	GET(40, m->rng_factor);
	GET(48, m->max_entries);
	GET(52, m->min_entries);
	GET(56, m->rot_seed);
	GET(64, m->ip_m);
	GET(68, m->postings_gen);
	GET(72, m->generation);
	GET(80, m->nids);
	GET(84, m->live);
	GET(88, m->nposts);
	GET(92, m->vec_slot);
	GET(96, m->vec_per_block);
	GET(100, m->code_bits);
	if (fmt == HFR_FORMAT_VERSION ? m->code_bits != 0 :
	    m->code_bits < 2 || m->code_bits > HFR_MAX_CODE_BITS) {
		cv_err_set(e, rc, "%s: code bits %u at byte 100 do not fit format version %u", path,
			   m->code_bits, fmt);
		goto out;
	}
	if (m->code_bits == 0)
		m->code_bits = 1;
	GET(104, m->postings_end);
	m->metric = (cv_metric) met;
	{
		hfr_meta chk = *m;

		if (met > CV_METRIC_COSINE || m->d == 0 || m->d > 65536 ||
		    m->max_posting_kb < HFR_MIN_MAX_POSTING_KB ||
		    m->max_posting_kb > HFR_MAX_MAX_POSTING_KB || m->replicas < HFR_MIN_REPLICAS ||
		    m->replicas > HFR_MAX_REPLICAS) {
			cv_err_set(e, rc, "%s: parameters out of range in the header", path);
			goto out;
		}
		hfr_meta_sizes(&chk);
		if (chk.di != m->di || chk.dp != m->dp || chk.vec_slot != m->vec_slot ||
		    chk.vec_per_block != m->vec_per_block || m->live > m->nids ||
		    m->postings_end % HFR_BLOCK) {
			cv_err_set(e, rc, "%s: inconsistent sizes in the header", path);
			goto out;
		}
	}
	want = meta_len(m->nposts, m->di, m->nids);
	if (want != total) {
		cv_err_set(e, rc, "%s: counts in the header need %llu bytes, file has %llu", path,
			   (unsigned long long) want, (unsigned long long) total);
		goto out;
	}
	m->posts = malloc((size_t) m->nposts * sizeof(hfr_post) + 1);
	m->cent = malloc((size_t) m->nposts * m->di * 4 + 1);
	m->ver = malloc((size_t) m->nids * 4 + 1);
	if (!m->posts || !m->cent || !m->ver) {
		rc = -ENOMEM;
		goto out;
	}
	off = HFR_META_HDR;
	memcpy(m->posts, buf + off, (size_t) m->nposts * sizeof(hfr_post));
	off += (size_t) m->nposts * sizeof(hfr_post);
	memcpy(m->cent, buf + off, (size_t) m->nposts * m->di * 4);
	off += (size_t) m->nposts * m->di * 4;
	memcpy(m->ver, buf + off, (size_t) m->nids * 4);
	for (uint32_t p = 0; p < m->nposts; p++) {
		const hfr_post *ps = &m->posts[p];

		if (!ps->alive)
			continue;
		if (ps->off % HFR_BLOCK || ps->len != hfr_post_disk_len(ps->count, m->dp, m->code_bits) ||
		    ps->off + ps->len > m->postings_end || ps->count > m->max_entries * 2u + 64u) {
			cv_err_set(e, rc, "%s: posting %u table entry at byte %zu is inconsistent",
				   path, p, (size_t) HFR_META_HDR + p * sizeof(hfr_post));
			goto out;
		}
	}
	rc = 0;
out:
	if (rc)
		hfr_meta_free(m);
	free(buf);
	close(fd);
	return rc;
}

/* ---- vector store ---- */

void hfr_vec_pack(const hfr_meta *m, const float *x, uint8_t *slot)
{
	uint32_t c = hfr_crc32z(0, x, m->d * 4u);

	memset(slot, 0, m->vec_slot);
	memcpy(slot, x, (size_t) m->d * 4);
	memcpy(slot + (size_t) m->d * 4, &c, 4);
}

int hfr_vec_check(const hfr_meta *m, const uint8_t *slot)
{
	uint32_t c, s;

	c = hfr_crc32z(0, slot, m->d * 4u);
	memcpy(&s, slot + (size_t) m->d * 4, 4);
	return c == s ? 0 : -EBADMSG;
}

void hfr_to_internal(const hfr_meta *m, const float *x, float *out)
{
	uint32_t d = m->d;

	memcpy(out, x, sizeof(float) * d);
	if (m->metric == CV_METRIC_COSINE) {
		double n = 0;

		for (uint32_t i = 0; i < d; i++)
			n += (double) x[i] * x[i];
		if (n > 0) {
			float inv = (float) (1.0 / sqrt(n));

			for (uint32_t i = 0; i < d; i++)
				out[i] *= inv;
		}
	} else if (m->metric == CV_METRIC_IP) {
		double n = 0, r;

		for (uint32_t i = 0; i < d; i++)
			n += (double) x[i] * x[i];
		/* a vector longer than M (inserted later) is clamped to the sphere */
		r = (double) m->ip_m * m->ip_m - n;
		out[d] = r > 0 ? (float) sqrt(r) : 0.0f;
	}
}
