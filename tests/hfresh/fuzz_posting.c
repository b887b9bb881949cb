/*
 * fuzz_posting.c - libFuzzer target over the posting decoder: any bytes
 * as a posting record (dims and code bits taken from the record itself,
 * clamped), with and without the checksum; a record that passes is walked
 * entry by entry through the estimator (and the extended estimator for
 * records of extended codes). Must never read out of bounds.
 */
#include "hfresh/hfresh.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The fuzz binary links only the format and the codes; no crash points. */
void hfr_crash_point(void)
{
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t dp = 64, bits = 1;
	uint8_t *buf;
	hfr_post_hdr h;
	cv_err e;

	if (size >= 20)
		memcpy(&dp, data + 16, 4);
	if (dp == 0 || dp % 64 || dp > 4096)
		dp = 64;
	if (size >= 28)
		memcpy(&bits, data + 24, 4);
	if (bits < 2 || bits > HFR_MAX_CODE_BITS)
		bits = 1;
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	for (int crc = 1; crc >= 0; crc--) {
		uint64_t planes[HFR_QUERY_BITS * 64] = {0};
		float qr[4096];
		int8_t q8[4096], q8p[4096];
		hfr_qq qq = {.planes = planes};
		hfr_qx qx = {.q8 = q8, .q8p = q8p};

		if (hfr_post_check(buf, size, dp, bits, UINT32_MAX, UINT32_MAX, crc, &h, &e))
			continue;
		for (uint32_t i = 0; i < dp; i++)
			qr[i] = (float) (i % 7) - 3.0f;
		hfr_query_quant(qr, dp, &qq);
		hfr_query_quant_ex(qr, dp, &qx);
		for (uint32_t i = 0; i < h.count; i++) {
			const uint8_t *ent = hfr_entry_at(buf, h.entry_size, i);
			uint32_t id, ver;
			hfr_fac f;
			float err;

			hfr_entry_get(ent, dp, bits, &id, &ver, &f);
			if (bits > 1)
				(void) hfr_estimate_ex(&qx, hfr_entry_ex(ent), bits, &f, &err);
			else
				(void) hfr_estimate(&qq, hfr_entry_code(ent), &f, &err);
		}
	}
	free(buf);
	return 0;
}
