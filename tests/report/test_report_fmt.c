/*
 * test_report_fmt.c - the report's text layer: numbers as a reader sees
 * them, escaping for HTML and Markdown, the buffer's cap, axis ticks, and
 * that the plots escape their labels and show what a log axis cannot draw
 * as "n/a"; how a run's numbers were made (virtual time, modelled real
 * time, real disk), the number a verdict's band is about, and that the
 * renderer numbers tables and sections without a gap and folds in both
 * formats.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "report_doc.h"
#include "report_int.h"

static void fmt_is(double x, const char *want)
{
	char out[REPORT_NUM_MAX];

	report_fmt_num(x, out);
	if (strcmp(out, want))
		fail_msg("report_fmt_num(%.17g) = \"%s\", want \"%s\"", x, out, want);
}

static void test_numbers(void **state)
{
	(void) state;
	fmt_is(NAN, "n/a");
	fmt_is(INFINITY, "n/a");
	fmt_is(0, "0");
	fmt_is(-0.0, "0");
	fmt_is(7, "7");
	fmt_is(57419, "57,419");
	fmt_is(-1234567, "-1,234,567");
	fmt_is(1912.1, "1,912");
	fmt_is(34.57, "34.57");
	fmt_is(0.987, "0.987");
	fmt_is(0.9870001, "0.987");
	fmt_is(0.0523, "0.0523");
	fmt_is(0.001, "0.001");
	fmt_is(4.47e-7, "4.47e-7");
	fmt_is(-5.15e-7, "-5.15e-7");
	fmt_is(9.99996, "10");
	fmt_is(123456.7, "123,457");
	fmt_is(1e20, "1e20");
	fmt_is(2.5, "2.5");
}

static void test_json_cells(void **state)
{
	char out[REPORT_NUM_MAX];
	json_t *v = json_real(0.5);

	(void) state;
	assert_string_equal(report_fmt_json(NULL, out), "n/a");
	assert_string_equal(report_fmt_json(json_null(), out), "n/a");
	assert_string_equal(report_fmt_json(json_true(), out), "yes");
	assert_string_equal(report_fmt_json(json_false(), out), "no");
	assert_string_equal(report_fmt_json(v, out), "0.5");
	json_decref(v);
}

static void test_escaping(void **state)
{
	rbuf b;

	(void) state;
	rb_init(&b, 0);
	rb_html(&b, "<script>alert('x') & \"y\"</script>");
	assert_true(rb_ok(&b));
	assert_string_equal(b.p,
	                    "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;");
	rb_free(&b);

	rb_init(&b, 0);
	rb_md(&b, "a|b *c* _d_ [e](f) <g>\nh `i` \\ #j");
	assert_string_equal(b.p, "a\\|b \\*c\\* \\_d\\_ \\[e\\](f) &lt;g&gt; h \\`i\\` \\\\ \\#j");
	rb_free(&b);
}

static void test_buffer_cap(void **state)
{
	rbuf b;
	int i;

	(void) state;
	rb_init(&b, 10);
	rb_put(&b, "12345");
	rb_printf(&b, "%d", 6789);
	assert_true(rb_ok(&b));
	assert_string_equal(b.p, "123456789");
	rb_put(&b, "ab"); /* 11 bytes: over the cap */
	assert_false(rb_ok(&b));
	rb_put(&b, "more"); /* sticky: nothing happens */
	assert_int_equal(b.len, 9);
	rb_free(&b);
	rb_free(&b); /* free of a freed (zeroed) buffer is fine */

	rb_init(&b, 0);
	for (i = 0; i < 10000; i++)
		rb_printf(&b, "%05d", i);
	assert_true(rb_ok(&b));
	assert_int_equal(b.len, 50000);
	assert_memory_equal(b.p + 49995, "09999", 5);
	rb_free(&b);
}

static void test_ticks(void **state)
{
	double t[32];
	size_t n;

	(void) state;
	n = report_log_ticks(0.05, 1912, t, 32);
	assert_int_equal(n, 7);
	assert_true(fabs(t[0] - 0.01) < 1e-15);
	assert_true(fabs(t[6] - 10000) < 1e-9);
	n = report_log_ticks(10, 10, t, 32); /* one value: one decade at least */
	assert_int_equal(n, 2);
	assert_true(t[0] == 10 && t[1] == 100);
	assert_int_equal(report_log_ticks(0, 10, t, 32), 0);
	assert_int_equal(report_log_ticks(-1, 10, t, 32), 0);
	assert_int_equal(report_log_ticks(5, 1, t, 32), 0);

	n = report_lin_ticks(0, 706, 5, t, 32);
	assert_true(n >= 2 && n <= 9);
	assert_true(t[0] <= 0 && t[n - 1] >= 706);
	assert_true(fabs((t[1] - t[0]) - 200) < 1e-9); /* 706 / 5 -> 141 -> step 200 */
	n = report_lin_ticks(0.12, 0.13, 5, t, 32);
	assert_true(t[0] <= 0.12 && t[n - 1] >= 0.13 - 1e-12);
	n = report_lin_ticks(3, 3, 5, t, 32); /* a flat range still gets an axis */
	assert_true(n >= 2 && t[0] <= 3 && t[n - 1] >= 3);
	assert_int_equal(report_lin_ticks(NAN, 1, 5, t, 32), 0);
	assert_int_equal(report_lin_ticks(0, 1e6, 5, t, 2), 2); /* capped */
}

static void test_svg(void **state)
{
	svg_bar bars[] = {
	    {"R1 <x>", 1912.1, 0}, {"warm", 0.052, 1}, {"none", 0, 0}, {"nan", NAN, 1}};
	static const char *const groups[] = {"serial", "fan&out"};
	double v1[] = {10, 12, 300, 11, -1}, v2[] = {0.7, 0.8};
	svg_strip rows[] = {{"hdd-pool", v1, 5}, {"ssd \"q\"", v2, 2}, {"empty", NULL, 0}};
	svg_point pts[] = {{137, 142.4, 95, 210, 0, "P1", 0},
	                   {5386, 5742, 5600, 5900, 1, "P<2>", 0}};
	rbuf b;

	(void) state;
	rb_init(&b, 0);
	svg_hbars(&b, "Wall <time>", "s", bars, 4, 1, groups, 2);
	assert_true(rb_ok(&b));
	assert_non_null(strstr(b.p, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	assert_non_null(strstr(b.p, "R1 &lt;x&gt;"));
	assert_non_null(strstr(b.p, "Wall &lt;time&gt;"));
	assert_non_null(strstr(b.p, "fan&amp;out"));
	assert_null(strstr(b.p, "<x>"));
	assert_non_null(strstr(b.p, ">1,912<"));
	assert_non_null(strstr(b.p, ">n/a<")); /* zero and NaN on a log axis */
	assert_null(strstr(b.p, "nan\""));     /* no NaN coordinates */
	assert_null(strstr(b.p, "inf"));
	rb_free(&b);

	rb_init(&b, 0);
	svg_strips(&b, "Per-read", "ms", rows, 3);
	assert_true(rb_ok(&b));
	assert_non_null(strstr(b.p, "hdd-pool (n=4)")); /* -1 cannot be drawn on a log axis */
	assert_non_null(strstr(b.p, "ssd &quot;q&quot; (n=2)"));
	assert_non_null(strstr(b.p, "<title>median 11.5</title>"));
	assert_null(strstr(b.p, "nan"));
	rb_free(&b);

	rb_init(&b, 0);
	svg_scatter(&b, "Holdout", "observed", "predicted", pts, 2, 1, 1, 1, 0, groups, 2);
	assert_true(rb_ok(&b));
	assert_non_null(strstr(b.p, "P&lt;2&gt;"));
	assert_non_null(strstr(b.p, "stroke-dasharray")); /* the diagonal */
	assert_null(strstr(b.p, "nan"));
	rb_free(&b);

	/* the same input gives the same bytes */
	{
		rbuf a, c;

		rb_init(&a, 0);
		rb_init(&c, 0);
		svg_scatter(&a, "x", "x", "y", pts, 2, 0, 0, 0, 1, groups, 2);
		svg_scatter(&c, "x", "x", "y", pts, 2, 0, 0, 0, 1, groups, 2);
		assert_int_equal(a.len, c.len);
		assert_memory_equal(a.p, c.p, a.len);
		assert_non_null(strstr(a.p, "<polyline"));
		rb_free(&a);
		rb_free(&c);
	}
}

/* A kept run record {"p": payload} from JSON text (new). */
static json_t *kept(const char *payload)
{
	json_t *p = json_loads(payload, 0, NULL);

	assert_non_null(p);
	return json_pack("{s:o}", "p", p);
}

static void test_time_basis(void **state)
{
	static const struct {
		const char *payload;
		int want;
	} cases[] = {
	    {"{\"device_time\":\"virtual\",\"features\":{\"device\":\"hdd-pool\"}}",
	     RPT_TIME_VIRTUAL},
	    {"{\"device_time\":\"realtime\",\"features\":{\"device\":\"hdd-pool\"}}",
	     RPT_TIME_MODEL},
	    {"{\"device_time\":null,\"features\":{\"device\":null}}", RPT_TIME_DISK},
	    {"{\"features\":{}}", RPT_TIME_DISK},
	    {"{\"features\":{\"device\":\"hdd-pool\"}}", RPT_TIME_UNRECORDED},
	};
	char w[RPT_TIME_WORDS_MAX];

	(void) state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *r = kept(cases[i].payload);

		if (rpt_time_basis(r) != cases[i].want)
			fail_msg("%s: basis %d, want %d", cases[i].payload, rpt_time_basis(r),
			         cases[i].want);
		json_decref(r);
	}
	assert_string_equal(rpt_time_words(RPT_TIME_VIRTUAL, w), "virtual time");
	assert_string_equal(rpt_time_words(RPT_TIME_VIRTUAL | RPT_TIME_DISK, w),
	                    "virtual time + real disk");
	assert_string_equal(rpt_time_words(0, w), "n/a");
}

static void test_verdict_observed(void **state)
{
	/* H2's shape: a guard ratio (>= 5) first, the predicted ratio (<= 1) second */
	json_t *v = json_loads(
	    "{\"accept\":{\"trace\":{\"all\":[{\"cmp\":{\"left\":{\"ratio\":[1,2],\"value\":4530},"
	    "\"op\":\">=\",\"right\":5}},{\"not\":{\"cmp\":{\"left\":{\"agg\":\"median\","
	    "\"value\":1.005},\"op\":\">\",\"right\":1.0}}}]}}}",
	    0, NULL);
	json_t *band = json_pack("[f,f]", 0.45, 1.1), *none = json_array();

	(void) state;
	assert_non_null(v);
	assert_true(fabs(rpt_verdict_observed(v, band) - 1.005) < 1e-12);
	/* without a band: the first comparison with a number */
	assert_true(fabs(rpt_verdict_observed(v, none) - 4530) < 1e-12);
	json_decref(v);
	json_decref(band);
	json_decref(none);
}

static void test_render_numbers(void **state)
{
	doc d = {json_array(), json_object(), json_array(), 0};
	rbuf html, md;
	json_t *t;

	(void) state;
	rpt_h_plain(&d, "At a glance", "glance");
	rpt_toc(&d);
	rpt_h(&d, 2, "Verdicts");
	t = rpt_table(&d, "First.", "A", NULL);
	rpt_cell_s(rpt_row(t), "R0001");
	rpt_table(&d, NULL, "B", NULL); /* no caption: no number */
	rpt_fold_open(&d, "Folded <things>");
	rpt_table(&d, "Second.", "C", NULL);
	rpt_fold_close(&d);
	rpt_h(&d, 2, "Runs");
	rb_init(&html, 0);
	rb_init(&md, 0);
	rpt_render_html(&html, &d, "T");
	rpt_render_md(&md, &d, "T");
	assert_false(d.failed);
	assert_true(rb_ok(&html) && rb_ok(&md));
	assert_non_null(strstr(html.p, "<h2 id=\"glance\">At a glance</h2>"));
	assert_non_null(strstr(html.p, "<h2 id=\"1-verdicts\">1. Verdicts</h2>"));
	assert_non_null(strstr(html.p, "<h2 id=\"2-runs\">2. Runs</h2>"));
	assert_non_null(strstr(html.p, "<a href=\"#2-runs\">2. Runs</a>"));
	assert_null(strstr(html.p, "href=\"#glance\"")); /* the first screen is not listed */
	assert_non_null(strstr(html.p, "Table 1. First."));
	assert_non_null(strstr(html.p, "Table 2. Second."));
	assert_null(strstr(html.p, "Table 3."));
	assert_non_null(strstr(html.p, "<details><summary>Folded &lt;things&gt;</summary>"));
	assert_non_null(strstr(html.p, "</details>"));
	assert_non_null(strstr(md.p, "- [2. Runs](#2-runs)"));
	assert_non_null(strstr(md.p, "*Table 2. Second.*"));
	assert_non_null(strstr(md.p, "<details><summary>Folded &lt;things&gt;</summary>"));
	rb_free(&html);
	rb_free(&md);
	json_decref(d.blocks);
	json_decref(d.figs);
	json_decref(d.fig_order);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_numbers),        cmocka_unit_test(test_json_cells),
	    cmocka_unit_test(test_escaping),       cmocka_unit_test(test_buffer_cap),
	    cmocka_unit_test(test_ticks),          cmocka_unit_test(test_svg),
	    cmocka_unit_test(test_time_basis),     cmocka_unit_test(test_verdict_observed),
	    cmocka_unit_test(test_render_numbers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
