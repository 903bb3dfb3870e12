#include "CLMDBGuard.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>

/* Where a fault in this thread's guarded call jumps to; NULL outside one. */
static __thread sigjmp_buf *guard_target;
static struct sigaction previous_segv, previous_bus;
static pthread_once_t installed = PTHREAD_ONCE_INIT;

static void on_fault(int signal, siginfo_t *info, void *context) {
    sigjmp_buf *target = guard_target;
    if (target) {
        guard_target = NULL;
        siglongjmp(*target, 1);
    }
    /* Not ours: give the signal back to the handler that was there before
     * (the Swift runtime's crash report, or the default), and let it happen again. */
    sigaction(signal, signal == SIGBUS ? &previous_bus : &previous_segv, NULL);
    if (info->si_code <= 0) raise(signal);
    (void)context;
}

static void install(void) {
    struct sigaction action = {0};
    action.sa_sigaction = on_fault;
    /* SA_NODEFER: the jump leaves the handler without sigreturn, and the signal must not stay blocked. */
    action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &previous_segv);
    sigaction(SIGBUS, &action, &previous_bus);
}

static void on_assert(MDB_env *env, const char *message) {
    sigjmp_buf *target = guard_target;
    if (target) {
        guard_target = NULL;
        siglongjmp(*target, 1);
    }
    /* LMDB aborts when this returns. */
    (void)env;
    (void)message;
}

void evsync_mdb_guard_env(MDB_env *env) {
    pthread_once(&installed, install);
    mdb_env_set_assert(env, on_assert);
}

static void touch(const MDB_val *value) {
    if (value && value->mv_size > 0 && value->mv_data) {
        const volatile char *bytes = value->mv_data;
        (void)bytes[0];
        (void)bytes[value->mv_size - 1];
    }
}

/* Runs `call` (an expression giving an LMDB return code) under the guard; on
 * success runs `after`. `outer` lets guarded calls nest. */
#define GUARDED(call, after, on_fault_do)                  \
    do {                                                   \
        sigjmp_buf target;                                 \
        sigjmp_buf *outer = guard_target;                  \
        pthread_once(&installed, install);                 \
        if (sigsetjmp(target, 0)) {                        \
            guard_target = outer;                          \
            on_fault_do;                                   \
            return EVSYNC_MDB_FAULT;                       \
        }                                                  \
        guard_target = &target;                            \
        int rc = (call);                                   \
        if (rc == MDB_SUCCESS) { after; }                  \
        guard_target = outer;                              \
        return rc;                                         \
    } while (0)

int evsync_mdb_get(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data) {
    GUARDED(mdb_get(txn, dbi, key, data), touch(data), (void)0);
}

int evsync_mdb_cursor_open(MDB_txn *txn, MDB_dbi dbi, MDB_cursor **cursor) {
    GUARDED(mdb_cursor_open(txn, dbi, cursor), (void)0, (void)0);
}

int evsync_mdb_cursor_get(MDB_cursor *cursor, MDB_val *key, MDB_val *data, MDB_cursor_op op) {
    GUARDED(mdb_cursor_get(cursor, key, data, op), (touch(key), touch(data)), (void)0);
}

int evsync_mdb_cursor_put(MDB_cursor *cursor, MDB_val *key, MDB_val *data, unsigned int flags) {
    GUARDED(mdb_cursor_put(cursor, key, data, flags), (void)0, (void)0);
}

int evsync_mdb_del(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data) {
    GUARDED(mdb_del(txn, dbi, key, data), (void)0, (void)0);
}

int evsync_mdb_drop(MDB_txn *txn, MDB_dbi dbi, int del) {
    GUARDED(mdb_drop(txn, dbi, del), (void)0, (void)0);
}

int evsync_mdb_stat(MDB_txn *txn, MDB_dbi dbi, MDB_stat *stat) {
    GUARDED(mdb_stat(txn, dbi, stat), (void)0, (void)0);
}

int evsync_mdb_dbi_open(MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi) {
    GUARDED(mdb_dbi_open(txn, name, flags, dbi), (void)0, (void)0);
}

void evsync_mdb_txn_abort(MDB_txn *txn) {
    sigjmp_buf target;
    sigjmp_buf *outer = guard_target;
    pthread_once(&installed, install);
    /* A second fault while giving the transaction up leaves it be: there is nothing better to do. */
    if (sigsetjmp(target, 0) == 0) {
        guard_target = &target;
        mdb_txn_abort(txn);
    }
    guard_target = outer;
}

int evsync_mdb_txn_commit(MDB_txn *txn) {
    GUARDED(mdb_txn_commit(txn), (void)0, evsync_mdb_txn_abort(txn));
}
