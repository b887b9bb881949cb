/*
 * hnsw_dist.c - the graph's distance kernels: quant8 at scalar, AVX2 and
 * AVX-512 chosen once from cpuid, and float32 through the engine's kernels.
 *
 * Why not engine/kernels: the search calls a kernel for every neighbour it
 * scores, and the kernels here take a prepared query (hnsw_query) so the
 * metric's constant parts and quant8's per-dimension transform are paid
 * once per query, not per distance. They are compiled with target
 * attributes, so the engine's normal build (no -march) still runs AVX-512
 * where the CPU has it. Several accumulators hide the FMA latency: a
 * single running sum (hnswlib's loop) waits 4 cycles per 16 floats.
 *
 * Query-side transforms (x ~ lo + s * c for a code c):
 *   L2:     |q - x|^2 = cst + sum w_j (a_j - c_j)^2, a_j = (q_j - lo_j) / s_j,
 *           w_j = s_j^2, cst = sum over s_j == 0 of (q_j - lo_j)^2
 *   IP/cos: base - <q, x> = cst + sum a_j c_j, a_j = -q_j s_j,
 *           cst = base - <q, lo>, base = 1 for cosine, 0 for IP
 */
#include "hnsw_int.h"
#include "kernels/kernels.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

/*
 * ---- float32: the engine's kernels (engine/kernels/), one set per process ----
 * The prepared query adds nothing for float32 but the metric's constant, so
 * these wrap cv_l2sq/cv_dot's per-level functions rather than repeat them.
 */

static const cvk_ops *k_f32;

static float l2_f32(const hnsw_query *q, const void *v, size_t d)
{
	return k_f32->l2sq(q->a, (const float *) v, d);
}

static float ip_f32(const hnsw_query *q, const void *v, size_t d)
{
	return q->cst - k_f32->dot(q->a, (const float *) v, d);
}

/* ---- scalar ---- */

static float l2_q8_scalar(const hnsw_query *q, const void *v, size_t d)
{
	const uint8_t *c = v;
	float s = 0;

	for (size_t i = 0; i < d; i++) {
		float t = q->a[i] - (float) c[i];

		s += q->w[i] * t * t;
	}
	return q->cst + s;
}

static float ip_q8_scalar(const hnsw_query *q, const void *v, size_t d)
{
	const uint8_t *c = v;
	float s = 0;

	for (size_t i = 0; i < d; i++)
		s += q->a[i] * (float) c[i];
	return q->cst + s;
}

/* ---- AVX2 ---- */

__attribute__((target("avx2,fma"))) static float hsum256(__m256 v)
{
	__m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);

	lo = _mm_add_ps(lo, hi);
	lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
	lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
	return _mm_cvtss_f32(lo);
}

__attribute__((target("avx2,fma"))) static float l2_q8_avx2(const hnsw_query *q, const void *v,
							     size_t d)
{
	const uint8_t *c = v;
	__m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
	size_t i = 0;
	float s;

	for (; i + 16 <= d; i += 16) {
		__m128i b = _mm_loadu_si128((const __m128i *) (c + i));
		__m256 c0 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
		__m256 c1 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(b, 8)));
		__m256 t0 = _mm256_sub_ps(_mm256_loadu_ps(q->a + i), c0);
		__m256 t1 = _mm256_sub_ps(_mm256_loadu_ps(q->a + i + 8), c1);

		s0 = _mm256_fmadd_ps(_mm256_mul_ps(t0, t0), _mm256_loadu_ps(q->w + i), s0);
		s1 = _mm256_fmadd_ps(_mm256_mul_ps(t1, t1), _mm256_loadu_ps(q->w + i + 8), s1);
	}
	s = hsum256(_mm256_add_ps(s0, s1));
	for (; i < d; i++) {
		float t = q->a[i] - (float) c[i];

		s += q->w[i] * t * t;
	}
	return q->cst + s;
}

__attribute__((target("avx2,fma"))) static float ip_q8_avx2(const hnsw_query *q, const void *v,
							     size_t d)
{
	const uint8_t *c = v;
	__m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
	size_t i = 0;
	float s;

	for (; i + 16 <= d; i += 16) {
		__m128i b = _mm_loadu_si128((const __m128i *) (c + i));
		__m256 c0 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b));
		__m256 c1 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(b, 8)));

		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(q->a + i), c0, s0);
		s1 = _mm256_fmadd_ps(_mm256_loadu_ps(q->a + i + 8), c1, s1);
	}
	s = hsum256(_mm256_add_ps(s0, s1));
	for (; i < d; i++)
		s += q->a[i] * (float) c[i];
	return q->cst + s;
}

/* ---- AVX-512 ---- */

__attribute__((target("avx512f"))) static float l2_q8_avx512(const hnsw_query *q, const void *v,
							      size_t d)
{
	const uint8_t *c = v;
	__m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
	size_t i = 0;
	float s;

	for (; i + 32 <= d; i += 32) {
		__m512 c0 = _mm512_cvtepi32_ps(
			_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) (c + i))));
		__m512 c1 = _mm512_cvtepi32_ps(
			_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) (c + i + 16))));
		__m512 t0 = _mm512_sub_ps(_mm512_loadu_ps(q->a + i), c0);
		__m512 t1 = _mm512_sub_ps(_mm512_loadu_ps(q->a + i + 16), c1);

		s0 = _mm512_fmadd_ps(_mm512_mul_ps(t0, t0), _mm512_loadu_ps(q->w + i), s0);
		s1 = _mm512_fmadd_ps(_mm512_mul_ps(t1, t1), _mm512_loadu_ps(q->w + i + 16), s1);
	}
	for (; i + 16 <= d; i += 16) {
		__m512 c0 = _mm512_cvtepi32_ps(
			_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) (c + i))));
		__m512 t0 = _mm512_sub_ps(_mm512_loadu_ps(q->a + i), c0);

		s0 = _mm512_fmadd_ps(_mm512_mul_ps(t0, t0), _mm512_loadu_ps(q->w + i), s0);
	}
	s = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
	for (; i < d; i++) {
		float t = q->a[i] - (float) c[i];

		s += q->w[i] * t * t;
	}
	return q->cst + s;
}

__attribute__((target("avx512f"))) static float ip_q8_avx512(const hnsw_query *q, const void *v,
							      size_t d)
{
	const uint8_t *c = v;
	__m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
	size_t i = 0;
	float s;

	for (; i + 32 <= d; i += 32) {
		__m512 c0 = _mm512_cvtepi32_ps(
			_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) (c + i))));
		__m512 c1 = _mm512_cvtepi32_ps(
			_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) (c + i + 16))));

		s0 = _mm512_fmadd_ps(_mm512_loadu_ps(q->a + i), c0, s0);
		s1 = _mm512_fmadd_ps(_mm512_loadu_ps(q->a + i + 16), c1, s1);
	}
	for (; i + 16 <= d; i += 16) {
		__m512 c0 = _mm512_cvtepi32_ps(
			_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) (c + i))));

		s0 = _mm512_fmadd_ps(_mm512_loadu_ps(q->a + i), c0, s0);
	}
	s = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
	for (; i < d; i++)
		s += q->a[i] * (float) c[i];
	return q->cst + s;
}

/* ---- node-to-node (the heuristic), through the query kernels ---- */

static hnsw_qdist_fn k_l2_f32 = l2_f32, k_ip_f32 = ip_f32;
static hnsw_qdist_fn k_l2_q8 = l2_q8_scalar, k_ip_q8 = ip_q8_scalar;
static const char *k_name = "scalar";
static pthread_once_t k_once = PTHREAD_ONCE_INIT;

/* Pick the kernel set once from cpuid. */
static void kernels_init(void)
{
	k_f32 = cvk_active();
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f")) {
		k_l2_q8 = l2_q8_avx512;
		k_ip_q8 = ip_q8_avx512;
		k_name = "avx512";
	} else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
		k_l2_q8 = l2_q8_avx2;
		k_ip_q8 = ip_q8_avx2;
		k_name = "avx2";
	}
}

/* Float32 node-node distance: b is the query side, cst from the metric. */
static float nn_f32_l2(const struct hnsw *h, const void *a, const void *b)
{
	hnsw_query q = {.a = b};

	return k_l2_f32(&q, a, h->dim);
}

static float nn_f32_ip(const struct hnsw *h, const void *a, const void *b)
{
	hnsw_query q = {.a = b, .cst = h->p.metric == CV_METRIC_COSINE ? 1.0f : 0.0f};

	return k_ip_f32(&q, a, h->dim);
}

/* quant8 node-node distances: dequantise both sides (only the heuristic uses these). */
static float nn_q8_l2(const struct hnsw *h, const void *a, const void *b)
{
	const uint8_t *x = a, *y = b;
	float s = 0;

	for (size_t i = 0; i < h->dim; i++) {
		float t = (float) x[i] - (float) y[i];

		s += h->q_w[i] * t * t;
	}
	return s;
}

static float nn_q8_ip(const struct hnsw *h, const void *a, const void *b)
{
	const uint8_t *x = a, *y = b;
	float s = 0;

	for (size_t i = 0; i < h->dim; i++)
		s += (h->q_lo[i] + h->q_scale[i] * x[i]) * (h->q_lo[i] + h->q_scale[i] * y[i]);
	return (h->p.metric == CV_METRIC_COSINE ? 1.0f : 0.0f) - s;
}

__attribute__((target("avx512f"))) static float nn_q8_l2_avx512(const struct hnsw *h,
								 const void *a, const void *b)
{
	const uint8_t *x = a, *y = b;
	__m512 s0 = _mm512_setzero_ps();
	size_t i = 0;
	float s;

	for (; i + 16 <= h->dim; i += 16) {
		__m512 t = _mm512_sub_ps(
			_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) (x + i)))),
			_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) (y + i)))));

		s0 = _mm512_fmadd_ps(_mm512_mul_ps(t, t), _mm512_loadu_ps(h->q_w + i), s0);
	}
	s = _mm512_reduce_add_ps(s0);
	for (; i < h->dim; i++) {
		float t = (float) x[i] - (float) y[i];

		s += h->q_w[i] * t * t;
	}
	return s;
}

__attribute__((target("avx512f"))) static float nn_q8_ip_avx512(const struct hnsw *h,
								 const void *a, const void *b)
{
	const uint8_t *x = a, *y = b;
	__m512 s0 = _mm512_setzero_ps();
	size_t i = 0;
	float s;

	for (; i + 16 <= h->dim; i += 16) {
		__m512 lo = _mm512_loadu_ps(h->q_lo + i), sc = _mm512_loadu_ps(h->q_scale + i);
		__m512 xa = _mm512_fmadd_ps(
			_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) (x + i)))),
			sc, lo);
		__m512 xb = _mm512_fmadd_ps(
			_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) (y + i)))),
			sc, lo);

		s0 = _mm512_fmadd_ps(xa, xb, s0);
	}
	s = _mm512_reduce_add_ps(s0);
	for (; i < h->dim; i++)
		s += (h->q_lo[i] + h->q_scale[i] * x[i]) * (h->q_lo[i] + h->q_scale[i] * y[i]);
	return (h->p.metric == CV_METRIC_COSINE ? 1.0f : 0.0f) - s;
}

void hnsw_kernels_select(struct hnsw *h)
{
	pthread_once(&k_once, kernels_init);
	if (h->p.quant8) {
		bool v512 = !strcmp(k_name, "avx512");

		h->qdist = h->p.metric == CV_METRIC_L2 ? k_l2_q8 : k_ip_q8;
		if (h->p.metric == CV_METRIC_L2)
			h->ndist = v512 ? nn_q8_l2_avx512 : nn_q8_l2;
		else
			h->ndist = v512 ? nn_q8_ip_avx512 : nn_q8_ip;
	} else {
		h->qdist = h->p.metric == CV_METRIC_L2 ? k_l2_f32 : k_ip_f32;
		h->ndist = h->p.metric == CV_METRIC_L2 ? nn_f32_l2 : nn_f32_ip;
	}
}

const char *hnsw_kernel_name(void)
{
	pthread_once(&k_once, kernels_init);
	return k_name;
}

const char *hnsw_kernels(void)
{
	return hnsw_kernel_name();
}

/* Normalise src into dst (a zero vector stays zero). */
static void normalise(const float *src, float *dst, size_t d)
{
	double n = 0;

	for (size_t i = 0; i < d; i++)
		n += (double) src[i] * src[i];
	n = n > 0 ? 1.0 / sqrt(n) : 0.0;
	for (size_t i = 0; i < d; i++)
		dst[i] = (float) (src[i] * n);
}

void hnsw_prepare_query(const struct hnsw *h, hnsw_ctx *c, const float *q, hnsw_query *out)
{
	size_t d = h->dim;
	float *a = c->qbuf;

	if (h->p.metric == CV_METRIC_COSINE)
		normalise(q, a, d);
	else
		memcpy(a, q, d * sizeof(float));
	out->a = a;
	out->w = h->q_w;
	out->cst = h->p.metric == CV_METRIC_COSINE ? 1.0f : 0.0f;
	if (!h->p.quant8)
		return;
	if (h->p.metric == CV_METRIC_L2) {
		float cst = 0;

		for (size_t i = 0; i < d; i++) {
			float t = a[i] - h->q_lo[i];

			if (h->q_scale[i] > 0) {
				a[i] = t / h->q_scale[i];
			} else {
				cst += t * t;
				a[i] = 0;
			}
		}
		out->cst = cst;
	} else {
		float cst = out->cst;

		for (size_t i = 0; i < d; i++) {
			cst -= a[i] * h->q_lo[i];
			a[i] = -a[i] * h->q_scale[i];
		}
		out->cst = cst;
	}
}

void hnsw_encode(const struct hnsw *h, const float *vec, void *dst)
{
	if (!h->p.quant8) {
		memcpy(dst, vec, h->dim * sizeof(float));
		return;
	}
	for (size_t i = 0; i < h->dim; i++) {
		float s = h->q_scale[i], t;
		uint8_t *c = dst;

		t = s > 0 ? (vec[i] - h->q_lo[i]) / s : 0.0f;
		t = nearbyintf(t);
		c[i] = t < 0 ? 0 : t > 255 ? 255 : (uint8_t) t;
	}
}

void hnsw_decode_vec(const struct hnsw *h, const void *src, float *buf)
{
	const uint8_t *c = src;

	if (!h->p.quant8) {
		memcpy(buf, src, h->dim * sizeof(float));
		return;
	}
	for (size_t i = 0; i < h->dim; i++)
		buf[i] = h->q_lo[i] + h->q_scale[i] * (float) c[i];
}

void hnsw_normalise(const float *src, float *dst, size_t d)
{
	normalise(src, dst, d);
}

/* How this file was compiled (the bench checks it got its -O3 -march=native copy). */
const char *hnsw_build_info(void)
{
#if defined(__AVX512F__)
	return "with -march AVX-512 (not the shipped build)";
#elif defined(__AVX2__)
	return "with -march AVX2 (not the shipped build)";
#else
	return "for the baseline ISA, as shipped (kernels dispatched at run time)";
#endif
}
