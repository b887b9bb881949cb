/*
 * probecmd.c - `coldstudy probe` whole, below the cli: the file resolved
 * once through the guards (load on production is refused), a device model
 * or a real cap where asked, the probe's reads, fio beside them with
 * --fio, and the figures printed (harness_probe_print).
 */
#include "probe.h"

#include "guard.h"

#include <errno.h>
#include <fcntl.h>

int harness_probe_verb(const char *file, const harness_probe_args *a, cv_probe_opts *o, FILE *out,
                       FILE *warn, cs_err *e)
{
	harness_throttle thr;
	harness_cap cap;
	uint64_t treads = 0, tbytes = 0;
	cv_probe_result r;
	cv_device *dev = NULL;
	harness_fio fr = {0};
	cv_err ce = {{0}};
	guard_held held;
	int have_fio = 0, rc;

	guard_held_init(&held);
	harness_throttle_init(&thr);
	if (a->cap && harness_cap_parse(a->cap, &cap, e)) {
		char why[sizeof(e->msg)];

		snprintf(why, sizeof(why), "%s", e->msg);
		return cs_err_set(e, e->code, "--throttle: %s", why);
	}
	/* Load on production (a file or a device) is refused; the probe reads through the hold. */
	if ((rc = guard_existing(NULL, NULL, file, AT_FDCWD, "probe", "file", &held, e)))
		return rc;
	if (a->device && (rc = cv_device_new(a->device, o->seed, &dev, &ce))) {
		rc = cs_err_set(
		    e, rc == -EINVAL || rc == -ENOENT ? CS_EXIT_BADINPUT : CS_EXIT_INTERNAL, "%s",
		    ce.msg);
		goto out;
	}
	o->device = dev;
	if ((rc = harness_probe(guard_held_via(&held), o, a->cap ? &cap : NULL, held.fd, file, &thr,
	                        &r, &treads, &tbytes, e)))
		goto out;
	if (a->fio) {
		cs_err fe = {0};

		if (dev || a->cap)
			fprintf(warn,
			        "coldstudy probe: --fio runs on the real device; the %s applies to "
			        "coldstudy only\n",
			        dev ? "model" : "throttle");
		have_fio = harness_fio_run(guard_held_via(&held), o, &fr, &fe) == 0;
		if (!have_fio)
			fprintf(warn, "coldstudy probe: %s\n", fe.msg);
	}
	if (harness_probe_print(&(harness_probe_report){.shown = file,
	                                                .o = o,
	                                                .r = &r,
	                                                .device = dev ? cv_device_name(dev) : NULL,
	                                                .cap = a->cap ? &cap : NULL,
	                                                .thr = &thr,
	                                                .treads = treads,
	                                                .tbytes = tbytes,
	                                                .fio = have_fio ? &fr : NULL},
	                        a->json, out))
		rc = cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
out:
	json_decref(fr.out);
	cv_device_free(dev);
	o->device = NULL;
	guard_held_close(&held);
	return rc;
}
