#ifndef EVSYNC_CLMDB_GUARD_H
#define EVSYNC_CLMDB_GUARD_H

#include <lmdb.h>

/* LMDB calls that survive a damaged data file.
 *
 * LMDB trusts the pages of its map: a page overwritten with garbage can send
 * it to an address outside the map (SIGSEGV), past the end of the file
 * (SIGBUS), or into one of its assertions (abort). Each evsync_mdb_* function
 * makes the LMDB call of the same name under a guard, and returns
 * EVSYNC_MDB_FAULT instead when one of those happens during it. Calls that
 * hand back a key or a value also touch its first and last byte under the
 * guard, so the caller can read it. The guard is per thread; outside it, the
 * signals go to whichever handlers were there before.
 *
 * The SIGSEGV and SIGBUS handlers are process-wide, so they are installed only
 * when asked (evsync_mdb_guard_install); until then a fault in a guarded call
 * goes wherever it would without evsync, and only LMDB's assertions are turned
 * into EVSYNC_MDB_FAULT. Installed, the guard forwards a fault outside guarded
 * calls to the handler that was in place before it, as the kernel would have
 * called that handler (SA_SIGINFO or not, its mask; SIG_DFL and a real fault
 * under SIG_IGN take the default action), and it never gives the signals up.
 * A handler installed later replaces it until the next evsync_mdb_txn_begin,
 * which puts the guard back in front and forwards to that handler from then on
 * (the cost is one sigaction query per signal and transaction).
 *
 * What it cannot do: LMDB copies a page into the heap before changing it,
 * sizing the copy by the page's own header. A write through a page of
 * garbage can so overrun the heap before anything faults, and the process
 * aborts later in free(). Reads copy nothing, and are covered. */

/* Not one of LMDB's codes (they run from -30799 to -30780). */
#define EVSYNC_MDB_FAULT (-30700)

/* Lets LMDB's assertions on `env` return into the guard rather than abort. */
void evsync_mdb_guard_env(MDB_env *env);

/* Installs the SIGSEGV and SIGBUS handlers, once per process; later calls cost an atomic load. */
void evsync_mdb_guard_install(void);
int evsync_mdb_guard_is_installed(void);

/* mdb_txn_begin, after putting the guard's handlers back in front of any installed since (when it is installed). */
int evsync_mdb_txn_begin(MDB_env *env, MDB_txn *parent, unsigned int flags, MDB_txn **txn);

int evsync_mdb_get(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data);
int evsync_mdb_cursor_open(MDB_txn *txn, MDB_dbi dbi, MDB_cursor **cursor);
int evsync_mdb_cursor_get(MDB_cursor *cursor, MDB_val *key, MDB_val *data, MDB_cursor_op op);
int evsync_mdb_cursor_put(MDB_cursor *cursor, MDB_val *key, MDB_val *data, unsigned int flags);
int evsync_mdb_cursor_del(MDB_cursor *cursor, unsigned int flags);
int evsync_mdb_del(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data);
int evsync_mdb_drop(MDB_txn *txn, MDB_dbi dbi, int del);
int evsync_mdb_stat(MDB_txn *txn, MDB_dbi dbi, MDB_stat *stat);
int evsync_mdb_dbi_open(MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi);
/* How many guarded calls of the calling thread ended in EVSYNC_MDB_FAULT so far. A fault inside a
 * write call leaves LMDB's state for that environment unknown: the caller stops writing to it. */
unsigned evsync_mdb_guard_thread_faults(void);
/* On a fault the transaction is aborted, as a failed commit is. */
int evsync_mdb_txn_commit(MDB_txn *txn);
void evsync_mdb_txn_abort(MDB_txn *txn);

#endif
