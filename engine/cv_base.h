/*
 * cv_base.h - export control, errors, metrics and distance kernels.
 */
#ifndef CV_BASE_H
#define CV_BASE_H

#include <stddef.h>
#include <stdint.h>

#if defined(CV_BUILDING) && defined(__GNUC__)
#define CV_API __attribute__((visibility("default")))
#else
#define CV_API
#endif

#define CV_ERR_MAX 512

/* A caller-owned explanation of a failure: one line, file and offset. */
typedef struct cv_err {
	char msg[CV_ERR_MAX];
} cv_err;

/* Fill e (may be NULL) and return rc (a negative errno). */
CV_API int cv_err_set(cv_err *e, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

typedef enum cv_metric {
	CV_METRIC_L2 = 0, /* squared Euclidean distance */
	CV_METRIC_IP = 1, /* negative inner product as a distance */
	CV_METRIC_COSINE = 2, /* 1 - cosine similarity */
} cv_metric;

/* "l2", "ip", "cosine" (also "dot", "angular"); returns 0 or -EINVAL. */
CV_API int cv_metric_parse(const char *s, cv_metric *out);
CV_API const char *cv_metric_name(cv_metric m);

/*
 * Distance kernels for float32, dispatched once (cpuid, on first use) to
 * scalar, AVX2+FMA or AVX-512F; $COLDSTUDY_SIMD=scalar|avx2|avx512 lowers
 * the choice for a process. No alignment is required and no kernel reads
 * past a + d or b + d. Levels agree bit for bit (one fixed summation
 * order, engine/kernels/kernels.h).
 * cv_distance returns the metric's distance (smaller is nearer): l2 is
 * squared, ip is -dot, cosine is 1 - cos (1 when a vector is zero).
 * Per-level functions and batch helpers: engine/kernels/kernels.h.
 */
CV_API float cv_l2sq(const float *a, const float *b, size_t d);
CV_API float cv_dot(const float *a, const float *b, size_t d);
CV_API float cv_cosine_dist(const float *a, const float *b, size_t d);
CV_API float cv_distance(cv_metric m, const float *a, const float *b, size_t d);

/* Which kernel set is in use: "scalar", "avx2" or "avx512". */
CV_API const char *cv_simd_level(void);

/*
 * The one progress line (index build, index query, ground truth) on stderr:
 * "\rVERB WHAT [#####     ]  42%  N/M  12 s elapsed, about 17 s left",
 * fitted to the terminal's width (the bar shrinks, then goes; the line is
 * cut before it could wrap), a newline once done >= total. t0_ns is
 * cv_progress_start() at the start. Callers rate-limit and check a tty.
 */
CV_API uint64_t cv_progress_start(void);
CV_API void cv_progress(const char *verb, const char *what, size_t done, size_t total,
			uint64_t t0_ns);

/* Force a kernel set ("scalar", "avx2", "avx512"); -ENOTSUP if the CPU lacks it. */
CV_API int cv_simd_force(const char *level);

#endif
