/*
 * checkpoint.c - the ledger's text codings, below every other file of it:
 * hex and base64 of a 32-byte hash, and the C2SP tlog-checkpoint body
 *     <origin>\n<tree size, decimal>\n<base64 of the 32-byte root>\n
 * optionally followed by extension lines and, after a blank line, the
 * signature lines of a signed note (checked by signed.c, not here).
 *
 * The store (ledger.c), the signer (signed.c), the verifier (verify.c) and
 * the proofs (proof.c) all read and write checkpoints through these, and
 * these call none of them. The parser reads what a user hands in, so it is
 * strict and fuzzed (tests/ledger/fuzz_checkpoint.c): every byte is
 * accounted for, sizes are bounded, hex and base64 are exact.
 *
 * Error convention: 0 or CS_EXIT_* with the caller's cs_err filled; the
 * codecs return 0 or -1.
 */
#include "ledger_int.h"

#include <stdlib.h>
#include <string.h>

#define ORIGIN_MAX 255

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void lg_b64_32(const unsigned char in[32], char out[45])
{
	size_t o = 0;

	for (size_t i = 0; i < 30; i += 3) {
		uint32_t v = (uint32_t) in[i] << 16 | (uint32_t) in[i + 1] << 8 | in[i + 2];

		out[o++] = b64[v >> 18 & 63];
		out[o++] = b64[v >> 12 & 63];
		out[o++] = b64[v >> 6 & 63];
		out[o++] = b64[v & 63];
	}
	{
		uint32_t v = (uint32_t) in[30] << 16 | (uint32_t) in[31] << 8;

		out[o++] = b64[v >> 18 & 63];
		out[o++] = b64[v >> 12 & 63];
		out[o++] = b64[v >> 6 & 63];
		out[o++] = '=';
	}
	out[o] = '\0';
}

/* Value of a base64 digit or -1. */
static int b64_val(char c)
{
	const char *p;

	if (!c)
		return -1;
	p = strchr(b64, c);
	return p ? (int) (p - b64) : -1;
}

int lg_unb64_32(const char *s, size_t len, unsigned char out[32])
{
	unsigned char buf[33];
	size_t o = 0;

	if (len != 44 || s[43] != '=')
		return -1;
	for (size_t i = 0; i < 44; i += 4) {
		int a = b64_val(s[i]), b = b64_val(s[i + 1]), c = b64_val(s[i + 2]);
		int d = i == 40 ? 0 : b64_val(s[i + 3]);

		if (a < 0 || b < 0 || c < 0 || d < 0)
			return -1;
		buf[o++] = (unsigned char) (a << 2 | b >> 4);
		buf[o++] = (unsigned char) ((b & 15) << 4 | c >> 2);
		if (i != 40)
			buf[o++] = (unsigned char) ((c & 3) << 6 | d);
		else if (c & 3) /* non-canonical: leftover bits must be zero */
			return -1;
	}
	memcpy(out, buf, 32);
	return 0;
}

int ledger_root_parse(const char *s, unsigned char root[32])
{
	size_t n = strlen(s);

	if (n == 64)
		return lg_unhex(s, n, root, 32);
	return lg_unb64_32(s, n, root);
}

int ledger_checkpoint_format(const char *origin, int64_t size, const unsigned char root[32],
			     char **text, cs_err *e)
{
	char r64[45];
	size_t n;

	*text = NULL;
	if (!origin || !*origin || strlen(origin) > ORIGIN_MAX)
		return cs_err_set(e, CS_EXIT_USAGE, "checkpoint origin must be 1..%d characters",
				  ORIGIN_MAX);
	for (const char *p = origin; *p; p++)
		if ((unsigned char) *p < 0x20 || *p == 0x7f)
			return cs_err_set(e, CS_EXIT_USAGE,
					  "checkpoint origin must not hold control characters");
	lg_b64_32(root, r64);
	n = strlen(origin) + 24 + 45 + 4;
	*text = malloc(n);
	if (!*text)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	snprintf(*text, n, "%s\n%lld\n%s\n", origin, (long long) size, r64);
	return 0;
}

/* The next line of text[*off..len) without its '\n'; -1 if there is no '\n'. */
static int next_line(const char *text, size_t len, size_t *off, const char **line, size_t *llen)
{
	const char *nl;

	if (*off >= len)
		return -1;
	nl = memchr(text + *off, '\n', len - *off);
	if (!nl)
		return -1;
	*line = text + *off;
	*llen = (size_t) (nl - *line);
	*off = (size_t) (nl - text) + 1;
	return 0;
}

int ledger_checkpoint_parse(const char *text, size_t len, const char *name, ledger_tree_head *out,
			    cs_err *e)
{
	const char *line;
	size_t llen, off = 0;
	uint64_t size = 0;
	int lineno;

	memset(out, 0, sizeof(*out));
	/* line 1: origin */
	if (next_line(text, len, &off, &line, &llen) || llen == 0)
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: line 1: expected the origin line ending in a newline", name);
	if (llen > ORIGIN_MAX)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: line 1: origin longer than %d bytes", name,
				  ORIGIN_MAX);
	for (size_t i = 0; i < llen; i++)
		if ((unsigned char) line[i] < 0x20 || line[i] == 0x7f)
			return cs_err_set(e, CS_EXIT_BADINPUT,
					  "%s: line 1: byte %zu: control character in origin", name,
					  i + 1);
	memcpy(out->origin, line, llen);
	out->origin[llen] = '\0';
	/* line 2: size, decimal, no sign, no leading zero */
	if (next_line(text, len, &off, &line, &llen) || llen == 0 || llen > 19 ||
	    (llen > 1 && line[0] == '0'))
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: line 2: expected the tree size in decimal (no leading zeros)",
				  name);
	for (size_t i = 0; i < llen; i++) {
		if (line[i] < '0' || line[i] > '9')
			return cs_err_set(e, CS_EXIT_BADINPUT,
					  "%s: line 2: byte %zu: expected a decimal digit", name,
					  i + 1);
		size = size * 10 + (uint64_t) (line[i] - '0');
	}
	if (size > (uint64_t) INT64_MAX)
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: line 2: tree size out of range", name);
	out->size = (int64_t) size;
	/* line 3: base64 root */
	if (next_line(text, len, &off, &line, &llen) || lg_unb64_32(line, llen, out->root))
		return cs_err_set(e, CS_EXIT_BADINPUT,
				  "%s: line 3: expected the root hash as 44 characters of base64",
				  name);
	/* optional extension lines (non-empty), then optionally a blank line and signatures */
	lineno = 3;
	while (off < len) {
		lineno++;
		if (next_line(text, len, &off, &line, &llen))
			return cs_err_set(e, CS_EXIT_BADINPUT,
					  "%s: line %d: text after the checkpoint does not end in a "
					  "newline",
					  name, lineno);
		if (llen == 0)
			break; /* signature block follows; not checked here */
		for (size_t i = 0; i < llen; i++)
			if ((unsigned char) line[i] < 0x20)
				return cs_err_set(e, CS_EXIT_BADINPUT,
						  "%s: line %d: control character in an extension "
						  "line",
						  name, lineno);
	}
	if (memchr(text, '\0', len))
		return cs_err_set(e, CS_EXIT_BADINPUT, "%s: NUL byte in checkpoint", name);
	return 0;
}

int lg_unhex(const char *s, size_t slen, unsigned char *out, size_t n)
{
	if (slen != 2 * n)
		return -1;
	for (size_t i = 0; i < 2 * n; i++) {
		int c = s[i], v;

		if (c >= '0' && c <= '9')
			v = c - '0';
		else if (c >= 'a' && c <= 'f')
			v = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v = c - 'A' + 10;
		else
			return -1;
		if (i & 1)
			out[i / 2] = (unsigned char) (out[i / 2] | v);
		else
			out[i / 2] = (unsigned char) (v << 4);
	}
	return 0;
}
