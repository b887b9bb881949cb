/*
 * fuzz_replay.c - a main for libFuzzer targets in builds without
 * -fsanitize=fuzzer: runs LLVMFuzzerTestOneInput over every file named on
 * the command line (a corpus), so the corpus is a regression test.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		uint8_t *buf;
		long n;

		if (!f) {
			perror(argv[i]);
			return 1;
		}
		fseek(f, 0, SEEK_END);
		n = ftell(f);
		fseek(f, 0, SEEK_SET);
		buf = malloc(n > 0 ? (size_t) n : 1);
		if (!buf || fread(buf, 1, (size_t) n, f) != (size_t) n) {
			fclose(f);
			free(buf);
			return 1;
		}
		fclose(f);
		LLVMFuzzerTestOneInput(buf, (size_t) n);
		free(buf);
	}
	return 0;
}
