#include "CLMDBGuard.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

/* Where a fault in this thread's guarded call jumps to; NULL outside one. */
static __thread sigjmp_buf *guard_target;
/* How many handlers deep this thread is in forwarding a fault that is not the guard's
 * (see `forward`): a fault met while an earlier handler runs goes to the one before it. */
static __thread int forward_depth;
/* How many guarded calls of this thread ended in a fault (see `evsync_mdb_guard_thread_faults`). */
static __thread unsigned fault_count;

static atomic_int installed;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;

/* The handlers a fault that is not the guard's is forwarded to, for each signal: the one
 * found in place when the guard took the signal first, and each one found in the guard's
 * place later (`refresh`), newest first. A handler that forwards to the one it replaced
 * (the guard) so reaches, through `forward_depth`, the one the guard replaced. Written
 * only under `install_lock`, into the copy not in use, then switched to: a signal handler
 * reads the chain without a lock. */
#define CHAIN_LIMIT 8
struct chain {
    int count;
    struct sigaction actions[CHAIN_LIMIT];
};
static struct chain chains[2][2];
static atomic_int chain_in_use[2];

static int slot(int signal) { return signal == SIGBUS; }

static void on_fault(int signal, siginfo_t *info, void *context);

static int is_guard(const struct sigaction *action) {
    return (action->sa_flags & SA_SIGINFO) && action->sa_sigaction == on_fault;
}

/* The same handler (its mask aside): sa_handler and sa_sigaction share their storage. */
static int same_handler(const struct sigaction *a, const struct sigaction *b) {
    return a->sa_flags == b->sa_flags && a->sa_handler == b->sa_handler;
}

/* What the kernel does without a handler: the default action, as the fault happens again on
 * return from the handler; a signal a process sent is sent again. */
static void act_by_default(int signal, const siginfo_t *info) {
    struct sigaction fallback = {0};
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    sigaction(signal, &fallback, NULL);
    if (info->si_code <= 0) raise(signal);
}

/* Gives a fault that is not the guard's to the handler it would have met without the guard,
 * as the kernel would have called it: with its own mask and, for an SA_SIGINFO handler, the
 * same siginfo and context. SIG_IGN ignores a signal a process sent; for a real fault the
 * kernel would not ignore it either (it kills the process), so it is taken by default. */
static void forward(int signal, siginfo_t *info, void *context) {
    int index = slot(signal), depth = forward_depth;
    const struct chain *chain = &chains[index][atomic_load(&chain_in_use[index])];
    if (depth >= chain->count) {
        act_by_default(signal, info);
        return;
    }
    struct sigaction action = chain->actions[depth];
    /* As the kernel, whatever the flags: sa_handler and sa_sigaction share their storage. */
    if (action.sa_handler == SIG_IGN && info->si_code <= 0) return;
    if (action.sa_handler == SIG_IGN || action.sa_handler == SIG_DFL) {
        act_by_default(signal, info);
        return;
    }
    sigset_t mask = action.sa_mask, outer;
    if (!(action.sa_flags & SA_NODEFER)) sigaddset(&mask, signal);
    pthread_sigmask(SIG_BLOCK, &mask, &outer);
    forward_depth = depth + 1;
    if (action.sa_flags & SA_SIGINFO) {
        action.sa_sigaction(signal, info, context);
    } else {
        action.sa_handler(signal);
    }
    /* The mask first: a signal the handler raised while it was blocked arrives now, and goes
     * on to the handler after this one, as it would have gone to whatever that one put back. */
    pthread_sigmask(SIG_SETMASK, &outer, NULL);
    forward_depth = depth;
}

static void on_fault(int signal, siginfo_t *info, void *context) {
    sigjmp_buf *target = guard_target;
    if (target) {
        guard_target = NULL;
        /* Reached through a handler that forwards to the guard, the signals may be blocked; the jump
         * does not restore the mask (saving it at each guarded call would cost a system call). */
        sigset_t faults;
        sigemptyset(&faults);
        sigaddset(&faults, SIGSEGV);
        sigaddset(&faults, SIGBUS);
        pthread_sigmask(SIG_UNBLOCK, &faults, NULL);
        siglongjmp(*target, 1);
    }
    forward(signal, info, context);
}

/* Puts `previous`, the handler found in the guard's place, first in `signal`'s chain, keeping
 * up to CHAIN_LIMIT; the same handler as the first already there is not put twice. Under install_lock. */
static void push(int signal, const struct sigaction *previous) {
    int index = slot(signal), in_use = atomic_load(&chain_in_use[index]);
    const struct chain *old = &chains[index][in_use];
    if (old->count > 0 && same_handler(&old->actions[0], previous)) return;
    struct chain *next = &chains[index][!in_use];
    int kept = old->count < CHAIN_LIMIT ? old->count : CHAIN_LIMIT - 1;
    next->actions[0] = *previous;
    memcpy(&next->actions[1], old->actions, (size_t)kept * sizeof *previous);
    next->count = kept + 1;
    atomic_store(&chain_in_use[index], !in_use);
}

/* Puts the guard's handler in place for `signal`, unless it is there. Under install_lock. */
static void take(int signal) {
    struct sigaction action = {0}, previous;
    action.sa_sigaction = on_fault;
    /* SA_NODEFER: the jump leaves the handler without sigreturn, and the signal must not stay blocked. */
    action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    if (sigaction(signal, &action, &previous) == 0 && !is_guard(&previous)) push(signal, &previous);
}

void evsync_mdb_guard_install(void) {
    if (atomic_load_explicit(&installed, memory_order_acquire)) return;
    pthread_mutex_lock(&install_lock);
    if (!atomic_load_explicit(&installed, memory_order_relaxed)) {
        take(SIGSEGV);
        take(SIGBUS);
        atomic_store_explicit(&installed, 1, memory_order_release);
    }
    pthread_mutex_unlock(&install_lock);
}

int evsync_mdb_guard_is_installed(void) {
    return atomic_load_explicit(&installed, memory_order_acquire);
}

/* Takes `signal` back if a handler installed since replaced the guard's (one system call when
 * nothing changed). */
static void refresh(int signal) {
    struct sigaction current;
    if (sigaction(signal, NULL, &current) != 0 || is_guard(&current)) return;
    pthread_mutex_lock(&install_lock);
    take(signal);
    pthread_mutex_unlock(&install_lock);
}

int evsync_mdb_txn_begin(MDB_env *env, MDB_txn *parent, unsigned int flags, MDB_txn **txn) {
    if (atomic_load_explicit(&installed, memory_order_acquire)) {
        /* Outside any handler: a depth left over by a handler that jumped out of one is stale. */
        forward_depth = 0;
        refresh(SIGSEGV);
        refresh(SIGBUS);
    }
    return mdb_txn_begin(env, parent, flags, txn);
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
 * success runs `after`. `outer` lets guarded calls nest. Without the signal
 * handlers installed only LMDB's assertions come back here (a fault goes to
 * whatever handles it in this process), at the cost of a sigsetjmp. */
#define GUARDED(call, after, on_fault_do)                  \
    do {                                                   \
        sigjmp_buf target;                                 \
        sigjmp_buf *outer = guard_target;                  \
        if (sigsetjmp(target, 0)) {                        \
            guard_target = outer;                          \
            fault_count++;                                 \
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

int evsync_mdb_cursor_del(MDB_cursor *cursor, unsigned int flags) {
    GUARDED(mdb_cursor_del(cursor, flags), (void)0, (void)0);
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

unsigned evsync_mdb_guard_thread_faults(void) {
    return fault_count;
}

void evsync_mdb_txn_abort(MDB_txn *txn) {
    sigjmp_buf target;
    sigjmp_buf *outer = guard_target;
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
