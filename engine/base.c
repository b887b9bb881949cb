/*
 * base.c - errors and metric names.
 */
#include "cv_base.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

CV_API int cv_err_set(cv_err *e, int rc, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return rc;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return rc;
}

CV_API int cv_metric_parse(const char *s, cv_metric *out)
{
	if (!strcmp(s, "l2") || !strcmp(s, "euclidean"))
		*out = CV_METRIC_L2;
	else if (!strcmp(s, "ip") || !strcmp(s, "dot"))
		*out = CV_METRIC_IP;
	else if (!strcmp(s, "cosine") || !strcmp(s, "angular"))
		*out = CV_METRIC_COSINE;
	else
		return -EINVAL;
	return 0;
}

CV_API const char *cv_metric_name(cv_metric m)
{
	switch (m) {
	case CV_METRIC_L2: return "l2";
	case CV_METRIC_IP: return "ip";
	case CV_METRIC_COSINE: return "cosine";
	}
	return "?";
}
