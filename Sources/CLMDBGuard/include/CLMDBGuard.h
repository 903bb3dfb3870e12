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
 * What it cannot do: LMDB copies a page into the heap before changing it,
 * sizing the copy by the page's own header. A write through a page of
 * garbage can so overrun the heap before anything faults, and the process
 * aborts later in free(). Reads copy nothing, and are covered. */

/* Not one of LMDB's codes (they run from -30799 to -30780). */
#define EVSYNC_MDB_FAULT (-30700)

/* Lets LMDB's assertions on `env` return into the guard rather than abort. */
void evsync_mdb_guard_env(MDB_env *env);

int evsync_mdb_get(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data);
int evsync_mdb_cursor_open(MDB_txn *txn, MDB_dbi dbi, MDB_cursor **cursor);
int evsync_mdb_cursor_get(MDB_cursor *cursor, MDB_val *key, MDB_val *data, MDB_cursor_op op);
int evsync_mdb_cursor_put(MDB_cursor *cursor, MDB_val *key, MDB_val *data, unsigned int flags);
int evsync_mdb_del(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data);
int evsync_mdb_drop(MDB_txn *txn, MDB_dbi dbi, int del);
int evsync_mdb_stat(MDB_txn *txn, MDB_dbi dbi, MDB_stat *stat);
int evsync_mdb_dbi_open(MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi);
/* On a fault the transaction is aborted, as a failed commit is. */
int evsync_mdb_txn_commit(MDB_txn *txn);
void evsync_mdb_txn_abort(MDB_txn *txn);

#endif
