/*
 * guard_int.h - guards/ internals shared between guard.c, held.c and
 * prodset.c (not part of the public header). It names held.h's types
 * only, so prodset.c includes it without reaching guard.c.
 */
#ifndef GUARD_INT_H
#define GUARD_INT_H

#include "held.h"

#include <jansson.h>
#include <limits.h>

enum { GUARD_FS_DEV = 1, GUARD_FS_LOOP = 2 };

/* JSON form of an identity (registry, study records) and back. */
json_t *guard_ident_json(const guard_ident *id);
int guard_ident_from_json(const json_t *j, guard_ident *id);
json_t *guard_devset_json(const guard_devset *s);
void guard_devset_from_json(const json_t *j, guard_devset *s);

/* Identity of name beneath dirfd, not following a final symlink. 0 or -errno. */
int guard_ident_at(int dirfd, const char *name, guard_ident *id);

/*
 * The layers of the overlay mount fd lies on (lowerdir, lowerdir+, datadir+,
 * upperdir, workdir as mountinfo spells them) into layers (at most max), *n of them: 1 when
 * fd is on an overlay, 0 when not, -errno when its mount cannot be found.
 */
int guard_overlay_layers(int fd, char (*layers)[PATH_MAX], size_t max, size_t *n);

/* The walk limits, from COLDSTUDY_GUARD_WALK_MAX / COLDSTUDY_GUARD_WALK_DEPTH. */
size_t guard_walk_max(void);
int guard_walk_depth(void);

#endif
