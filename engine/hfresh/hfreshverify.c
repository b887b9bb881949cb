/*
 * hfreshverify.c - `coldstudy index verify` for HFresh.
 *
 * Checks, in order, stopping at the first damage (-EBADMSG, with the file
 * and byte offset in e):
 *   1. the manifest: magic, format version, lengths, CRC (hfr_meta_read);
 *   2. the postings file is at least as long as the manifest says;
 *   3. every live posting record: header fields against the manifest
 *      (posting id, count, dims), CRC, and every entry's id in range,
 *      version no newer than the id's current version;
 *   4. counts: ids present and not deleted equal the manifest's live
 *      count, and every such id has at least one current entry in a live
 *      posting (every id reachable);
 *   5. the vector store: long enough, and every live slot's CRC.
 * Nothing is written; a damaged index is reported, never repaired.
 */
#include "hfresh.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int hfr_verify(const char *dir, cv_err *e)
{
	hfr_meta m;
	char ppath[4096], vpath[4096];
	uint8_t *buf = NULL, *reach = NULL, *slot = NULL;
	int fdp = -1, fdv = -1, rc;
	struct stat st;
	uint32_t live = 0;

	rc = hfr_meta_read(dir, &m, e);
	if (rc)
		return rc;
	hfr_postings_path(dir, m.postings_gen, ppath, sizeof(ppath));
	snprintf(vpath, sizeof(vpath), "%s/%s", dir, HFR_VEC_NAME);
	fdp = open(ppath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fdp < 0 || fstat(fdp, &st) < 0) {
		rc = cv_err_set(e, -EBADMSG, "%s: cannot open: %s", ppath, strerror(errno));
		goto out;
	}
	if ((uint64_t) st.st_size < m.postings_end) {
		rc = cv_err_set(e, -EBADMSG, "%s: %lld bytes, the manifest needs %llu (truncated)",
				ppath, (long long) st.st_size, (unsigned long long) m.postings_end);
		goto out;
	}
	rc = -ENOMEM;
	reach = calloc(m.nids + 1, 1);
	buf = malloc((size_t) hfr_post_disk_len(m.max_entries * 2u + 64u, m.dp, m.code_bits));
	slot = malloc(hfr_vec_read_len(&m));
	if (!reach || !buf || !slot)
		goto out;
	for (uint32_t p = 0; p < m.nposts; p++) {
		const hfr_post *ps = &m.posts[p];
		cv_err pe;

		if (!ps->alive)
			continue;
		rc = cvu_pread_exact(fdp, buf, ps->len, ps->off);
		if (rc) {
			cv_err_set(e, -EBADMSG, "%s: posting %u at byte %llu: cannot read", ppath, p,
				   (unsigned long long) ps->off);
			rc = -EBADMSG;
			goto out;
		}
		rc = hfr_post_check(buf, ps->len, m.dp, m.code_bits, p, ps->count, 1, NULL, &pe);
		if (rc) {
			cv_err_set(e, rc, "%s: posting %u at byte %llu: %s", ppath, p,
				   (unsigned long long) ps->off, pe.msg);
			goto out;
		}
		for (uint32_t i = 0; i < ps->count; i++) {
			const uint8_t *ent = hfr_entry_at(buf, hfr_entry_size(m.dp, m.code_bits), i);
			uint32_t id, ver;

			memcpy(&id, ent, 4);
			memcpy(&ver, ent + 4, 4);
			if (id >= m.nids || ver == 0 || ver > (m.ver[id] & HFR_VERSION_MAX)) {
				rc = cv_err_set(e, -EBADMSG,
						"%s: posting %u entry %u at byte %llu: id %u version %u "
						"not in the version map", ppath, p, i,
						(unsigned long long) (ps->off + (size_t) (ent - buf)), id,
						ver);
				goto out;
			}
			if (ver == m.ver[id])
				reach[id] = 1;
		}
	}
	for (uint32_t id = 0; id < m.nids; id++) {
		if (m.ver[id] == 0 || (m.ver[id] & HFR_DELETED))
			continue;
		live++;
		if (!reach[id]) {
			rc = cv_err_set(e, -EBADMSG, "%s: id %u is live but in no posting (unreachable)",
					dir, id);
			goto out;
		}
	}
	if (live != m.live) {
		rc = cv_err_set(e, -EBADMSG, "%s/%s: %u live ids in the version map, header says %u",
				dir, HFR_META_NAME, live, m.live);
		goto out;
	}
	fdv = open(vpath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fdv < 0 || fstat(fdv, &st) < 0) {
		rc = cv_err_set(e, -EBADMSG, "%s: cannot open: %s", vpath, strerror(errno));
		goto out;
	}
	for (uint32_t id = 0; id < m.nids; id++) {
		uint64_t off = hfr_vec_off(&m, id);

		if (m.ver[id] == 0 || (m.ver[id] & HFR_DELETED))
			continue;
		if (off + m.vec_slot > (uint64_t) st.st_size) {
			rc = cv_err_set(e, -EBADMSG, "%s: vector %u at byte %llu beyond the end (truncated)",
					vpath, id, (unsigned long long) off);
			goto out;
		}
		if (cvu_pread_exact(fdv, slot, m.vec_slot, off) || hfr_vec_check(&m, slot)) {
			rc = cv_err_set(e, -EBADMSG, "%s: vector %u at byte %llu: checksum mismatch",
					vpath, id, (unsigned long long) off);
			goto out;
		}
	}
	cv_err_set(e, 0, "ok: %u live ids, %u postings, %u-bit codes, %u replicas, %u KB postings",
		   m.live, m.nposts, m.code_bits ? m.code_bits : 1u, m.replicas, m.max_posting_kb);
	rc = 0;
out:
	if (fdp >= 0)
		close(fdp);
	if (fdv >= 0)
		close(fdv);
	free(buf);
	free(reach);
	free(slot);
	hfr_meta_free(&m);
	return rc;
}
