/*
 * fuzz_checkpoint.c - libFuzzer target over the checkpoint text parser
 * (ledger_checkpoint_parse). Invariants: no crash, no leak; a checkpoint
 * that parses re-formats to exactly the first three lines of the input
 * (the body is canonical: no leading zeros, canonical base64), and that
 * text parses back to the same tree head.
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
	char *text = NULL;

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
