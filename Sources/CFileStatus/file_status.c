#define _GNU_SOURCE
#include "CFileStatus.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

int evsync_file_identity(int directory, const char *path, uint64_t *device, uint64_t *inode, uint64_t *size) {
    int flags = path[0] == '\0' ? AT_EMPTY_PATH : 0;
    struct statx status;
    if (statx(directory, path, flags, STATX_INO | STATX_SIZE, &status) == 0) {
        *device = makedev(status.stx_dev_major, status.stx_dev_minor);
        *inode = status.stx_ino;
        *size = status.stx_size;
        return 0;
    }
    if (errno != ENOSYS && errno != EPERM) return -1;
    struct stat fallback;
    if (fstatat(directory, path, &fallback, flags) != 0) return -1;
    *device = fallback.st_dev;
    *inode = fallback.st_ino;
    *size = (uint64_t)fallback.st_size;
    return 0;
}

void evsync_skip_access_times(int descriptor) {
    int flags = fcntl(descriptor, F_GETFL);
    if (flags >= 0) (void)fcntl(descriptor, F_SETFL, flags | O_NOATIME);
}
