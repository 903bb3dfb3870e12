/* crash_trace: an LD_PRELOAD shim that records, in order, what a process asks of the disk for the files of one
 * directory tree, and what it prints, for the crash-state tests (Tests/evsyncTests/CrashStateTests.swift,
 * docs/crash-states.md). The tests compile it at test time (cc -shared -fPIC -O1 -o X.so crash_trace.c -ldl).
 *
 * CRASH_TRACE_DIR=<directory> (absolute, canonical) and CRASH_TRACE_LOG=<file> turn it on. Every record goes to
 * the log in one write(2) on an O_APPEND descriptor, so the records of several processes interleave whole, in
 * the order they happened. A record is written after its call succeeded; a flush records, as `covers`, the log's
 * length when it began: it makes durable only the writes recorded before that (a write that raced with it may
 * have missed it).
 *
 * CRASH_TRACE_KEEP=<directory>, on the same file system, gets a hard link to every file opened, named by its inode.
 *
 * CRASH_TRACE_BOOT_ID=<text> instead makes the process read that text as /proc/sys/kernel/random/boot_id: a
 * process that opens a crash state sees a new boot, as after a power cut.
 *
 * Record: u32 size, u8 kind, u8 0, u16 0, i32 pid, u32 flags, i64 a, i64 b, u32 path length, u32 path2 length,
 * u32 data length, then the path, the second path and the data. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

enum { OPEN = 1, WRITE = 2, TRUNCATE = 3, FLUSH = 4, RENAME = 5, UNLINK = 6, MKDIR = 7, RMDIR = 8, OUTPUT = 9,
       FLUSH_ALL = 10, START = 11, LINK = 12 };
/* FLUSH flags: a directory; or only the range [b, b + length) of the file, length in the data (an O_DSYNC write). */
enum { FLUSH_DIRECTORY = 1, FLUSH_RANGE = 2 };

#define MAX_FDS 65536
#define MAX_MAPS 64
#define PAGE 4096

static int log_fd = -1;
static char root[PATH_MAX];
static size_t root_length;
static char boot_id[64];
static char keep[PATH_MAX];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Descriptors open on a file in the tree: 1 a file, 2 a directory, 3 a file opened O_SYNC/O_DSYNC. */
static unsigned char traced[MAX_FDS];

/* A writable shared mapping of a file in the tree, and a private copy of what it held at the last sync: the
 * pages that differ are the writes made through the map since. */
struct map { char *address; size_t length; off_t offset; char path[PATH_MAX]; char *shadow; };
static struct map maps[MAX_MAPS];

#define REAL(name) static __typeof__(name) *real_##name; if (!real_##name) real_##name = dlsym(RTLD_NEXT, #name)

static int64_t log_length(void) {
    struct stat status;
    return fstat(log_fd, &status) == 0 ? status.st_size : 0;
}

static void emit(int kind, uint32_t flags, int64_t a, int64_t b, const char *path, const char *path2,
                 const void *data, size_t data_length) {
    uint32_t p1 = path ? (uint32_t)strlen(path) : 0, p2 = path2 ? (uint32_t)strlen(path2) : 0;
    size_t size = 48 + p1 + p2 + data_length;
    char *record = malloc(size);
    if (!record) return;
    uint32_t size32 = (uint32_t)size, length = (uint32_t)data_length;
    int32_t pid = getpid();
    memset(record, 0, 48);
    memcpy(record, &size32, 4);
    record[4] = (char)kind;
    memcpy(record + 8, &pid, 4);
    memcpy(record + 12, &flags, 4);
    memcpy(record + 16, &a, 8);
    memcpy(record + 24, &b, 8);
    memcpy(record + 32, &p1, 4);
    memcpy(record + 36, &p2, 4);
    memcpy(record + 40, &length, 4);
    if (p1) memcpy(record + 48, path, p1);
    if (p2) memcpy(record + 48 + p1, path2, p2);
    if (data_length) memcpy(record + 48 + p1 + p2, data, data_length);
    size_t done = 0;
    while (done < size) {
        ssize_t n = syscall(SYS_write, log_fd, record + done, size - done);
        if (n <= 0) break;
        done += (size_t)n;
    }
    free(record);
}

static int in_tree(const char *path) {
    return log_fd >= 0 && strncmp(path, root, root_length) == 0 && (path[root_length] == 0 || path[root_length] == '/');
}

/* The absolute path `path` names, relative to `dirfd`; the parent resolved, the last component kept (it may be a
 * symbolic link, or not exist yet). 0 if it cannot be told. */
static int resolve(int dirfd, const char *path, char *out) {
    char joined[PATH_MAX * 2];
    if (path[0] == '/') {
        snprintf(joined, sizeof joined, "%s", path);
    } else {
        char base[PATH_MAX];
        if (dirfd == AT_FDCWD) {
            if (!getcwd(base, sizeof base)) return 0;
        } else {
            char link[64];
            snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
            ssize_t n = syscall(SYS_readlinkat, AT_FDCWD, link, base, sizeof base - 1);
            if (n <= 0) return 0;
            base[n] = 0;
        }
        snprintf(joined, sizeof joined, "%s/%s", base, path);
    }
    char *slash = strrchr(joined, '/');
    while (slash && slash != joined && slash[1] == 0) { *slash = 0; slash = strrchr(joined, '/'); }
    if (!slash) return 0;
    char parent[PATH_MAX];
    *slash = 0;
    if (!realpath(slash == joined ? "/" : joined, parent)) return 0;
    snprintf(out, PATH_MAX, "%s/%s", strcmp(parent, "/") == 0 ? "" : parent, slash + 1);
    return 1;
}

/* The path a descriptor is open on now (after any rename), or 0. */
static int path_of(int fd, char *out) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = syscall(SYS_readlinkat, AT_FDCWD, link, out, PATH_MAX - 1);
    if (n <= 0) return 0;
    out[n] = 0;
    return 1;
}

static int is_traced(int fd) { return log_fd >= 0 && fd >= 0 && fd < MAX_FDS && traced[fd]; }

/* Writes made through the maps of `path` (all paths if null) since their last sync, as WRITE records, in
 * [start, end) of the address space; the shadow then holds them. Only resident pages can have been written. */
static void record_map_writes(const char *path, char *start, char *end) {
    for (int i = 0; i < MAX_MAPS; i++) {
        struct map *m = &maps[i];
        if (!m->address || (path && strcmp(path, m->path) != 0)) continue;
        char *from = start > m->address ? start : m->address;
        char *to = end < m->address + m->length ? end : m->address + m->length;
        if (from >= to) continue;
        from = m->address + ((from - m->address) / PAGE) * PAGE;
        size_t pages = (size_t)(to - from + PAGE - 1) / PAGE;
        unsigned char *resident = malloc(pages);
        if (!resident) continue;
        if (mincore(from, pages * PAGE > (size_t)(m->address + m->length - from) ? (size_t)(m->address + m->length - from) : pages * PAGE, resident) != 0)
            memset(resident, 1, pages);
        for (size_t p = 0; p < pages; p++) {
            if (!(resident[p] & 1)) continue;
            char *page = from + p * PAGE;
            size_t length = (size_t)(m->address + m->length - page) < PAGE ? (size_t)(m->address + m->length - page) : PAGE;
            char *copy = m->shadow + (page - m->address);
            if (memcmp(page, copy, length) == 0) continue;
            memcpy(copy, page, length);
            emit(WRITE, 0, m->offset + (page - m->address), 0, m->path, 0, copy, length);
        }
        free(resident);
    }
}

/* Keeps each map's shadow in step with a write made by a call, not through the map. */
static void shadow_write(const char *path, off_t offset, const void *data, size_t length) {
    for (int i = 0; i < MAX_MAPS; i++) {
        struct map *m = &maps[i];
        if (!m->address || strcmp(path, m->path) != 0) continue;
        off_t from = offset > m->offset ? offset : m->offset;
        off_t to = offset + (off_t)length < m->offset + (off_t)m->length ? offset + (off_t)length : m->offset + (off_t)m->length;
        if (from < to) memcpy(m->shadow + (from - m->offset), (const char *)data + (from - offset), (size_t)(to - from));
    }
}

/* Before a flush of `fd`: the writes made through its file's maps, which the flush writes too, recorded; and the
 * log's length, which the flush covers. */
static int64_t before_flush(int fd) {
    char path[PATH_MAX];
    pthread_mutex_lock(&lock);
    if (traced[fd] != 2 && path_of(fd, path)) record_map_writes(path, 0, (char *)UINTPTR_MAX);
    int64_t covers = log_length();
    pthread_mutex_unlock(&lock);
    return covers;
}

static void flush_record(int fd, int64_t covers) {
    char path[PATH_MAX];
    if (!path_of(fd, path)) return;
    pthread_mutex_lock(&lock);
    emit(FLUSH, traced[fd] == 2 ? FLUSH_DIRECTORY : 0, covers, 0, path, 0, 0, 0);
    pthread_mutex_unlock(&lock);
}

static void write_record(int fd, off_t offset, const void *data, size_t length) {
    char path[PATH_MAX];
    if (length == 0 || !path_of(fd, path)) return;
    pthread_mutex_lock(&lock);
    emit(WRITE, 0, offset, 0, path, 0, data, length);
    shadow_write(path, offset, data, length);
    /* O_SYNC/O_DSYNC: durable when the call returns. */
    if (traced[fd] == 3) {
        int64_t range = (int64_t)length;
        emit(FLUSH, FLUSH_RANGE, log_length(), offset, path, 0, &range, sizeof range);
    }
    pthread_mutex_unlock(&lock);
}

static void iov_record(int fd, off_t offset, const struct iovec *iov, int count, ssize_t written) {
    size_t left = (size_t)written, total = 0;
    for (int i = 0; i < count && total < left; i++) total += iov[i].iov_len < left - total ? iov[i].iov_len : left - total;
    char *joined = malloc(total ? total : 1);
    if (!joined) return;
    size_t at = 0;
    for (int i = 0; i < count && at < total; i++) {
        size_t n = iov[i].iov_len < total - at ? iov[i].iov_len : total - at;
        memcpy(joined + at, iov[i].iov_base, n);
        at += n;
    }
    write_record(fd, offset, joined, total);
    free(joined);
}

static void opened(int fd, int flags) {
    if (fd < 0 || fd >= MAX_FDS || log_fd < 0) return;
    traced[fd] = 0;
    char path[PATH_MAX];
    if (!path_of(fd, path) || !in_tree(path)) return;
    struct stat status;
    if (fstat(fd, &status) != 0) return;
    traced[fd] = S_ISDIR(status.st_mode) ? 2 : (flags & (O_SYNC | O_DSYNC)) ? 3 : 1;
    if (S_ISDIR(status.st_mode)) return;
    if (keep[0]) {
        /* A second name keeps the inode alive after the run unlinks or replaces the file, so that a crash state
         * can put its content back into the inode it had. */
        char link[64], kept[PATH_MAX];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        snprintf(kept, sizeof kept, "%s/%llu", keep, (unsigned long long)status.st_ino);
        syscall(SYS_linkat, AT_FDCWD, link, AT_FDCWD, kept, AT_SYMLINK_FOLLOW);
    }
    pthread_mutex_lock(&lock);
    emit(OPEN, (uint32_t)flags, (int64_t)status.st_ino, (int64_t)status.st_size, path, 0, 0, 0);
    pthread_mutex_unlock(&lock);
}

static void output(const void *data, size_t length) {
    if (log_fd < 0 || length == 0) return;
    pthread_mutex_lock(&lock);
    emit(OUTPUT, 0, 0, 0, 0, 0, data, length);
    pthread_mutex_unlock(&lock);
}

/* Standard output through stdio reaches write(2) inside libc, past any interposition: stdout becomes a stream of
 * ours, buffered as before, that records what it passes on when it passes it on. */
static ssize_t stdout_write(void *cookie, const char *data, size_t length) {
    (void)cookie;
    size_t done = 0;
    while (done < length) {
        ssize_t n = syscall(SYS_write, 1, data + done, length - done);
        if (n < 0) { if (errno == EINTR) continue; return done ? (ssize_t)done : -1; }
        output(data + done, (size_t)n);
        done += (size_t)n;
    }
    return (ssize_t)done;
}

static void before_fork(void) { pthread_mutex_lock(&lock); }
static void after_fork(void) { pthread_mutex_unlock(&lock); }

__attribute__((constructor)) static void start(void) {
    const char *boot = getenv("CRASH_TRACE_BOOT_ID");
    if (boot) snprintf(boot_id, sizeof boot_id, "%s\n", boot);
    const char *directory = getenv("CRASH_TRACE_DIR"), *file = getenv("CRASH_TRACE_LOG");
    if (!directory || !file) return;
    snprintf(root, sizeof root, "%s", directory);
    const char *inodes = getenv("CRASH_TRACE_KEEP");
    if (inodes) snprintf(keep, sizeof keep, "%s", inodes);
    root_length = strlen(root);
    log_fd = (int)syscall(SYS_openat, AT_FDCWD, file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (log_fd < 0) return;
    pthread_atfork(before_fork, after_fork, after_fork);
    cookie_io_functions_t functions = { .write = stdout_write };
    FILE *stream = fopencookie(0, "w", functions);
    if (stream) {
        fflush(stdout);
        setvbuf(stream, 0, isatty(1) ? _IOLBF : _IOFBF, BUFSIZ);
        stdout = stream;
    }
    char command[4096];
    int cmdline = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t n = cmdline >= 0 ? syscall(SYS_read, cmdline, command, sizeof command) : 0;
    if (cmdline >= 0) syscall(SYS_close, cmdline);
    emit(START, 0, 0, 0, 0, 0, command, n > 0 ? (size_t)n : 0);
}

/* What a process wrote through its maps and never synced is still in the page cache when it exits. */
__attribute__((destructor)) static void finish(void) {
    if (log_fd < 0) return;
    fflush(stdout);
    pthread_mutex_lock(&lock);
    record_map_writes(0, 0, (char *)UINTPTR_MAX);
    pthread_mutex_unlock(&lock);
}

/* ---- opening ---- */

static int boot_id_fd(const char *path) {
    if (!boot_id[0] || strcmp(path, "/proc/sys/kernel/random/boot_id") != 0) return -1;
    int fd = memfd_create("boot_id", MFD_CLOEXEC);
    if (fd < 0) return -1;
    syscall(SYS_write, fd, boot_id, strlen(boot_id));
    lseek(fd, 0, SEEK_SET);
    return fd;
}

/* The mode is there only with O_CREAT or O_TMPFILE. */
#define OPEN_CALL(name, ...) \
    REAL(name); \
    mode_t mode = 0; \
    if (flags & (O_CREAT | O_TMPFILE)) { va_list list; va_start(list, flags); mode = va_arg(list, mode_t); va_end(list); } \
    int fake = boot_id_fd(path); \
    if (fake >= 0) return fake; \
    int fd = real_##name(__VA_ARGS__, mode); \
    opened(fd, flags); \
    return fd

int open(const char *path, int flags, ...) { OPEN_CALL(open, path, flags); }
int open64(const char *path, int flags, ...) { OPEN_CALL(open64, path, flags); }
int openat(int dirfd, const char *path, int flags, ...) { OPEN_CALL(openat, dirfd, path, flags); }
int openat64(int dirfd, const char *path, int flags, ...) { OPEN_CALL(openat64, dirfd, path, flags); }

int creat(const char *path, mode_t mode) {
    REAL(creat);
    int fd = real_creat(path, mode);
    opened(fd, O_CREAT | O_TRUNC | O_WRONLY);
    return fd;
}

int creat64(const char *path, mode_t mode) {
    REAL(creat64);
    int fd = real_creat64(path, mode);
    opened(fd, O_CREAT | O_TRUNC | O_WRONLY);
    return fd;
}

int close(int fd) {
    REAL(close);
    int result = real_close(fd);
    if (result == 0 && fd >= 0 && fd < MAX_FDS) traced[fd] = 0;
    return result;
}

static void duplicated(int from, int to) {
    if (to >= 0 && to < MAX_FDS && from >= 0 && from < MAX_FDS) traced[to] = traced[from];
}

int dup(int fd) { REAL(dup); int result = real_dup(fd); duplicated(fd, result); return result; }
int dup2(int fd, int to) { REAL(dup2); int result = real_dup2(fd, to); duplicated(fd, result); return result; }
int dup3(int fd, int to, int flags) { REAL(dup3); int result = real_dup3(fd, to, flags); duplicated(fd, result); return result; }

/* ---- writing ---- */

ssize_t write(int fd, const void *data, size_t length) {
    REAL(write);
    ssize_t n = real_write(fd, data, length);
    if (n > 0 && fd == 1 && !is_traced(1)) output(data, (size_t)n);
    if (n > 0 && is_traced(fd)) write_record(fd, lseek(fd, 0, SEEK_CUR) - n, data, (size_t)n);
    return n;
}

ssize_t pwrite(int fd, const void *data, size_t length, off_t offset) {
    REAL(pwrite);
    ssize_t n = real_pwrite(fd, data, length, offset);
    if (n > 0 && is_traced(fd)) write_record(fd, offset, data, (size_t)n);
    return n;
}

ssize_t pwrite64(int fd, const void *data, size_t length, off64_t offset) {
    REAL(pwrite64);
    ssize_t n = real_pwrite64(fd, data, length, offset);
    if (n > 0 && is_traced(fd)) write_record(fd, offset, data, (size_t)n);
    return n;
}

ssize_t writev(int fd, const struct iovec *iov, int count) {
    REAL(writev);
    ssize_t n = real_writev(fd, iov, count);
    if (n > 0 && fd == 1 && !is_traced(1)) { for (int i = 0; i < count; i++) output(iov[i].iov_base, iov[i].iov_len); }
    if (n > 0 && is_traced(fd)) iov_record(fd, lseek(fd, 0, SEEK_CUR) - n, iov, count, n);
    return n;
}

ssize_t pwritev(int fd, const struct iovec *iov, int count, off_t offset) {
    REAL(pwritev);
    ssize_t n = real_pwritev(fd, iov, count, offset);
    if (n > 0 && is_traced(fd)) iov_record(fd, offset, iov, count, n);
    return n;
}

ssize_t pwritev64(int fd, const struct iovec *iov, int count, off64_t offset) {
    REAL(pwritev64);
    ssize_t n = real_pwritev64(fd, iov, count, offset);
    if (n > 0 && is_traced(fd)) iov_record(fd, offset, iov, count, n);
    return n;
}

static void truncated(const char *path, off_t length) {
    pthread_mutex_lock(&lock);
    emit(TRUNCATE, 0, length, 0, path, 0, 0, 0);
    pthread_mutex_unlock(&lock);
}

int ftruncate(int fd, off_t length) {
    REAL(ftruncate);
    int result = real_ftruncate(fd, length);
    char path[PATH_MAX];
    if (result == 0 && is_traced(fd) && path_of(fd, path)) truncated(path, length);
    return result;
}

int ftruncate64(int fd, off64_t length) {
    REAL(ftruncate64);
    int result = real_ftruncate64(fd, length);
    char path[PATH_MAX];
    if (result == 0 && is_traced(fd) && path_of(fd, path)) truncated(path, length);
    return result;
}

int truncate(const char *path, off_t length) {
    REAL(truncate);
    int result = real_truncate(path, length);
    char full[PATH_MAX];
    if (result == 0 && resolve(AT_FDCWD, path, full) && in_tree(full)) truncated(full, length);
    return result;
}

/* A size it reserves (without FALLOC_FL_KEEP_SIZE) is a truncation up to it; blocks it reserves hold zeros. */
static void allocated(int fd, int keep_size) {
    char path[PATH_MAX];
    struct stat status;
    if (is_traced(fd) && !keep_size && path_of(fd, path) && fstat(fd, &status) == 0) truncated(path, status.st_size);
}

int fallocate(int fd, int mode, off_t offset, off_t length) {
    REAL(fallocate);
    int result = real_fallocate(fd, mode, offset, length);
    if (result == 0) allocated(fd, mode & 1 /* FALLOC_FL_KEEP_SIZE */);
    return result;
}

int fallocate64(int fd, int mode, off64_t offset, off64_t length) {
    REAL(fallocate64);
    int result = real_fallocate64(fd, mode, offset, length);
    if (result == 0) allocated(fd, mode & 1);
    return result;
}

int posix_fallocate(int fd, off_t offset, off_t length) {
    REAL(posix_fallocate);
    int result = real_posix_fallocate(fd, offset, length);
    if (result == 0) allocated(fd, 0);
    return result;
}

int posix_fallocate64(int fd, off64_t offset, off64_t length) {
    REAL(posix_fallocate64);
    int result = real_posix_fallocate64(fd, offset, length);
    if (result == 0) allocated(fd, 0);
    return result;
}

/* ---- flushing ---- */

int fsync(int fd) {
    REAL(fsync);
    int64_t covers = is_traced(fd) ? before_flush(fd) : 0;
    int result = real_fsync(fd);
    if (result == 0 && is_traced(fd)) flush_record(fd, covers);
    return result;
}

int fdatasync(int fd) {
    REAL(fdatasync);
    int64_t covers = is_traced(fd) ? before_flush(fd) : 0;
    int result = real_fdatasync(fd);
    if (result == 0 && is_traced(fd)) flush_record(fd, covers);
    return result;
}

/* Only SYNC_FILE_RANGE_WAIT_AFTER with WRITE makes anything reach the disk, and even then not the file's
 * metadata: recorded as a flush only in that case, which is generous; evsync does not call it today. */
int sync_file_range(int fd, off64_t offset, off64_t length, unsigned int flags) {
    REAL(sync_file_range);
    int64_t covers = is_traced(fd) ? before_flush(fd) : 0;
    int result = real_sync_file_range(fd, offset, length, flags);
    if (result == 0 && is_traced(fd) && (flags & 2) && (flags & 4)) flush_record(fd, covers);
    return result;
}

void sync(void) {
    REAL(sync);
    int64_t covers = log_fd >= 0 ? log_length() : 0;
    real_sync();
    if (log_fd < 0) return;
    pthread_mutex_lock(&lock);
    record_map_writes(0, 0, (char *)UINTPTR_MAX);
    emit(FLUSH_ALL, 0, covers, 0, 0, 0, 0, 0);
    pthread_mutex_unlock(&lock);
}

int syncfs(int fd) {
    REAL(syncfs);
    int64_t covers = log_fd >= 0 ? log_length() : 0;
    int result = real_syncfs(fd);
    if (result == 0 && log_fd >= 0) {
        pthread_mutex_lock(&lock);
        record_map_writes(0, 0, (char *)UINTPTR_MAX);
        emit(FLUSH_ALL, 0, covers, 0, 0, 0, 0, 0);
        pthread_mutex_unlock(&lock);
    }
    return result;
}

/* ---- maps ---- */

void *mmap(void *address, size_t length, int protection, int flags, int fd, off_t offset) {
    REAL(mmap);
    void *result = real_mmap(address, length, protection, flags, fd, offset);
    char path[PATH_MAX];
    if (result == MAP_FAILED || !is_traced(fd) || !(protection & PROT_WRITE) || !(flags & MAP_SHARED) || !path_of(fd, path))
        return result;
    /* lock.mdb is LMDB's reader table, re-made by the first process to open the store after a power cut: its
     * contents never matter after one (see CrashStateTests). */
    const char *name = strrchr(path, '/');
    if (name && strcmp(name, "/lock.mdb") == 0) return result;
    char *shadow = real_mmap(0, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (shadow == MAP_FAILED) return result;
    struct stat status;
    off_t size = fstat(fd, &status) == 0 ? status.st_size : 0;
    /* What the file holds now, read without the map (a page past the file's end would fault), and only where it
     * has data: an import's data file is as long as the map, 64 GiB, and nearly all hole. */
    off_t end = offset + (off_t)length < size ? offset + (off_t)length : size;
    for (off_t at = offset; at < end;) {
        off_t data = lseek(fd, at, SEEK_DATA);
        if (data < 0 || data >= end) break;
        off_t hole = lseek(fd, data, SEEK_HOLE);
        if (hole < 0 || hole > end) hole = end;
        while (data < hole) {
            ssize_t n = pread(fd, shadow + (data - offset), (size_t)(hole - data), data);
            if (n <= 0) { hole = data; break; }
            data += n;
        }
        at = hole > at ? hole : end;
    }
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_MAPS; i++) {
        if (maps[i].address) continue;
        maps[i] = (struct map){ .address = result, .length = length, .offset = offset, .shadow = shadow };
        snprintf(maps[i].path, sizeof maps[i].path, "%s", path);
        break;
    }
    pthread_mutex_unlock(&lock);
    return result;
}

void *mmap64(void *address, size_t length, int protection, int flags, int fd, off64_t offset) {
    return mmap(address, length, protection, flags, fd, offset);
}

int msync(void *address, size_t length, int flags) {
    REAL(msync);
    if (log_fd < 0) return real_msync(address, length, flags);
    pthread_mutex_lock(&lock);
    record_map_writes(0, address, (char *)address + length);
    int64_t covers = log_length();
    pthread_mutex_unlock(&lock);
    int result = real_msync(address, length, flags);
    if (result != 0 || !(flags & MS_SYNC)) return result;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_MAPS; i++) {
        struct map *m = &maps[i];
        if (m->address && m->address < (char *)address + length && (char *)address < m->address + m->length)
            emit(FLUSH, 0, covers, 0, m->path, 0, 0, 0);
    }
    pthread_mutex_unlock(&lock);
    return result;
}

int munmap(void *address, size_t length) {
    REAL(munmap);
    if (log_fd >= 0) {
        pthread_mutex_lock(&lock);
        record_map_writes(0, address, (char *)address + length);
        for (int i = 0; i < MAX_MAPS; i++) {
            struct map *m = &maps[i];
            if (m->address && m->address >= (char *)address && m->address + m->length <= (char *)address + length) {
                real_munmap(m->shadow, m->length);
                m->address = 0;
            }
        }
        pthread_mutex_unlock(&lock);
    }
    return real_munmap(address, length);
}

/* ---- names ---- */

static void name_record(int kind, int dirfd, const char *path, int newdirfd, const char *newpath, int result) {
    if (result != 0 || log_fd < 0) return;
    char full[PATH_MAX], full2[PATH_MAX];
    if (!resolve(dirfd, path, full)) return;
    if (newpath && !resolve(newdirfd, newpath, full2)) return;
    if (!in_tree(full) && !(newpath && in_tree(full2))) return;
    pthread_mutex_lock(&lock);
    emit(kind, 0, 0, 0, full, newpath ? full2 : 0, 0, 0);
    pthread_mutex_unlock(&lock);
}

/* The parent is resolved before the call: after a rename or an unlink the name is gone. */
#define NAME_CALL(kind, call, dirfd, path, newdirfd, newpath) \
    do { int result = call; name_record(kind, dirfd, path, newdirfd, newpath, result); return result; } while (0)

int rename(const char *from, const char *to) { REAL(rename); NAME_CALL(RENAME, real_rename(from, to), AT_FDCWD, from, AT_FDCWD, to); }
int renameat(int fromfd, const char *from, int tofd, const char *to) {
    REAL(renameat); NAME_CALL(RENAME, real_renameat(fromfd, from, tofd, to), fromfd, from, tofd, to);
}
int renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned int flags) {
    REAL(renameat2); NAME_CALL(RENAME, real_renameat2(fromfd, from, tofd, to, flags), fromfd, from, tofd, to);
}
int link(const char *from, const char *to) { REAL(link); NAME_CALL(LINK, real_link(from, to), AT_FDCWD, from, AT_FDCWD, to); }
int linkat(int fromfd, const char *from, int tofd, const char *to, int flags) {
    REAL(linkat); NAME_CALL(LINK, real_linkat(fromfd, from, tofd, to, flags), fromfd, from, tofd, to);
}
int unlink(const char *path) { REAL(unlink); NAME_CALL(UNLINK, real_unlink(path), AT_FDCWD, path, AT_FDCWD, 0); }
int unlinkat(int dirfd, const char *path, int flags) {
    REAL(unlinkat); NAME_CALL((flags & AT_REMOVEDIR) ? RMDIR : UNLINK, real_unlinkat(dirfd, path, flags), dirfd, path, AT_FDCWD, 0);
}
int rmdir(const char *path) { REAL(rmdir); NAME_CALL(RMDIR, real_rmdir(path), AT_FDCWD, path, AT_FDCWD, 0); }
int mkdir(const char *path, mode_t mode) { REAL(mkdir); NAME_CALL(MKDIR, real_mkdir(path, mode), AT_FDCWD, path, AT_FDCWD, 0); }
int mkdirat(int dirfd, const char *path, mode_t mode) { REAL(mkdirat); NAME_CALL(MKDIR, real_mkdirat(dirfd, path, mode), dirfd, path, AT_FDCWD, 0); }

/* mkdtemp and mkstemp create inside libc, past open and mkdir. */
char *mkdtemp(char *template) {
    REAL(mkdtemp);
    char *result = real_mkdtemp(template);
    if (result) name_record(MKDIR, AT_FDCWD, result, AT_FDCWD, 0, 0);
    return result;
}

int mkstemp(char *template) { REAL(mkstemp); int fd = real_mkstemp(template); opened(fd, O_CREAT | O_RDWR); return fd; }
int mkstemp64(char *template) { REAL(mkstemp64); int fd = real_mkstemp64(template); opened(fd, O_CREAT | O_RDWR); return fd; }
int mkostemp(char *template, int flags) { REAL(mkostemp); int fd = real_mkostemp(template, flags); opened(fd, O_CREAT | O_RDWR | flags); return fd; }
int mkstemps(char *template, int suffix) { REAL(mkstemps); int fd = real_mkstemps(template, suffix); opened(fd, O_CREAT | O_RDWR); return fd; }
int mkostemps(char *template, int suffix, int flags) {
    REAL(mkostemps); int fd = real_mkostemps(template, suffix, flags); opened(fd, O_CREAT | O_RDWR | flags); return fd;
}
