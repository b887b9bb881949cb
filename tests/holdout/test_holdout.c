/*
 * test_holdout.c - the holdout's statistics against hand computations and
 * published tables, and its models on synthetic studies whose true model
 * is known: bands must cover at about the nominal rate.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "holdout.h"

static void test_binomial_table(void **state)
{
	(void) state;
	/* 0.95^10, and the rejection counts of the reference table (n, k, alpha). */
	assert_true(fabs(holdout_binom_cdf(9, 10, 0.95) - (1 - pow(0.95, 10))) < 1e-12);
	assert_true(fabs(holdout_binom_cdf(7, 10, 0.95) - 0.011504) < 1e-5);
	assert_true(holdout_binom_cdf(8, 10, 0.95) > 0.05);
	assert_true(holdout_binom_cdf(16, 20, 0.95) < 0.05);
	assert_true(holdout_binom_cdf(17, 20, 0.95) > 0.05);
	assert_true(holdout_binom_cdf(25, 30, 0.95) < 0.05);
	assert_true(holdout_binom_cdf(44, 50, 0.95) < 0.05);
	assert_true(holdout_binom_cdf(45, 50, 0.95) > 0.05);
	assert_true(holdout_binom_cdf(10, 10, 0.95) == 1.0);
}

static void test_t_quantiles(void **state)
{
	(void) state;
	assert_true(fabs(holdout_t_quantile(0.975, 1) - 12.7062) < 1e-3);
	assert_true(fabs(holdout_t_quantile(0.975, 10) - 2.2281) < 1e-3);
	assert_true(fabs(holdout_t_quantile(0.975, 30) - 2.0423) < 1e-3);
	assert_true(fabs(holdout_t_quantile(0.5, 7)) < 1e-6);
	assert_true(fabs(holdout_t_quantile(0.025, 10) + 2.2281) < 1e-3);
	/* chi-square CDF against the table (both of the incomplete gamma's branches) */
	assert_true(fabs(holdout_chi2_cdf(3.841459, 1) - 0.95) < 1e-5);
	assert_true(fabs(holdout_chi2_cdf(18.307038, 10) - 0.95) < 1e-5);
	assert_true(fabs(holdout_chi2_cdf(3.940299, 10) - 0.05) < 1e-5);
	assert_true(fabs(holdout_chi2_cdf(0.0506356, 2) - 0.025) < 1e-5);
	assert_true(holdout_chi2_cdf(0, 4) == 0);
}

static void test_interval_score_by_hand(void **state)
{
	(void) state;
	/* inside: the width; below: width + 40 * miss; above likewise (alpha 0.05). */
	assert_true(fabs(holdout_interval_score(10, 20, 15, 0.05) - 10) < 1e-12);
	assert_true(fabs(holdout_interval_score(10, 20, 8, 0.05) - (10 + 40 * 2)) < 1e-12);
	assert_true(fabs(holdout_interval_score(10, 20, 23, 0.05) - (10 + 40 * 3)) < 1e-12);
	assert_true(fabs(holdout_rel_error(110, 100) - 0.1) < 1e-12);
}

static void test_score_summary_by_hand(void **state)
{
	holdout_row rows[4] = {
		{.value = 100, .lo = 80, .hi = 120, .observed = 110},  /* rel 0.0909, in, IS 40 */
		{.value = 50, .lo = 40, .hi = 60, .observed = 70},     /* rel 0.2857, out, IS 20+400 */
		{.value = 10, .lo = 9, .hi = 11, .observed = 10},      /* rel 0, in, IS 2 */
		{.value = 1000, .lo = 500, .hi = 2000, .observed = 800}, /* rel 0.25, in, IS 1500 */
	};
	holdout_summary s;
	cs_err e;

	(void) state;
	assert_int_equal(holdout_score(rows, 4, 0.35, &s, &e), 0);
	assert_int_equal(s.n, 4);
	assert_int_equal(s.inside, 3);
	/* median of {0, 0.0909.., 0.25, 0.2857..} = (0.0909.. + 0.25) / 2 */
	assert_true(fabs(s.mdape - (10.0 / 110 + 0.25) / 2) < 1e-12);
	assert_true(fabs(s.mean_interval_score - (40 + 420 + 2 + 1500) / 4.0) < 1e-9);
	assert_true(fabs(s.mean_band_width - (40 + 20 + 2 + 1500) / 4.0) < 1e-9);
	assert_true(fabs(s.coverage_p - holdout_binom_cdf(3, 4, 0.95)) < 1e-12);
	assert_true(s.passed);
	assert_int_equal(holdout_score(rows, 4, 0.1, &s, &e), 0);
	assert_false(s.passed);
	assert_int_equal(holdout_score(rows, 0, 0.35, &s, &e), CS_EXIT_BADINPUT);
	/* scale-free: interval score over |observed|, row by row */
	assert_int_equal(holdout_score(rows, 4, 0.35, &s, &e), 0);
	assert_true(fabs(s.mean_rel_interval_score -
			 (40 / 110.0 + 420 / 70.0 + 2 / 10.0 + 1500 / 800.0) / 4) < 1e-9);
	assert_true(fabs(s.coverage_p_high - (1 - holdout_binom_cdf(2, 4, 0.95))) < 1e-12);
}

/* The coverage check is two-sided: bands too wide are miscalibrated too. */
static void test_coverage_two_sided(void **state)
{
	holdout_row rows[100];
	holdout_summary s;
	cs_err e;

	(void) state;
	/* every observation inside: P(X >= 100 | n 100, 0.95) = 0.95^100 = 0.0059 */
	for (int i = 0; i < 100; i++)
		rows[i] = (holdout_row){.value = 10, .lo = 1, .hi = 100, .observed = 10 + i % 7};
	assert_int_equal(holdout_score(rows, 100, 0.35, &s, &e), 0);
	assert_int_equal(s.inside, 100);
	assert_true(fabs(s.coverage_p_high - pow(0.95, 100)) < 1e-12);
	assert_true(fabs(s.coverage_p_two_sided - 2 * pow(0.95, 100)) < 1e-12);
	assert_true(s.calibration_rejected); /* one-sided (under-coverage only), it passed */
	assert_true(s.coverage_p > 0.5);
	/* 95 of 100: well calibrated either way */
	for (int i = 0; i < 5; i++)
		rows[i].observed = 1000;
	assert_int_equal(holdout_score(rows, 100, 0.35, &s, &e), 0);
	assert_int_equal(s.inside, 95);
	assert_false(s.calibration_rejected);
	assert_true(s.coverage_p_two_sided > 0.5);
	/* the level is the plan's: at 0.5 the same 95 inside is far too many */
	assert_int_equal(holdout_score_at(rows, 100, 0.35, 0.5, &s, &e), 0);
	assert_true(s.calibration_rejected);
	assert_true(fabs(s.level - 0.5) < 1e-12);
	assert_true(fabs(holdout_coverage_two_sided(50, 100, 0.5) - 1.0) < 1e-12);
}

/* ---- synthetic studies ---- */

static uint64_t rng_state;

static double uniform(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return ((double) (z >> 11) + 0.5) / 9007199254740992.0;
}

static double gauss(void)
{
	return sqrt(-2 * log(uniform())) * cos(2 * M_PI * uniform());
}

/*
 * The true world, the io model's own story: each partition query reads a
 * lognormal number of pages (log-sd 0.3 around 50), each read takes a
 * lognormal time (log-sd 0.8, a heavy tail) around the device's latency,
 * which grows a little with concurrency; wall is the reads' time over the
 * effective concurrency (fanout^0.9) plus 2 ms of CPU per partition query.
 */
static json_t *synth_run(const char *device, double fanout, double partitions, int cold,
			 double sigma, json_t **features)
{
	double q = 4, base = !strcmp(device, "hdd") ? 30.0 : 1.0;
	double lat_med = base * (1 + 0.03 * fanout), reads = 0, lat_sum = 0, wall;

	for (int pq = 0; cold && pq < (int) (q * partitions); pq++) {
		long r = lround(50 * exp(0.3 * gauss()));

		for (long k = 0; k < r; k++)
			lat_sum += lat_med * exp(0.8 * gauss());
		reads += (double) r;
	}
	wall = (lat_sum / 1000.0 / pow(fanout, 0.9) + 0.002 * q * partitions) *
	       exp(sigma * gauss());
	*features = json_pack("{s:s,s:s,s:f,s:i,s:f,s:f,s:b,s:s,s:i}", "device", device, "mode",
			      fanout > 1 ? "fanout" : "serial", "fanout", fanout, "clients", 1,
			      "partitions", partitions, "queries", q, "cold", cold, "kind", "phnsw",
			      "ef_search", 40);
	return json_pack("{s:f,s:f,s:f,s:f,s:f}", "wall_s", wall, "queries", q, "engine_reads",
			 reads, "engine_read_ms_mean", reads > 0 ? lat_sum / reads : 0.0,
			 "reads_per_query", reads / q);
}

typedef struct {
	holdout_obs obs[256];
	json_t *f[256], *m[256];
	size_t n;
} design_set;

static void make_design(design_set *d, double sigma)
{
	static const char *devs[] = {"hdd", "ssd"};
	static const double fans[] = {1, 4, 16};

	d->n = 0;
	for (int a = 0; a < 2; a++)
		for (int b = 0; b < 3; b++)
			for (int r = 0; r < 8; r++) {
				double parts = 1 + (double) (r % 4) * 3;

				d->m[d->n] = synth_run(devs[a], fans[b], parts, 1, sigma, &d->f[d->n]);
				d->obs[d->n] = (holdout_obs){"design", d->f[d->n], d->m[d->n], NULL};
				d->n++;
			}
	for (int r = 0; r < 4; r++) {
		d->m[d->n] = synth_run("hdd", 1, 8, 0, sigma, &d->f[d->n]);
		d->obs[d->n] = (holdout_obs){"warm", d->f[d->n], d->m[d->n], NULL};
		d->n++;
	}
}

static void free_design(design_set *d)
{
	for (size_t i = 0; i < d->n; i++) {
		json_decref(d->f[i]);
		json_decref(d->m[i]);
	}
}

/* Coverage of the io model's bands for wall_s over many synthetic studies. */
static void test_io_model_coverage(void **state)
{
	size_t inside = 0, total = 0;
	double relerr = 0;

	(void) state;
	for (int seed = 1; seed <= 40; seed++) {
		design_set d;

		rng_state = (uint64_t) seed * 7919;
		make_design(&d, 0.02);
		for (int t = 0; t < 6; t++) {
			const char *dev = t % 2 ? "hdd" : "ssd";
			double fan = t < 2 ? 1 : t < 4 ? 4 : 16;
			json_t *tf, *tm = synth_run(dev, fan, 1 + (t % 4) * 3, 1, 0.02, &tf);
			holdout_pred p;
			cs_err e;
			double obs = json_number_value(json_object_get(tm, "wall_s"));

			assert_int_equal(holdout_predict(d.obs, d.n, tf, "wall_s", "io", &p, &e), 0);
			assert_string_equal(p.model, "io");
			assert_true(p.lo <= p.value && p.value <= p.hi);
			inside += obs >= p.lo && obs <= p.hi;
			relerr += holdout_rel_error(p.value, obs);
			total++;
			holdout_pred_clear(&p);
			json_decref(tf);
			json_decref(tm);
		}
		free_design(&d);
	}
	printf("io model: %zu of %zu inside their 95%% bands (%.3f), mean relative error %.3f\n",
	       inside, total, (double) inside / (double) total, relerr / (double) total);
	/* Nominal 0.95; with 240 predictions a calibrated band lands in [0.90, 0.99]. */
	assert_true((double) inside / (double) total >= 0.90);
	assert_true((double) inside / (double) total <= 0.99);
	assert_true(relerr / (double) total < 0.25);
}

/*
 * Bands from each metric's own residuals (issue 28): in the io model's own
 * world, every metric's band comes from its leave-one-out residuals over the
 * design runs (not from the parameters' spreads summed), so metrics get
 * bands of their own widths, each covering at about the nominal rate; the
 * parameters' sum, kept beside for comparison, is printed.
 */
static void test_per_metric_bands(void **state)
{
	static const char *const metrics[] = {"wall_s", "engine_read_ms_mean", "reads_per_query"};
	size_t inside[3] = {0}, inside_par[3] = {0}, total = 0;
	double sd[3] = {0}, sd_par[3] = {0};

	(void) state;
	for (int seed = 1; seed <= 16; seed++) {
		design_set d;

		rng_state = (uint64_t) seed * 104729;
		make_design(&d, 0.02);
		for (int t = 0; t < 6; t++) {
			const char *dev = t % 2 ? "hdd" : "ssd";
			double fan = t < 2 ? 1 : t < 4 ? 4 : 16;
			json_t *tf, *tm = synth_run(dev, fan, 1 + (t % 4) * 3, 1, 0.02, &tf);

			for (int k = 0; k < 3; k++) {
				holdout_pred p;
				cs_err e;
				const json_t *band;
				double obs = json_number_value(json_object_get(tm, metrics[k])), tq, sp;

				assert_int_equal(holdout_predict(d.obs, d.n, tf, metrics[k], "io", &p, &e), 0);
				band = json_object_get(p.params, "band");
				assert_true(json_integer_value(json_object_get(band, "metric_residuals")) >=
					    HOLDOUT_LOO_MIN);
				assert_non_null(strstr(json_string_value(json_object_get(band, "method")),
						       "the metric's own leave-one-out residuals"));
				/* the band is the metric's own spread, not the parameters' */
				assert_true(fabs(json_number_value(json_object_get(band, "log_sd")) -
						 json_number_value(json_object_get(band, "metric_log_sd"))) <
					    1e-12);
				tq = json_number_value(json_object_get(band, "t"));
				sp = json_number_value(json_object_get(band, "parameters_log_sd"));
				inside[k] += obs >= p.lo && obs <= p.hi;
				inside_par[k] += fabs(log(obs / p.value)) <= tq * sp;
				sd[k] += json_number_value(json_object_get(band, "log_sd"));
				sd_par[k] += sp;
				holdout_pred_clear(&p);
			}
			total++;
			json_decref(tf);
			json_decref(tm);
		}
		free_design(&d);
	}
	for (int k = 0; k < 3; k++) {
		printf("%-20s per-metric band: %zu of %zu inside (%.3f), mean log sd %.3f; parameters' "
		       "sum: %zu inside (%.3f), mean log sd %.3f\n",
		       metrics[k], inside[k], total, (double) inside[k] / (double) total,
		       sd[k] / (double) total, inside_par[k], (double) inside_par[k] / (double) total,
		       sd_par[k] / (double) total);
		assert_true((double) inside[k] / (double) total >= 0.88);
		assert_true((double) inside[k] / (double) total <= 0.995);
	}
	/* widths of their own: per-read latency and reads per query do not share one spread */
	assert_true(fabs(sd[1] / sd[2] - 1) > 0.2);
}

/*
 * Categories are fitted, each level against its reference: design runs in
 * four arms (a PostgreSQL study's shape: serial, fan-out, and two arms of
 * their own, one of them the only run with ef_search 20, so its arm and
 * its knob say the same thing) with reads that differ by arm. A target in
 * the serial arm is predicted at the serial runs' reads, not pulled to the
 * design's mean (the columns were once all dropped, every level taken for
 * its category's first).
 */
static void test_loglinear_categories(void **state)
{
	static const struct {
		const char *mode, *arm;
		double ef, reads;
	} arm[] = {{"serial", "none", 40, 9800}, {"fanout", "none", 40, 10400},
		   {"serial", "ef20", 20, 8000}, {"serial", "prewarm", 40, 40}};
	holdout_obs obs[24];
	json_t *f[24], *m[24], *t, *coef;
	holdout_pred p;
	cs_err e;

	(void) state;
	for (int i = 0; i < 24; i++) {
		int a = i % 4;
		double noise = 1 + 0.01 * ((i / 4) % 3 - 1); /* 0.99, 1, 1.01 */

		f[i] = json_pack("{s:f,s:s,s:s,s:s,s:b}", "ef_search", arm[a].ef, "mode", arm[a].mode,
				 "pg_arm", arm[a].arm, "kind", "postgres", "cold", 1);
		m[i] = json_pack("{s:f}", "reads_per_query", arm[a].reads * noise);
		obs[i] = (holdout_obs){"r", f[i], m[i], NULL};
	}
	for (int a = 0; a < 4; a++) {
		t = json_pack("{s:f,s:s,s:s,s:s,s:b}", "ef_search", arm[a].ef, "mode", arm[a].mode,
			      "pg_arm", arm[a].arm, "kind", "postgres", "cold", 1);
		assert_int_equal(holdout_predict(obs, 24, t, "reads_per_query", "loglinear", &p, &e), 0);
		/* the arm's own geometric mean (its noise is symmetric in the log to 1e-4) */
		assert_true(fabs(p.value / arm[a].reads - 1) < 1e-3);
		assert_true(p.lo < p.value && p.value < p.hi && p.hi / p.lo < 1.2);
		coef = json_object_get(p.params, "coefficients");
		/* mode and the arm fitted (one level of each the reference); the ef20 arm, collinear
		 * with log ef_search, said once */
		assert_non_null(json_object_get(coef, "mode=fanout"));
		assert_non_null(json_object_get(coef, "pg_arm=prewarm"));
		assert_true(!json_object_get(coef, "log ef_search") != !json_object_get(coef, "pg_arm=ef20"));
		holdout_pred_clear(&p);
		json_decref(t);
	}
	for (int i = 0; i < 24; i++) {
		json_decref(f[i]);
		json_decref(m[i]);
	}
}

/* The regression recovers a noiseless power law exactly and covers at about the nominal rate with noise. */
static void test_loglinear(void **state)
{
	holdout_obs obs[40];
	json_t *f[40], *m[40];
	size_t inside = 0, total = 0;

	(void) state;
	for (int i = 0; i < 40; i++) {
		double parts = 2 + i % 8, ef = i % 2 ? 20 : 40;

		f[i] = json_pack("{s:f,s:f,s:s}", "partitions", parts, "ef_search", ef, "device", "nvme");
		m[i] = json_pack("{s:f}", "engine_reads", 150 * parts * pow(ef / 40, 0.6));
		obs[i] = (holdout_obs){"r", f[i], m[i], NULL};
	}
	{
		json_t *t = json_pack("{s:f,s:f,s:s}", "partitions", 50.0, "ef_search", 20.0, "device",
				      "nvme");
		holdout_pred p;
		cs_err e;

		assert_int_equal(holdout_predict(obs, 40, t, "engine_reads", "loglinear", &p, &e), 0);
		assert_true(fabs(p.value / (150 * 50 * pow(0.5, 0.6)) - 1) < 1e-6);
		holdout_pred_clear(&p);
		json_decref(t);
		/* an unseen device cannot be predicted */
		t = json_pack("{s:f,s:f,s:s}", "partitions", 5.0, "ef_search", 20.0, "device", "hdd");
		assert_int_equal(holdout_predict(obs, 40, t, "engine_reads", "loglinear", &p, &e),
				 CS_EXIT_BADINPUT);
		assert_non_null(strstr(e.msg, "hdd"));
		json_decref(t);
	}
	for (int i = 0; i < 40; i++) {
		json_decref(f[i]);
		json_decref(m[i]);
	}
	for (int seed = 1; seed <= 50; seed++) {
		rng_state = (uint64_t) seed * 104729;
		for (int i = 0; i < 30; i++) {
			double parts = 2 + uniform() * 30;

			f[i] = json_pack("{s:f}", "partitions", parts);
			m[i] = json_pack("{s:f}", "wall_s", 3 * pow(parts, 0.8) * exp(0.2 * gauss()));
			obs[i] = (holdout_obs){"r", f[i], m[i], NULL};
		}
		for (int t = 0; t < 8; t++) {
			double parts = 2 + uniform() * 30;
			double y = 3 * pow(parts, 0.8) * exp(0.2 * gauss());
			json_t *tf = json_pack("{s:f}", "partitions", parts);
			holdout_pred p;
			cs_err e;

			assert_int_equal(holdout_predict(obs, 30, tf, "wall_s", "auto", &p, &e), 0);
			assert_string_equal(p.model, "loglinear");
			inside += y >= p.lo && y <= p.hi;
			total++;
			holdout_pred_clear(&p);
			json_decref(tf);
		}
		for (int i = 0; i < 30; i++) {
			json_decref(f[i]);
			json_decref(m[i]);
		}
	}
	printf("loglinear: %zu of %zu inside (%.3f)\n", inside, total,
	       (double) inside / (double) total);
	assert_true((double) inside / (double) total >= 0.90);
	assert_true((double) inside / (double) total <= 0.99);
}

/*
 * Runs that searched the same partitions with the same queries read the
 * same pages on any device: for the reads band they are one observation.
 * Four device copies of one (partition, queries) plus two others give 3
 * reads residuals, not 6, and a wider band than when the specs are unknown.
 */
static void test_reads_identity(void **state)
{
	static const char *devs[] = {"hdd-pool", "sata-ssd", "nvme", "hdd-pool", "sata-ssd", "nvme"};
	static const int part[] = {0, 0, 0, 0, 1, 2}, first[] = {0, 0, 0, 0, 10, 20};
	static const double reads[] = {300, 300, 300, 300, 360, 240};
	holdout_obs obs[6];
	json_t *f[6], *m[6], *sp[6], *t;
	holdout_pred p1, p2;
	cs_err e;

	(void) state;
	for (int i = 0; i < 6; i++) {
		f[i] = json_pack("{s:s,s:s,s:i,s:i,s:i,s:i,s:b,s:s,s:i}", "device", devs[i], "mode",
				 "serial", "fanout", 1, "clients", 1, "partitions", 1, "queries", 3,
				 "cold", 1, "kind", "phnsw", "ef_search", 40);
		m[i] = json_pack("{s:f,s:i,s:f,s:f,s:f}", "wall_s", reads[i] * 0.01, "queries", 3,
				 "engine_reads", reads[i], "engine_read_ms_mean", 10.0,
				 "reads_per_query", reads[i] / 3);
		sp[i] = json_pack("{s:[i],s:{s:s,s:i,s:i}}", "partitions", part[i], "queries", "spec",
				  "q", "first", first[i], "count", 3);
		obs[i] = (holdout_obs){"r", f[i], m[i], sp[i]};
	}
	t = json_deep_copy(f[1]);
	assert_int_equal(holdout_predict(obs, 6, t, "reads_per_query", "io", &p1, &e), 0);
	assert_int_equal(json_integer_value(json_object_get(
				 json_object_get(p1.params, "band"), "reads_residuals")),
			 3);
	for (int i = 0; i < 6; i++)
		obs[i].spec = NULL;
	assert_int_equal(holdout_predict(obs, 6, t, "reads_per_query", "io", &p2, &e), 0);
	assert_int_equal(json_integer_value(json_object_get(
				 json_object_get(p2.params, "band"), "reads_residuals")),
			 6);
	assert_true(p1.hi - p1.lo > p2.hi - p2.lo);
	holdout_pred_clear(&p1);
	holdout_pred_clear(&p2);
	json_decref(t);
	for (int i = 0; i < 6; i++) {
		json_decref(f[i]);
		json_decref(m[i]);
		json_decref(sp[i]);
	}
}

/* One cold serial single-partition run for the feature tests. */
static json_t *feat_run(const char *dev, double dev_mean, double pages, double reads, double lat,
			json_t **features)
{
	*features = json_pack("{s:s,s:s,s:i,s:i,s:i,s:i,s:b,s:s,s:i,s:f,s:f}", "device", dev, "mode",
			      "serial", "fanout", 1, "clients", 1, "partitions", 1, "queries", 3,
			      "cold", 1, "kind", "phnsw", "ef_search", 40, "partition_pages", pages,
			      "device_mean_ms", dev_mean);
	return json_pack("{s:f,s:i,s:f,s:f,s:f}", "wall_s", reads * lat / 1000.0 + 0.003, "queries",
			 3, "engine_reads", reads, "engine_read_ms_mean", lat, "reads_per_query",
			 reads / 3);
}

/*
 * Reads follow the partition's size: on partitions of 300 to 900 pages
 * whose reads grow as pages^0.8, the fitted elasticity is near 0.8 and a
 * target of 1,200 pages is predicted near its own size's reads, not the
 * design's median. Where every design partition has one size, the prior
 * (0.5) stands.
 */
static void test_size_elasticity(void **state)
{
	static const double pages[] = {300, 450, 600, 900};
	holdout_obs obs[16];
	json_t *f[16], *m[16], *t;
	holdout_pred p;
	cs_err e;
	double el, truth = 3 * 0.5 * pow(1200, 0.8);

	(void) state;
	rng_state = 77;
	for (int i = 0; i < 16; i++) {
		m[i] = feat_run("hdd-pool", 39.3, pages[i % 4],
				3 * 0.5 * pow(pages[i % 4], 0.8) * exp(0.05 * gauss()), 39.3, &f[i]);
		obs[i] = (holdout_obs){"r", f[i], m[i], NULL};
	}
	t = json_deep_copy(f[0]);
	json_object_set_new(t, "partition_pages", json_real(1200));
	assert_int_equal(holdout_predict(obs, 16, t, "engine_reads", "io", &p, &e), 0);
	el = json_number_value(json_object_get(json_object_get(p.params, "size_elasticity"), "value"));
	printf("size elasticity %.3f (true 0.8); reads at 1,200 pages %.1f (true %.1f)\n", el,
	       p.value, truth);
	assert_true(fabs(el - 0.8) < 0.1);
	assert_true(fabs(p.value / truth - 1) < 0.08);
	assert_true(p.lo < truth && truth < p.hi);
	holdout_pred_clear(&p);
	for (int i = 0; i < 16; i++)
		json_object_set_new(f[i], "partition_pages", json_real(450));
	assert_int_equal(holdout_predict(obs, 16, t, "engine_reads", "io", &p, &e), 0);
	el = json_number_value(json_object_get(json_object_get(p.params, "size_elasticity"), "value"));
	assert_true(fabs(el - 0.5) < 1e-12);
	holdout_pred_clear(&p);
	json_decref(t);
	for (int i = 0; i < 16; i++) {
		json_decref(f[i]);
		json_decref(m[i]);
	}
}

/*
 * A device no design run used: its latency is its profile's mean times the
 * ratio the design's devices showed (here 1.2), and the prediction says it
 * came from the prior. Without a profile mean it cannot be predicted.
 * engine_iops is the model's reads over its wall.
 */
static void test_unseen_device(void **state)
{
	static const char *devs[] = {"hdd-pool", "sata-ssd", "nvme"};
	static const double means[] = {39.3, 0.6, 0.4};
	holdout_obs obs[9];
	json_t *f[9], *m[9], *t;
	holdout_pred p, pr, pw;
	cs_err e;

	(void) state;
	rng_state = 91;
	for (int i = 0; i < 9; i++) {
		double lat = means[i % 3] * 1.2 * exp(0.02 * gauss());

		m[i] = feat_run(devs[i % 3], means[i % 3], 450, 360 * exp(0.1 * gauss()), lat, &f[i]);
		obs[i] = (holdout_obs){"r", f[i], m[i], NULL};
	}
	t = json_deep_copy(f[0]);
	json_object_set_new(t, "device", json_string("gp3-3000"));
	json_object_set_new(t, "device_mean_ms", json_real(0.59));
	assert_int_equal(holdout_predict(obs, 9, t, "engine_read_ms_mean", "io", &p, &e), 0);
	printf("unseen device: %.4f ms predicted (profile 0.59 x 1.2 = %.4f)\n", p.value, 0.59 * 1.2);
	assert_true(fabs(p.value / (0.59 * 1.2) - 1) < 0.03);
	assert_int_equal(json_integer_value(json_object_get(
				 json_object_get(p.params, "device_prior"), "devices")),
			 3);
	holdout_pred_clear(&p);
	assert_int_equal(holdout_predict(obs, 9, t, "engine_reads", "io", &pr, &e), 0);
	assert_int_equal(holdout_predict(obs, 9, t, "wall_s", "io", &pw, &e), 0);
	assert_int_equal(holdout_predict(obs, 9, t, "engine_iops", "io", &p, &e), 0);
	assert_true(fabs(p.value - pr.value / pw.value) < 1e-9 * p.value);
	holdout_pred_clear(&p);
	holdout_pred_clear(&pr);
	holdout_pred_clear(&pw);
	json_object_set_new(t, "device_mean_ms", json_null());
	assert_int_equal(holdout_predict(obs, 9, t, "engine_read_ms_mean", "io", &p, &e),
			 CS_EXIT_BADINPUT);
	json_decref(t);
	for (int i = 0; i < 9; i++) {
		json_decref(f[i]);
		json_decref(m[i]);
	}
}

static void test_too_few_runs(void **state)
{
	json_t *f = json_pack("{s:f,s:b}", "partitions", 4.0, "cold", 1);
	json_t *m = json_pack("{s:f}", "wall_s", 1.0);
	holdout_obs o = {"r", f, m, NULL};
	holdout_pred p;
	cs_err e;

	(void) state;
	assert_int_equal(holdout_predict(&o, 1, f, "wall_s", "auto", &p, &e), CS_EXIT_BADINPUT);
	assert_int_equal(holdout_predict(&o, 1, f, "wall_s", "magic", &p, &e), CS_EXIT_BADINPUT);
	json_decref(f);
	json_decref(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_binomial_table),
		cmocka_unit_test(test_t_quantiles),
		cmocka_unit_test(test_interval_score_by_hand),
		cmocka_unit_test(test_score_summary_by_hand),
		cmocka_unit_test(test_coverage_two_sided),
		cmocka_unit_test(test_io_model_coverage),
		cmocka_unit_test(test_per_metric_bands),
		cmocka_unit_test(test_loglinear),
		cmocka_unit_test(test_loglinear_categories),
		cmocka_unit_test(test_too_few_runs),
		cmocka_unit_test(test_reads_identity),
		cmocka_unit_test(test_size_elasticity),
		cmocka_unit_test(test_unseen_device),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
