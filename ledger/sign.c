/*
 * sign.c - the study's Ed25519 key and C2SP signed notes (the format of
 * golang.org/x/mod/sumdb/note, which transparency-log tools read).
 *
 * Keys (note.go's "Generating Keys"), algorithm byte 0x01 = Ed25519:
 *   key hash      first 4 bytes (big-endian) of SHA-256(name || "\n" || 0x01 || pub)
 *   verifier key  <name>+<8 hex of the hash>+<base64(0x01 || pub32)>
 *   signer key    PRIVATE+KEY+<name>+<8 hex>+<base64(0x01 || seed32)>
 * The name is the checkpoint's origin: non-empty, no space, no '+'.
 *
 * A signed note: the text (ending in '\n'), a blank line, then signature
 * lines "— <name> <base64(hash4 || sig64)>\n" (U+2014 em dash, space). A
 * signature covers the text including its final newline. Other signers'
 * lines (a witness's cosignature) are kept and ignored.
 *
 * Parsing here reads what anyone may hand in (a checkpoint file, a
 * published one): strict base64, bounded line counts, every byte accounted
 * for; fuzzed by tests/ledger/fuzz_checkpoint.c.
 *
 * Error convention: 0 or CS_EXIT_* with the caller's cs_err filled, except
 * where a comment says otherwise.
 */
#include "ledger_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/rand.h>

#define SIG_LINES_MAX 100
static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char em_dash[] = "\xe2\x80\x94 ";

size_t lg_b64_enc(const unsigned char *in, size_t n, char *out)
{
	size_t o = 0, i;

	for (i = 0; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t) in[i] << 16 | (uint32_t) in[i + 1] << 8 | in[i + 2];

		out[o++] = b64[v >> 18 & 63];
		out[o++] = b64[v >> 12 & 63];
		out[o++] = b64[v >> 6 & 63];
		out[o++] = b64[v & 63];
	}
	if (n - i == 1) {
		uint32_t v = (uint32_t) in[i] << 16;

		out[o++] = b64[v >> 18 & 63];
		out[o++] = b64[v >> 12 & 63];
		out[o++] = '=';
		out[o++] = '=';
	} else if (n - i == 2) {
		uint32_t v = (uint32_t) in[i] << 16 | (uint32_t) in[i + 1] << 8;

		out[o++] = b64[v >> 18 & 63];
		out[o++] = b64[v >> 12 & 63];
		out[o++] = b64[v >> 6 & 63];
		out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

/* Value of a base64 digit or -1. */
static int b64v(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

long lg_b64_dec(const char *s, size_t len, unsigned char *out, size_t cap)
{
	size_t o = 0;

	if (len == 0 || len % 4)
		return -1;
	for (size_t i = 0; i < len; i += 4) {
		int last = i + 4 == len;
		int a = b64v(s[i]), b = b64v(s[i + 1]);
		int c = last && s[i + 2] == '=' && s[i + 3] == '=' ? -2 : b64v(s[i + 2]);
		int d = last && s[i + 3] == '=' ? -2 : b64v(s[i + 3]);
		uint32_t v;

		if (a < 0 || b < 0 || c == -1 || d == -1 || (c == -2 && d != -2))
			return -1;
		v = (uint32_t) a << 18 | (uint32_t) b << 12 | (uint32_t) (c < 0 ? 0 : c) << 6 |
		    (uint32_t) (d < 0 ? 0 : d);
		if (c == -2 && (v & 0xffff)) /* non-canonical: leftover bits set */
			return -1;
		if (c >= 0 && d == -2 && (v & 0xff))
			return -1;
		if (o + 1 > cap)
			return -1;
		out[o++] = (unsigned char) (v >> 16);
		if (c >= 0) {
			if (o + 1 > cap)
				return -1;
			out[o++] = (unsigned char) (v >> 8 & 0xff);
		}
		if (d >= 0) {
			if (o + 1 > cap)
				return -1;
			out[o++] = (unsigned char) (v & 0xff);
		}
	}
	return (long) o;
}

int lg_key_name_ok(const char *name, size_t n)
{
	if (n == 0 || n > LG_ORIGIN_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char) name[i];

		/* ASCII only keeps "no Unicode space" simple; origins here are ASCII */
		if (c <= 0x20 || c >= 0x7f || c == '+')
			return 0;
	}
	return 1;
}

uint32_t lg_key_hash(const char *name, const unsigned char pub[32])
{
	unsigned char buf[LG_ORIGIN_MAX + 34], h[32];
	size_t n = strlen(name);

	memcpy(buf, name, n);
	buf[n] = '\n';
	buf[n + 1] = 0x01;
	memcpy(buf + n + 2, pub, 32);
	cs_sha256(buf, n + 34, h);
	return (uint32_t) h[0] << 24 | (uint32_t) h[1] << 16 | (uint32_t) h[2] << 8 | h[3];
}

int lg_vkey_format(const char *name, const unsigned char pub[32], char *out, size_t cap)
{
	unsigned char k[33];
	char kb[48];

	k[0] = 0x01;
	memcpy(k + 1, pub, 32);
	lg_b64_enc(k, 33, kb);
	return snprintf(out, cap, "%s+%08x+%s", name, (unsigned) lg_key_hash(name, pub), kb) >=
			       (int) cap
		       ? -1
		       : 0;
}

/* Split "<name>+<hash8>+<b64>" (after an optional prefix) into parts; key data 33 bytes. */
static int split_key(const char *s, size_t len, char name[LG_ORIGIN_MAX + 1], uint32_t *hash,
		     unsigned char key[33])
{
	const char *p1 = memchr(s, '+', len), *p2;
	unsigned char hb[4];
	size_t nl;

	if (!p1)
		return -1;
	nl = (size_t) (p1 - s);
	p2 = memchr(p1 + 1, '+', len - nl - 1);
	if (!p2 || p2 - p1 - 1 != 8 || !lg_key_name_ok(s, nl))
		return -1;
	for (int i = 0; i < 8; i++) /* lowercase hex, as note.go prints it */
		if (!((p1[1 + i] >= '0' && p1[1 + i] <= '9') || (p1[1 + i] >= 'a' && p1[1 + i] <= 'f')))
			return -1;
	if (lg_unhex(p1 + 1, 8, hb, 4))
		return -1;
	if (lg_b64_dec(p2 + 1, len - (size_t) (p2 + 1 - s), key, 33) != 33 || key[0] != 0x01)
		return -1;
	memcpy(name, s, nl);
	name[nl] = '\0';
	*hash = (uint32_t) hb[0] << 24 | (uint32_t) hb[1] << 16 | (uint32_t) hb[2] << 8 | hb[3];
	return 0;
}

int lg_vkey_parse(const char *s, size_t len, lg_vkey *out)
{
	unsigned char k[33];

	memset(out, 0, sizeof(*out));
	if (split_key(s, len, out->name, &out->hash, k))
		return -1;
	memcpy(out->pub, k + 1, 32);
	return out->hash == lg_key_hash(out->name, out->pub) ? 0 : -1;
}

void lg_signer_free(lg_signer *k)
{
	if (!k)
		return;
	EVP_PKEY_free(k->pkey);
	OPENSSL_cleanse(k, sizeof(*k));
	free(k);
}

/* A signer from a 32-byte seed; NULL on failure. */
static lg_signer *signer_from_seed(const char *name, const unsigned char seed[32])
{
	lg_signer *k = calloc(1, sizeof(*k));
	size_t plen = 32;

	if (!k)
		return NULL;
	k->pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
	if (!k->pkey || EVP_PKEY_get_raw_public_key(k->pkey, k->v.pub, &plen) != 1 || plen != 32) {
		lg_signer_free(k);
		return NULL;
	}
	snprintf(k->v.name, sizeof(k->v.name), "%s", name);
	k->v.hash = lg_key_hash(name, k->v.pub);
	return k;
}

int lg_signer_generate(const char *name, lg_signer **out, char **skey, cs_err *e)
{
	unsigned char seed[33];
	char sb[48];
	size_t n = 32;
	EVP_PKEY *pk = NULL;
	int rc = 0;

	*out = NULL;
	*skey = NULL;
	if (!lg_key_name_ok(name, strlen(name)))
		return cs_err_set(e, CS_EXIT_INTERNAL, "key name '%s' is not a valid note name", name);
	pk = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	seed[0] = 0x01;
	if (!pk || EVP_PKEY_get_raw_private_key(pk, seed + 1, &n) != 1 || n != 32 ||
	    !(*out = signer_from_seed(name, seed + 1))) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "cannot make an Ed25519 key");
		goto out;
	}
	lg_b64_enc(seed, 33, sb);
	*skey = malloc(strlen(name) + 80);
	if (!*skey) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	snprintf(*skey, strlen(name) + 80, "PRIVATE+KEY+%s+%08x+%s\n", name,
		 (unsigned) (*out)->v.hash, sb);
out:
	if (rc) {
		lg_signer_free(*out);
		*out = NULL;
	}
	OPENSSL_cleanse(seed, sizeof(seed));
	OPENSSL_cleanse(sb, sizeof(sb));
	EVP_PKEY_free(pk);
	return rc;
}

int lg_signer_parse(const char *s, size_t len, lg_signer **out)
{
	char name[LG_ORIGIN_MAX + 1];
	unsigned char k[33];
	uint32_t hash;
	int rc = -1;

	*out = NULL;
	if (len && s[len - 1] == '\n')
		len--;
	if (len < 12 || memcmp(s, "PRIVATE+KEY+", 12) || split_key(s + 12, len - 12, name, &hash, k))
		goto out;
	*out = signer_from_seed(name, k + 1);
	if (*out && (*out)->v.hash != hash) { /* the hash names the public key: check it */
		lg_signer_free(*out);
		*out = NULL;
	}
	rc = *out ? 0 : -1;
out:
	OPENSSL_cleanse(k, sizeof(k));
	return rc;
}

int lg_note_sign(const lg_signer *k, const char *text, size_t len, char **note, cs_err *e)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char sig[68];
	char sb[100];
	size_t slen = 64, cap;
	int rc = 0;

	*note = NULL;
	if (!len || text[len - 1] != '\n') {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "a note's text must end in a newline");
		goto out;
	}
	sig[0] = (unsigned char) (k->v.hash >> 24);
	sig[1] = (unsigned char) (k->v.hash >> 16);
	sig[2] = (unsigned char) (k->v.hash >> 8);
	sig[3] = (unsigned char) k->v.hash;
	if (!ctx || EVP_DigestSignInit(ctx, NULL, NULL, NULL, k->pkey) != 1 ||
	    EVP_DigestSign(ctx, sig + 4, &slen, (const unsigned char *) text, len) != 1 || slen != 64) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "Ed25519 signing failed");
		goto out;
	}
	lg_b64_enc(sig, 68, sb);
	cap = len + strlen(k->v.name) + strlen(sb) + 16;
	*note = malloc(cap);
	if (!*note) {
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
		goto out;
	}
	memcpy(*note, text, len);
	snprintf(*note + len, cap - len, "\n%s%s %s\n", em_dash, k->v.name, sb);
out:
	EVP_MD_CTX_free(ctx);
	return rc;
}

/* Ed25519 verification of sig over msg by pub; 1 valid, 0 not. */
static int ed25519_ok(const unsigned char pub[32], const unsigned char *msg, size_t len,
		      const unsigned char sig[64])
{
	EVP_PKEY *pk = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub, 32);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int ok = 0;

	if (pk && ctx && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, pk) == 1)
		ok = EVP_DigestVerify(ctx, sig, 64, msg, len) == 1;
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(pk);
	return ok;
}

int lg_note_open(const char *note, size_t len, const lg_vkey *v, size_t *text_len,
		 char *why, size_t cap)
{
	const char *split = NULL, *p, *end = note + len;
	int lines = 0, found = 0;

	*text_len = 0;
	/* the text ends at the last "\n\n": a blank line, then the signature block */
	for (p = note; p + 1 < end; p++)
		if (p[0] == '\n' && p[1] == '\n')
			split = p;
	if (!split) {
		snprintf(why, cap, "no signature block (a blank line, then signature lines)");
		return -1;
	}
	for (p = note; p < end; p++)
		if ((unsigned char) *p < 0x20 && *p != '\n') {
			snprintf(why, cap, "byte %zu: control character", (size_t) (p - note));
			return -1;
		}
	if (end[-1] != '\n' || split + 2 >= end) {
		snprintf(why, cap, "the signature block is empty or does not end in a newline");
		return -1;
	}
	*text_len = (size_t) (split - note) + 1;
	for (p = split + 2; p < end; lines++) {
		const char *nl = memchr(p, '\n', (size_t) (end - p)), *sp;
		unsigned char sig[1024]; /* ours: 4 + 64; a witness cosignature: 4 + 8 + 64 */
		long n;

		if (lines >= SIG_LINES_MAX) {
			snprintf(why, cap, "more than %d signature lines", SIG_LINES_MAX);
			return -1;
		}
		if ((size_t) (nl - p) < 4 || memcmp(p, em_dash, 4)) {
			snprintf(why, cap, "signature line %d: expected '\xe2\x80\x94 NAME BASE64'",
				 lines + 1);
			return -1;
		}
		p += 4;
		sp = memchr(p, ' ', (size_t) (nl - p));
		if (!sp || !lg_key_name_ok(p, (size_t) (sp - p))) {
			snprintf(why, cap, "signature line %d: bad signer name", lines + 1);
			return -1;
		}
		n = lg_b64_dec(sp + 1, (size_t) (nl - sp - 1), sig, sizeof(sig));
		if (n < 5) {
			snprintf(why, cap, "signature line %d: bad base64 signature", lines + 1);
			return -1;
		}
		if (v && (size_t) (sp - p) == strlen(v->name) && !memcmp(p, v->name, (size_t) (sp - p)) &&
		    ((uint32_t) sig[0] << 24 | (uint32_t) sig[1] << 16 | (uint32_t) sig[2] << 8 |
		     sig[3]) == v->hash) {
			if (n != 68 || !ed25519_ok(v->pub, (const unsigned char *) note, *text_len,
						   sig + 4)) {
				snprintf(why, cap, "the signature by %s+%08x does not verify", v->name,
					 (unsigned) v->hash);
				return -1;
			}
			found = 1;
		}
		p = nl + 1;
	}
	if (v && !found) {
		snprintf(why, cap, "not signed by %s+%08x", v->name, (unsigned) v->hash);
		return 0;
	}
	return 1;
}

int lg_random_hex(char *out, size_t nbytes)
{
	unsigned char buf[32];

	if (nbytes > sizeof(buf) || RAND_bytes(buf, (int) nbytes) != 1)
		return -1;
	cs_hex(buf, nbytes, out);
	return 0;
}
