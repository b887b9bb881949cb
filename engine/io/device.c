/*
 * device.c - device profiles and the scheduler that both real-time delay
 * and virtual-time replay use.
 *
 * The model (io_int.h): an operation arriving at t passes an IOPS and a
 * MiB/s token bucket (GCRA: conforming time max(t, tat - tau), then tat
 * grows by one emission interval), waits in a FIFO queue for a server and
 * holds it for a service time drawn from a lognormal mixture. The service
 * time never depends on the queue: per-read latency rises with offered
 * load past the device's parallelism, and IOPS saturate. Two placements:
 * a shared queue in front of every server (flash; scheduling each arrival
 * in time order onto the earliest-free server is exactly a FIFO M/G/c
 * queue), or one queue per server with each operation sent to a server
 * drawn at random (the hard-disk pool: a read waits for its disk even when
 * others are idle). The same function serves the discrete-event replay
 * (arrivals in virtual-time order) and real time (arrivals in wall-clock
 * order, under a lock). Writes (bulk writers) occupy write_copies servers.
 * docs/device-model.md lists every parameter with its source figure.
 *
 * Profiles and where their numbers come from (the seeds):
 *  hdd-pool  12 disks (the study's 12 hard-disk OSDs), one queue each, a
 *            read to a random disk. Service time a two-lognormal mixture
 *            fitted to the study's fio probes at queue depth 1: median
 *            12 ms, p99 300 ms, mean 39.3 ms (25.4 IOPS). Writes go to 3
 *            disks (3-way replication) for a draw plus 1 MiB / 150 MiB/s
 *            (an assumed disk transfer rate; the seeds give none). fio's
 *            541 IOPS at queue depth 16 (29.4 ms mean) is beyond any model
 *            without service shortening (16 / 39.3 ms = 407 at best); this
 *            one gives ~230 there (see docs/device-model.md).
 *  sata-ssd  9 servers, lognormal mean 0.643 ms: fio 1,554 IOPS at qd 1
 *            and 9 / 0.643 ms = 14,000 at qd 16 (fio 14,085). The study's
 *            per-run means under PostgreSQL were 0.70 to 1.29 ms.
 *  nvme      14 servers, lognormal mean 0.407 ms: fio 2,460 IOPS at qd 1,
 *            34,400 at qd 16 (fio 34,483); per-run means 0.034-0.443 ms.
 *  gp3-3000  EBS gp3 default: 3,000 IOPS and 125 MiB/s buckets in front
 *            of ~0.6 ms reads and effectively unlimited servers; 200
 *            reads queued wait 200 / 3000 = 67 ms (the blog: 64 ms).
 *  gp3-16000 gp3's ceiling before September 2025: 16,000 IOPS, 1,000
 *            MiB/s (the twin of the throttle profile of that name, so a
 *            real cap has a model to be predicted by and scored against).
 *  gp3-80000 the gp3 maximum: 80,000 IOPS, 2,000 MiB/s; 167 in flight
 *            give 2.1 ms per read (the blog: "2 to 3 ms each").
 *  probe:F   from `coldstudy probe --json` output: a lognormal with the
 *            probe's median and mean, servers = IOPS x mean latency
 *            (Little), so probe at the queue depth you mean to model.
 */
#include "io_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cvdev_params profiles[] = {
	{ .name = "hdd-pool",
	  .note = "12 disks, a queue each, fitted to fio at qd1: 25.4 IOPS, mean 39.3 ms, median 12 ms, p99 300 ms",
	  .servers = 12, .placement = CVDEV_PER_SERVER, .ncomp = 2,
	  .w = { 0.8275, 0.1725 }, .med_ms = { 9.7129, 148.0 }, .sigma = { 0.80, 0.45 },
	  .write_copies = 3, .write_mibps = 150 },
	{ .name = "hdd-pool-drift",
	  .note = "hdd-pool whose slow tail drifts: the mean read wanders 15-52 ms every 10 min, median 11-16 ms",
	  .servers = 12, .placement = CVDEV_PER_SERVER, .ncomp = 2,
	  .w = { 0.865, 0.135 }, .med_ms = { 9.7129, 148.0 }, .sigma = { 0.80, 0.45 },
	  .write_copies = 3, .write_mibps = 150,
	  .drift_period_s = 600, .drift_w_lo = 0.011, .drift_w_hi = 0.259 },
	{ .name = "sata-ssd",
	  .note = "replicated SATA SSD pool fitted to fio: qd1 1,554 IOPS, qd16 14,085 IOPS",
	  .servers = 9, .ncomp = 1, .w = { 1.0 }, .med_ms = { 0.605 }, .sigma = { 0.35 },
	  .write_copies = 3, .write_mibps = 400 },
	{ .name = "nvme",
	  .note = "local NVMe fitted to fio: qd1 2,460 IOPS, qd16 34,483 IOPS",
	  .servers = 14, .ncomp = 1, .w = { 1.0 }, .med_ms = { 0.35 }, .sigma = { 0.55 },
	  .write_copies = 1, .write_mibps = 1500 },
	{ .name = "gp3-3000",
	  .note = "EBS gp3 default: 3,000 IOPS and 125 MiB/s token buckets",
	  .servers = 4096, .ncomp = 1, .w = { 1.0 }, .med_ms = { 0.55 }, .sigma = { 0.40 },
	  .iops = 3000, .mibps = 125, .burst_s = 0.01 },
	{ .name = "gp3-16000",
	  .note = "EBS gp3's ceiling before September 2025: 16,000 IOPS and 1,000 MiB/s token buckets",
	  .servers = 4096, .ncomp = 1, .w = { 1.0 }, .med_ms = { 0.55 }, .sigma = { 0.40 },
	  .iops = 16000, .mibps = 1000, .burst_s = 0.01 },
	{ .name = "gp3-80000",
	  .note = "EBS gp3 maximum: 80,000 IOPS and 2,000 MiB/s token buckets",
	  .servers = 4096, .ncomp = 1, .w = { 1.0 }, .med_ms = { 0.55 }, .sigma = { 0.40 },
	  .iops = 80000, .mibps = 2000, .burst_s = 0.01 },
};

static const char *const profile_names[] = { "hdd-pool", "hdd-pool-drift", "sata-ssd", "nvme", "gp3-3000",
					     "gp3-16000", "gp3-80000", NULL };

CV_API const char *const *cv_device_profiles(void)
{
	return profile_names;
}

/* Mean service time at depth 1: sum of w * median * exp(sigma^2 / 2). */
double cvdev_mean_ms(const cvdev_params *p)
{
	double m = 0;

	for (int i = 0; i < p->ncomp; i++)
		m += p->w[i] * p->med_ms[i] * exp(p->sigma[i] * p->sigma[i] / 2);
	return m;
}

/* Variance of the service time at depth 1 (ms^2). */
double cvdev_var_ms2(const cvdev_params *p)
{
	double m = cvdev_mean_ms(p), m2 = 0;

	for (int i = 0; i < p->ncomp; i++)
		m2 += p->w[i] * p->med_ms[i] * p->med_ms[i] * exp(2 * p->sigma[i] * p->sigma[i]);
	return m2 - m * m;
}

/* ---- scheduler state ---- */

/* A binary min-heap of times with a fixed capacity. */
typedef struct theap {
	uint64_t *v;
	size_t n, cap;
} theap;

#define HEAP_PREFIX timeheap /* the earliest time on top */
#define HEAP_ELEM uint64_t
#define HEAP_ABOVE(x, y) ((x) < (y))
#include "heap_template.h"

static void heap_replace_top(theap *h, uint64_t x)
{
	timeheap_replace_top(h->v, h->n, x);
}

struct cvdev_state {
	pthread_mutex_t mu;
	cvdev_params p;
	cvio_rng rng;
	theap servers;     /* shared queue: when each server comes free */
	uint64_t *free_at; /* per-server queues: when server i comes free */
	double iops_tat, bw_tat; /* GCRA theoretical arrival times, ns */
	uint64_t seed;           /* the stream's seed: the drift's knots */
	int have_t0;
	double t0;               /* the first arrival: the drift's time origin, ns */
};

/* New scheduler state for p; 0 or -ENOMEM. Free with cvdev_state_free. */
int cvdev_state_new(const cvdev_params *p, uint64_t seed, cvdev_state **out)
{
	cvdev_state *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->p = *p;
	if (s->p.servers == 0)
		s->p.servers = 1;
	if (s->p.write_copies == 0)
		s->p.write_copies = 1;
	if (s->p.write_copies > s->p.servers)
		s->p.write_copies = s->p.servers;
	s->servers.cap = s->p.servers;
	s->servers.v = calloc(s->servers.cap, sizeof(uint64_t));
	s->free_at = calloc(s->p.servers, sizeof(uint64_t));
	if (!s->servers.v || !s->free_at) {
		cvdev_state_free(s);
		return -ENOMEM;
	}
	s->servers.n = s->servers.cap; /* all free at time 0 */
	cvio_rng_seed(&s->rng, seed);
	s->seed = seed;
	pthread_mutex_init(&s->mu, NULL);
	*out = s;
	return 0;
}

/* Free; accepts NULL. */
void cvdev_state_free(cvdev_state *s)
{
	if (!s)
		return;
	if (s->servers.v && s->free_at)
		pthread_mutex_destroy(&s->mu);
	free(s->servers.v);
	free(s->free_at);
	free(s);
}

/* The drift's knot k: a weight in [lo, hi] drawn from the stream's seed (splitmix64 of k). */
static double drift_knot(const cvdev_state *s, uint64_t k)
{
	uint64_t z = s->seed ^ (k + 1) * 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return s->p.drift_w_lo + (s->p.drift_w_hi - s->p.drift_w_lo) * ((double) (z >> 11) * 0x1.0p-53);
}

/* The last component's weight at time t ns (the profile's without drift). */
static double tail_weight(cvdev_state *s, double t)
{
	const cvdev_params *p = &s->p;
	double x, f;
	uint64_t k;

	if (p->drift_period_s <= 0 || p->ncomp < 2)
		return p->w[p->ncomp - 1];
	if (!s->have_t0) {
		s->have_t0 = 1;
		s->t0 = t;
	}
	x = (t > s->t0 ? t - s->t0 : 0) / (p->drift_period_s * 1e9);
	k = (uint64_t) x;
	f = x - (double) k;
	return (1 - f) * drift_knot(s, k) + f * drift_knot(s, k + 1);
}

/* One service time in ns at time t (the positioning and read; no queue in it). */
static double sample_ns(cvdev_state *s, double t)
{
	const cvdev_params *p = &s->p;
	int c = 0;

	if (p->ncomp > 1) {
		double u = cvio_rng_unit(&s->rng), acc = 0, wl = tail_weight(s, t);
		double scale = (1 - wl) / (1 - p->w[p->ncomp - 1]);

		for (c = 0; c < p->ncomp - 1; c++) {
			acc += p->w[c] * scale;
			if (u < acc)
				break;
		}
	}
	return p->med_ms[c] * 1e6 * exp(p->sigma[c] * cvio_rng_normal(&s->rng));
}

/* GCRA: the time a read arriving at t conforms, and advance tat by interval. */
static double gcra(double *tat, double t, double interval, double tau)
{
	double allowed = *tat - tau > t ? *tat - tau : t;

	*tat = (*tat > allowed ? *tat : allowed) + interval;
	return allowed;
}

/* The time an operation of len bytes arriving at t passes the token buckets. */
static double buckets(cvdev_state *s, double t, uint64_t len)
{
	const cvdev_params *p = &s->p;
	double start = t;

	if (p->iops > 0) {
		double iv = 1e9 / p->iops;
		double a = gcra(&s->iops_tat, t, iv, iv * p->iops * p->burst_s);

		if (a > start)
			start = a;
	}
	if (p->mibps > 0) {
		double iv = (double) len * 1e9 / (p->mibps * 1048576.0);
		double a = gcra(&s->bw_tat, t, iv, 1e9 * p->burst_s);

		if (a > start)
			start = a;
	}
	return start;
}

/* A server drawn at random, not among the first n of taken. */
static unsigned pick_server(cvdev_state *s, const unsigned *taken, unsigned n)
{
	unsigned k;

	for (;;) {
		int dup = 0;

		k = (unsigned) (cvio_rng_unit(&s->rng) * s->p.servers);
		if (k >= s->p.servers)
			k = s->p.servers - 1;
		for (unsigned i = 0; i < n; i++)
			dup |= taken[i] == k;
		if (!dup)
			return k;
	}
}

/* One service of svc ns on a server, from start; returns its completion. */
static double serve(cvdev_state *s, double start, double svc, const unsigned *taken, unsigned n,
		    unsigned *k_out)
{
	double done;

	if (s->p.placement == CVDEV_PER_SERVER) {
		unsigned k = pick_server(s, taken, n);

		if ((double) s->free_at[k] > start)
			start = (double) s->free_at[k];
		done = start + svc;
		s->free_at[k] = (uint64_t) done;
		*k_out = k;
	} else {
		if ((double) s->servers.v[0] > start)
			start = (double) s->servers.v[0];
		done = start + svc;
		heap_replace_top(&s->servers, (uint64_t) done);
		*k_out = 0;
	}
	return done;
}

/* The modelled completion time of a read of len bytes arriving at t_ns. */
uint64_t cvdev_schedule(cvdev_state *s, uint64_t t_ns, uint32_t len)
{
	double start;
	uint64_t done;
	unsigned k;

	pthread_mutex_lock(&s->mu);
	start = buckets(s, (double) t_ns, len);
	done = (uint64_t) serve(s, start, sample_ns(s, (double) t_ns), NULL, 0, &k);
	if (done <= t_ns)
		done = t_ns + 1;
	pthread_mutex_unlock(&s->mu);
	return done;
}

/* The modelled completion time of a write of len bytes arriving at t_ns. */
uint64_t cvdev_schedule_write(cvdev_state *s, uint64_t t_ns, uint64_t len)
{
	const cvdev_params *p = &s->p;
	unsigned taken[64], n = p->write_copies < 64 ? p->write_copies : 64;
	double start, last = 0, xfer;
	uint64_t done;

	xfer = p->write_mibps > 0 ? (double) len * 1e9 / (p->write_mibps * 1048576.0) : 0;
	pthread_mutex_lock(&s->mu);
	start = buckets(s, (double) t_ns, len);
	for (unsigned c = 0; c < n; c++) {
		double d = serve(s, start, sample_ns(s, (double) t_ns) + xfer, taken, c, &taken[c]);

		if (d > last)
			last = d;
	}
	done = (uint64_t) last;
	if (done <= t_ns)
		done = t_ns + 1;
	pthread_mutex_unlock(&s->mu);
	return done;
}

CV_API uint64_t cv_device_write_wait(const cv_device *dev, uint64_t len, unsigned n)
{
	uint64_t now = cvio_now_ns(), last = now;

	for (unsigned i = 0; i < n; i++) {
		uint64_t d = cvdev_schedule_write(dev->rt, now, len);

		if (d > last)
			last = d;
	}
	cvio_sleep_until(last);
	return last - now;
}

/* ---- probe:FILE ---- */

/* Find "key": number in a JSON text (a flat scan; the engine does not link a JSON library). */
static int json_num(const char *txt, const char *key, double *out)
{
	char pat[80];
	const char *p;
	char *end;
	int n = snprintf(pat, sizeof(pat), "\"%s\"", key);

	if (n < 0 || (size_t) n >= sizeof(pat))
		return -EINVAL;
	p = strstr(txt, pat);
	if (!p)
		return -ENOENT;
	p += n;
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	if (*p != ':')
		return -EINVAL;
	p++;
	*out = strtod(p, &end);
	if (end == p || !isfinite(*out))
		return -EINVAL;
	return 0;
}

/* Build params from a probe result file; -errno with why in e. */
static int params_from_probe(const char *path, cvdev_params *p, cv_err *e)
{
	FILE *fp = fopen(path, "rb");
	char buf[65536];
	size_t n;
	double iops, mean, p50, p99 = 0;
	int rc;

	if (!fp)
		return cv_err_set(e, -ENOENT, "%s: cannot open probe result", path);
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = 0;
	if ((rc = json_num(buf, "iops", &iops)) || (rc = json_num(buf, "lat_mean_ms", &mean)) ||
	    (rc = json_num(buf, "lat_p50_ms", &p50)))
		return cv_err_set(e, -EINVAL,
				  "%s: not a probe result (needs numeric iops, lat_mean_ms, lat_p50_ms)",
				  path);
	json_num(buf, "lat_p99_ms", &p99);
	if (iops <= 0 || mean <= 0 || p50 <= 0 || iops > 1e8 || mean > 1e5)
		return cv_err_set(e, -EINVAL, "%s: probe values out of range (iops %g, mean %g ms, p50 %g ms)",
				  path, iops, mean, p50);
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "probe");
	snprintf(p->note, sizeof(p->note), "from %s: %.0f IOPS, mean %.3f ms, p50 %.3f ms", path, iops,
		 mean, p50);
	p->ncomp = 1;
	p->w[0] = 1;
	p->med_ms[0] = p50;
	/* mean = median * exp(sigma^2/2) for a lognormal; else use the p99 spread */
	if (mean > p50)
		p->sigma[0] = sqrt(2 * log(mean / p50));
	else if (p99 > p50)
		p->sigma[0] = log(p99 / p50) / 2.326;
	else
		p->sigma[0] = 0.01;
	if (p->sigma[0] > 3)
		p->sigma[0] = 3;
	p->servers = (unsigned) (iops * cvdev_mean_ms(p) / 1000.0 + 0.5);
	if (p->servers < 1)
		p->servers = 1;
	return 0;
}

/* A device by profile name; 0 or -errno (with why in e). Free with cv_device_free. */
CV_API int cv_device_new(const char *profile, uint64_t seed, cv_device **out, cv_err *e)
{
	cv_device *d;
	int rc;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return cv_err_set(e, -ENOMEM, "out of memory");
	if (!strncmp(profile, "probe:", 6)) {
		rc = params_from_probe(profile + 6, &d->p, e);
		if (rc)
			goto fail;
	} else {
		size_t i;

		for (i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
			if (!strcmp(profiles[i].name, profile))
				break;
		if (i == sizeof(profiles) / sizeof(profiles[0])) {
			rc = cv_err_set(e, -EINVAL,
					"unknown device profile '%s' (hdd-pool, hdd-pool-drift, sata-ssd, nvme, gp3-3000, gp3-16000, gp3-80000, probe:FILE)",
					profile);
			goto fail;
		}
		d->p = profiles[i];
	}
	d->seed = seed;
	rc = cvdev_state_new(&d->p, seed, &d->rt);
	if (rc) {
		cv_err_set(e, rc, "out of memory");
		goto fail;
	}
	*out = d;
	return 0;
fail:
	free(d);
	return rc;
}

CV_API int cv_device_reseed(cv_device *dev, uint64_t seed)
{
	cvdev_state *st = NULL;
	int rc = cvdev_state_new(&dev->p, seed, &st);

	if (rc)
		return rc;
	cvdev_state_free(dev->rt);
	dev->rt = st;
	dev->seed = seed;
	return 0;
}

/* Free; accepts NULL. */
CV_API void cv_device_free(cv_device *dev)
{
	if (!dev)
		return;
	cvdev_state_free(dev->rt);
	free(dev);
}

CV_API const char *cv_device_name(const cv_device *dev)
{
	return dev->p.name;
}

CV_API double cv_device_mean_ms(const cv_device *dev)
{
	return cvdev_mean_ms(&dev->p);
}

/* Describe the model in a few lines into buf. */
CV_API const char *cv_device_describe(const cv_device *dev, char *buf, size_t n)
{
	const cvdev_params *p = &dev->p;
	size_t used = 0;
	int k;

#define PUT(...)                                                                     \
	do {                                                                         \
		k = snprintf(buf + used, used < n ? n - used : 0, __VA_ARGS__);      \
		if (k > 0)                                                           \
			used += (size_t) k;                                          \
	} while (0)
	if (!n)
		return buf;
	buf[0] = 0;
	PUT("profile      %s\n", p->name);
	PUT("about        %s\n", p->note);
	PUT("servers      %u\n", p->servers);
	for (int i = 0; i < p->ncomp; i++)
		PUT("latency[%d]   weight %.4f, lognormal median %.4f ms, sigma %.3f\n", i, p->w[i],
		    p->med_ms[i], p->sigma[i]);
	PUT("mean         %.4f ms at queue depth 1 (%.1f IOPS serial)\n", cvdev_mean_ms(p),
	    1000.0 / cvdev_mean_ms(p));
	if (p->drift_period_s > 0 && p->ncomp > 1)
		PUT("drift        latency[%d]'s weight wanders %.3f-%.3f, linearly between knots %.0f s "
		    "apart drawn from the seed (the mean above is the long-run one)\n",
		    p->ncomp - 1, p->drift_w_lo, p->drift_w_hi, p->drift_period_s);
	PUT("queues       %s\n", p->placement == CVDEV_PER_SERVER
				       ? "one per server, each operation to a server drawn at random"
				       : "one shared FIFO queue in front of every server");
	if (p->write_mibps > 0)
		PUT("writes       %u cop%s, a draw + len / %.0f MiB/s each\n",
		    p->write_copies ? p->write_copies : 1, p->write_copies > 1 ? "ies" : "y",
		    p->write_mibps);
	else
		PUT("writes       %u cop%s, a draw each (no transfer time)\n",
		    p->write_copies ? p->write_copies : 1, p->write_copies > 1 ? "ies" : "y");
	if (p->iops > 0)
		PUT("iops cap     %.0f\n", p->iops);
	if (p->mibps > 0)
		PUT("MiB/s cap    %.0f\n", p->mibps);
#undef PUT
	if (used >= n)
		buf[n - 1] = 0;
	return buf;
}
