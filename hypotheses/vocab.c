/*
 * vocab.c - the words a hypothesis and its rules may use: DESIGN.md's
 * metric names and the form of a hypothesis id. The file validator (hyp.c)
 * and the rule language (rule.c) both check against these, so they live
 * below both and use neither.
 */
#include "hyp.h"
#include "jsonv.h"

/* DESIGN.md's measurement vocabulary. New names go here and in the README together. */
const char *const hyp_metric_names[] = {
	"wall_s",
	"queries",
	"qps",
	"lat_mean_ms",
	"lat_p50_ms",
	"lat_p90_ms",
	"lat_p95_ms",
	"lat_p99_ms",
	"lat_p999_ms",
	"recall_at_k",
	"results_digest",
	"engine_reads",
	"engine_read_ms_mean",
	"engine_iops",
	"reads_per_query",
	"bytes_per_read",
	"prewarm_s",
	"device_reads",
	"device_read_ms_mean",
	"device_bytes_per_read",
	"device_busy",
	"io_over_wall",
	"inflight_median",
	"resident_fraction_before",
	"mem_peak_bytes",
	NULL,
};

int hyp_metric_known(const char *name)
{
	return name && jv_in_list(name, hyp_metric_names);
}

const char *const *hyp_metrics(void)
{
	return hyp_metric_names;
}

int hyp_id_valid(const char *s)
{
	size_t i;

	if (!s || s[0] != 'H' || s[1] < '1' || s[1] > '9')
		return 0;
	for (i = 2; s[i]; i++)
		if (s[i] < '0' || s[i] > '9' || i > 6)
			return 0;
	return 1;
}
