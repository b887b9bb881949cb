/*
 * fuzz_checkpoint.c - libFuzzer target over the checkpoint text parser
 * (ledger_checkpoint_parse). Invariants: no crash, no leak; a checkpoint
 * that parses re-formats to exactly the first three lines of the input
 * (the body is canonical: no leading zeros, canonical base64), and that
 * text parses back to the same tree head. The same bytes go through the
 * signed-note parser (lg_note_open, which must never read past them or
 * accept a note without a signature block) and the verifier-key parser.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ledger_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ledger_tree_head a, b;
	cs_err e = {0};
	char *text = NULL, why[200];
	size_t tl = 0;
	lg_vkey v;
	int r;

	r = lg_note_open((const char *) data, size, NULL, &tl, why, sizeof(why));
	if (r == 1 && (tl == 0 || tl >= size || data[tl - 1] != '\n' || data[tl] != '\n'))
		abort();
	if (r < 0 && !why[0])
		abort();
	if (!lg_vkey_parse((const char *) data, size, &v)) {
		char back[LG_ORIGIN_MAX + 80];

		if (lg_vkey_format(v.name, v.pub, back, sizeof(back)) || strlen(back) != size ||
		    memcmp(back, data, size))
			abort();
	}

	if (ledger_checkpoint_parse((const char *) data, size, "fuzz", &a, &e)) {
		if (e.code != CS_EXIT_BADINPUT || !e.msg[0])
			abort();
		return 0;
	}
	if (ledger_checkpoint_format(a.origin, a.size, a.root, &text, &e))
		abort();
	if (strlen(text) > size || memcmp(text, data, strlen(text)))
		abort();
	if (ledger_checkpoint_parse(text, strlen(text), "fuzz", &b, &e) ||
	    strcmp(a.origin, b.origin) || a.size != b.size || memcmp(a.root, b.root, 32))
		abort();
	free(text);
	return 0;
}
