/*
 * index_util.c - what every index kind shares, below the dispatcher
 * (index.c) and the kinds alike: the block list a query records, the
 * files of an index directory, and the progress line of a long build.
 * It calls no kind and not the dispatcher.
 */
#include "index_ops.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>

CV_API int cv_block_list_add(cv_block_list *bl, uint32_t file, uint64_t block)
{
	if (!bl)
		return 0;
	if (bl->n == bl->cap) {
		size_t nc = bl->cap ? bl->cap * 2 : 1024;
		uint32_t *nf = realloc(bl->file, nc * sizeof(*nf));
		uint64_t *nb;

		if (!nf)
			return -ENOMEM;
		bl->file = nf;
		nb = realloc(bl->block, nc * sizeof(*nb));
		if (!nb)
			return -ENOMEM;
		bl->block = nb;
		bl->cap = nc;
	}
	bl->file[bl->n] = file;
	bl->block[bl->n++] = block;
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

CV_API int cv_index_files(const char *dir, char ***paths, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **v = NULL;
	size_t cnt = 0, cap = 0;
	int rc = 0;

	*paths = NULL;
	*n = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char full[4096];
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		snprintf(full, sizeof(full), "%s/%s", dir, de->d_name);
		if (lstat(full, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (cnt == cap) {
			char **nv;

			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
		}
		v[cnt] = strdup(full);
		if (!v[cnt]) {
			rc = -ENOMEM;
			break;
		}
		cnt++;
	}
	closedir(d);
	if (rc) {
		cv_index_files_free(v, cnt);
		return rc;
	}
	if (cnt > 1)
		qsort(v, cnt, sizeof(*v), name_cmp);
	*paths = v;
	*n = cnt;
	return 0;
}

CV_API void cv_index_files_free(char **paths, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

CV_API uint64_t cv_progress_start(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* The terminal's width in columns (stderr's, else $COLUMNS, else 80). */
static int term_cols(void)
{
	struct winsize ws;
	const char *c = getenv("COLUMNS");
	long v = c ? strtol(c, NULL, 10) : 0;

	if (ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
		return ws.ws_col;
	return v >= 20 && v <= 1000 ? (int) v : 80;
}

CV_API void cv_progress(const char *verb, const char *what, size_t done, size_t total,
			uint64_t t0_ns)
{
	double el = (double) (cv_progress_start() - t0_ns) / 1e9;
	int pct = total ? (int) (100.0 * (double) (done < total ? done : total) / (double) total) : 100;
	int cols = term_cols(), barw, fill, n;
	char bar[64], eta[48], tail[160], line[512];

	/* The rate so far predicts the rest; until a second has passed it is noise. */
	if (done >= total)
		snprintf(eta, sizeof(eta), "done");
	else if (done && el >= 1.0)
		snprintf(eta, sizeof(eta), "about %.0f s left",
			 el * (double) (total - done) / (double) done);
	else
		snprintf(eta, sizeof(eta), "estimating");
	snprintf(tail, sizeof(tail), " %3d%%  %zu/%zu  %.0f s elapsed, %s", pct, done, total, el, eta);
	/* the bar takes what the words leave of the line, 10 to 40 wide, or none */
	barw = cols - 1 - (int) strlen(verb) - (int) strlen(what) - (int) strlen(tail) - 5;
	if (barw > 40)
		barw = 40;
	if (barw >= 10) {
		fill = pct * barw / 100;
		for (int i = 0; i < barw; i++)
			bar[i] = i < fill ? '#' : ' ';
		bar[barw] = '\0';
		n = snprintf(line, sizeof(line), "%s %s [%s]%s", verb, what, bar, tail);
	} else {
		n = snprintf(line, sizeof(line), "%s %s%s", verb, what, tail);
		/* still too wide: the times go before the counts */
		if (n >= cols)
			n = snprintf(line, sizeof(line), "%s %s %3d%%  %zu/%zu", verb, what, pct, done,
				     total);
	}
	/* never wider than the terminal: a wrapped line cannot be redrawn with \r */
	if (n >= cols)
		line[cols - 1] = '\0';
	fprintf(stderr, "\r%s\033[K%s", line, done >= total ? "\n" : "");
	fflush(stderr);
}

void cv_progress_line(const char *what, size_t done, size_t total, uint64_t t0_ns)
{
	cv_progress("building", what, done, total, t0_ns);
}
