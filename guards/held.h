/*
 * held.h - a path resolved once and held; what a file is (held.c).
 *
 * The lowest unit of guards/: it calls nothing else of guards/.
 */
#ifndef GUARD_HELD_H
#define GUARD_HELD_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "cs.h"

/* ---- held targets (held.c) ---- */

/* A file system: a device number, or a loop device's backing file (dev, inode, offset). */
typedef struct guard_fskey {
	int kind; /* 1 device (a = major, b = minor), 2 loop backing (a = dev, b = ino, c = offset) */
	uint64_t a, b, c;
} guard_fskey;

/* What a file is: its file system and inode, with the inode's birth time. */
typedef struct guard_ident {
	dev_t dev;
	uint64_t ino;
	unsigned mode, nlink;
	dev_t rdev;
	int64_t btime_ns; /* 0: unknown */
	guard_fskey fs;
} guard_ident;

#define GUARD_DEVSET_MAX 32
/* The storage behind a device: itself, its device-mapper slaves, its disk or partitions. */
typedef struct guard_devset {
	guard_fskey v[GUARD_DEVSET_MAX];
	size_t n;
} guard_devset;

/*
 * A path resolved once. fd holds the target (O_PATH) when it exists, else
 * its nearest existing ancestor, with the missing components in rest.
 */
typedef struct guard_held {
	int fd;
	int exists;
	struct stat st;          /* of what fd holds */
	char rest[4096];         /* components still to create beneath fd */
	char shown[4096];        /* the user's spelling, for messages */
	char via[4200];          /* "/proc/PID/fd/N[/rest]": the held target for path-taking APIs */
	int made_parent;         /* after guard_held_mkdirs: the directory the last component was made in */
	char made_name[256];     /* ... and that component (guard_held_rmdir removes it) */
} guard_held;

void guard_held_init(guard_held *h);
/*
 * Resolve path once from base_fd (AT_FDCWD: the current directory) with
 * openat2 (a component walk without it); magic links (/proc/self/fd/N,
 * /proc/self/cwd) are followed by the kernel. What cannot be resolved (too
 * many symlinks, a magic link to something deleted) is refused
 * (CS_EXIT_REFUSED); a missing target is held through its nearest existing
 * ancestor. Caller closes with guard_held_close.
 */
int guard_hold(const char *path, int base_fd, guard_held *h, cs_err *e);
void guard_held_close(guard_held *h);
/* The held target as a path the kernel resolves through the descriptor (borrowed). */
const char *guard_held_via(const guard_held *h);
/*
 * text with every live hold's "/proc/PID/fd/N[/rest]" spelled as the user
 * typed it (resolved 0) or as the path the kernel holds (resolved 1:
 * readlink, for a record's resolved identity), into out (truncated to
 * cap); returns the length. Other text is copied as it is.
 */
size_t guard_spell(const char *text, int resolved, char *out, size_t cap);
/* Create the missing components beneath the held ancestor (mkdirat, no symlink followed); h then holds the new directory. */
int guard_held_mkdirs(guard_held *h, cs_err *e);
/* Remove the (empty) directory guard_held_mkdirs made last, by name in its held parent. */
void guard_held_rmdir(guard_held *h);

int guard_ident_fd(int fd, guard_ident *id);
int guard_ident_same(const guard_ident *x, const guard_ident *y);
void guard_fskey_of(dev_t dev, guard_fskey *k);
int guard_fskey_eq(const guard_fskey *x, const guard_fskey *y);
/* The devices behind dev (is_blockdev_item: a production device, covering its partitions). */
void guard_devset_of(dev_t dev, int is_blockdev_item, guard_devset *s);
int guard_devset_meet(const guard_devset *x, const guard_devset *y);

#endif
