/*
 * host.c - the host a run ran on, captured as BenchExec's systeminfo
 * does (hostname, OS and kernel, CPU model, cores, frequency, governor,
 * turbo, memory, swap) plus what a cold-read study needs about the
 * storage under its files (device model, rotational flag, scheduler,
 * read_ahead_kb) and the warnings BenchExec gives (swap in use, CPU
 * scaling not pinned). Values the machine does not expose are null,
 * never guessed.
 */
#include "harness.h"

#include "cv_io.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

/* First line of a small file, trimmed; 0 or -1. */
static int read_line(const char *path, char *out, size_t cap)
{
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	if (!fgets(out, (int) cap, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	out[strcspn(out, "\n")] = '\0';
	return 0;
}

/* "key: value" from /proc/cpuinfo or /proc/meminfo. */
static int proc_field(const char *path, const char *key, char *out, size_t cap)
{
	FILE *f = fopen(path, "re");
	char line[512];
	size_t kl = strlen(key);

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, kl) && (line[kl] == ':' || line[kl] == ' ' || line[kl] == '\t')) {
			char *v = strchr(line, ':');

			if (!v)
				continue;
			v++;
			while (*v == ' ' || *v == '\t')
				v++;
			v[strcspn(v, "\n")] = '\0';
			snprintf(out, cap, "%s", v);
			fclose(f);
			return 0;
		}
	}
	fclose(f);
	return -1;
}

static json_t *str_or_null(int ok, const char *s)
{
	return ok == 0 ? json_string(s) : json_null();
}

/* meminfo "NNN kB" as bytes, or null. */
static json_t *meminfo_bytes(const char *key)
{
	char v[128];

	if (proc_field("/proc/meminfo", key, v, sizeof(v)))
		return json_null();
	return json_integer((json_int_t) strtoll(v, NULL, 10) * 1024);
}

json_t *harness_host_capture(const char *path)
{
	json_t *h = json_object(), *cpu = json_object(), *mem = json_object(),
	       *dev = json_object(), *warn = json_array();
	struct utsname u;
	char buf[512];
	cv_blkdev bd;
	cv_err ce = {{0}};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int swap_used = 0;

	if (gethostname(buf, sizeof(buf)) == 0) {
		buf[sizeof(buf) - 1] = '\0';
		json_object_set_new(h, "hostname", json_string(buf));
	}
	if (uname(&u) == 0) {
		json_object_set_new(h, "kernel", json_string(u.release));
		json_object_set_new(h, "os", json_string(u.sysname));
		json_object_set_new(h, "arch", json_string(u.machine));
	}
	{
		FILE *f = fopen("/etc/os-release", "re");
		char line[512];

		while (f && fgets(line, sizeof(line), f)) {
			if (!strncmp(line, "PRETTY_NAME=", 12)) {
				char *v = line + 12;

				v[strcspn(v, "\n")] = '\0';
				if (*v == '"') {
					v++;
					v[strcspn(v, "\"")] = '\0';
				}
				json_object_set_new(h, "distribution", json_string(v));
			}
		}
		if (f)
			fclose(f);
	}

	json_object_set_new(cpu, "model",
			    str_or_null(proc_field("/proc/cpuinfo", "model name", buf, sizeof(buf)), buf));
	json_object_set_new(cpu, "cores", json_integer(ncpu));
	json_object_set_new(cpu, "governor",
			    str_or_null(read_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
						  buf, sizeof(buf)), buf));
	if (read_line("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", buf, sizeof(buf)) == 0)
		json_object_set_new(cpu, "max_freq_khz", json_integer(strtoll(buf, NULL, 10)));
	else
		json_object_set_new(cpu, "max_freq_khz", json_null());
	if (proc_field("/proc/cpuinfo", "cpu MHz", buf, sizeof(buf)) == 0)
		json_object_set_new(cpu, "mhz", json_real(strtod(buf, NULL)));
	if (read_line("/sys/devices/system/cpu/intel_pstate/no_turbo", buf, sizeof(buf)) == 0)
		json_object_set_new(cpu, "turbo", json_boolean(buf[0] == '0'));
	else if (read_line("/sys/devices/system/cpu/cpufreq/boost", buf, sizeof(buf)) == 0)
		json_object_set_new(cpu, "turbo", json_boolean(buf[0] == '1'));
	else
		json_object_set_new(cpu, "turbo", json_null());
	json_object_set_new(h, "cpu", cpu);

	json_object_set_new(mem, "total_bytes", meminfo_bytes("MemTotal"));
	json_object_set_new(mem, "available_bytes", meminfo_bytes("MemAvailable"));
	json_object_set_new(mem, "swap_total_bytes", meminfo_bytes("SwapTotal"));
	json_object_set_new(mem, "swap_free_bytes", meminfo_bytes("SwapFree"));
	if (json_integer_value(json_object_get(mem, "swap_total_bytes")) >
	    json_integer_value(json_object_get(mem, "swap_free_bytes")))
		swap_used = 1;
	json_object_set_new(h, "memory", mem);

	if (path && cv_blkdev_for_path(path, &bd, &ce) == 0) {
		json_object_set_new(dev, "path", json_string(path));
		json_object_set_new(dev, "partition", json_string(bd.part));
		json_object_set_new(dev, "disk", json_string(bd.disk));
		json_object_set_new(dev, "model", bd.model[0] ? json_string(bd.model) : json_null());
		json_object_set_new(dev, "rotational",
				    bd.rotational < 0 ? json_null() : json_boolean(bd.rotational));
		json_object_set_new(dev, "scheduler",
				    bd.scheduler[0] ? json_string(bd.scheduler) : json_null());
		json_object_set_new(dev, "read_ahead_kb", bd.read_ahead_kb < 0
								  ? json_null()
								  : json_integer(bd.read_ahead_kb));
		json_object_set_new(dev, "stats", json_true());
	} else {
		json_object_set_new(dev, "path", path ? json_string(path) : json_null());
		json_object_set_new(dev, "stats", json_false());
		json_object_set_new(dev, "why", json_string(ce.msg[0] ? ce.msg : "no path given"));
	}
	json_object_set_new(h, "device", dev);

	if (swap_used)
		json_array_append_new(warn, json_string("system swapped: results may be unreliable"));
	if (json_is_string(json_object_get(cpu, "governor")) &&
	    strcmp(json_string_value(json_object_get(cpu, "governor")), "performance"))
		json_array_append_new(warn, json_string("cpu frequency scaling not pinned to performance"));
	json_object_set_new(h, "warnings", warn);
	json_object_set_new(h, "simd", json_string(cv_simd_level()));
	return h;
}

/* SHA-256 of the running binary (/proc/self/exe), read through one descriptor; 0 or -1. */
static int exe_sha256(char out[65])
{
	FILE *f = fopen("/proc/self/exe", "re");
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char buf[1 << 16], md[32];
	unsigned int mdlen = 0;
	size_t n;
	int rc = -1;

	if (!f || !ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		goto out;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		if (EVP_DigestUpdate(ctx, buf, n) != 1)
			goto out;
	if (ferror(f) || EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen != 32)
		goto out;
	cs_hex(md, 32, out);
	rc = 0;
out:
	EVP_MD_CTX_free(ctx);
	if (f)
		fclose(f);
	return rc;
}

json_t *harness_versions(const cv_device *dev)
{
	char sha[65], desc[4096], dsha[65];
	json_t *v = json_pack("{s:s}", "coldstudy", CS_PROJECT_VERSION);

	if (!v)
		return NULL;
	json_object_set_new(v, "binary_sha256", exe_sha256(sha) ? json_null() : json_string(sha));
	if (dev) {
		/* the model's version is its parameters: the scheduler's code is the binary's */
		cv_device_describe(dev, desc, sizeof(desc));
		cs_sha256_hex(desc, strlen(desc), dsha);
		json_object_set_new(v, "device_model",
				    json_pack("{s:s,s:s}", "profile", cv_device_name(dev) ?: "?",
					      "parameters_sha256", dsha));
	} else {
		json_object_set_new(v, "device_model", json_null());
	}
	return v;
}
