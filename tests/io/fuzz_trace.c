/*
 * fuzz_trace.c - libFuzzer target over the cvtrace decoder: any input is
 * decoded or refused with -EBADMSG and a byte offset, never a crash, an
 * over-read or a leak; a decoded trace re-encodes to the same bytes and
 * replays in virtual time.
 */
#include "coldvec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cv_trace *t = NULL;
	cv_err e = {{0}};
	int rc = cv_trace_decode(data, size, &t, &e);

	if (rc) {
		if (rc != -EBADMSG || t || !strstr(e.msg, "byte "))
			abort();
		return 0;
	}
	{
		uint8_t *img = NULL;
		size_t n = 0;

		if (cv_trace_encode(t, &img, &n) || n != size || memcmp(img, data, n))
			abort();
		free(img);
	}
	if (cv_trace_len(t) <= 4096) {
		cv_device *d = NULL;
		cv_sim_result r;

		if (cv_device_new("nvme", 1, &d, &e) || cv_device_simulate(d, t, 1, &r) ||
		    r.reads != cv_trace_len(t))
			abort();
		cv_device_free(d);
	}
	cv_trace_free(t);
	return 0;
}
