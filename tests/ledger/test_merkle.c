/*
 * test_merkle.c - RFC 6962 hashing and proofs: the RFC's test vectors
 * (the leaves and roots embedded; the proofs read from
 * $COLDSTUDY_SHARED/reference/rfc6962-test-vectors.json, skipped if it is
 * absent), an independent recursive MTH against the compact range, and
 * transparency-dev/merkle's rejection matrix for inclusion and consistency
 * proofs: every single-bit flip, index +-1, tree size *2 and /2, garbage
 * before and after, an inserted or removed component, wrong leaf, wrong
 * roots, empty proof; old size 0 and old size = new size.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ledger_int.h"

static const char *const leaves_hex[8] = {
	"", "00", "10", "2021", "3031", "40414243", "5051525354555657",
	"606162636465666768696a6b6c6d6e6f",
};

static const char *const roots_hex[9] = {
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
	"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
	"aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
	"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
	"4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
	"76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
	"ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
	"5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
};

static unsigned char rfc_leaves[8][32];

/* Leaf hashes of the RFC's eight leaves. */
static void load_rfc_leaves(void)
{
	for (int i = 0; i < 8; i++) {
		unsigned char d[16];
		size_t n = strlen(leaves_hex[i]) / 2;

		assert_int_equal(lg_unhex(leaves_hex[i], 2 * n, d, n), 0);
		merkle_leaf_hash(d, n, rfc_leaves[i]);
	}
}

static void unhex32(const char *s, unsigned char out[32])
{
	assert_int_equal(lg_unhex(s, strlen(s), out, 32), 0);
}

/* Independent reference: the recursive MTH of RFC 6962 2.1. */
static void ref_mth(const unsigned char (*lv)[32], size_t n, unsigned char out[32])
{
	unsigned char l[32], r[32];
	size_t k = 1;

	if (n == 0) {
		cs_sha256("", 0, out);
		return;
	}
	if (n == 1) {
		memcpy(out, lv[0], 32);
		return;
	}
	while (k * 2 < n)
		k *= 2;
	ref_mth(lv, k, l);
	ref_mth(lv + k, n - k, r);
	merkle_node_hash(l, r, out);
}

static void test_rfc_roots(void **state)
{
	unsigned char want[32], got[32];

	(void) state;
	load_rfc_leaves();
	for (size_t n = 0; n <= 8; n++) {
		unhex32(roots_hex[n], want);
		merkle_root((const unsigned char(*)[32]) rfc_leaves, n, got);
		assert_memory_equal(got, want, 32);
		ref_mth((const unsigned char(*)[32]) rfc_leaves, n, got);
		assert_memory_equal(got, want, 32);
	}
}

/* Deterministic leaves for bigger trees. */
static unsigned char (*make_leaves(size_t n))[32]
{
	unsigned char(*lv)[32] = malloc((n ? n : 1) * 32);

	for (size_t i = 0; i < n; i++) {
		uint64_t x = i * 0x9e3779b97f4a7c15ull;

		merkle_leaf_hash(&x, sizeof(x), lv[i]);
	}
	return lv;
}

static void test_range_matches_recursive(void **state)
{
	unsigned char(*lv)[32] = make_leaves(130);
	unsigned char a[32], b[32];

	(void) state;
	for (size_t n = 0; n <= 130; n++) {
		merkle_root((const unsigned char(*)[32]) lv, n, a);
		ref_mth((const unsigned char(*)[32]) lv, n, b);
		assert_memory_equal(a, b, 32);
	}
	free(lv);
}

/* ---- rejection matrix ---- */

typedef unsigned char h32[32];

static int inc_ok(const h32 leaf, size_t i, size_t n, const h32 *p, size_t np, const h32 root)
{
	return merkle_verify_inclusion(leaf, i, n, p, np, root);
}

/* Every transparency-dev negative for one true inclusion proof; counts checks. */
static size_t inclusion_matrix(const h32 leaf, size_t i, size_t n, const h32 *p, size_t np,
			       const h32 root, int bitflips)
{
	h32 *q = calloc(np + 2, 32), bad;
	size_t checks = 0;

	assert_true(inc_ok(leaf, i, n, p, np, root));
	/* wrong leaf, wrong root */
	memcpy(bad, leaf, 32);
	bad[0] ^= 1;
	assert_false(inc_ok(bad, i, n, p, np, root));
	memcpy(bad, root, 32);
	bad[31] ^= 0x80;
	assert_false(inc_ok(leaf, i, n, p, np, bad));
	/*
	 * index +-1, tree size *2 and /2. (Size +-1 is not in the matrix: the
	 * root does not bind the size, so e.g. a proof for 6 leaves has the
	 * shape of one for 7 and verifies against the same root.)
	 */
	assert_false(inc_ok(leaf, i + 1, n, p, np, root));
	if (i > 0)
		assert_false(inc_ok(leaf, i - 1, n, p, np, root));
	assert_false(inc_ok(leaf, i, n * 2, p, np, root));
	assert_false(inc_ok(leaf, i, n / 2, p, np, root));
	checks += 6;
	if (np > 0) {
		/* empty proof */
		assert_false(inc_ok(leaf, i, n, p, 0, root));
		/* garbage before, after */
		memcpy(q[0], leaf, 32);
		memcpy(q + 1, p, np * 32);
		assert_false(inc_ok(leaf, i, n, (const h32 *) q, np + 1, root));
		memcpy(q, p, np * 32);
		memcpy(q[np], root, 32);
		assert_false(inc_ok(leaf, i, n, (const h32 *) q, np + 1, root));
		/* a component removed (each), a component inserted (each position) */
		for (size_t k = 0; k < np; k++) {
			memcpy(q, p, k * 32);
			memcpy(q + k, p + k + 1, (np - k - 1) * 32);
			assert_false(inc_ok(leaf, i, n, (const h32 *) q, np - 1, root));
			memcpy(q, p, k * 32);
			memcpy(q[k], p[k], 32);
			memcpy(q + k + 1, p + k, (np - k) * 32);
			assert_false(inc_ok(leaf, i, n, (const h32 *) q, np + 1, root));
			checks += 2;
		}
		checks += 3;
	} else {
		/* a proof where none belongs */
		memcpy(q[0], leaf, 32);
		assert_false(inc_ok(leaf, i, n, (const h32 *) q, 1, root));
		checks++;
	}
	if (bitflips) {
		for (size_t k = 0; k < np; k++) {
			for (int bit = 0; bit < 256; bit++) {
				memcpy(q, p, np * 32);
				q[k][bit / 8] ^= (unsigned char) (1u << (bit % 8));
				assert_false(inc_ok(leaf, i, n, (const h32 *) q, np, root));
				checks++;
			}
		}
	}
	free(q);
	return checks;
}

static int con_ok(size_t m, size_t n, const h32 r1, const h32 r2, const h32 *p, size_t np)
{
	return merkle_verify_consistency(m, n, r1, r2, p, np);
}

/* Every transparency-dev negative for one true consistency proof; counts checks. */
static size_t consistency_matrix(size_t m, size_t n, const h32 r1, const h32 r2, const h32 *p,
				 size_t np, int bitflips)
{
	h32 *q = calloc(np + 2, 32), bad;
	size_t checks = 0;

	assert_true(con_ok(m, n, r1, r2, p, np));
	memcpy(bad, r1, 32);
	bad[5] ^= 4;
	if (m > 0)
		assert_false(con_ok(m, n, bad, r2, p, np));
	memcpy(bad, r2, 32);
	bad[7] ^= 2;
	if (m > 0) /* with m = 0 every new root is consistent */
		assert_false(con_ok(m, n, r1, bad, p, np));
	/* sizes: old +-1, new *2 and /2 (new *2 of an empty tree is still 0) */
	if (m > 0) {
		assert_false(con_ok(m + 1, n, r1, r2, p, np));
		assert_false(con_ok(m - 1, n, r1, r2, p, np));
		assert_false(con_ok(m, n * 2, r1, r2, p, np));
		if (n / 2 != n)
			assert_false(con_ok(m, n / 2, r1, r2, p, np));
		checks += 4;
	}
	if (np > 0) {
		assert_false(con_ok(m, n, r1, r2, p, 0));
		memcpy(q[0], r1, 32);
		memcpy(q + 1, p, np * 32);
		assert_false(con_ok(m, n, r1, r2, (const h32 *) q, np + 1));
		memcpy(q, p, np * 32);
		memcpy(q[np], r2, 32);
		assert_false(con_ok(m, n, r1, r2, (const h32 *) q, np + 1));
		for (size_t k = 0; k < np; k++) {
			memcpy(q, p, k * 32);
			memcpy(q + k, p + k + 1, (np - k - 1) * 32);
			assert_false(con_ok(m, n, r1, r2, (const h32 *) q, np - 1));
			memcpy(q, p, k * 32);
			memcpy(q[k], p[k], 32);
			memcpy(q + k + 1, p + k, (np - k) * 32);
			assert_false(con_ok(m, n, r1, r2, (const h32 *) q, np + 1));
			checks += 2;
		}
		checks += 3;
	} else {
		/* m = 0 or m = n: any non-empty proof is garbage */
		memcpy(q[0], r2, 32);
		assert_false(con_ok(m, n, r1, r2, (const h32 *) q, 1));
		checks++;
	}
	if (bitflips) {
		for (size_t k = 0; k < np; k++) {
			for (int bit = 0; bit < 256; bit++) {
				memcpy(q, p, np * 32);
				q[k][bit / 8] ^= (unsigned char) (1u << (bit % 8));
				assert_false(con_ok(m, n, r1, r2, (const h32 *) q, np));
				checks++;
			}
		}
	}
	free(q);
	return checks;
}

/* The vectors file's proofs, or NULL (test skipped) when it is not there. */
static json_t *load_vectors(void)
{
	const char *shared = getenv("COLDSTUDY_SHARED");
	char path[4096];
	json_error_t jerr;

	if (!shared)
		return NULL;
	snprintf(path, sizeof(path), "%s/reference/rfc6962-test-vectors.json", shared);
	return json_load_file(path, 0, &jerr);
}

static void test_rfc_inclusion(void **state)
{
	json_t *v = load_vectors(), *c;
	size_t idx, checks = 0;

	(void) state;
	if (!v) {
		skip();
		return;
	}
	load_rfc_leaves();
	json_array_foreach(json_object_get(v, "inclusion"), idx, c) {
		size_t i = (size_t) json_integer_value(json_object_get(c, "leaf_index"));
		size_t n = (size_t) json_integer_value(json_object_get(c, "tree_size"));
		json_t *path = json_object_get(c, "path");
		size_t np = json_array_size(path), gp;
		h32 *p = calloc(np + 1, 32), root, *gen;

		for (size_t k = 0; k < np; k++)
			unhex32(json_string_value(json_array_get(path, k)), p[k]);
		unhex32(roots_hex[n], root);
		/* our generator produces exactly the published proof */
		assert_int_equal(merkle_inclusion_proof((const h32 *) rfc_leaves, n, i, &gen, &gp),
				 0);
		assert_int_equal(gp, np);
		if (np)
			assert_memory_equal(gen, p, np * 32);
		free(gen);
		checks += inclusion_matrix(rfc_leaves[i], i, n, (const h32 *) p, np, root, 1);
		free(p);
	}
	assert_true(checks > 1000);
	json_decref(v);
}

static void test_rfc_consistency(void **state)
{
	json_t *v = load_vectors(), *c;
	size_t idx, checks = 0;

	(void) state;
	if (!v) {
		skip();
		return;
	}
	load_rfc_leaves();
	json_array_foreach(json_object_get(v, "consistency"), idx, c) {
		size_t m = (size_t) json_integer_value(json_object_get(c, "old_size"));
		size_t n = (size_t) json_integer_value(json_object_get(c, "new_size"));
		json_t *proof = json_object_get(c, "proof");
		size_t np = json_array_size(proof), gp;
		h32 *p = calloc(np + 1, 32), r1, r2, *gen;

		for (size_t k = 0; k < np; k++)
			unhex32(json_string_value(json_array_get(proof, k)), p[k]);
		unhex32(roots_hex[m], r1);
		unhex32(roots_hex[n], r2);
		assert_int_equal(merkle_consistency_proof((const h32 *) rfc_leaves, n, m, &gen, &gp),
				 0);
		assert_int_equal(gp, np);
		if (np)
			assert_memory_equal(gen, p, np * 32);
		free(gen);
		checks += consistency_matrix(m, n, r1, r2,
					     (const h32 *) p, np, 1);
		free(p);
	}
	assert_true(checks > 1000);
	json_decref(v);
}

/* Every (i, n) and (m, n) up to N: generated proofs verify, the matrix rejects. */
static void test_generated_matrix(void **state)
{
	enum { N = 33 };
	unsigned char(*lv)[32] = make_leaves(N);
	h32 roots[N + 1];
	size_t checks = 0;

	(void) state;
	for (size_t n = 0; n <= N; n++)
		ref_mth((const h32 *) lv, n, roots[n]);
	for (size_t n = 1; n <= N; n++) {
		for (size_t i = 0; i < n; i++) {
			h32 *p;
			size_t np;

			assert_int_equal(merkle_inclusion_proof((const h32 *) lv, n, i, &p, &np), 0);
			checks += inclusion_matrix(lv[i], i, n, (const h32 *) p, np, roots[n], n <= 9);
			free(p);
		}
		for (size_t m = 0; m <= n; m++) {
			h32 *p;
			size_t np;

			assert_int_equal(merkle_consistency_proof((const h32 *) lv, n, m, &p, &np), 0);
			if (m == 0 || m == n)
				assert_int_equal(np, 0);
			checks += consistency_matrix(m, n, roots[m],
						     roots[n], (const h32 *) p, np,
						     n <= 9);
			free(p);
		}
	}
	/* old size 0 against a wrong "empty" root, m > n, i >= n */
	{
		h32 junk = {1};

		assert_false(merkle_verify_consistency(0, 5, junk, roots[5], NULL, 0));
		assert_false(merkle_verify_consistency(6, 5, roots[5], roots[5], NULL, 0));
		assert_false(merkle_verify_inclusion(lv[0], 5, 5, NULL, 0, roots[5]));
		assert_false(merkle_verify_inclusion(lv[0], 0, 0, NULL, 0, roots[0]));
	}
	assert_true(checks > 10000);
	free(lv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc_roots),
		cmocka_unit_test(test_range_matches_recursive),
		cmocka_unit_test(test_rfc_inclusion),
		cmocka_unit_test(test_rfc_consistency),
		cmocka_unit_test(test_generated_matrix),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
