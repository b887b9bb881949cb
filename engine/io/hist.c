/*
 * hist.c - the log-linear histogram behind every latency and in-flight
 * figure.
 *
 * 256 buckets: values 0..15 each have their own bucket (so reads in
 * flight, small integers, are exact), then every power of two from 2^4 up
 * to 2^34 is split into 8 equal sub-buckets. In nanoseconds that covers
 * 1 us to 17 s with every bucket at most 12.5% of its value wide, so a
 * quantile read at the bucket midpoint is within 6.25% of the truth.
 * Values past 2^34 land in the last bucket; quantiles are clamped to the
 * largest value seen. Adding is a few instructions and no allocation.
 */
#include "io_int.h"

#define SUB 8          /* sub-buckets per octave */
#define SUB_BITS 3
#define EXACT 16       /* values below this are exact */
#define FIRST_OCT 4    /* log2(EXACT) */

static unsigned bucket_of(uint64_t v)
{
	unsigned o, idx;

	if (v < EXACT)
		return (unsigned) v;
	o = 63u - (unsigned) __builtin_clzll(v);
	idx = EXACT + (o - FIRST_OCT) * SUB + (unsigned) ((v >> (o - SUB_BITS)) & (SUB - 1));
	return idx < CV_HIST_BUCKETS ? idx : CV_HIST_BUCKETS - 1;
}

/* Lower bound and width of bucket i. */
static void bucket_range(unsigned i, double *lo, double *width)
{
	unsigned o, sub;

	if (i < EXACT) {
		*lo = i;
		*width = 0;
		return;
	}
	o = (i - EXACT) / SUB + FIRST_OCT;
	sub = (i - EXACT) % SUB;
	*lo = (double) ((uint64_t) (SUB + sub) << (o - SUB_BITS));
	*width = (double) (1ull << (o - SUB_BITS));
}

/* Count v. */
CV_API void cv_hist_add(cv_hist *h, uint64_t v)
{
	h->count++;
	h->sum += v;
	if (v > h->max)
		h->max = v;
	h->bucket[bucket_of(v)]++;
}

/* Add every count of from into into. */
CV_API void cv_hist_merge(cv_hist *into, const cv_hist *from)
{
	into->count += from->count;
	into->sum += from->sum;
	if (from->max > into->max)
		into->max = from->max;
	for (unsigned i = 0; i < CV_HIST_BUCKETS; i++)
		into->bucket[i] += from->bucket[i];
}

/* The q-quantile: midpoint of the bucket holding rank ceil(q * count), clamped to max. */
CV_API double cv_hist_quantile(const cv_hist *h, double q)
{
	uint64_t rank, seen = 0;
	double lo, width, v;

	if (!h->count)
		return 0;
	if (q <= 0)
		q = 0;
	if (q >= 1)
		return (double) h->max;
	rank = (uint64_t) (q * (double) h->count + 0.999999999);
	if (rank < 1)
		rank = 1;
	for (unsigned i = 0; i < CV_HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen >= rank) {
			bucket_range(i, &lo, &width);
			v = lo + width / 2;
			return v > (double) h->max ? (double) h->max : v;
		}
	}
	return (double) h->max;
}

/* Exact mean (sum / count); 0 when empty. */
CV_API double cv_hist_mean(const cv_hist *h)
{
	return h->count ? (double) h->sum / (double) h->count : 0;
}
