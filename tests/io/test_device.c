/*
 * test_device.c - the device model's statements: a serial chain of N
 * reads in virtual time takes N x the profile's mean (within sampling
 * error), hdd-pool gives fio's queue-depth-1 IOPS and, with a queue per
 * disk and no service shortening, per-read latency that rises with
 * concurrency while IOPS saturate below 12 disks / 39.3 ms; four competing
 * readers raise a queue-depth-1 chain's per-read latency at least 1.2x
 * and bulk writes raise it too; one seed replays exactly and two seeds
 * differ; the flash profiles hit the fio figures they were fitted to, the
 * gp3 buckets bind, CPU gaps are kept, real-time mode delays each read by
 * the profile's latency and a real-time write waits in the model,
 * probe:FILE is read, and hdd-pool-drift's mean read wanders by the
 * 10-minute window while its median stays.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io_int.h"

/* A trace of `streams` chains of `per` reads each, with gap_ns of CPU between reads. */
static cv_trace *chain_trace(unsigned streams, unsigned per, uint64_t gap_ns, uint32_t len)
{
	cv_trace *t;

	assert_int_equal(cv_trace_new((size_t) streams * per, &t), 0);
	for (unsigned s = 0; s < streams; s++)
		for (unsigned i = 0; i < per; i++) {
			/* real times: each read took 1 us, then gap_ns of CPU */
			uint64_t sub = 1000 + (uint64_t) i * (1000 + gap_ns);
			cv_trace_rec r = { .stream = s, .batch = i, .off = (uint64_t) i * len, .len = len,
					   .submit_ns = sub, .complete_ns = sub + 1000 };

			assert_int_equal(cv_trace_append(t, &r), 0);
		}
	return t;
}

static cv_device *dev(const char *name)
{
	cv_device *d;
	cv_err e;

	assert_int_equal(cv_device_new(name, 42, &d, &e), 0);
	return d;
}

/* N serial reads take N x mean within 4 standard errors. */
static void serial_chain(const char *name, unsigned n)
{
	cv_device *d = dev(name);
	cv_trace *t = chain_trace(1, n, 0, 8192);
	cv_sim_result r;
	double mean = cvdev_mean_ms(&d->p), sd = sqrt(cvdev_var_ms2(&d->p));
	double expect = n * mean, tol = 4 * sd * sqrt((double) n);

	assert_int_equal(cv_device_simulate(d, t, 7, &r), 0);
	print_message("%s: %u serial reads %.1f ms, expected %.1f +- %.1f\n", name, n, r.wall_ms,
		      expect, tol);
	assert_int_equal(r.reads, n);
	assert_true(fabs(r.wall_ms - expect) <= tol);
	assert_true(fabs(r.read_ms_mean * n - r.wall_ms) < 1e-6 * r.wall_ms + 1e-3);
	cv_trace_free(t);
	cv_device_free(d);
}

static void test_serial_hdd(void **s) { (void) s; serial_chain("hdd-pool", 20000); }
static void test_serial_ssd(void **s) { (void) s; serial_chain("sata-ssd", 20000); }
static void test_serial_nvme(void **s) { (void) s; serial_chain("nvme", 20000); }
static void test_serial_gp3(void **s) { (void) s; serial_chain("gp3-3000", 20000); }

/* streams concurrent chains: IOPS within 10% of target. */
static double concurrent(const char *name, unsigned streams, unsigned per, double target)
{
	cv_device *d = dev(name);
	cv_trace *t = chain_trace(streams, per, 0, 4096);
	cv_sim_result r;

	assert_int_equal(cv_device_simulate(d, t, 11, &r), 0);
	print_message("%s: %u streams %.0f IOPS (target %.0f), read mean %.3f ms, in flight %.1f\n",
		      name, streams, r.iops, target, r.read_ms_mean, r.inflight_mean);
	assert_true(fabs(r.iops - target) <= 0.10 * target);
	cv_trace_free(t);
	cv_device_free(d);
	return r.read_ms_mean;
}

/* streams concurrent chains on a profile: IOPS and per-read mean, no target. */
static double conc_run(const char *name, unsigned streams, unsigned per, double *mean)
{
	cv_device *d = dev(name);
	cv_trace *t = chain_trace(streams, per, 0, 4096);
	cv_sim_result r;

	assert_int_equal(cv_device_simulate(d, t, 13, &r), 0);
	cv_trace_free(t);
	cv_device_free(d);
	*mean = r.read_ms_mean;
	return r.iops;
}

static void test_qd16_hdd(void **s)
{
	double m1, m4, m16, m64, i4, i16, i64, i32, m32;
	cv_device *d = dev("hdd-pool");
	double mean = cvdev_mean_ms(&d->p);
	double cap = 12 / (mean / 1000.0); /* 12 disks always busy */

	(void) s;
	cv_device_free(d);
	/* queue depth 1 is the fio qd1 figure */
	m1 = concurrent("hdd-pool", 1, 20000, 25.4);
	i4 = conc_run("hdd-pool", 4, 4000, &m4);
	i16 = conc_run("hdd-pool", 16, 2000, &m16);
	i32 = conc_run("hdd-pool", 32, 1000, &m32);
	i64 = conc_run("hdd-pool", 64, 1000, &m64);
	print_message("hdd-pool: qd4 %.0f IOPS %.1f ms, qd16 %.0f IOPS %.1f ms, qd32 %.0f IOPS "
		      "%.1f ms, qd64 %.0f IOPS %.1f ms (qd1 %.1f ms; 12-disk cap %.0f; fio qd16 541)\n",
		      i4, m4, i16, m16, i32, m32, i64, m64, m1, cap);
	/* per-read latency rises with offered load, from four streams on */
	assert_true(m4 > 1.1 * m1);
	assert_true(m16 > 1.3 * m4);
	assert_true(m64 > 1.5 * m16);
	/* IOPS saturate: never above the 12 disks' cap, and no service shortening
	 * means queue depth 16 cannot beat 16 / mean (fio's 541 needs it) */
	assert_true(i16 < 16 / (mean / 1000.0));
	assert_true(i64 <= 1.05 * cap);
	assert_true(i64 >= 0.9 * i32 && i32 >= 0.9 * i16);
}

/* A queue-depth-1 chain of n reads beside `load`: its per-read mean. */
static double qd1_beside(const char *name, const cv_sim_load *load, uint64_t seed, unsigned n,
			 cv_sim_result *r)
{
	cv_device *d = dev(name);
	cv_trace *t = chain_trace(1, n, 0, 8192);

	assert_int_equal(cv_device_simulate_load(d, t, seed, load, r), 0);
	assert_int_equal(r->reads, n);
	cv_trace_free(t);
	cv_device_free(d);
	return r->read_ms_mean;
}

/* Competing readers and bulk writes pass through the same queues. */
static void test_competing(void **s)
{
	cv_sim_load rd = { .readers = 4, .reader_bytes = 4096 };
	cv_sim_load wr = { .write_chunk = 1 << 20, .write_sync = 8 << 20 };
	cv_sim_result a, b, c;
	double alone, loaded, written;

	(void) s;
	alone = qd1_beside("hdd-pool", NULL, 21, 5000, &a);
	loaded = qd1_beside("hdd-pool", &rd, 22, 5000, &b);
	written = qd1_beside("hdd-pool", &wr, 23, 5000, &c);
	print_message("hdd-pool qd1: alone %.1f ms, 4 readers %.1f ms (%.2fx; theirs %.1f ms, %llu "
		      "reads), bulk writes %.1f ms (%.2fx; %.1f MiB/s written)\n",
		      alone, loaded, loaded / alone, b.bg_read_ms_mean,
		      (unsigned long long) b.bg_reads, written, written / alone, c.bg_write_mibps);
	assert_true(loaded >= 1.2 * alone);
	assert_true(b.bg_reads > 4 * 5000 / 2);
	assert_true(written >= 1.1 * alone);
	assert_true(c.bg_write_bytes > 0);
	assert_int_equal(a.bg_reads, 0);
	/* the shared-queue SSD: four QD1 readers on 9 channels barely queue */
	alone = qd1_beside("sata-ssd", NULL, 24, 5000, &a);
	loaded = qd1_beside("sata-ssd", &rd, 25, 5000, &b);
	print_message("sata-ssd qd1: alone %.3f ms, 4 readers %.3f ms\n", alone, loaded);
	assert_true(loaded < 1.1 * alone);
}

/* One seed, one stream: replays exactly; two seeds differ. */
static void test_seeds(void **s)
{
	cv_sim_result a, b, c;
	cv_sim_load rd = { .readers = 2 };

	(void) s;
	qd1_beside("hdd-pool", &rd, 5, 500, &a);
	qd1_beside("hdd-pool", &rd, 5, 500, &b);
	qd1_beside("hdd-pool", &rd, 6, 500, &c);
	assert_true(a.read_ms_mean == b.read_ms_mean && a.wall_ms == b.wall_ms);
	assert_true(a.read_ms_mean != c.read_ms_mean);
	/* real time: a reseeded device starts empty on the new stream */
	{
		cv_device *d = dev("hdd-pool");

		assert_int_equal(cv_device_reseed(d, 77), 0);
		assert_int_equal((int) d->seed, 77);
		cv_device_free(d);
	}
}

/*
 * Serial reads for 2 hours of model time on profile name with seed: the mean
 * read latency of each 10-minute window into win (12), and the median of all.
 */
static double drift_windows(const char *name, uint64_t seed, double win[12])
{
	cv_device *d = dev(name);
	cvdev_state *st;
	size_t cnt[12] = {0}, n = 0, cap = 400000;
	double *lat = malloc(cap * sizeof(double)), med;
	uint64_t t = 1000000000ULL; /* an arbitrary clock: the drift starts at the first read */

	assert_non_null(lat);
	assert_int_equal(cvdev_state_new(&d->p, seed, &st), 0);
	memset(win, 0, 12 * sizeof(double));
	for (;;) {
		uint64_t done = cvdev_schedule(st, t, 8192);
		size_t w = (size_t) ((t - 1000000000ULL) / 600000000000ULL);

		if (w >= 12)
			break;
		win[w] += (double) (done - t) / 1e6;
		cnt[w]++;
		assert_true(n < cap);
		lat[n++] = (double) (done - t) / 1e6;
		t = done;
	}
	for (int w = 0; w < 12; w++)
		win[w] /= (double) cnt[w];
	{
		/* the median: the threshold with half the reads below it, by bisection */
		double lo = 0, hi = 10000;

		for (int it = 0; it < 60; it++) {
			double mid = (lo + hi) / 2;
			size_t below = 0;

			for (size_t i = 0; i < n; i++)
				below += lat[i] < mid;
			if (below * 2 < n)
				lo = mid;
			else
				hi = mid;
		}
		med = (lo + hi) / 2;
	}
	free(lat);
	cvdev_state_free(st);
	cv_device_free(d);
	return med;
}

/* hdd-pool-drift: the mean read wanders between windows (the seed's 15.0-52.3 ms), the median stays put. */
static void test_drift(void **s)
{
	double w[12], w2[12], w3[12], base[12], lo = 1e9, hi = 0, blo = 1e9, bhi = 0, med, bmed;

	(void) s;
	med = drift_windows("hdd-pool-drift", 11, w);
	bmed = drift_windows("hdd-pool", 11, base);
	for (int i = 0; i < 12; i++) {
		lo = fmin(lo, w[i]);
		hi = fmax(hi, w[i]);
		blo = fmin(blo, base[i]);
		bhi = fmax(bhi, base[i]);
	}
	print_message("drift: window means %.1f-%.1f ms (x%.2f), median %.1f ms; hdd-pool %.1f-%.1f "
		      "ms (x%.2f), median %.1f ms\n", lo, hi, hi / lo, med, blo, bhi, bhi / blo, bmed);
	assert_true(hi / lo >= 1.5); /* hdd-pool alone stays within 1.25x */
	assert_true(lo >= 10 && hi <= 60);
	assert_true(med >= 8 && med <= 18);
	assert_true(bhi / blo <= 1.25);
	/* the drift is the stream's: the same seed again, the same windows; another seed, others */
	drift_windows("hdd-pool-drift", 11, w2);
	drift_windows("hdd-pool-drift", 12, w3);
	assert_memory_equal(w, w2, sizeof(w));
	assert_true(memcmp(w, w3, sizeof(w)) != 0);
}

static void test_qd16_flash(void **s)
{
	(void) s;
	concurrent("sata-ssd", 16, 5000, 14085);
	concurrent("nvme", 16, 5000, 34483);
	concurrent("sata-ssd", 1, 5000, 1554);
	concurrent("nvme", 1, 5000, 2460);
}

/* gp3-3000 with 200 queued: pinned at 3,000 IOPS, ~64-67 ms wait per read. */
static void test_gp3_buckets(void **s)
{
	double m;

	(void) s;
	m = concurrent("gp3-3000", 200, 100, 3000);
	assert_true(m > 55 && m < 75);
	concurrent("gp3-80000", 167, 1000, 80000);
	/* 1 MiB reads: the 125 MiB/s bucket binds, not the IOPS one */
	{
		cv_device *d = dev("gp3-3000");
		cv_trace *t = chain_trace(32, 50, 0, 1 << 20);
		cv_sim_result r;

		assert_int_equal(cv_device_simulate(d, t, 3, &r), 0);
		assert_true(fabs(r.iops - 125) < 12.5);
		cv_trace_free(t);
		cv_device_free(d);
	}
}

/* CPU time between a batch and the next submission is kept. */
static void test_gap_kept(void **s)
{
	cv_device *d = dev("nvme");
	cv_trace *t = chain_trace(1, 5000, 1000000, 4096); /* 1 ms of CPU after each read */
	cv_sim_result r;
	double mean = cvdev_mean_ms(&d->p), sd = sqrt(cvdev_var_ms2(&d->p));

	(void) s;
	assert_int_equal(cv_device_simulate(d, t, 5, &r), 0);
	assert_true(fabs(r.wall_ms - 5000 * mean - 4999 * 1.0) < 4 * sd * sqrt(5000.0));
	cv_trace_free(t);
	cv_device_free(d);
}

/* Real time: reads through pread on the sata-ssd model take its latency. */
static void test_realtime(void **s)
{
	char path[] = "/tmp/cvio-rt-XXXXXX";
	int fd = mkstemp(path);
	static uint8_t data[1 << 20];
	uint8_t buf[4096];
	cv_device *d = dev("sata-ssd");
	cv_file *f;
	cv_io *io;
	cv_io_opts o;
	cv_io_stats st;
	uint64_t t0, wall;
	double mean = cvdev_mean_ms(&d->p), got;
	const unsigned n = 300;

	(void) s;
	assert_true(fd >= 0);
	memset(data, 7, sizeof(data));
	assert_int_equal(write(fd, data, sizeof(data)), (ssize_t) sizeof(data));
	close(fd);
	assert_int_equal(cv_file_open(path, 0, &f), 0);
	unlink(path); /* removed even if an assertion below fails */
	cv_io_opts_default(&o);
	o.device = d;
	assert_int_equal(cv_io_new(&o, &io), 0);
	t0 = cvio_now_ns();
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(cv_io_read(io, f, (uint64_t) (i * 7919 % 256) * 4096, 4096, buf), 0);
	wall = cvio_now_ns() - t0;
	cv_io_stats_get(io, &st);
	got = cv_hist_mean(&st.lat_ns) / 1e6;
	print_message("real time sata-ssd: %u reads, mean %.3f ms (profile %.3f), p50 %.3f ms, wall %.1f ms\n",
		      n, got, mean, cv_hist_quantile(&st.lat_ns, 0.5) / 1e6, wall / 1e6);
	assert_int_equal(st.reads, n);
	assert_true(got > 0.9 * mean && got < 1.15 * mean);
	/* the waiting really happened */
	assert_true((double) wall / 1e6 >= 0.95 * n * got);
	cv_io_free(io);
	cv_file_close(f);
	/* a real-time flush of 4 writes waits in the model: at least one service each queue */
	{
		uint64_t t1 = cvio_now_ns(), w = cv_device_write_wait(d, 1 << 20, 4);

		assert_true(w > 0);
		assert_true(cvio_now_ns() - t1 >= w);
	}
	cv_device_free(d);
}

static void test_probe_profile(void **s)
{
	char path[] = "/tmp/cvio-probe-XXXXXX";
	int fd = mkstemp(path);
	const char *js = "{\"reads\": 1000, \"qd\": 16, \"iops\": 8000.0, \"lat_mean_ms\": 2.0,"
			 " \"lat_p50_ms\": 1.5, \"lat_p99_ms\": 9.0}";
	cv_device *d = NULL;
	cv_err e;
	char spec[64];

	(void) s;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, js, strlen(js)), (ssize_t) strlen(js));
	close(fd);
	snprintf(spec, sizeof(spec), "probe:%s", path);
	assert_int_equal(cv_device_new(spec, 1, &d, &e), 0);
	assert_true(fabs(cv_device_mean_ms(d) - 2.0) < 1e-6);
	assert_int_equal(d->p.servers, 16);
	cv_device_free(d);
	/* not a probe result */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "{\"iops\": \"x\"}", 13), 13);
	close(fd);
	assert_int_equal(cv_device_new(spec, 1, &d, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "not a probe result"));
	unlink(path);
	assert_int_equal(cv_device_new("floppy", 1, &d, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "unknown device profile"));
	assert_int_equal(cv_device_new("probe:/nonexistent/x.json", 1, &d, &e), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serial_hdd), cmocka_unit_test(test_serial_ssd),
		cmocka_unit_test(test_serial_nvme), cmocka_unit_test(test_serial_gp3),
		cmocka_unit_test(test_qd16_hdd),   cmocka_unit_test(test_competing),
		cmocka_unit_test(test_seeds),      cmocka_unit_test(test_qd16_flash),
		cmocka_unit_test(test_gp3_buckets), cmocka_unit_test(test_gap_kept),
		cmocka_unit_test(test_realtime),   cmocka_unit_test(test_probe_profile),
		cmocka_unit_test(test_drift),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
