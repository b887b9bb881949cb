/*
 * fuzz_proof.c - libFuzzer target over the proof JSON parser
 * (ledger_proof_parse) and the verifiers behind it. Invariants: no crash,
 * no leak; a proof that parses survives to_json -> parse unchanged, and
 * verifying it gives the same answer both times.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ledger_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ledger_proof a, b;
	cs_err e = {0};
	char *js = NULL;
	int va, vb;

	if (size > 65536)
		return 0;
	if (ledger_proof_parse((const char *) data, size, "fuzz", &a, &e)) {
		if (!e.msg[0])
			abort();
		return 0;
	}
	va = ledger_proof_verify(&a, &e);
	if (ledger_proof_to_json(&a, &js, &e) || ledger_proof_parse(js, strlen(js), "fuzz", &b, &e))
		abort();
	if (a.type != b.type || a.tree_size != b.tree_size || a.n_hashes != b.n_hashes ||
	    memcmp(a.root, b.root, 32) ||
	    (a.n_hashes && memcmp(a.hashes, b.hashes, a.n_hashes * 32)))
		abort();
	vb = ledger_proof_verify(&b, &e);
	if (va != vb)
		abort();
	free(js);
	ledger_proof_free(&a);
	ledger_proof_free(&b);
	return 0;
}
