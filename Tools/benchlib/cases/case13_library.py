"""Tools/bench case 13: the library an app embeds, against SQLite's C API (issue 24's numbers)."""

import json
import os
import shutil
import statistics

from ..common import LIBRARY_BENCH, REPO, fmt_n, log
from ..measure import CommandFailed, run_quiet


class LibraryCase:
    """Case 13, a mixin of Bench (runner.py): its method reads Bench's state and helpers."""

    # ---- case 13
    def case_library(self):
        """Issue 24's numbers: Tools/LibraryBench runs each measurement in a process of its own, evsync's
        library (Store, write, observe) or SQLite's C API (WAL, a table per entity, a history table filled by
        triggers), interleaved; each prints what it measured as JSON."""
        log("12. the library an app embeds, against SQLite's C API")
        if not LIBRARY_BENCH.exists():
            raise CommandFailed(f"{LIBRARY_BENCH} missing: run Tools/bench (it builds it)")
        quick = self.a.quick
        root = self.fresh(self.work / "library")
        count = [0]

        def run(side, case, *extra):
            count[0] += 1
            where = root / f"{side}-{case}-{count[0]}"
            os.sync()      # no run pays for the previous one's writeback
            out = run_quiet([str(LIBRARY_BENCH), side, case, str(where), *map(str, extra)]).stdout.decode()
            shutil.rmtree(where, ignore_errors=True)
            return json.loads(out)

        def pair(case, key, *extra, sides=("evsync", "sqlite"), runs=None):
            """The median of `key` over the runs of each side, interleaved; and every result."""
            results = {side: [] for side in sides}

            def one(side):
                def go(r):
                    result = run(side, case, *extra)
                    results[side].append(result)
                    log(f"  run {r + 1} {side} {case} {' '.join(map(str, extra))}: "
                        + ", ".join(f"{k} {v:.6g}" if isinstance(v, float) else f"{k} {v}" for k, v in result.items()))
                return go
            self.rounds(runs or self.a.runs, [one(side) for side in sides])
            return [statistics.median(r[key] for r in results[side]) for side in sides], results

        def add(what, ours, peer, unit, target, ok):
            self.library.append((what, ours, peer, unit, target, "PASS" if ok else ("FAIL" if ok is not None else "—")))

        n = 1_000 if quick else 10_000
        # The floor under a durable single write is LMDB's commit without LMDB: the bytes a record add writes,
        # flushed, then a meta page written and flushed (Tools/flush-floor), measured in the same rounds.
        probe = run("evsync", "single", "--n", 1_000)
        page_bytes = max(4096, int(probe["bytes_per_write"]) - 4096)
        floor_results, scattered_results = [], []

        def floor_of(pattern, into):
            def go(r):
                where = self.fresh(self.work / "flush-floor")
                os.sync()
                out = run_quiet([str(REPO / "Tools" / "flush-floor"), str(where), "--n", str(n), "--pattern", pattern,
                                 "--pages-bytes", str(page_bytes), "--json"]).stdout.decode()
                shutil.rmtree(where, ignore_errors=True)
                into.append(json.loads(out))
                log(f"  run {r + 1} floor ({pattern}) single --n {n}: seconds {into[-1]['seconds']:.6g}")
            return go
        results = {"evsync": [], "sqlite": []}

        def side(name):
            def go(r):
                results[name].append(run(name, "single", "--n", n))
                log(f"  run {r + 1} {name} single --n {n}: seconds {results[name][-1]['seconds']:.6g}")
            return go
        self.rounds(self.a.runs, [floor_of("lmdb", floor_results), floor_of("scattered", scattered_results),
                                  side("evsync"), side("sqlite")])
        ev = statistics.median(r["seconds"] for r in results["evsync"])
        sq = statistics.median(r["seconds"] for r in results["sqlite"])
        fl = statistics.median(r["seconds"] for r in floor_results)
        written = statistics.median(r["bytes_per_write"] for r in results["evsync"])
        add(f"{fmt_n(n)} single-record writes, each its own transaction (durability .full), against the floor of two "
            f"ordered flushes of the same bytes ({written / 1024:.0f} KiB a write; SQLite synchronous=FULL beside: "
            f"{sq:.2f} s)", ev, fl, "s", "≤ 1.2× the floor", ev <= 1.2 * fl)
        scattered = statistics.median(r["seconds"] for r in scattered_results)
        add(f"(informative) the same against the same bytes as 4 KiB pages at scattered places, as LMDB's trees write "
            f"them (Tools/flush-floor --pattern scattered)", ev, scattered, "s", "", None)
        (ev, sq), _ = pair("single", "seconds", "--n", n, "--durability", "normal")
        add(f"(informative) the same with durability .normal / synchronous=NORMAL", ev, sq, "s", "", None)
        m = 1_600
        (seq,), _ = pair("sequential", "seconds", "--n", m, sides=("evsync",))
        (thr,), _ = pair("threads", "seconds", "--n", m, sides=("evsync",))
        add(f"{fmt_n(m)} synchronous single adds from 16 threads through two Stores on one directory, against the same "
            f"one after another ({seq:.2f} s)", thr, None, "s", f"≤ {seq / 5:.2f} s (5× faster)", thr <= seq / 5)
        (ev, sq), _ = pair("batch", "seconds", "--n", n)
        add(f"{fmt_n(n)} records in one transaction", ev, sq, "s", "at least the peer's records/s", ev <= sq)
        (ev, sq), res = pair("concurrent", "seconds", "--n", m)
        (hev, hsq) = [statistics.median(r["heartbeat_worst_wait"] for r in res[side]) for side in ("evsync", "sqlite")]
        add(f"{fmt_n(m)} single adds from 16 concurrent tasks (async write; SQLite: one connection on a serial queue)",
            ev, sq, "s", f"≤ {seq / 5:.2f} s (5× faster than one after another)", ev <= seq / 5)
        add("worst wait of a 10 ms heartbeat task on the pool meanwhile", hev, hsq, "s", "≤ 50 ms", hev <= 0.050)
        (ev, sq), _ = pair("readid", "per_read", "--n", n)
        add(f"read one record by id (10,000 random reads among {fmt_n(n)}, each a read transaction)", ev, sq, "s",
            "no slower than the peer", ev <= sq)
        (ev, sq), _ = pair("read100", "per_read", "--n", n)
        add(f"a `read` of 100 records by id from one snapshot (1,000 of them; SQLite: BEGIN … COMMIT)", ev, sq, "s",
            "no slower than the peer", ev <= sq)
        commits = 100 if quick else 200
        (ev, sq), res = pair("observe", "median", "--n", commits)
        (pev, psq) = [statistics.median(r["p99"] for r in res[side]) for side in ("evsync", "sqlite")]
        add(f"in-process commit → observer, median over {commits} commits (SQLite: sqlite3_commit_hook → callback)",
            ev, sq, "s", "≤ 1 ms", ev <= 0.001)
        add("in-process commit → observer, 99th percentile", pev, psq, "s", "≤ 5 ms", pev <= 0.005)
        (ev,), res = pair("crossprocess", "median", "--n", 100, sides=("evsync",))
        pxp = statistics.median(r["p99"] for r in res["evsync"])
        add("another process's commit → observer, median over 100 commits (p99 "
            f"{pxp * 1000:.1f} ms; SQLite has no cross-process notification: an app polls)", ev, None, "s", "≤ 20 ms",
            ev <= 0.020)
        idle = 10 if quick else 60
        (ev,), _ = pair("idle", "cpu", "--seconds", idle, sides=("evsync",), runs=1)
        add(f"CPU of an observing app left idle for {idle} s", ev, None, "s",
            "< 0.1 s over 60 s" + (" (quick: a shorter run)" if quick else ""), ev < 0.1 * idle / 60)
        # Issue 51: queries on an indexed date, against SQLite with an index on the same column.
        q = 10_000 if quick else 100_000
        (ev, sq), _ = pair("query", "per_query", "--n", q)
        add(f"100 records of {fmt_n(q)} by an indexed date range, ordered by date, decoded (SQLite: SELECT … WHERE date "
            "BETWEEN … ORDER BY date LIMIT 100, an index on date)", ev, sq, "s", "no slower than the peer", ev <= sq)
        (ev, sq), _ = pair("count", "per_query", "--n", q)
        add(f"a count over an indexed date range (a month, of {fmt_n(q)})", ev, sq, "s", "no slower than the peer", ev <= sq)
        (upd,), res = pair("observequery", "update_after_commit_median", sides=("evsync",))
        wakes = max(r["wakes_for_unrelated"] for r in res["evsync"])
        run_once = statistics.median(r["query_seconds"] for r in res["evsync"])
        whole = statistics.median(r["update_median"] for r in res["evsync"])
        add(f"an observed query of 10 records while 1,000 unrelated records are added one by one: wakes {wakes} "
            "time(s); then each add that changes its result: what its update costs once the add has returned (the wake "
            f"and the observer's work; from the add's call: {whole * 1000:.2f} ms), against the query run alone "
            f"({run_once * 1000:.2f} ms)", upd, None, "s", "wakes ≤ 1, and an update costs less than the query",
            wakes <= 1 and upd < run_once)
        (add_index,), res = pair("addindex", "seconds", "--n", q, sides=("evsync",))
        rebuild = statistics.median(r["rebuild_seconds"] for r in res["evsync"])
        add(f"adding an index (on open) to a store of {fmt_n(q)} records, against rebuild-views of it ({rebuild:.2f} s)",
            add_index, None, "s", "no slower than rebuild-views", add_index <= rebuild)
        self.notes.append("library (case 13): Tools/LibraryBench (its own Swift package, built release) runs each "
                          "measurement as a process of its own, interleaved with its peer, and reports the time it "
                          "measured itself (CLOCK_MONOTONIC), opening the store or database outside it. Records are "
                          "the app's typed Holiday (id, name, date as a Date, details); the SQLite side binds and "
                          "reads the same fields as columns and parses the date the same way. SQLite runs in WAL "
                          "mode with a history table filled by AFTER INSERT/UPDATE/DELETE triggers. Observer "
                          "latency is from the write call returning to the observer task seeing the record "
                          "(0 when it saw it before the call returned); the other process's commit time is the "
                          "writer's own clock reading after its add returned (CLOCK_MONOTONIC is one for all "
                          "processes). Medians over the runs.")
        shutil.rmtree(root, ignore_errors=True)
