"""Paths, sizes, case titles and the notes printed with every table: what every part of the bench shares."""

import sys
from pathlib import Path


REPO = Path(__file__).resolve().parent.parent.parent
VENV_PY = REPO / ".tools" / "venv" / "bin" / "python"
EVSYNC = REPO / ".build" / "release" / "evsync"
# Case 12's program: evsync's library and SQLite's C API doing the same work (its own package, built by Tools/bench).
LIBRARY_BENCH = REPO / "Tools" / "LibraryBench" / ".build" / "release" / "LibraryBench"
KINTO = REPO / "Tools" / "kinto"
KINTO_HTTP_CLIENT = REPO / "Tools" / "benchlib" / "kinto_http_client.py"
GNU_TIME = "/usr/bin/time"
PAGE_SIZE = 1000           # evsync's pull page: _limit=1000&_sort=last_modified
DATASET_VERSION = "v1"     # bump when the generator changes (invalidates cached files)

# Kinto on PostgreSQL accepts ~70-90 creates/s on the 2-core machine (server-bound, for
# any client): the 10,000 pushes are ~2 min per run and side, most of a full run's
# ~20 minutes (--push-records 2000 for a shorter one).
# The 1M-record pull is ~1 min per run; peak RSS barely moves between runs: 1 run.
DEFAULTS = dict(runs=3, import_records=1_000_000, pull_records=100_000, push_records=10_000,
                history_small=1_000, history_large=None, rebuild_events=None,
                memory_records=1_000_000, memory_runs=1, footprint_records=100_000,
                compact_records=100_000)
QUICK = dict(runs=3, import_records=20_000, pull_records=5_000, push_records=100,
             history_small=1_000, history_large=None, rebuild_events=None,
             memory_records=20_000, memory_runs=None, footprint_records=5_000,
             compact_records=2_000)

METHOD_NOTES = [
    "Every case runs its contenders interleaved, every other round in reverse (A B C, C B A, …), so drift "
    "on this shared machine hits them alike and none always runs first; the load average at start and end "
    "is above. Before each timed command, `sync` writes dirty pages back (so no command pays for the "
    "previous one's writeback through its own fsync); the page cache stays warm (nothing is dropped).",
    "CPU: user+sys from wait4's rusage of the command (including the children it waited for). Peak RSS: "
    "GNU time's `%M` (ru_maxrss taken in a ~1 MiB forked parent: our own wait4 would report at least this "
    "Python driver's RSS, which Linux carries across exec). RSS includes the pages of LMDB's memory map "
    "a process touched (file-backed page cache, not its own allocations): for evsync's pulls the driver "
    "also samples /proc RssAnon every 25 ms (\"anon.\"), its own memory.",
    "mdb_load (LMDB 0.9.24) commits every 100 records, an fdatasync each (10,000 for 1M records), so on "
    "a busy disk it measures fsync latency more than LMDB; the `eatmydata` rows make those fsyncs no-ops "
    "(LD_PRELOAD) and are the write floor; the targets use plain mdb_load as specified and show the "
    "other as informative. evsync imports and rebuilds in one transaction (one sync). Its input is `mdb_dump`'s default hex format: 0.9.24's `-p` prints the "
    "key byte 0x5c (a backslash) unescaped and mdb_load then stops at \"unexpected end of input\".",
    "sqlite3 runs with its defaults (rollback journal, synchronous=FULL); the whole script is one "
    "transaction and the table has `id TEXT PRIMARY KEY` and a `sync_status` column set to 'pending'.",
    "Kinto 26.5 runs on PostgreSQL (Tools/kinto start --postgres, fsync off) on the same 2 cores as the "
    "client, so pull and push wall times are mostly the server's. Pull fixtures are written straight "
    "into Kinto's `objects` table (COPY into a temp table, then one INSERT with the bump_timestamp "
    "trigger disabled inside the transaction), one millisecond apart so `_sort=last_modified` paging "
    "is exact, after creating the bucket and collections through the HTTP API; each fixture is then "
    "checked through Kinto (HEAD Total-Records, a 2-record page and its Next-Page).",
    "The curl floor starts one curl per page (a new process and TCP connection each time); evsync and "
    "kinto-http keep one connection. evsync's first pull also lists the (empty) birthdays collection, "
    "so the curl loop and kinto-http fetch it too.",
]

CASE_TITLES = {
    1: "import",
    2: "rebuild views",
    3: "first pull",
    4: "push creates",
    5: "sync, nothing to do",
    6: "history of one record",
    7: "peak memory of a first pull",
    8: "bytes on disk per record",
    9: "reads: list all records, history of one record, against the SQLite-with-audit peer",
    10: "many devices: 20 stores syncing one bucket at once",
    11: "propagation between two stores on sync --watch 1, edits at random phases",
    12: "peak memory of a first pull of large records (1,000 of 200 KB: one page of some 200 MB)",
    13: "the library an app embeds, against SQLite's C API (issue 24's numbers)",
    14: "log compact of records changed 10 times each: sizes, time, adds beside it, history (issue 27's numbers)",
    15: "end-to-end encrypted sync: a first pull and a push sealed, against the same in clear (issue 53's numbers)",
    16: "a store scoped to a tenth of a collection: its first pull's bytes and time, and its next sync, against a whole store's (issue 52's)",
}


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def die(msg):
    log(f"error: {msg}")
    sys.exit(1)


def fmt_n(n):
    return f"{n:,}"
