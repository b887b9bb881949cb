/*
 * fuzz_spec.c - libFuzzer target over the run.json and study.json
 * decoders: strict loading, validation, defaults merged and the canonical
 * form. Any input must give 0 or an exit code with a message, never a
 * crash, a leak or an invalid effective spec.
 */
#include "harness.h"
#include "harness_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc = NULL, *eff = NULL;
	cs_err e = {0};
	char *canon = NULL;
	size_t len;

	if (size < 128) {
		/* a throttle cap as run.json and --throttle spell it (harness/throttle.c) */
		char cs[128];
		harness_cap c;
		cs_err ce = {0};
		int rc;

		memcpy(cs, data, size);
		cs[size] = '\0';
		rc = harness_cap_parse(cs, &c, &ce);
		if (rc && !ce.msg[0])
			abort(); /* a refusal always explains itself */
		if (!rc && !c.riops && !c.rbps && strcmp(c.name, "uncapped"))
			abort(); /* only "uncapped" is a cap without a limit */
	}
	if (cs_json_load_buf((const char *) data, size, "fuzz.json", &doc, &e))
		return 0;
	if (harness_study_validate(doc, "fuzz.json", &e) && !e.msg[0])
		abort(); /* a refusal always explains itself */
	memset(&e, 0, sizeof(e));
	if (harness_run_validate(doc, "fuzz.json", "$", 0, &e) == 0) {
		if (harness_run_effective(doc, NULL, &eff, &e) ||
		    harness_run_validate(eff, "eff", "$", 0, &e))
			abort(); /* a valid run stays valid with the defaults filled in */
		memset(&e, 0, sizeof(e));
		if (harness_run_check_treatments(eff, "eff", &e) && !e.msg[0])
			abort(); /* a refused combination says why */
		if (cs_json_canonical(eff, &canon, &len, &e))
			abort();
		free(canon);
		{
			/* a postgres run's session SETs and shared_buffers, read as settings and tags */
			json_t *set = harness_pg_settings(json_object_get(eff, "postgres")), *feat = NULL,
			       *tags = NULL;

			if (!set)
				abort();
			(void) harness_pg_ef_search(json_object_get(eff, "postgres"));
			(void) harness_pg_shared_buffers_kb(json_object_get(eff, "postgres"));
			memset(&e, 0, sizeof(e));
			if (harness_spec_features(eff, &feat, &e) && !e.msg[0])
				abort();
			memset(&e, 0, sizeof(e));
			if (harness_run_tags(eff, NULL, NULL, "design", "fuzz.json", &tags, &e) && !e.msg[0])
				abort(); /* a contradicted tag names itself */
			json_decref(set);
			json_decref(feat);
			json_decref(tags);
		}
		json_decref(eff);
	} else if (!e.msg[0]) {
		abort();
	}
	json_decref(doc);
	return 0;
}
