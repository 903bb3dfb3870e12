#ifndef EVSYNC_CPRCTL_SHIM_H
#define EVSYNC_CPRCTL_SHIM_H
#include <sys/prctl.h>

/* prctl is variadic, which Swift cannot call: one non-variadic wrapper per use. */

/* Marks the process not dumpable: no core dump is written of it, and other
   processes of the same (non-root) user cannot ptrace it or read its memory
   through /proc. Returns 0, or -1 with errno set. */
static inline int evsync_prctl_set_undumpable(void) {
    return prctl(PR_SET_DUMPABLE, 0L, 0L, 0L, 0L);
}

#endif
