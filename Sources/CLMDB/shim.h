#ifndef EVSYNC_CLMDB_SHIM_H
#define EVSYNC_CLMDB_SHIM_H
#include <lmdb.h>
#endif
