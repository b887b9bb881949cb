/*
 * model.c - the two models a holdout prediction can come from, and the
 * bands around their predictions (see holdout.h for the equations).
 *
 * Both models see only the design runs they are given; the caller (the
 * `holdout predict` verb) passes every run not tagged holdout, so a
 * prediction can never have seen the run it predicts. Every prediction
 * carries its parameters and the ids of the runs it was fitted on.
 */
#include "holdout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXCOL 40

/* A numeric feature or metric: numbers as they are, booleans as 0/1; -1 if absent. */
static int get_num(const json_t *o, const char *k, double *out)
{
	const json_t *v = o ? json_object_get(o, k) : NULL;

	if (json_is_number(v)) {
		*out = json_number_value(v);
		return isfinite(*out) ? 0 : -1;
	}
	if (json_is_boolean(v)) {
		*out = json_is_true(v) ? 1 : 0;
		return 0;
	}
	return -1;
}

static const char *get_str(const json_t *o, const char *k)
{
	const json_t *v = o ? json_object_get(o, k) : NULL;

	return json_is_string(v) ? json_string_value(v) : "";
}

static double num_or(const json_t *o, const char *k, double def)
{
	double v;

	return get_num(o, k, &v) ? def : v;
}

/* Streams a run keeps in flight: clients x fan-out (fan-out counts only in fanout mode). */
static double concurrency(const json_t *f)
{
	double clients = num_or(f, "clients", 1), fanout = num_or(f, "fanout", 1);
	const char *mode = get_str(f, "mode");

	if (*mode && strcmp(mode, "fanout") != 0)
		fanout = 1;
	return clients * (fanout > 0 ? fanout : 1);
}

static int is_cold(const json_t *f)
{
	return num_or(f, "cold", 1) != 0;
}

/*
 * Group keys. Two runs share a parameter only if everything that could move
 * it is equal: the search knobs and buffer pool for reads, and the device,
 * concurrency, access strategy and every treatment (prewarm, competing
 * readers, bulk writes, client placement) for per-read latency; for a
 * PostgreSQL run, its statement in both (harness_spec_features' "statement").
 */
static const char *const knob_keys[] = {"kind", "partitions", "ef_search", "search_probe",
					"rescore_limit", "buffers_bytes", "prewarm", "cold_each_query",
					"statement", NULL};
static const char *const io_keys[] = {"device", "strategy", "load_readers", "bulkwrite",
				      "prewarm", "client_cpus", "statement", NULL};
/* The same, less the device: runs that would share a group but for it. */
static const char *const io_keys_nodev[] = {"strategy", "load_readers", "bulkwrite", "prewarm",
					    "client_cpus", "statement", NULL};

static void group_key(const json_t *f, const char *const *keys, int with_conc, char *buf,
		      size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; keys[i]; i++) {
		const json_t *v = json_object_get(f, keys[i]);
		char *t = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS) : NULL;
		int n = snprintf(buf + off, len - off, "%s=%s|", keys[i], t ? t : "null");

		free(t);
		if (n < 0 || (size_t) n >= len - off)
			return;
		off += (size_t) n;
	}
	if (with_conc)
		snprintf(buf + off, len - off, "c=%g", concurrency(f));
}

static void knob_key(const json_t *f, char *buf, size_t len)
{
	group_key(f, knob_keys, 0, buf, len);
}

static void io_key(const json_t *f, char *buf, size_t len)
{
	group_key(f, io_keys, 1, buf, len);
}

static void io_key_nodev(const json_t *f, char *buf, size_t len)
{
	group_key(f, io_keys_nodev, 1, buf, len);
}

/* ---------------- the I/O model ---------------- */

typedef struct {
	double rpp;     /* reads per partition query, at the target's partition size */
	double lat_ms;  /* per-read latency */
	double eff;     /* effective concurrency */
	double cpu_s;   /* cpu seconds per partition query */
	double elast;   /* d log(reads per partition query) / d log(partition pages) */
	double elast_sd;
	double dx;      /* mean log(target pages / run pages) over the reads runs */
	size_t n_rpp, n_io, n_cpu, n_elast;
	/* a device no design run used: latency from its profile, calibrated */
	int prior;
	double calib, calib_var; /* median and variance of log(measured / profile) */
	size_t n_calib;
} io_fit;

/*
 * The size elasticity of reads: how a partition query's reads grow with the
 * pages of the partition it searches. Fitted within knob groups (each
 * group's own level, one slope) over cold design runs with distinct reads
 * identities, and shrunk towards a prior of 0.5 +- 0.5 (between a walk
 * whose reads do not grow with the graph and one that reads a fixed share
 * of it) by the groups' residual variance: where the design's partitions
 * hardly differ in size the prior decides, where they do the runs do.
 */
#define ELAST_PRIOR 0.5
#define ELAST_PRIOR_SD 0.5

static double log_pages(const json_t *f)
{
	double v;

	return get_num(f, "partition_pages", &v) || v <= 0 ? NAN : log(v);
}

static void reads_identity(const holdout_obs *o, char *buf, size_t len);
static double pq_of(const json_t *f, const json_t *m);
static unsigned char *reads_repeats(const holdout_obs *d, size_t n);

/* rep: reads_repeats(d, n), or NULL (every run counts). */
static void fit_elasticity(const holdout_obs *d, size_t n, size_t skip, const unsigned char *rep,
			   io_fit *fit)
{
	char ki[1024], kj[1024];
	unsigned char *done = calloc(n ? n : 1, 1);
	double sxx = 0, sxy = 0, rss = 0, prec;
	size_t dof = 0, m = 0;

	fit->elast = ELAST_PRIOR;
	fit->elast_sd = ELAST_PRIOR_SD;
	fit->n_elast = 0;
	if (!done)
		goto out;
	for (size_t i = 0; i < n; i++) {
		double xs = 0, ys = 0, reads, x, pq;
		size_t g = 0, gi;

		if (done[i] || i == skip || !is_cold(d[i].features) || (rep && rep[i]))
			continue;
		knob_key(d[i].features, ki, sizeof(ki));
		/* the group of i: every later run with its knobs */
		for (size_t j = i; j < n; j++) {
			pq = pq_of(d[j].features, d[j].metrics);
			if (done[j] || j == skip || !is_cold(d[j].features) || (rep && rep[j]))
				continue;
			knob_key(d[j].features, kj, sizeof(kj));
			if (strcmp(ki, kj))
				continue;
			done[j] = 1;
			x = log_pages(d[j].features);
			if (isnan(x) || get_num(d[j].metrics, "engine_reads", &reads) || reads <= 0 ||
			    pq <= 0)
				continue;
			done[j] = 2;
			xs += x;
			ys += log(reads / pq);
			g++;
		}
		if (g < 2)
			continue;
		xs /= (double) g;
		ys /= (double) g;
		gi = 0;
		for (size_t j = i; j < n; j++) {
			if (done[j] != 2)
				continue;
			done[j] = 3;
			x = log_pages(d[j].features) - xs;
			(void) get_num(d[j].metrics, "engine_reads", &reads);
			pq = pq_of(d[j].features, d[j].metrics);
			sxx += x * x;
			sxy += x * (log(reads / pq) - ys);
			rss += (log(reads / pq) - ys) * (log(reads / pq) - ys);
			gi++;
		}
		dof += gi - 1;
		m += gi;
	}
	fit->n_elast = m;
	if (dof < 3 || sxx <= 0)
		goto out;
	{
		/* residual variance about each group's line (one slope fitted), floored */
		double s2 = fmax((rss - sxy * sxy / sxx) / (double) (dof - 1), 1e-6),
		       k = s2 / (ELAST_PRIOR_SD * ELAST_PRIOR_SD);

		fit->elast = (ELAST_PRIOR * k + sxy) / (k + sxx);
		prec = (k + sxx) / s2;
		fit->elast_sd = sqrt(1 / prec);
	}
out:
	free(done);
}

/* Partition queries a run made: queries x partitions searched. */
static double pq_of(const json_t *f, const json_t *m)
{
	double q;

	if (get_num(m, "queries", &q) || q <= 0)
		q = num_or(f, "queries", 0);
	return q * num_or(f, "partitions", 1);
}

/*
 * A target on a modelled device no design run used: its per-read latency is
 * the profile's mean service time at queue depth one times the median
 * ratio measured/profile of the design runs that differ from the target
 * only in their device (each device once), and its effective concurrency
 * theirs. The ratios' spread across devices is how far a profile alone is
 * from a measurement; it widens the band. -1 (fit untouched) without a
 * profile or two devices to calibrate on. v and w: scratch of n + 1.
 */
static int io_fit_prior(const holdout_obs *d, size_t n, size_t skip, const json_t *target,
			io_fit *fit, double *v, double *w)
{
	char tk[1024], k[1024];
	double tmean, mean, lat, reads, wall, io_s, *r = malloc((n + 1) * sizeof(*r));
	const char **devs = calloc(n + 1, sizeof(*devs));
	size_t nr = 0, nw = 0, ndev = 0;
	int rc = -1;

	if (!r || !devs || get_num(target, "device_mean_ms", &tmean) || tmean <= 0)
		goto out;
	io_key_nodev(target, tk, sizeof(tk));
	/* per device: the median ratio of its runs, so a device measured often counts once */
	for (size_t i = 0; i < n; i++) {
		const char *dev = get_str(d[i].features, "device");
		size_t nv = 0, seen = 0;

		if (i == skip || !is_cold(d[i].features) || !*dev)
			continue;
		for (size_t j = 0; j < ndev; j++)
			seen |= !strcmp(devs[j], dev);
		if (seen)
			continue;
		devs[ndev++] = dev;
		for (size_t j = i; j < n; j++) {
			double pq = pq_of(d[j].features, d[j].metrics);

			if (j == skip || !is_cold(d[j].features) ||
			    strcmp(get_str(d[j].features, "device"), dev))
				continue;
			io_key_nodev(d[j].features, k, sizeof(k));
			if (strcmp(k, tk) || get_num(d[j].features, "device_mean_ms", &mean) ||
			    mean <= 0 || get_num(d[j].metrics, "engine_read_ms_mean", &lat) || lat <= 0 ||
			    get_num(d[j].metrics, "engine_reads", &reads) ||
			    get_num(d[j].metrics, "wall_s", &wall))
				continue;
			v[nv++] = log(lat / mean);
			io_s = wall - pq * fit->cpu_s;
			if (io_s > 0 && reads > 0)
				w[nw++] = reads * lat / 1000.0 / io_s;
		}
		if (nv)
			r[nr++] = holdout_median(v, nv);
	}
	if (nr < 2 || !nw)
		goto out;
	fit->prior = 1;
	fit->n_calib = nr;
	fit->calib = holdout_median(r, nr);
	fit->calib_var = 0;
	for (size_t i = 0; i < nr; i++)
		fit->calib_var += (r[i] - fit->calib) * (r[i] - fit->calib) / (double) (nr - 1);
	fit->lat_ms = tmean * exp(fit->calib);
	fit->eff = holdout_median(w, nw);
	rc = 0;
out:
	free(r);
	free(devs);
	return rc;
}

/*
 * Fit the io model's parameters for target's groups on design minus skip
 * (skip = (size_t)-1 keeps all). Returns 0, or -1 when a group is empty.
 */
static int io_fit_rep(const holdout_obs *d, size_t n, size_t skip, const json_t *target,
		      const unsigned char *rep, io_fit *fit);

static int io_fit_for(const holdout_obs *d, size_t n, size_t skip, const json_t *target,
		      io_fit *fit)
{
	unsigned char *rep = reads_repeats(d, n); /* a query set read on three devices is one observation */
	int rc = io_fit_rep(d, n, skip, target, rep, fit);

	free(rep);
	return rc;
}

/* io_fit_for with the design's reads repeats computed once (rep: reads_repeats, may be NULL). */
static int io_fit_rep(const holdout_obs *d, size_t n, size_t skip, const json_t *target,
		      const unsigned char *rep, io_fit *fit)
{
	char tk[1024], tio[1024], k[1024];
	double *v = malloc((n + 1) * sizeof(*v)), *w = malloc((n + 1) * sizeof(*w));
	size_t nv = 0, nw = 0;
	int rc = -1;

	memset(fit, 0, sizeof(*fit));
	if (!v || !w)
		goto out;
	/* cpu per partition query: warm single-client runs, where nothing is read from disk. */
	for (size_t i = 0; i < n; i++) {
		double wall, pq = pq_of(d[i].features, d[i].metrics);

		if (i == skip || is_cold(d[i].features) || concurrency(d[i].features) != 1)
			continue;
		if (get_num(d[i].metrics, "wall_s", &wall) || pq <= 0)
			continue;
		v[nv++] = wall / pq;
	}
	fit->n_cpu = nv;
	fit->cpu_s = nv ? holdout_median(v, nv) : 0;

	/*
	 * reads per partition query, for the target's knobs: each run's, scaled
	 * from its partitions' size to the target's by the elasticity.
	 */
	fit_elasticity(d, n, skip, rep, fit);
	knob_key(target, tk, sizeof(tk));
	nv = 0;
	for (size_t i = 0; i < n; i++) {
		double reads, pq = pq_of(d[i].features, d[i].metrics);
		double xt = log_pages(target), xi = log_pages(d[i].features);

		if (i == skip || !is_cold(d[i].features) || (rep && rep[i]))
			continue;
		knob_key(d[i].features, k, sizeof(k));
		if (strcmp(k, tk) || get_num(d[i].metrics, "engine_reads", &reads) || pq <= 0)
			continue;
		v[nv] = reads / pq;
		if (!isnan(xt) && !isnan(xi)) {
			v[nv] *= exp(fit->elast * (xt - xi));
			fit->dx += (xt - xi);
		}
		nv++;
	}
	if (nv)
		fit->dx /= (double) nv;
	fit->n_rpp = nv;
	if (!nv)
		goto out;
	fit->rpp = holdout_median(v, nv);

	/* per-read latency and effective concurrency, for the target's device and treatments. */
	io_key(target, tio, sizeof(tio));
	nv = nw = 0;
	for (size_t i = 0; i < n; i++) {
		double lat, reads, wall, io_s, pq = pq_of(d[i].features, d[i].metrics);

		if (i == skip || !is_cold(d[i].features))
			continue;
		io_key(d[i].features, k, sizeof(k));
		if (strcmp(k, tio) || get_num(d[i].metrics, "engine_read_ms_mean", &lat) ||
		    get_num(d[i].metrics, "engine_reads", &reads) ||
		    get_num(d[i].metrics, "wall_s", &wall))
			continue;
		v[nv++] = lat;
		io_s = wall - pq * fit->cpu_s;
		if (io_s > 0 && reads > 0)
			w[nw++] = reads * lat / 1000.0 / io_s;
	}
	fit->n_io = nv;
	if (!nv)
		rc = io_fit_prior(d, n, skip, target, fit, v, w);
	if (!fit->prior) {
		if (!nv || !nw)
			goto out;
		fit->lat_ms = holdout_median(v, nv);
		fit->eff = holdout_median(w, nw);
	}
	rc = fit->eff > 0 && fit->lat_ms > 0 ? 0 : -1;
out:
	free(v);
	free(w);
	return rc;
}

/* The io model's value of metric for target under fit; -1 if it does not predict metric. */
static int io_value(const io_fit *fit, const json_t *target, const char *metric, double *out)
{
	double q = num_or(target, "queries", 0), parts = num_or(target, "partitions", 1);
	double reads, wall;

	if (q <= 0)
		return -1;
	reads = q * parts * fit->rpp;
	wall = reads * fit->lat_ms / 1000.0 / fit->eff + q * parts * fit->cpu_s;
	if (!strcmp(metric, "wall_s"))
		*out = wall;
	else if (!strcmp(metric, "qps"))
		*out = q / wall;
	else if (!strcmp(metric, "lat_mean_ms"))
		*out = wall / q * num_or(target, "clients", 1) * 1000.0;
	else if (!strcmp(metric, "engine_reads"))
		*out = reads;
	else if (!strcmp(metric, "reads_per_query"))
		*out = reads / q;
	else if (!strcmp(metric, "engine_read_ms_mean"))
		*out = fit->lat_ms;
	else if (!strcmp(metric, "engine_iops"))
		*out = reads / wall;
	else
		return -1;
	return *out > 0 && isfinite(*out) ? 0 : -1;
}

/* Which of the model's parameters a metric depends on. */
static void metric_parts(const char *metric, int *uses_rpp, int *uses_lat, int *uses_eff)
{
	int reads_only = !strcmp(metric, "engine_reads") || !strcmp(metric, "reads_per_query");
	int lat_only = !strcmp(metric, "engine_read_ms_mean");

	*uses_rpp = !lat_only;
	*uses_lat = !reads_only;
	*uses_eff = !reads_only && !lat_only;
}

/*
 * Leave-one-out spread of one parameter between runs of the same shape:
 * z = log(x_i / x_(-i)), x_(-i) the median of the rest of the run's group.
 * Runs of one shape differ by partition, query vector and hour (the seed's
 * per-read latency drifted 13.5 to 45.8 ms within a day), not by sampling
 * alone, so the residuals are not scaled by how much a run averaged. Pooled
 * over every group with two runs or more, so a device measured once borrows
 * the spread of the others; latency spreads pool only runs that, like the
 * target, are (or are not) on a device model.
 */
typedef enum { P_RPP, P_LAT, P_EFF } param;

static int on_model(const json_t *f)
{
	return json_is_string(json_object_get(f, "device"));
}

/*
 * What fixes a run's read count besides its knobs: the partitions it
 * searched and the query rows it sent. Two runs alike in these read the
 * same pages whatever their device, load or treatment, so for the reads
 * spread they are one observation, not two (counting each device's copy of
 * the same partition and queries would pool zeros and shrink the band).
 * Empty when the run's spec is not known: then every run counts.
 */
static void reads_identity(const holdout_obs *o, char *buf, size_t len)
{
	const json_t *q = json_object_get(o->spec, "queries");
	char *p, *qq;

	buf[0] = '\0';
	if (!o->spec)
		return;
	p = json_dumps(json_object_get(o->spec, "partitions"), JSON_COMPACT | JSON_ENCODE_ANY);
	qq = json_dumps(q, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
	snprintf(buf, len, "p=%s|q=%s|n=%lld", p ? p : "null", qq ? qq : "null",
		 (long long) json_integer_value(json_object_get(o->spec, "query_count")));
	free(p);
	free(qq);
}

/*
 * Per run: 1 if an earlier cold run of the same knobs has its reads
 * identity (it adds nothing to the reads spread). One pass, each run's
 * keys computed once; NULL when out of memory (then every run counts).
 */
static unsigned char *reads_repeats(const holdout_obs *d, size_t n)
{
	enum { KEY = 2048 };
	unsigned char *rep = calloc(n ? n : 1, 1);
	char *key = malloc((n ? n : 1) * KEY);

	if (!rep || !key) {
		free(rep);
		free(key);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		char *k = key + i * KEY;

		reads_identity(&d[i], k, KEY / 2);
		if (!k[0] || !is_cold(d[i].features)) {
			k[0] = '\0'; /* no identity: never a repeat, never repeated */
			continue;
		}
		knob_key(d[i].features, k + KEY / 2, KEY / 2);
		for (size_t j = 0; j < i && !rep[i]; j++) {
			const char *kj = key + j * KEY;

			rep[i] = kj[0] && !strcmp(k, kj) && !strcmp(k + KEY / 2, kj + KEY / 2);
		}
	}
	free(key);
	return rep;
}

static size_t loo_spread(const holdout_obs *d, size_t n, param which, const json_t *target,
			 double *ss_out)
{
	char ki[1024], kj[1024];
	double *rest = malloc((n + 1) * sizeof(*rest)), ss = 0;
	unsigned char *rep = which == P_RPP ? reads_repeats(d, n) : NULL;
	size_t cnt = 0;

	*ss_out = 0;
	if (!rest) {
		free(rep);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		double xi, wi, reads, lat, wall, pq = pq_of(d[i].features, d[i].metrics);
		size_t nr = 0;

		if (!is_cold(d[i].features) || get_num(d[i].metrics, "engine_reads", &reads) ||
		    pq <= 0 || reads <= 0)
			continue;
		if (which != P_RPP && on_model(d[i].features) != on_model(target))
			continue;
		if (rep && rep[i])
			continue;
		if (which == P_RPP) {
			knob_key(d[i].features, ki, sizeof(ki));
			xi = reads / pq;
			/* the queries it averaged: reads vary with the query vector */
			wi = pq / num_or(d[i].features, "partitions", 1);
		} else {
			if (get_num(d[i].metrics, "engine_read_ms_mean", &lat) || lat <= 0 ||
			    get_num(d[i].metrics, "wall_s", &wall) || wall <= 0)
				continue;
			io_key(d[i].features, ki, sizeof(ki));
			xi = which == P_LAT ? lat : reads * lat / 1000.0 / wall;
			wi = which == P_LAT ? reads : 1;
		}
		for (size_t j = 0; j < n; j++) {
			double rj, pqj = pq_of(d[j].features, d[j].metrics), latj, wallj;

			if (j == i || !is_cold(d[j].features) ||
			    get_num(d[j].metrics, "engine_reads", &rj) || pqj <= 0 || rj <= 0)
				continue;
			if (which == P_RPP) {
				knob_key(d[j].features, kj, sizeof(kj));
				if (!strcmp(ki, kj) && !(rep && rep[j]))
					rest[nr++] = rj / pqj;
			} else {
				if (get_num(d[j].metrics, "engine_read_ms_mean", &latj) || latj <= 0 ||
				    get_num(d[j].metrics, "wall_s", &wallj) || wallj <= 0)
					continue;
				io_key(d[j].features, kj, sizeof(kj));
				if (!strcmp(ki, kj))
					rest[nr++] = which == P_LAT ? latj : rj * latj / 1000.0 / wallj;
			}
		}
		if (!nr || xi <= 0)
			continue;
		{
			double z = log(xi / holdout_median(rest, nr));

			ss += z * z * (which == P_RPP && wi > 0 ? wi : 1);
			cnt++;
		}
	}
	free(rest);
	free(rep);
	*ss_out = ss;
	return cnt;
}

/*
 * The metric's own leave-one-out residuals (issue 28: bands from per-metric
 * residuals, not one pooled spread): each cold design run that, like the
 * target, is (or is not) on a device model, predicted by the io model
 * fitted without it, z = log(observed / predicted). A run that repeats an
 * earlier one's reads identity (the same partitions and queries) adds
 * nothing to a reads metric and is left out of it; each refit leaves out
 * every run of the left-out run's identity from the reads; so is, from a metric of
 * latency, a run whose group has no other run (the refit would take its
 * latency from the profile: the prior's error, which predict_io adds for a
 * target that needs it). Returns
 * the count; *ss the sum of z^2.
 */
static size_t loo_metric(const holdout_obs *d, size_t n, const json_t *target, const char *metric,
			 double *ss)
{
	enum { KEY = 1024 };
	int ur, ul, ue;
	unsigned char *rep = reads_repeats(d, n), *out = malloc(n ? n : 1);
	char *key = malloc((n ? n : 1) * KEY);
	size_t cnt = 0;

	*ss = 0;
	metric_parts(metric, &ur, &ul, &ue);
	if (!rep || !out || !key)
		goto done;
	for (size_t i = 0; i < n; i++)
		reads_identity(&d[i], key + i * KEY, KEY);
	for (size_t i = 0; i < n; i++) {
		io_fit f;
		double obs, pred;

		if (!is_cold(d[i].features) || on_model(d[i].features) != on_model(target) ||
		    (!ul && rep[i]) || get_num(d[i].metrics, metric, &obs) || obs <= 0)
			continue;
		/*
		 * Left out with it: every run of its partitions and query rows, whose
		 * pages the refit's reads would otherwise know (a target reads pages
		 * no design run read).
		 */
		memcpy(out, rep, n);
		for (size_t j = 0; key[i * KEY] && j < n; j++)
			out[j] |= !strcmp(key + i * KEY, key + j * KEY);
		/* a run alone in its group would be predicted from the profile: the prior's error, added apart */
		if (io_fit_rep(d, n, i, d[i].features, out, &f) || (ul && f.prior) ||
		    io_value(&f, d[i].features, metric, &pred))
			continue;
		*ss += log(obs / pred) * log(obs / pred);
		cnt++;
	}
done:
	free(rep);
	free(out);
	free(key);
	return cnt;
}

static json_t *run_ids(const holdout_obs *d, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(d[i].run_id ? d[i].run_id : "?"));
	return a;
}

/*
 * The io model's prediction and band. The band is pred x exp(+-t s), with
 * s^2 the mean square of the metric's own leave-one-out residuals over the
 * design runs like the target (loo_metric), t Student's at their degrees of
 * freedom. With fewer than HOLDOUT_LOO_MIN such residuals, s^2 is the sum
 * of the variances of the parameters the metric uses, each from its pooled
 * leave-one-out spread scaled to what the target averages over (its
 * partition queries for reads, its expected reads for latency), and the
 * band says so.
 */
static int predict_io(const holdout_obs *d, size_t n, const json_t *target, const char *metric,
		      double level, holdout_pred *p, cs_err *e)
{
	io_fit fit;
	double pred, ss_r = 0, ss_l = 0, ss_e = 0, ss_m = 0, var = 0, s, s_comp, t;
	size_t n_r = 0, n_l = 0, n_e = 0, n_m;
	double dof;
	int ur, ul, ue;
	json_t *band;

	if (!is_cold(target))
		return cs_err_set(e, CS_EXIT_BADINPUT, "io model: predicts cold runs only");
	if (io_fit_for(d, n, (size_t) -1, target, &fit))
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "io model: no cold design run shares the target's knobs, device, "
				  "concurrency and treatments");
	if (io_value(&fit, target, metric, &pred))
		return cs_err_set(e, CS_EXIT_BADINPUT, "io model: does not predict %s", metric);
	metric_parts(metric, &ur, &ul, &ue);
	/*
	 * The log variance is a sum of components, each estimated from few
	 * residuals; its degrees of freedom are Welch-Satterthwaite's, so a
	 * component from three residuals is not given the confidence of a
	 * latency pooled over many.
	 */
	{
		double comp[5], cdf[5], den = 0;
		int nc = 0;

		if (ur) {
			n_r = loo_spread(d, n, P_RPP, target, &ss_r);
			if (n_r) {
				/*
				 * ss_r is per query (each residual times the queries its run
				 * averaged); the target averages its own queries
				 */
				double tq = num_or(target, "queries", 1);

				comp[nc] = ss_r / (double) n_r / (tq > 0 ? tq : 1);
				cdf[nc++] = n_r > 1 ? (double) (n_r - 1) : 1.0;
			}
			/* the elasticity's own uncertainty, over the size step it bridges */
			if (fit.dx != 0) {
				comp[nc] = fit.elast_sd * fit.elast_sd * fit.dx * fit.dx;
				cdf[nc++] = fit.n_elast > 2 ? (double) (fit.n_elast - 2) : 1.0;
			}
		}
		if (ul) {
			n_l = loo_spread(d, n, P_LAT, target, &ss_l);
			if (n_l) {
				comp[nc] = ss_l / (double) n_l;
				cdf[nc++] = n_l > 1 ? (double) (n_l - 1) : 1.0;
			}
			/* a device no design run used: how far profiles alone were from measurements */
			if (fit.prior) {
				comp[nc] = fit.calib_var;
				cdf[nc++] = fit.n_calib > 1 ? (double) (fit.n_calib - 1) : 1.0;
			}
		}
		if (ue && concurrency(target) > 1) {
			n_e = loo_spread(d, n, P_EFF, target, &ss_e);
			if (n_e) {
				comp[nc] = ss_e / (double) n_e;
				cdf[nc++] = n_e > 1 ? (double) (n_e - 1) : 1.0;
			}
		}
		for (int c = 0; c < nc; c++) {
			var += comp[c];
			den += comp[c] * comp[c] / cdf[c];
		}
		dof = den > 0 ? var * var / den : 1.0;
	}
	if ((ur && n_r < 2) || (ul && n_l < 2))
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "io model: too few design runs share a group to estimate the spread of "
				  "%s (%zu for reads, %zu for latency; 2 needed)",
				  metric, n_r, n_l);
	/*
	 * The band of record comes from the metric's own residuals where the
	 * design has HOLDOUT_LOO_MIN of them: the parameters' spreads, summed,
	 * count each parameter's noise in full although a metric's errors in
	 * them partly cancel (a wall is reads times latency over concurrency),
	 * and gave bands several times too wide. What only this target needs
	 * is added apart: the elasticity's uncertainty over its size step, and
	 * for a device no design run used how far profiles alone were from
	 * measurements, which design runs of seen devices cannot show.
	 */
	s_comp = sqrt(var);
	n_m = loo_metric(d, n, target, metric, &ss_m);
	if (n_m >= HOLDOUT_LOO_MIN) {
		double cm = ss_m / (double) n_m, den = cm * cm / (double) (n_m - 1);

		var = cm;
		/* what only this target needs: a size step past the design's, a device prior */
		if (ur && fit.dx != 0) {
			double ce = fit.elast_sd * fit.elast_sd * fit.dx * fit.dx;

			var += ce;
			den += ce * ce / (fit.n_elast > 2 ? (double) (fit.n_elast - 2) : 1.0);
		}
		if (ul && fit.prior) {
			var += fit.calib_var;
			den += fit.calib_var * fit.calib_var /
			       (fit.n_calib > 1 ? (double) (fit.n_calib - 1) : 1.0);
		}
		dof = den > 0 ? var * var / den : (double) (n_m - 1);
	}
	s = sqrt(var);
	t = holdout_t_quantile((1 + level) / 2, dof > 1 ? dof : 1.0);
	p->value = pred;
	p->lo = pred * exp(-t * s);
	p->hi = pred * exp(t * s);
	band = json_pack("{s:s,s:f,s:f,s:f,s:I,s:f,s:I,s:I,s:I}", "method",
			 n_m >= HOLDOUT_LOO_MIN
				 ? "the metric's own leave-one-out residuals over the design runs, t "
				   "interval on log scale"
				 : "pooled leave-one-out parameter spread, t interval on log scale "
				   "(Welch-Satterthwaite degrees of freedom): too few residuals of the "
				   "metric itself",
			 "log_sd", s, "t", t, "df", dof, "metric_residuals", (json_int_t) n_m,
			 "parameters_log_sd", s_comp, "reads_residuals", (json_int_t) n_r,
			 "latency_residuals", (json_int_t) n_l, "concurrency_residuals", (json_int_t) n_e);
	if (n_m)
		json_object_set_new(band, "metric_log_sd", json_real(sqrt(ss_m / (double) n_m)));
	p->params = json_pack("{s:f,s:f,s:f,s:f,s:{s:f,s:f,s:I,s:f},s:{s:I,s:I,s:I},s:o,s:o}",
			      "reads_per_partition_query", fit.rpp, "read_ms", fit.lat_ms,
			      "effective_concurrency", fit.eff, "cpu_s_per_partition_query", fit.cpu_s,
			      "size_elasticity", "value", fit.elast, "sd", fit.elast_sd, "runs",
			      (json_int_t) fit.n_elast, "mean_log_size_step", fit.dx,
			      "support", "rpp_runs", (json_int_t) fit.n_rpp, "io_runs",
			      (json_int_t) fit.n_io, "cpu_runs", (json_int_t) fit.n_cpu, "band", band,
			      "fitted_on", run_ids(d, n));
	if (fit.prior)
		json_object_set_new(p->params, "device_prior",
				    json_pack("{s:f,s:f,s:f,s:I}", "profile_mean_ms",
					      num_or(target, "device_mean_ms", 0), "log_calibration",
					      fit.calib, "log_calibration_var", fit.calib_var,
					      "devices", (json_int_t) fit.n_calib));
	snprintf(p->model, sizeof(p->model), "io");
	return 0;
}

/* ---------------- the log-linear regression ---------------- */

static const char *const num_keys[] = {"partitions", "clients", "fanout", "ef_search",
				       "search_probe", "rescore_limit", "queries", "buffers_bytes"};
/* statement and pg_arm: PostgreSQL runs' (harness_spec_features); absent, and so dropped, elsewhere */
static const char *const cat_keys[] = {"device", "mode", "strategy", "kind", "statement", "pg_arm"};

typedef struct {
	char name[96];
	int type;          /* 0 intercept, 1 log numeric, 2 cold flag, 3 one-hot */
	const char *key;
	char level[64];
} column;

static double col_value(const column *c, const json_t *f)
{
	double v;

	switch (c->type) {
	case 0: return 1;
	case 1: return get_num(f, c->key, &v) || v <= 0 ? NAN : log(v);
	case 2: return is_cold(f) ? 1 : 0;
	default: return strcmp(get_str(f, c->key), c->level) == 0 ? 1 : 0;
	}
}

/* Invert the p x p matrix a in place (Gauss-Jordan, partial pivoting); -1 if singular. */
static int invert(double *a, int p)
{
	int *piv = malloc((size_t) p * sizeof(int));
	double *inv = calloc((size_t) p * (size_t) p, sizeof(double));
	int rc = -1;

	if (!piv || !inv)
		goto out;
	for (int i = 0; i < p; i++)
		inv[i * p + i] = 1;
	for (int c = 0; c < p; c++) {
		int best = c;
		double f;

		for (int r = c + 1; r < p; r++)
			if (fabs(a[r * p + c]) > fabs(a[best * p + c]))
				best = r;
		if (fabs(a[best * p + c]) < 1e-12)
			goto out;
		for (int k = 0; k < p; k++) {
			double t = a[c * p + k];
			a[c * p + k] = a[best * p + k];
			a[best * p + k] = t;
			t = inv[c * p + k];
			inv[c * p + k] = inv[best * p + k];
			inv[best * p + k] = t;
		}
		f = a[c * p + c];
		for (int k = 0; k < p; k++) {
			a[c * p + k] /= f;
			inv[c * p + k] /= f;
		}
		for (int r = 0; r < p; r++) {
			double g = a[r * p + c];

			if (r == c || g == 0)
				continue;
			for (int k = 0; k < p; k++) {
				a[r * p + k] -= g * a[c * p + k];
				inv[r * p + k] -= g * inv[c * p + k];
			}
		}
	}
	memcpy(a, inv, (size_t) p * (size_t) p * sizeof(double));
	rc = 0;
out:
	free(piv);
	free(inv);
	return rc;
}

/* Keep the columns flagged in keep (cols[0], the intercept, always): *cols compacted, the count back. */
static int keep_columns(column *cols, int nc, const int *keep)
{
	int k = 1;

	for (int c = 1; c < nc; c++)
		if (keep[c])
			cols[k++] = cols[c];
	return k;
}

/*
 * The columns the fit can identify, in three steps, each deciding on all
 * columns before any is removed (removing as it went made every level of
 * a category look like its first, so all were dropped):
 * - those that vary over the design runs;
 * - one level of each category left out as its reference (every run has
 *   exactly one level, so the levels sum to the intercept);
 * - those that are not (nearly) a linear combination of the ones kept
 *   before them (Gram-Schmidt on the runs' values: a knob that only one
 *   arm sets and that arm's category, or a statement that names the same
 *   runs as a partition count, say the same thing once).
 */
static int loglinear_columns(column *cols, int nc, const holdout_obs *d, const size_t *rows,
			     size_t nr)
{
	int keep[MAXCOL] = {1}, kept = 0;
	double *q = malloc((nr ? nr : 1) * (size_t) MAXCOL * sizeof(double));

	for (int c = 1; c < nc; c++) {
		double first = nr ? col_value(&cols[c], d[rows[0]].features) : 0;

		keep[c] = 0;
		for (size_t i = 1; i < nr && !keep[c]; i++)
			keep[c] = col_value(&cols[c], d[rows[i]].features) != first;
	}
	nc = keep_columns(cols, nc, keep);
	for (int c = 1; c < nc; c++) {
		keep[c] = 1;
		for (int b = 1; cols[c].type == 3 && b < c; b++)
			if (cols[b].type == 3 && cols[b].key == cols[c].key)
				keep[c] = 2; /* a later level */
		if (cols[c].type == 3)
			keep[c] = keep[c] == 2; /* the first level is the reference */
	}
	nc = keep_columns(cols, nc, keep);
	if (!q)
		return nc; /* the normal equations' own check then reports collinearity */
	for (int c = 0; c < nc; c++) {
		double *v = q + (size_t) kept * nr, n0 = 0, n1 = 0;

		for (size_t i = 0; i < nr; i++) {
			v[i] = col_value(&cols[c], d[rows[i]].features);
			n0 += v[i] * v[i];
		}
		for (int j = 0; j < kept; j++) {
			const double *u = q + (size_t) j * nr;
			double dot = 0;

			for (size_t i = 0; i < nr; i++)
				dot += u[i] * v[i];
			for (size_t i = 0; i < nr; i++)
				v[i] -= dot * u[i];
		}
		for (size_t i = 0; i < nr; i++)
			n1 += v[i] * v[i];
		keep[c] = n0 > 0 && n1 > 1e-14 * n0;
		if (keep[c]) {
			for (size_t i = 0; i < nr; i++)
				v[i] /= sqrt(n1);
			kept++;
		}
	}
	free(q);
	return keep_columns(cols, nc, keep);
}

static int predict_loglinear(const holdout_obs *d, size_t n, const json_t *target,
			     const char *metric, double level, holdout_pred *p, cs_err *e)
{
	column cols[MAXCOL];
	int nc = 0, rc = CS_EXIT_INTERNAL;
	size_t *rows = malloc((n + 1) * sizeof(*rows)), nr = 0;
	double *X = NULL, *y = NULL, *A = NULL, beta[MAXCOL], xt[MAXCOL], yhat, rss = 0, s, t, h,
	       half;
	json_t *params, *coef;

	if (!rows)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	for (size_t i = 0; i < n; i++) {
		double v;

		if (!get_num(d[i].metrics, metric, &v) && v > 0)
			rows[nr++] = i;
	}
	cols[nc++] = (column){.name = "intercept", .type = 0};
	for (size_t k = 0; k < sizeof(num_keys) / sizeof(num_keys[0]); k++) {
		column c = {.type = 1, .key = num_keys[k]};
		int ok = !isnan(col_value(&c, target));

		snprintf(c.name, sizeof(c.name), "log %s", num_keys[k]);
		for (size_t i = 0; ok && i < nr; i++)
			ok = !isnan(col_value(&c, d[rows[i]].features));
		if (ok)
			cols[nc++] = c;
	}
	cols[nc++] = (column){.name = "cold", .type = 2};
	for (size_t k = 0; k < sizeof(cat_keys) / sizeof(cat_keys[0]); k++) {
		const char *tv = get_str(target, cat_keys[k]);
		int seen = 0;

		for (size_t i = 0; i < nr; i++) {
			const char *lv = get_str(d[rows[i]].features, cat_keys[k]);
			int dup = 0;

			if (!strcmp(lv, tv))
				seen = 1;
			for (int c = 0; c < nc; c++)
				if (cols[c].type == 3 && cols[c].key == cat_keys[k] &&
				    !strcmp(cols[c].level, lv))
					dup = 1;
			if (!dup && nc < MAXCOL) {
				column c = {.type = 3, .key = cat_keys[k]};

				snprintf(c.level, sizeof(c.level), "%s", lv);
				snprintf(c.name, sizeof(c.name), "%s=%s", cat_keys[k], lv);
				cols[nc++] = c;
			}
		}
		if (nr && !seen) {
			rc = cs_err_set(e, CS_EXIT_BADINPUT,
					"loglinear: %s '%s' appears in no design run with %s", cat_keys[k],
					tv, metric);
			goto out;
		}
	}
	nc = loglinear_columns(cols, nc, d, rows, nr);
	if (nr <= (size_t) nc) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT,
				"loglinear: %zu design runs with %s for %d parameters; more runs needed",
				nr, metric, nc);
		goto out;
	}
	X = malloc(nr * (size_t) nc * sizeof(double));
	y = malloc(nr * sizeof(double));
	A = calloc((size_t) nc * (size_t) nc, sizeof(double));
	if (!X || !y || !A)
		goto out;
	for (size_t i = 0; i < nr; i++) {
		double v = 1.0;

		for (int c = 0; c < nc; c++)
			X[i * (size_t) nc + (size_t) c] = col_value(&cols[c], d[rows[i]].features);
		(void) get_num(d[rows[i]].metrics, metric, &v); /* rows hold only runs where it is > 0 */
		y[i] = log(v);
	}
	for (int a = 0; a < nc; a++)
		for (int b = 0; b < nc; b++) {
			double sum = 0;

			for (size_t i = 0; i < nr; i++)
				sum += X[i * (size_t) nc + (size_t) a] * X[i * (size_t) nc + (size_t) b];
			A[a * nc + b] = sum + (a == b ? 1e-9 : 0);
		}
	if (invert(A, nc)) {
		rc = cs_err_set(e, CS_EXIT_BADINPUT, "loglinear: the design runs' features are collinear");
		goto out;
	}
	for (int a = 0; a < nc; a++) {
		beta[a] = 0;
		for (int b = 0; b < nc; b++) {
			double xy = 0;

			for (size_t i = 0; i < nr; i++)
				xy += X[i * (size_t) nc + (size_t) b] * y[i];
			beta[a] += A[a * nc + b] * xy;
		}
	}
	for (size_t i = 0; i < nr; i++) {
		double fit = 0;

		for (int c = 0; c < nc; c++)
			fit += X[i * (size_t) nc + (size_t) c] * beta[c];
		rss += (y[i] - fit) * (y[i] - fit);
	}
	yhat = 0;
	for (int c = 0; c < nc; c++) {
		xt[c] = col_value(&cols[c], target);
		yhat += xt[c] * beta[c];
	}
	h = 0;
	for (int a = 0; a < nc; a++)
		for (int b = 0; b < nc; b++)
			h += xt[a] * A[a * nc + b] * xt[b];
	s = sqrt(rss / (double) (nr - (size_t) nc));
	t = holdout_t_quantile((1 + level) / 2, (double) (nr - (size_t) nc));
	half = t * s * sqrt(1 + h);
	p->value = exp(yhat);
	p->lo = exp(yhat - half);
	p->hi = exp(yhat + half);
	snprintf(p->model, sizeof(p->model), "loglinear");
	coef = json_object();
	for (int c = 0; c < nc; c++)
		json_object_set_new(coef, cols[c].name, json_real(beta[c]));
	params = json_pack("{s:o,s:f,s:I,s:{s:s,s:f,s:f,s:f},s:o}", "coefficients", coef,
			   "residual_sd_log", s, "df", (json_int_t) (nr - (size_t) nc), "band",
			   "method", "t interval with leverage on log scale", "t", t, "leverage", h,
			   "log_half_width", half, "fitted_on", run_ids(d, n));
	p->params = params;
	rc = 0;
out:
	free(rows);
	free(X);
	free(y);
	free(A);
	return rc;
}

int holdout_predict(const holdout_obs *design, size_t n, const json_t *target, const char *metric,
		    const char *model, holdout_pred *out, cs_err *e)
{
	return holdout_predict_at(design, n, target, metric, model, 0.95, out, e);
}

/*
 * A real cap (the kernel's throttle, features "throttle_model") is seen by
 * the models as the device model of the same name: the prediction is the
 * model's for that cell, from the modelled design runs and the profile,
 * and its score is the model's error against a real device of that shape.
 */
static int predict_as_model(const holdout_obs *design, size_t n, const json_t *target,
			    const char *metric, const char *model, double level, holdout_pred *out,
			    cs_err *e)
{
	json_t *view = json_copy((json_t *) target);
	int rc;

	if (!view)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	json_object_set(view, "device", json_object_get(target, "throttle_model"));
	json_object_del(view, "throttle_model");
	rc = holdout_predict_at(design, n, view, metric, model, level, out, e);
	if (!rc && out->params)
		json_object_set_new(out->params, "seen_as",
				    json_pack("{s:O, s:s}", "device_model",
					      json_object_get(target, "throttle_model"), "why",
					      "a real cap is predicted as its device model twin"));
	json_decref(view);
	return rc;
}

int holdout_predict_at(const holdout_obs *design, size_t n, const json_t *target,
		       const char *metric, const char *model, double level, holdout_pred *out,
		       cs_err *e)
{
	cs_err e1;
	int rc;

	memset(out, 0, sizeof(*out));
	if (json_is_string(json_object_get(target, "throttle_model")) &&
	    !json_is_string(json_object_get(target, "device")))
		return predict_as_model(design, n, target, metric, model, level, out, e);
	if (!(level > 0 && level < 1))
		return cs_err_set(e, CS_EXIT_BADINPUT, "band level %g is not in (0, 1)", level);
	if (!strcmp(model, "io"))
		return predict_io(design, n, target, metric, level, out, e);
	if (!strcmp(model, "loglinear"))
		return predict_loglinear(design, n, target, metric, level, out, e);
	if (strcmp(model, "auto"))
		return cs_err_set(e, CS_EXIT_BADINPUT, "unknown model '%s' (io, loglinear, auto)",
				  model);
	rc = predict_io(design, n, target, metric, level, out, &e1);
	if (rc == 0)
		return 0;
	rc = predict_loglinear(design, n, target, metric, level, out, e);
	if (rc && e) {
		/* Copy the second reason out first: formatting into e->msg must not read it. */
		char m2[CS_ERR_MAX];

		snprintf(m2, sizeof(m2), "%s", e->msg);
		cs_err_set(e, rc, "neither model fits: %.480s; %.480s", e1.msg, m2);
	}
	return rc;
}

void holdout_pred_clear(holdout_pred *p)
{
	if (!p)
		return;
	json_decref(p->params);
	p->params = NULL;
}
