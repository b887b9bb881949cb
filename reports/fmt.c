/*
 * fmt.c - the text layer under every report: a bounded buffer, escaping
 * for HTML and Markdown, numbers as a reader wants them, axis ticks.
 *
 * Escaping is the one security boundary of a report: hypothesis titles,
 * statements, refutations and deviations are free text that anyone with
 * write access to a study supplied, and the HTML report is opened in a
 * browser. Every byte of such text goes through rb_html (or rb_md, which
 * also entity-escapes < > &), never straight into the output.
 *
 * Numbers are formatted with printf at fixed precisions under the C
 * locale, so the same double always prints the same way.
 */
#include "report_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rb_init(rbuf *b, size_t max)
{
	memset(b, 0, sizeof(*b));
	b->max = max ? max : RB_DEFAULT_MAX;
}

void rb_free(rbuf *b)
{
	if (!b)
		return;
	free(b->p);
	memset(b, 0, sizeof(*b));
}

int rb_ok(const rbuf *b)
{
	return !b->failed;
}

/* Make room for n more bytes plus a NUL; 0 ok, -1 failed (sticky). */
static int reserve(rbuf *b, size_t n)
{
	size_t need, cap;
	char *p;

	if (b->failed)
		return -1;
	if (n > b->max || b->len > b->max - n) {
		b->failed = 1;
		return -1;
	}
	need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		b->failed = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

void rb_putn(rbuf *b, const char *s, size_t n)
{
	if (reserve(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void rb_put(rbuf *b, const char *s)
{
	if (s)
		rb_putn(b, s, strlen(s));
}

void rb_printf(rbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->failed)
		return;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->failed = 1;
		return;
	}
	if (reserve(b, (size_t) n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t) n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t) n;
}

void rb_html(rbuf *b, const char *s)
{
	const char *run = s;

	if (!s)
		return;
	for (; *s; s++) {
		const char *rep = NULL;

		switch (*s) {
		case '&':
			rep = "&amp;";
			break;
		case '<':
			rep = "&lt;";
			break;
		case '>':
			rep = "&gt;";
			break;
		case '"':
			rep = "&quot;";
			break;
		case '\'':
			rep = "&#39;";
			break;
		default:
			break;
		}
		if (rep) {
			rb_putn(b, run, (size_t) (s - run));
			rb_put(b, rep);
			run = s + 1;
		}
	}
	rb_putn(b, run, (size_t) (s - run));
}

void rb_md(rbuf *b, const char *s)
{
	if (!s)
		return;
	for (; *s; s++) {
		switch (*s) {
		case '&':
			rb_put(b, "&amp;");
			break;
		case '<':
			rb_put(b, "&lt;");
			break;
		case '>':
			rb_put(b, "&gt;");
			break;
		case '\n':
		case '\r':
		case '\t':
			rb_putn(b, " ", 1);
			break;
		case '\\':
		case '`':
		case '*':
		case '_':
		case '[':
		case ']':
		case '|':
		case '#':
		case '!':
		case '~':
			rb_putn(b, "\\", 1);
			rb_putn(b, s, 1);
			break;
		default:
			rb_putn(b, s, 1);
			break;
		}
	}
}

/* Insert thousands separators into the integer digits of a formatted number. */
static void group_thousands(const char *in, char out[REPORT_NUM_MAX])
{
	const char *p = in, *dot;
	size_t o = 0, ndig, i;

	if (*p == '-')
		out[o++] = *p++;
	dot = p;
	while (*dot >= '0' && *dot <= '9')
		dot++;
	ndig = (size_t) (dot - p);
	for (i = 0; i < ndig && o < REPORT_NUM_MAX - 2; i++) {
		if (i && (ndig - i) % 3 == 0)
			out[o++] = ',';
		out[o++] = p[i];
	}
	while (*dot && o < REPORT_NUM_MAX - 1)
		out[o++] = *dot++;
	out[o] = '\0';
}

/* Drop trailing zeros after a decimal point, and the point itself if bare. */
static void strip_zeros(char *s)
{
	char *dot = strchr(s, '.'), *end;

	if (!dot)
		return;
	end = s + strlen(s);
	while (end > dot + 1 && end[-1] == '0')
		*--end = '\0';
	if (end == dot + 1)
		*dot = '\0';
}

const char *report_fmt_num(double x, char out[REPORT_NUM_MAX])
{
	char tmp[REPORT_NUM_MAX];
	double ax = fabs(x);

	if (!isfinite(x)) {
		snprintf(out, REPORT_NUM_MAX, "n/a");
		return out;
	}
	if (x == 0) {
		snprintf(out, REPORT_NUM_MAX, "0");
		return out;
	}
	if (ax < 1e15 && x == floor(x)) {
		snprintf(tmp, sizeof(tmp), "%.0f", x);
		group_thousands(tmp, out);
		return out;
	}
	if (ax < 1e-3 || ax >= 1e15) {
		char mant[16], *e;
		int ex;

		snprintf(tmp, sizeof(tmp), "%.2e", x);
		e = strchr(tmp, 'e');
		ex = (int) strtol(e + 1, NULL, 10);
		*e = '\0';
		snprintf(mant, sizeof(mant), "%.15s", tmp);
		strip_zeros(mant);
		snprintf(out, REPORT_NUM_MAX, "%se%d", mant, ex);
		return out;
	}
	{
		int mag = (int) floor(log10(ax));
		int dec = 3 - mag;

		if (dec < 0)
			dec = 0;
		snprintf(tmp, sizeof(tmp), "%.*f", dec, x);
		strip_zeros(tmp);
		if (!strcmp(tmp, "-0"))
			snprintf(tmp, sizeof(tmp), "0");
		group_thousands(tmp, out);
	}
	return out;
}

const char *report_fmt_json(const json_t *v, char out[REPORT_NUM_MAX])
{
	if (!v || json_is_null(v))
		snprintf(out, REPORT_NUM_MAX, "n/a");
	else if (json_is_number(v))
		report_fmt_num(json_number_value(v), out);
	else if (json_is_true(v))
		snprintf(out, REPORT_NUM_MAX, "yes");
	else if (json_is_false(v))
		snprintf(out, REPORT_NUM_MAX, "no");
	else if (json_is_string(v))
		snprintf(out, REPORT_NUM_MAX, "%s", json_string_value(v));
	else
		snprintf(out, REPORT_NUM_MAX, "(%s)", json_is_array(v) ? "list" : "object");
	return out;
}

size_t report_log_ticks(double lo, double hi, double *ticks, size_t max)
{
	int a, z, k;
	size_t n = 0;

	if (!(lo > 0) || !(hi > 0) || !isfinite(lo) || !isfinite(hi) || hi < lo || !max)
		return 0;
	a = (int) floor(log10(lo) + 1e-9);
	z = (int) ceil(log10(hi) - 1e-9);
	if (z <= a)
		z = a + 1;
	for (k = a; k <= z && n < max; k++)
		ticks[n++] = pow(10.0, k);
	return n;
}

size_t report_lin_ticks(double lo, double hi, size_t want, double *ticks, size_t max)
{
	double span, raw, mag, step, start, t;
	size_t n = 0;

	if (!isfinite(lo) || !isfinite(hi) || hi < lo || !max || !want)
		return 0;
	if (hi == lo) {
		double pad = lo == 0 ? 1 : fabs(lo) * 0.5;

		lo -= pad;
		hi += pad;
	}
	span = hi - lo;
	raw = span / (double) want;
	mag = pow(10.0, floor(log10(raw)));
	step = raw / mag <= 1   ? mag
	       : raw / mag <= 2 ? 2 * mag
	       : raw / mag <= 5 ? 5 * mag
	                        : 10 * mag;
	start = floor(lo / step + 1e-9) * step;
	for (t = start; n < max; t = start + step * (double) n) {
		ticks[n++] = fabs(t) < step * 1e-9 ? 0 : t;
		if (t >= hi - step * 1e-9)
			break;
	}
	return n;
}
