/*
 * kernels.c - distance kernels (scalar for now; SIMD variants dispatched by cpuid).
 */
#include "cv_base.h"

#include <errno.h>
#include <math.h>
#include <string.h>

CV_API float cv_l2sq(const float *a, const float *b, size_t d)
{
	float s = 0;

	for (size_t i = 0; i < d; i++) {
		float t = a[i] - b[i];
		s += t * t;
	}
	return s;
}

CV_API float cv_dot(const float *a, const float *b, size_t d)
{
	float s = 0;

	for (size_t i = 0; i < d; i++)
		s += a[i] * b[i];
	return s;
}

CV_API float cv_cosine_dist(const float *a, const float *b, size_t d)
{
	float na = cv_dot(a, a, d), nb = cv_dot(b, b, d);

	if (na == 0 || nb == 0)
		return 1.0f;
	return 1.0f - cv_dot(a, b, d) / sqrtf(na * nb);
}

CV_API float cv_distance(cv_metric m, const float *a, const float *b, size_t d)
{
	switch (m) {
	case CV_METRIC_L2: return cv_l2sq(a, b, d);
	case CV_METRIC_IP: return -cv_dot(a, b, d);
	case CV_METRIC_COSINE: return cv_cosine_dist(a, b, d);
	}
	return 0;
}

CV_API const char *cv_simd_level(void)
{
	return "scalar";
}

CV_API int cv_simd_force(const char *level)
{
	return strcmp(level, "scalar") ? -ENOTSUP : 0;
}
