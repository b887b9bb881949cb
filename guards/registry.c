/*
 * registry.c - what `coldstudy production` does to the machine-wide
 * production registry (prodset.c keeps it): list it, add items resolved
 * from the current directory, remove items by path or name; each says what
 * it did in one line.
 */
#include "prodset.h"

#include <fcntl.h>
#include <stdlib.h>

int guard_registry_print(int json, FILE *out, cs_err *e)
{
	json_t *items = NULL, *v;
	size_t i;
	int rc;

	if ((rc = guard_registry_list(&items, e)))
		return rc;
	if (json) {
		char *s = json_dumps(items, JSON_INDENT(2) | JSON_SORT_KEYS);

		fprintf(out, "%s\n", s ? s : "[]");
		free(s);
		json_decref(items);
		return 0;
	}
	fprintf(out, "# %s: %zu item(s)\n", guard_registry_path(), json_array_size(items));
	json_array_foreach(items, i, v)
	{
		const json_t *id = json_object_get(v, "ident");

		fprintf(out, "%-12s %s", json_string_value(json_object_get(v, "kind")),
			json_string_value(json_object_get(v, "path")) ?: json_string_value(json_object_get(v, "name")) ?: "?");
		if (id)
			fprintf(out, "  (dev %lld:%lld ino %lld)",
			        (long long) json_integer_value(json_object_get(id, "dev_major")),
			        (long long) json_integer_value(json_object_get(id, "dev_minor")),
			        (long long) json_integer_value(json_object_get(id, "ino")));
		fprintf(out, "  %s\n", json_string_value(json_object_get(v, "owner")) ?: "");
	}
	json_decref(items);
	return 0;
}

int guard_registry_add_named(json_t *paths, json_t *hosts, json_t *dbs, FILE *out, cs_err *e)
{
	json_t *doc = json_pack("{s:{s:O, s:O, s:O}}", "production", "paths", paths, "hosts", hosts,
	                        "databases", dbs),
	       *items = NULL;
	int rc;

	if (!doc)
		return cs_err_set(e, CS_EXIT_INTERNAL, "out of memory");
	rc = guard_production_resolve(doc, AT_FDCWD, "production add", &items, e);
	if (!rc)
		rc = guard_registry_add(items, "production add", e);
	if (!rc)
		fprintf(out, "%zu item(s) registered in %s\n", json_array_size(items),
		        guard_registry_path());
	json_decref(items);
	json_decref(doc);
	return rc;
}

int guard_registry_remove_all(char *const *names, size_t n, FILE *out, cs_err *e)
{
	size_t total = 0;

	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		int rc;

		if ((rc = guard_registry_remove(names[i], &k, e)))
			return rc;
		if (!k)
			return cs_err_set(e, CS_EXIT_BADINPUT,
			                  "%s: no registry item has this path or name (see "
			                  "'coldstudy production list')",
			                  names[i]);
		total += k;
	}
	fprintf(out, "%zu item(s) removed from %s\n", total, guard_registry_path());
	return 0;
}
