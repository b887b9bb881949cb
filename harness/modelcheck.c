/*
 * modelcheck.c - the `model-check:Hn` records of `coldstudy validate`:
 * which comparisons of each hypothesis's rules the engine, a real device or
 * the device model's own parameters decide (issue 28).
 *
 * A run on a device model reports the model's numbers, not a disk's: its
 * per-read latency is drawn from the profile's parameters (copied from the
 * seeds), and its times are the engine's reads laid on the model's clock.
 * A comparison whose outcome those parameters fix, whatever the engine
 * measures, verifies the model, not the system: a model check, never
 * confirmatory evidence. validate asks it of every comparison ("cmp") of
 * every registered hypothesis before any run, from what is registered
 * alone (the rules, the plan's run specs), so the classification is part
 * of the plan and no result can move it:
 *
 *  1. each aggregate of the comparison is placed by its metric and the
 *     plan's runs its selection matches: an engine count (reads, recall,
 *     ids: the read trace's, whatever the device) is the engine's; a
 *     block-device counter, or any run on the real disk (cold without a
 *     model, or under a real cap), is the device's; a count of runs is the
 *     plan's; a time or per-read figure of a modelled run (or a warm run's
 *     times, CPU alone) is replayed;
 *  2. a comparison with a replayed side is evaluated by the registered
 *     rule itself (rule_eval) on synthetic runs: each planned spec's shape
 *     (serial or fan-out, clients, queries, cache state, prewarm, competing
 *     readers and writers) replayed in virtual time on its profile
 *     (cv_device_simulate_load), with what the engine would measure left
 *     free over a grid: the pages a query touches (MC_READS, one value per
 *     "trace class": specs that differ only in knobs that cannot change the
 *     pages a query touches share it), the CPU time a page costs
 *     (MC_CPU_MS), and where a run reads some pages an earlier query or
 *     another query's prewarm loaded, the share it finds resident
 *     (MC_OVERLAP); each point under MC_SEEDS of the model's random
 *     streams;
 *  3. the outcome sets of the grid's points are compared: when two points
 *     have no outcome in common, the engine's figures alone move the
 *     outcome and the comparison is a finding ("engine and device model");
 *     otherwise only the model's parameters (and its draw) decide it: a
 *     "device model" comparison, its outcome fixed (true, false) or the
 *     model's draw.
 *
 * A hypothesis is a model check when at least one of its comparisons is
 * decided and every decided one is the device model's. What this cannot
 * see: engine figures outside the grid (a CPU cost per page past 0.2 ms
 * would make a warm query slow enough to move a cold/warm ratio); read
 * patterns the synthetic trace does not have (every read one page, a
 * stream's reads one after another); and an effect both the engine and
 * the model lack. docs/device-model.md, "Model checks".
 */
#include "harness.h"
#include "harness_int.h"

#include "coldvec.h"
#include "hyp.h"
#include "ledger.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MC_SEEDS 6
#define MC_CLASSES_MAX 4 /* trace classes one comparison may span: 2^4 x 4 grid points */
#define MC_DEVS_MAX 16
#define MC_STREAM_MIN 10 /* pages a fan-out stream reads at least: one partition's walk */

/* The grid of what the engine would measure (docs/device-model.md, "Model checks"). */
static const double MC_READS[2] = {30, 2000};     /* pages a query touches */
static const double MC_CPU_MS[2] = {0.002, 0.2};  /* CPU a page costs */
static const double MC_OVERLAP[2] = {0, 0.9};     /* share found resident */

enum { MC_MODEL, MC_REAL, MC_CPU };

typedef struct mcspec {
	const json_t *s;  /* {path, eff, tags} (borrowed) */
	json_t *hyps;     /* the hypotheses its runs serve (new) */
	int kind;         /* MC_MODEL, MC_REAL or MC_CPU */
	int cls;          /* its trace class */
	unsigned streams; /* reads in flight a query: the fan-out (x clients in real time) */
	unsigned clients;
	double queries;
	int hits;    /* its queries find their pages resident (a prewarm of their own blocks) */
	int overlap; /* some pages come resident: cold once over several queries, another's prewarm */
	int prewarm;
	int has_bg;
	cv_sim_load bg;
	const cv_device *dev;
} mcspec;

typedef struct mctx {
	const char *id;
	mcspec *sp;
	size_t n;
	json_t *classes; /* trace class keys */
	cv_device *devs[MC_DEVS_MAX];
	size_t ndev;
	json_t *cache; /* replay key -> metrics */
	json_t *clauses;
	cs_err *e;
	int rc;
} mctx;

/* Metrics the engine counts: the read trace's, the same on any device. */
static const char *const engine_metrics[] = {"queries", "recall_at_k", "results_digest",
					     "engine_reads", "reads_per_query", "bytes_per_read",
					     "resident_fraction_before", "mem_peak_bytes", NULL};
/* The block device's own counters: the real disk's, also under a model. */
static const char *const device_metrics[] = {"device_reads", "device_read_ms_mean",
					     "device_bytes_per_read", "device_busy", NULL};
/* What the replay gives. */
static const char *const replayed_metrics[] = {"wall_s", "qps", "lat_mean_ms", "lat_p50_ms",
					       "lat_p90_ms", "lat_p95_ms", "lat_p99_ms", "lat_p999_ms",
					       "engine_read_ms_mean", "engine_iops", "io_over_wall",
					       "prewarm_s", NULL};
/* Knobs that cannot change the pages a query touches (only where they are read from). */
static const char *const trace_blind[] = {"device", "device_time", "load", "bulkwrite",
					  "client_cpus", "seed", "throttle", "tags", "hypotheses",
					  "notes", "replicates", "samplers", "strategy", "readahead",
					  "mem_cap_bytes", "mode", "fanout", "clients", "cold",
					  "cold_each_query", "prewarm", NULL};

static double num_or(const json_t *o, const char *k, double d)
{
	const json_t *v = json_object_get(o, k);

	return json_is_number(v) ? json_number_value(v) : d;
}

/* The device model of profile name, made once (borrowed from c). */
static const cv_device *device_of(mctx *c, const char *name)
{
	cv_err ce = {{0}};
	cv_device *d = NULL;

	for (size_t i = 0; i < c->ndev; i++)
		if (!strcmp(cv_device_name(c->devs[i]), name))
			return c->devs[i];
	if (c->ndev == MC_DEVS_MAX || cv_device_new(name, 1, &d, &ce))
		return NULL;
	c->devs[c->ndev++] = d;
	return d;
}

/* Place one planned spec: its kind, shape and trace class. 0, or -1 when its model will not load. */
static int place(mctx *c, mcspec *m, const json_t *s)
{
	const json_t *eff = json_object_get(s, "eff"), *q = json_object_get(eff, "queries");
	const json_t *pw = json_object_get(eff, "prewarm"), *v;
	const char *dev = json_string_value(json_object_get(eff, "device"));
	const char *tm = json_string_value(json_object_get(eff, "device_time"));
	const char *mode = json_string_value(json_object_get(eff, "mode"));
	int cold = json_is_true(json_object_get(eff, "cold"));
	json_t *key = json_deep_copy(eff), *h;
	char *k;
	size_t i;

	memset(m, 0, sizeof(*m));
	m->s = s;
	m->hyps = json_array();
	json_array_foreach(json_object_get(eff, "hypotheses"), i, h)
		json_array_append(m->hyps, h);
	json_array_append_new(m->hyps, json_string(c->id)); /* the plan maps it to id */
	if (json_is_string(json_object_get(eff, "throttle")) ||
	    json_is_string(json_object_get(eff, "target")))
		m->kind = MC_REAL; /* a real cap, or PostgreSQL on the real disk */
	else if (dev)
		m->kind = MC_MODEL;
	else
		m->kind = cold || json_is_object(pw) ? MC_REAL : MC_CPU;
	m->clients = (unsigned) num_or(eff, "clients", 1);
	m->clients = m->clients ? m->clients : 1;
	m->streams = mode && !strcmp(mode, "fanout") ? (unsigned) num_or(eff, "fanout", 1) : 1;
	m->streams = m->streams ? m->streams : 1;
	if (tm && !strcmp(tm, "realtime"))
		m->streams *= m->clients; /* clients share the model's queues in real time */
	m->queries = json_is_integer(json_object_get(q, "count"))
			     ? (double) json_integer_value(json_object_get(q, "count"))
			     : num_or(eff, "query_count", 1);
	m->queries = m->queries > 0 ? m->queries : 1;
	m->prewarm = json_is_object(pw);
	m->hits = m->prewarm && !strcmp(json_string_value(json_object_get(pw, "of")) ?: "", "self");
	m->overlap = (m->prewarm && !m->hits) ||
		     (cold && !m->prewarm && !json_is_true(json_object_get(eff, "cold_each_query")) &&
		      m->queries > 1);
	if (json_is_object(json_object_get(eff, "load"))) {
		m->bg.readers = (unsigned) num_or(json_object_get(eff, "load"), "readers", 0);
		m->bg.reader_bytes = (uint32_t) num_or(json_object_get(eff, "load"), "block_bytes",
						       HARNESS_BLOCK);
	}
	if (json_is_object(json_object_get(eff, "bulkwrite"))) {
		m->bg.write_chunk =
			(uint64_t) num_or(json_object_get(eff, "bulkwrite"), "chunk_bytes", 1 << 20);
		m->bg.write_sync =
			(uint64_t) num_or(json_object_get(eff, "bulkwrite"), "sync_bytes", 8 << 20);
	}
	m->has_bg = m->bg.readers > 0 || m->bg.write_chunk > 0;
	if (m->kind == MC_MODEL && !(m->dev = device_of(c, dev)))
		m->kind = MC_REAL; /* a probe profile that will not load: not replayed */
	for (i = 0; trace_blind[i]; i++)
		json_object_del(key, trace_blind[i]);
	k = json_dumps(key, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(key);
	m->cls = -1;
	json_array_foreach(c->classes, i, v)
		if (k && !strcmp(json_string_value(v), k))
			m->cls = (int) i;
	if (m->cls < 0 && k) {
		m->cls = (int) json_array_size(c->classes);
		json_array_append_new(c->classes, json_string(k));
	}
	free(k);
	return 0;
}

/*
 * One query of spec m replayed on its model: r pages touched, g ms of CPU
 * a page, phi of them resident where some are; *w its wall, *l its reads'
 * mean (-1: none), *nd the reads that reach the model. 0 or -errno.
 */
static int replay_query(const mcspec *m, double r, double g, double phi, uint64_t seed,
			double *w, double *l, double *nd)
{
	double frac = 1, ndev;
	unsigned k;
	cv_trace *t = NULL;
	cv_sim_result res;
	int rc;

	if (m->hits)
		frac = 0;
	else if (m->prewarm)
		frac = 1 - phi;
	else if (m->overlap)
		frac = (1 + (m->queries - 1) * (1 - phi)) / m->queries;
	ndev = floor(r * frac + 0.5);
	*nd = ndev;
	*l = -1;
	if (m->kind != MC_MODEL || ndev < 1) {
		*w = r * g;
		return 0;
	}
	k = (unsigned) ndev; /* every stream its share, the first ones one more */
	if ((rc = cv_trace_new((size_t) k, &t)))
		return rc;
	{
		uint64_t gap = (uint64_t) (g * 1e6 * r / ndev); /* the CPU between one read and the next */

		for (uint32_t s = 0; s < m->streams; s++)
			for (uint32_t j = 0; j < k / m->streams + (s < k % m->streams); j++) {
				uint64_t at = (uint64_t) j * (gap + 1000);
				cv_trace_rec rec = {.stream = s, .batch = j,
						    .off = ((uint64_t) s * k + j) * HARNESS_BLOCK,
						    .len = HARNESS_BLOCK, .file = 0, .submit_ns = at,
						    .complete_ns = at + 1000};

				cv_trace_append(t, &rec);
			}
	}
	rc = cv_device_simulate_load(m->dev, t, seed, m->has_bg ? &m->bg : NULL, &res);
	cv_trace_free(t);
	if (rc)
		return rc;
	*w = res.wall_ms;
	*l = res.read_ms_mean;
	return 0;
}

/* A prewarm's reads of r pages, one after another as cv_cache_prewarm issues them: ms. */
static int replay_prewarm(const mcspec *m, double r, uint64_t seed, double *ms)
{
	mcspec serial = *m;

	serial.hits = serial.prewarm = serial.overlap = 0;
	serial.streams = 1;
	serial.has_bg = 0;
	{
		double l, nd;

		return replay_query(&serial, r, 0, 0, seed, ms, &l, &nd);
	}
}

/* The synthetic run of spec i at a grid point and seed (borrowed from c->cache), or NULL. */
static const json_t *synth_run(mctx *c, size_t i, double r, double g, double phi, unsigned seed)
{
	const mcspec *m = &c->sp[i];
	char key[160];
	json_t *run, *mt;
	double w, l, nd, pw = -1;
	uint64_t sd = 0x6d630000ull + (uint64_t) seed * 7919u + (uint64_t) i * 104729u;

	snprintf(key, sizeof(key), "%zu|%g|%g|%g|%u", i, r, g, phi, seed);
	if ((run = json_object_get(c->cache, key)))
		return run;
	if (replay_query(m, r, g, phi, sd, &w, &l, &nd) ||
	    (m->prewarm && m->kind == MC_MODEL && replay_prewarm(m, r, sd ^ 0x5157, &pw)) || w <= 0)
		return NULL;
	mt = json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "wall_s",
		       m->queries * w / 1000.0 / m->clients, "qps", m->clients * 1000.0 / w,
		       "lat_mean_ms", w, "lat_p50_ms", w, "lat_p90_ms", w, "lat_p95_ms", w,
		       "lat_p99_ms", w, "lat_p999_ms", w, "engine_reads", m->queries * nd,
		       "reads_per_query", nd);
	if (mt && l >= 0) {
		json_object_set_new(mt, "engine_read_ms_mean", json_real(l));
		json_object_set_new(mt, "engine_iops", json_real(nd * m->clients * 1000.0 / w));
		json_object_set_new(mt, "io_over_wall", json_real(nd * l / w));
	}
	if (mt && pw >= 0)
		json_object_set_new(mt, "prewarm_s", json_real(m->queries * pw / 1000.0));
	run = json_pack("{s:O, s:O, s:O, s:o}", "id", json_object_get(m->s, "path"), "tags",
			json_object_get(m->s, "tags"), "hypotheses", m->hyps, "metrics", mt);
	json_object_set_new(c->cache, key, run);
	return run;
}

/* ---- one comparison ---- */

typedef struct side {
	json_t *metrics; /* names */
	json_t *specs;   /* indexes into c->sp of every spec a selection matched */
	int device, engine, plan, replay, unmodelled, none;
	char why[256];
} side;

static void add_index(json_t *a, size_t i)
{
	size_t k;
	json_t *v;

	json_array_foreach(a, k, v)
		if ((size_t) json_integer_value(v) == i)
			return;
	json_array_append_new(a, json_integer((json_int_t) i));
}

/* Walk an expression's aggregates, placing each (side s). */
static void place_expr(mctx *c, const json_t *x, side *s)
{
	const json_t *ratio = json_object_get(x, "ratio");
	const char *m = json_string_value(json_object_get(x, "metric"));
	int matched = 0, real = 0, cpu = 0;

	if (json_is_array(ratio)) {
		place_expr(c, json_array_get(ratio, 0), s);
		place_expr(c, json_array_get(ratio, 1), s);
		return;
	}
	if (!json_is_object(x) || !json_object_get(x, "agg"))
		return;
	if (!m) {
		s->plan = 1; /* a count of runs: the plan fixes it */
		return;
	}
	if (!cs_json_has_string(s->metrics, m))
		json_array_append_new(s->metrics, json_string(m));
	for (size_t i = 0; i < c->n; i++) {
		json_t *probe = json_pack("{s:O, s:O}", "tags", json_object_get(c->sp[i].s, "tags"),
					  "hypotheses", c->sp[i].hyps);

		if (probe && rule_select_match(probe, json_object_get(x, "select"))) {
			matched = 1;
			add_index(s->specs, i);
			real |= c->sp[i].kind == MC_REAL;
			cpu |= c->sp[i].kind == MC_CPU;
		}
		json_decref(probe);
	}
	if (cs_in_list(engine_metrics, m)) {
		s->engine = 1;
	} else if (cs_in_list(device_metrics, m) || real) {
		s->device = 1;
		if (!s->why[0])
			snprintf(s->why, sizeof(s->why), "%s %s", m,
				 real ? "of a run on the real disk" : "is the block device's counter");
	} else if (!matched) {
		s->none = 1;
	} else if (!cs_in_list(replayed_metrics, m) ||
		   (cpu && strncmp(m, "lat_", 4) && strcmp(m, "wall_s") && strcmp(m, "qps"))) {
		s->unmodelled = 1;
		if (!s->why[0])
			snprintf(s->why, sizeof(s->why), "the replay does not give %s%s", m,
				 cpu ? " of a warm run" : "");
	} else {
		s->replay = 1;
	}
}

/* The trace classes among the specs of s (replayed kinds), into cls; their count, or -1: too many. */
static int classes_of(const mctx *c, const side *s, int *cls)
{
	int n = 0;
	size_t i;
	json_t *v;

	json_array_foreach(s->specs, i, v) {
		const mcspec *m = &c->sp[json_integer_value(v)];
		int seen = 0;

		if (m->kind == MC_REAL)
			continue;
		for (int k = 0; k < n; k++)
			seen |= cls[k] == m->cls;
		if (!seen) {
			if (n == MC_CLASSES_MAX)
				return -1;
			cls[n++] = m->cls;
		}
	}
	return n;
}

static const char *outcome_text(unsigned mask)
{
	static const char *const t[8] = {
		"none",  "undetermined", "false", "false or undetermined (the model's draw)",
		"true", "true or undetermined (the model's draw)", "true or false (the model's draw)",
		"true, false or undetermined (the model's draw)"};

	return t[mask & 7];
}

/* A grid point in words, into buf. */
static void point_text(const double *floor_of, int ncls, unsigned pt, int need_phi, char *buf,
		       size_t cap)
{
	size_t len = 0;

	for (int k = 0; k < ncls && len < cap; k++)
		len += (size_t) snprintf(buf + len, cap - len, "%s%g pages a query%s", k ? ", " : "",
					 fmax(MC_READS[(pt >> k) & 1], floor_of[k]),
					 ncls > 1 ? (k == 0 ? " (first trace class)" : " (another)") : "");
	if (len < cap)
		len += (size_t) snprintf(buf + len, cap - len, ", %g ms CPU a page",
					 MC_CPU_MS[(pt >> ncls) & 1]);
	if (need_phi && len < cap)
		snprintf(buf + len, cap - len, ", %g of them resident",
			 MC_OVERLAP[(pt >> (ncls + 1)) & 1]);
}

/*
 * Replay comparison cmp over the grid: *finding 1 when two points share no
 * outcome (why names them), *mask the outcomes seen. 0 or an exit code.
 */
static int replay_cmp(mctx *c, const json_t *cmp, const side *s, int *finding, unsigned *mask,
		      char *why, size_t cap)
{
	int cls[MC_CLASSES_MAX], ncls = classes_of(c, s, cls), need_phi = 0;
	unsigned masks[1 << (MC_CLASSES_MAX + 2)], npts;
	double floor_of[MC_CLASSES_MAX];
	json_t *rule = json_pack("{s:O}", "cmp", cmp);
	size_t i;
	json_t *v;

	*finding = 0;
	*mask = 0;
	if (ncls < 0) {
		json_decref(rule);
		snprintf(why, cap, "its runs span more than %d trace classes: not replayed",
			 MC_CLASSES_MAX);
		*finding = 1;
		return 0;
	}
	/* a class's pages a query: at least MC_STREAM_MIN for every stream of its widest fan-out */
	for (int k = 0; k < ncls; k++)
		floor_of[k] = 0;
	json_array_foreach(s->specs, i, v) {
		const mcspec *m = &c->sp[json_integer_value(v)];

		need_phi |= m->overlap;
		for (int k = 0; k < ncls; k++)
			if (cls[k] == m->cls)
				floor_of[k] = fmax(floor_of[k], (double) MC_STREAM_MIN * m->streams);
	}
	npts = 1u << (ncls + 1 + need_phi);
	for (unsigned pt = 0; pt < npts; pt++) {
		double g = MC_CPU_MS[(pt >> ncls) & 1];
		double phi = need_phi ? MC_OVERLAP[(pt >> (ncls + 1)) & 1] : 0;

		masks[pt] = 0;
		for (unsigned seed = 0; seed < MC_SEEDS; seed++) {
			json_t *runs = json_array();
			int res = -1;
			cs_err re = {0};

			json_array_foreach(s->specs, i, v) {
				size_t si = (size_t) json_integer_value(v);
				const mcspec *m = &c->sp[si];
				const json_t *run;
				double r = MC_READS[0];

				for (int k = 0; k < ncls; k++)
					if (cls[k] == m->cls)
						r = fmax(MC_READS[(pt >> k) & 1], floor_of[k]);
				run = m->kind == MC_REAL ? NULL : synth_run(c, si, r, g, phi, seed);
				if (run)
					json_array_append(runs, (json_t *) run);
			}
			if (rule_eval(rule, runs, &res, NULL, &re))
				res = -1;
			json_decref(runs);
			masks[pt] |= 1u << (res + 1);
		}
		*mask |= masks[pt];
	}
	json_decref(rule);
	for (unsigned a = 0; a < npts && !*finding; a++)
		for (unsigned b = a + 1; b < npts && !*finding; b++)
			if (!(masks[a] & masks[b])) {
				char pa[160], pb[160];

				point_text(floor_of, ncls, a, need_phi, pa, sizeof(pa));
				point_text(floor_of, ncls, b, need_phi, pb, sizeof(pb));
				snprintf(why, cap, "what the engine measures moves it: %s at %s, %s at %s",
					 outcome_text(masks[a]), pa, outcome_text(masks[b]), pb);
				*finding = 1;
			}
	return 0;
}

/* Classify one comparison at path; appends its entry to c->clauses. */
static int classify_cmp(const json_t *cmp, const char *path, void *ud)
{
	mctx *c = ud;
	side s = {json_array(), json_array(), 0, 0, 0, 0, 0, 0, ""};
	const char *basis;
	char why[512] = "";
	json_t *paths = json_array(), *v, *entry;
	unsigned mask = 0;
	size_t i;

	place_expr(c, json_object_get(cmp, "left"), &s);
	place_expr(c, json_object_get(cmp, "right"), &s);
	if (s.device) {
		basis = "device";
		snprintf(why, sizeof(why), "%s", s.why);
	} else if (s.unmodelled) {
		basis = "engine and device model";
		snprintf(why, sizeof(why), "%s: counted as a finding", s.why);
	} else if (s.none) {
		basis = "no runs";
		snprintf(why, sizeof(why), "a selection matches none of the plan's runs");
	} else if (s.replay && s.engine) {
		basis = "engine and device model";
		snprintf(why, sizeof(why), "compares an engine count with a modelled figure");
	} else if (s.replay) {
		int finding = 0, modelled = 0;

		json_array_foreach(s.specs, i, v)
			modelled |= c->sp[json_integer_value(v)].kind == MC_MODEL;
		if (!modelled) {
			basis = "engine";
			snprintf(why, sizeof(why), "warm runs' times: CPU alone");
		} else if (replay_cmp(c, cmp, &s, &finding, &mask, why, sizeof(why))) {
			basis = "engine and device model";
		} else if (finding) {
			basis = "engine and device model";
		} else {
			basis = "device model";
			snprintf(why, sizeof(why),
				 "no figure of the engine's grid moves it (under the model: %s): the "
				 "model's parameters decide it",
				 outcome_text(mask));
		}
	} else if (s.engine) {
		basis = "engine";
		snprintf(why, sizeof(why), "engine counts: the read trace's, on any device");
	} else {
		basis = "plan";
		snprintf(why, sizeof(why), "counts runs: the plan fixes it");
	}
	json_array_foreach(s.specs, i, v)
		json_array_append(paths, json_object_get(c->sp[json_integer_value(v)].s, "path"));
	entry = json_pack("{s:s, s:s, s:O, s:o, s:s}", "path", path, "basis", basis, "metrics",
			  s.metrics, "runs", paths, "why", why);
	if (entry && mask)
		json_object_set_new(entry, "outcome", json_string(outcome_text(mask)));
	json_array_append_new(c->clauses, entry);
	json_decref(s.metrics);
	json_decref(s.specs);
	return -1; /* rule_can_hold's walk: keep asking every comparison */
}

/* The evidence a hypothesis's clauses make: "model check" or "finding". */
static const char *evidence_of(const json_t *clauses)
{
	int decided = 0, model = 1;
	size_t i;
	json_t *cl;

	json_array_foreach(clauses, i, cl) {
		const char *b = json_string_value(json_object_get(cl, "basis"));

		if (!strcmp(b, "plan") || !strcmp(b, "no runs"))
			continue;
		decided = 1;
		model &= !strcmp(b, "device model");
	}
	return decided && model ? "model check" : "finding";
}

int harness_model_checks(struct ledger *l, const json_t *study, json_t *out, cs_err *e)
{
	json_t *docs = NULL, *order = NULL, *idv;
	ledger_plan plan = {0};
	size_t i;
	int rc;

	rc = ledger_plan_load(l, 0, &plan, e);
	if (!rc)
		rc = harness_registered_hyps(l, &docs, &order, e);
	if (rc)
		goto out;
	json_array_foreach(order, i, idv) {
		const char *id = json_string_value(idv);
		const json_t *hr = json_object_get(docs, id), *doc = json_object_get(hr, "doc");
		int64_t seq = json_integer_value(json_object_get(hr, "seq"));
		mctx c = {.id = id, .classes = json_array(), .cache = json_object(),
			  .clauses = json_array(), .e = e};
		json_t *specs = NULL, *findings = json_array(), *d, *s;
		char name[40];
		size_t k;

		d = json_pack("{s:O?, s:I, s:O?}", "kind", json_object_get(doc, "kind"),
			      "hypothesis_seq", (json_int_t) seq, "plan_sha256",
			      json_object_get(plan.rec, "plan_sha256"));
		if (!plan.plan) {
			json_object_set_new(d, "not_classified", json_string("no plan: every verdict is exploratory"));
		} else if (plan.first_run_start && seq > plan.first_run_start) {
			json_object_set_new(d, "not_classified",
					    json_string("registered after the first run: post hoc, exploratory"));
		} else if (!ledger_plan_maps(&plan, id)) {
			json_object_set_new(d, "not_classified", json_string("the plan maps no run to it"));
		} else {
			specs = harness_hyp_plan_specs(&plan, study, id, "runs", findings);
			c.n = json_array_size(specs);
			c.sp = calloc(c.n ? c.n : 1, sizeof(*c.sp));
			if (!c.sp) {
				rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
			} else {
				json_array_foreach(specs, k, s)
					place(&c, &c.sp[k], s);
				rule_can_hold(json_object_get(doc, "accept"), "$.accept", classify_cmp, &c);
				rule_can_hold(json_object_get(doc, "reject"), "$.reject", classify_cmp, &c);
				json_object_set_new(d, "evidence", json_string(evidence_of(c.clauses)));
				json_object_set(d, "clauses", c.clauses);
				json_object_set_new(
					d, "replay",
					json_pack("{s:i, s:[f,f], s:[f,f], s:[f,f], s:i}", "seeds", MC_SEEDS,
						  "pages_a_query", MC_READS[0], MC_READS[1],
						  "cpu_ms_a_page", MC_CPU_MS[0], MC_CPU_MS[1],
						  "resident_share", MC_OVERLAP[0], MC_OVERLAP[1],
						  "trace_classes", (int) json_array_size(c.classes)));
			}
			for (k = 0; k < c.n && c.sp; k++)
				json_decref(c.sp[k].hyps);
			free(c.sp);
		}
		if (json_array_size(findings))
			json_object_set(d, "spec_findings", findings);
		snprintf(name, sizeof(name), "model-check:%s", id);
		if (!rc)
			json_array_append_new(out, json_pack("{s:s, s:s, s:b, s:o}", "check", name,
							     "hypothesis", id, "passed", 1, "detail", d));
		else
			json_decref(d);
		for (k = 0; k < c.ndev; k++)
			cv_device_free(c.devs[k]);
		json_decref(c.classes);
		json_decref(c.cache);
		json_decref(c.clauses);
		json_decref(specs);
		json_decref(findings);
		if (rc)
			break;
	}
out:
	json_decref(docs);
	json_decref(order);
	ledger_plan_free(&plan);
	return rc;
}
