/*
 * render.c - the document as Markdown and as self-contained HTML.
 *
 * A first pass (number) gives every numbered level-2 heading its number
 * and anchor (GitHub's slug of the numbered text, so the Markdown links
 * work there too), every captioned table and every figure its number in
 * document order, and collects the contents. The HTML is inline CSS and
 * SVG under a Content-Security-Policy that forbids scripts and remote
 * loads; every record text is escaped. Folds are <details> in both.
 */
#include "report_doc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const css =
    "body{font-family:system-ui,sans-serif;max-width:82rem;margin:1.2rem auto;padding:0 1rem;"
    "color:#111;line-height:1.4}"
    "h1{font-size:1.5rem;margin:0.4rem 0}h2{font-size:1.25rem;margin:1.4rem 0 0.4rem;"
    "border-bottom:1px solid #ddd}h3{font-size:1.05rem;margin:1rem 0 0.3rem}p{margin:0.4rem 0}"
    ".tw{overflow-x:auto;max-width:100%}"
    "table{border-collapse:collapse;margin:0.5rem 0;font-size:0.8rem}"
    "th,td{border:1px solid #ccc;padding:0.15rem 0.4rem;text-align:left;vertical-align:top}"
    "th{background:#f2f2f2}td{max-width:30rem;overflow-wrap:break-word}"
    "td:first-child,td.nw{white-space:nowrap}"
    "caption{caption-side:bottom;text-align:left;font-style:italic;padding-top:0.2rem}"
    "pre{background:#f7f7f7;padding:0.5rem;overflow-x:auto;font-size:0.78rem;margin:0.3rem 0}"
    "details{margin:0.5rem 0}summary{cursor:pointer;font-weight:600}"
    "nav ul{columns:3;list-style:none;padding-left:0;margin:0.3rem 0}"
    "figure{display:inline-block;width:49%;min-width:24rem;vertical-align:top;"
    "margin:0.5rem 0.5% 0.5rem 0}figcaption{font-style:italic;font-size:0.85rem}"
    "figure.small{display:inline-block;width:32%;min-width:15rem;vertical-align:top;"
    "margin:0.4rem 0.5% 0.4rem 0}"
    "svg{max-width:100%;height:auto}";

/* GitHub's anchor of a heading: lower case, spaces to '-', other punctuation dropped. */
static void slug(rbuf *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char) *s;

		if (isalnum(c))
			rb_printf(b, "%c", tolower(c));
		else if (c == ' ' || c == '-')
			rb_put(b, "-");
		else if (c == '_')
			rb_put(b, "_");
	}
}

/*
 * The blocks with numbers given (new array): level-2 headings as "N. text"
 * with an "anchor", captions as "Table N. ..." and "Figure N. ...";
 * *toc (new) the numbered headings as [{text, anchor}].
 */
static json_t *number(const doc *d, json_t **toc)
{
	json_t *out = json_array(), *blk;
	size_t i;
	int nh = 0, nt = 0, nf = 0;

	*toc = json_array();
	json_array_foreach(d->blocks, i, blk)
	{
		json_t *c = json_copy(blk);
		const char *t = rpt_str(blk, "t");
		rbuf b;

		if (!c)
			continue;
		rb_init(&b, 0);
		if (!strcmp(t, "h") && json_integer_value(json_object_get(blk, "level")) == 2 &&
		    !rpt_str(blk, "anchor")) {
			rb_printf(&b, "%d. %s", ++nh, rpt_str(blk, "text") ?: "");
			json_object_set_new(c, "text", json_string(b.p ? b.p : ""));
			rb_free(&b);
			rb_init(&b, 0);
			slug(&b, rpt_str(c, "text"));
			json_object_set_new(c, "anchor", json_string(b.p ? b.p : ""));
			json_array_append_new(*toc, json_pack("{s:O,s:O}", "text",
			                                      json_object_get(c, "text"), "anchor",
			                                      json_object_get(c, "anchor")));
		} else if (!strcmp(t, "table") && rpt_str(blk, "caption")) {
			rb_printf(&b, "Table %d. %s", ++nt, rpt_str(blk, "caption"));
			json_object_set_new(c, "caption", json_string(b.p ? b.p : ""));
		} else if (!strcmp(t, "fig")) {
			rb_printf(&b, "Figure %d. %s", ++nf, rpt_str(blk, "caption") ?: "");
			json_object_set_new(c, "caption", json_string(b.p ? b.p : ""));
		}
		rb_free(&b);
		json_array_append_new(out, c);
	}
	return out;
}

/* The document as self-contained HTML: inline CSS and SVG, no script, every text escaped. */
void rpt_render_html(rbuf *b, const doc *d, const char *title)
{
	size_t i, j, k;
	json_t *blk, *toc, *blocks = number(d, &toc);

	rb_put(b,
	       "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	       "style-src 'unsafe-inline'; img-src data:\">\n"
	       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>");
	rb_html(b, title);
	rb_printf(b, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", css);
	rb_html(b, title);
	rb_put(b, "</h1>\n");
	json_array_foreach(blocks, i, blk)
	{
		const char *t = rpt_str(blk, "t");

		if (!strcmp(t, "h")) {
			int lv = (int) json_integer_value(json_object_get(blk, "level"));

			rb_printf(b, "<h%d", lv);
			if (rpt_str(blk, "anchor")) {
				rb_put(b, " id=\"");
				rb_html(b, rpt_str(blk, "anchor"));
				rb_put(b, "\"");
			}
			rb_put(b, ">");
			rb_html(b, rpt_str(blk, "text"));
			rb_printf(b, "</h%d>\n", lv);
		} else if (!strcmp(t, "p")) {
			rb_put(b, "<p>");
			rb_html(b, rpt_str(blk, "text"));
			rb_put(b, "</p>\n");
		} else if (!strcmp(t, "pre")) {
			rb_put(b, "<pre>");
			rb_html(b, rpt_str(blk, "text"));
			rb_put(b, "</pre>\n");
		} else if (!strcmp(t, "toc")) {
			json_t *e;

			rb_put(b, "<nav id=\"contents\"><strong>Contents</strong>\n<ul>\n");
			json_array_foreach(toc, j, e)
			{
				rb_put(b, "<li><a href=\"#");
				rb_html(b, rpt_str(e, "anchor"));
				rb_put(b, "\">");
				rb_html(b, rpt_str(e, "text"));
				rb_put(b, "</a></li>\n");
			}
			rb_put(b, "</ul></nav>\n");
		} else if (!strcmp(t, "fold")) {
			rb_put(b, "<details><summary>");
			rb_html(b, rpt_str(blk, "summary"));
			rb_put(b, "</summary>\n");
		} else if (!strcmp(t, "endfold")) {
			rb_put(b, "</details>\n");
		} else if (!strcmp(t, "table")) {
			json_t *c, *row;

			rb_put(b, "<div class=\"tw\"><table>\n");
			if (rpt_str(blk, "caption")) {
				rb_put(b, "<caption>");
				rb_html(b, rpt_str(blk, "caption"));
				rb_put(b, "</caption>\n");
			}
			rb_put(b, "<thead><tr>");
			json_array_foreach(json_object_get(blk, "head"), j, c)
			{
				rb_put(b, "<th>");
				rb_html(b, json_string_value(c));
				rb_put(b, "</th>");
			}
			rb_put(b, "</tr></thead>\n<tbody>\n");
			json_array_foreach(json_object_get(blk, "rows"), j, row)
			{
				rb_put(b, "<tr>");
				json_array_foreach(row, k, c)
				{
					const char *cs = json_string_value(c);

					/* a token (an id, a number, a time) is never broken */
					rb_put(b, cs && strlen(cs) <= 32 && !strchr(cs, ' ')
					              ? "<td class=\"nw\">"
					              : "<td>");
					rb_html(b, json_string_value(c));
					rb_put(b, "</td>");
				}
				rb_put(b, "</tr>\n");
			}
			rb_put(b, "</tbody>\n</table></div>\n");
		} else if (!strcmp(t, "fig")) {
			rb_put(b, json_is_true(json_object_get(blk, "small"))
			              ? "<figure class=\"small\">\n"
			              : "<figure>\n");
			rb_put(b,
			       json_string_value(json_object_get(d->figs, rpt_str(blk, "file"))));
			rb_put(b, "<figcaption>");
			rb_html(b, rpt_str(blk, "caption"));
			rb_put(b, " (");
			rb_html(b, rpt_str(blk, "file"));
			rb_put(b, ")</figcaption>\n</figure>\n");
		}
	}
	rb_put(b, "</body>\n</html>\n");
	json_decref(blocks);
	json_decref(toc);
}

/* Preformatted text as an indented Markdown code block (nothing in it can end it). */
static void md_pre(rbuf *b, const char *s)
{
	const char *nl;

	while (*s) {
		nl = strchr(s, '\n');
		rb_put(b, "    ");
		rb_putn(b, s, nl ? (size_t) (nl - s) : strlen(s));
		rb_put(b, "\n");
		if (!nl)
			break;
		s = nl + 1;
	}
	rb_put(b, "\n");
}

/* The document as Markdown (tables as pipes, figures as links to the SVG files). */
void rpt_render_md(rbuf *b, const doc *d, const char *title)
{
	size_t i, j, k;
	json_t *blk, *toc, *blocks = number(d, &toc);

	rb_put(b, "# ");
	rb_md(b, title);
	rb_put(b, "\n\n");
	json_array_foreach(blocks, i, blk)
	{
		const char *t = rpt_str(blk, "t");

		if (!strcmp(t, "h")) {
			rb_printf(b, "%.*s ",
			          (int) json_integer_value(json_object_get(blk, "level")),
			          "######");
			rb_md(b, rpt_str(blk, "text"));
			rb_put(b, "\n\n");
		} else if (!strcmp(t, "p")) {
			rb_md(b, rpt_str(blk, "text"));
			rb_put(b, "\n\n");
		} else if (!strcmp(t, "pre")) {
			md_pre(b, rpt_str(blk, "text"));
		} else if (!strcmp(t, "toc")) {
			json_t *e;

			rb_put(b, "Contents:\n\n");
			json_array_foreach(toc, j, e)
			{
				rb_put(b, "- [");
				rb_md(b, rpt_str(e, "text"));
				rb_printf(b, "](#%s)\n",
				          rpt_str(e, "anchor")); /* [a-z0-9_-] only */
			}
			rb_put(b, "\n");
		} else if (!strcmp(t, "fold")) {
			rb_put(b, "<details><summary>");
			rb_md(b, rpt_str(blk, "summary"));
			rb_put(b, "</summary>\n\n");
		} else if (!strcmp(t, "endfold")) {
			rb_put(b, "</details>\n\n");
		} else if (!strcmp(t, "table")) {
			json_t *c, *row, *head = json_object_get(blk, "head");

			rb_put(b, "|");
			json_array_foreach(head, j, c)
			{
				rb_put(b, " ");
				rb_md(b, json_string_value(c));
				rb_put(b, " |");
			}
			rb_put(b, "\n|");
			for (j = 0; j < json_array_size(head); j++)
				rb_put(b, "---|");
			rb_put(b, "\n");
			json_array_foreach(json_object_get(blk, "rows"), j, row)
			{
				rb_put(b, "|");
				json_array_foreach(row, k, c)
				{
					rb_put(b, " ");
					rb_md(b, json_string_value(c));
					rb_put(b, " |");
				}
				rb_put(b, "\n");
			}
			if (rpt_str(blk, "caption")) {
				rb_put(b, "\n*");
				rb_md(b, rpt_str(blk, "caption"));
				rb_put(b, "*\n");
			}
			rb_put(b, "\n");
		} else if (!strcmp(t, "fig")) {
			rb_put(b, "![");
			rb_md(b, rpt_str(blk, "caption"));
			rb_put(b, "](");
			rb_put(b, rpt_str(blk, "file")); /* our own fixed file names */
			rb_put(b, ")\n\n*");
			rb_md(b, rpt_str(blk, "caption"));
			rb_put(b, "*\n\n");
		}
	}
	json_decref(blocks);
	json_decref(toc);
}
