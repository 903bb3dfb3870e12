#ifndef EVSYNC_CFILESTATUS_H
#define EVSYNC_CFILESTATUS_H

#include <stdint.h>

/* A file's device, inode and size, by statx(2) asking for no times.
 *
 * Since Linux 6.13, once a file's times have been read, its next change takes
 * a fine-grained timestamp, and that moves the clock every later change on the
 * machine compares with. stat(2) reads the times. A writer that looks at its
 * data file with stat at every commit so has ext4 write back the inode of the
 * data file and of the journal at every commit: measured, two inode updates a
 * commit, and a fifth more time per single write; statx without the times
 * makes none. Swift sees no statx (glibc declares it for _GNU_SOURCE only).
 *
 * `path` is relative to `directory` (AT_FDCWD: the working directory); an empty
 * `path` with `directory` an open file describes that file (AT_EMPTY_PATH).
 * `device` is encoded as stat's st_dev. Where statx cannot be had (an old
 * kernel, a seccomp filter), falls back to fstatat. Returns 0, or -1 with
 * errno set. */
int evsync_file_identity(int directory, const char *path, uint64_t *device, uint64_t *inode, uint64_t *size);

/* Stops reads through `descriptor` from updating the file's access time
 * (O_NOATIME). Under relatime a read after each change updates it, and each
 * update writes the inode: the journal and data file are read at every commit.
 * Only the file's owner may; for anyone else this changes nothing. */
void evsync_skip_access_times(int descriptor);

#endif
