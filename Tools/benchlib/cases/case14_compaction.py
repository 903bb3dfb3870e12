"""Tools/bench case 14: log compact of records changed 10 times each: sizes, time, adds beside it, history (issue 27's numbers)."""

import json
import shutil
import statistics
import threading
import time
from pathlib import Path

from ..common import fmt_n, log
from ..fixtures import SQLITE_AUDIT_SCHEMA, dataset, disk_bytes, sqlite_import_script
from ..measure import CommandFailed, run_quiet
from ..table import Row, Series, fmt_mib, fmt_t


class CompactionCase:
    """Case 14, a mixin of Bench (runner.py): its method reads Bench's state and helpers."""

    # ---- case 14
    def case_compaction(self):
        n, changes = self.a.compact_records, 10
        local = max(1, min(1_000, n // 100))
        title = f"14. log compact, {fmt_n(n)} records changed {changes} times each"
        log(title)
        k = self.need_kinto()
        data = dataset(self.datadir, n)
        ids = [json.loads(line)["id"] for line in data.read_text().splitlines()[:n]]
        bucket = f"compact-{int(time.time())}"
        k.seed(bucket, "holidays", data, n)
        remote = f"{k.url}/buckets/{bucket}"
        store = self.fresh(self.work / "compact-store")
        sync = self.ev(store, "sync", "--remote", remote, "--auth-file", k.auth_file, "--json")

        # The store, built untimed: a first pull, then ten rounds that change every record once. Most
        # changes come from another device (straight in PostgreSQL, as in case 8: 1.1 million edits through
        # Kinto's API would take hours at its 70-90 writes a second). In round 5, `local` records are edited
        # here, with `evsync edit`, and pushed, instead of on the server.
        t0 = time.perf_counter()
        run_quiet(sync)
        for round_ in range(1, changes + 1):
            mine = ids[:local] if round_ == 5 else []
            for rid in mine:
                run_quiet(self.ev(store, "edit", "Holiday", rid, f"details=local edit {round_}"))
            if k.edit_all(bucket, "holidays", round_, skip=mine) != n - len(mine):
                raise CommandFailed(f"case 14: edit round {round_} did not change {n - len(mine)} records on the server")
            out = json.loads(run_quiet(sync).stdout)
            if out.get("pulled") != n - len(mine) or out.get("pushed") != len(mine):
                raise CommandFailed(f"case 14: edit round {round_}: sync said {out}")
        before = json.loads(run_quiet(self.ev(store, "status", "--json")).stdout)
        last = before["events"]
        log(f"built a store of {fmt_n(last)} events ({fmt_n(local)} of the changes local) in "
            f"{time.perf_counter() - t0:.0f} s (untimed)")

        rid = ids[n // 2]
        runs = self.a.runs * 5
        history_before = Series("history, before", "evsync history ID (before the compaction)")
        history_after = Series("history, after", "evsync history ID (after it, its archive present)")

        def history(series, at, label):
            def eleven(s):
                entries = sum(line.startswith("#") for line in s.stdout.splitlines())
                return None if entries == changes + 1 else f"{entries} history entries, not {changes + 1}"
            return lambda r: self.measure(f"run {r + 1} history ({label})", series, self.ev(at, "history", rid), check=eleven)

        # Each compaction runs on a copy of the store; the rebuilds on the store itself, interleaved.
        copy = self.work / "compact-copy"
        rebuild = Series("evsync rebuild-views", f"evsync rebuild-views ({fmt_n(last)} events)")
        compact = Series("evsync log compact", f"evsync log compact --before {last} --json (a copy of the store)")
        report = {}

        def run_rebuild(r):
            self.measure(f"run {r + 1} rebuild-views", rebuild, self.ev(store, "rebuild-views"),
                         check=lambda s: None if f"from {last} events" in s.stdout else "unexpected output")

        def run_compact(r):
            self.fresh(copy)
            shutil.copytree(store, copy)

            def check(s):
                report.update(json.loads(s.stdout))
                if report.get("records", 0) < n - 1 or "heldOpenBy" in report.get("dataFile", {"heldOpenBy": None}):
                    return f"compact said {report}"
                return None
            self.measure(f"run {r + 1} log compact", compact, self.ev(copy, "log", "compact", "--before", last, "--json"),
                         check=check)

        self.rounds(self.a.runs, [run_rebuild, run_compact])
        # Before (the store) and after (the last compacted copy), interleaved.
        self.rounds(runs, [history(history_before, store, "before"), history(history_after, copy, "after")])
        self.rows += [Row(14, f"{title}: compaction vs rebuild-views", compact, rebuild),
                      Row(14, f"{title}: history of one record, after vs before", history_after, history_before)]

        # Local adds while one more compaction runs (not timed: the adds share the 2 cores with it).
        failed = []

        def add_walls(at, count=None, until=None, pause=0.02):
            walls = []
            while (count is not None and len(walls) < count) or (until is not None and not until.is_set()):
                t = time.perf_counter()
                r = run_quiet(self.ev(at, "add", "Holiday", "name=Added meanwhile", "date=2026-12-03"), check=False)
                walls.append(time.perf_counter() - t)
                if r.returncode != 0:
                    failed.append(r.stderr.decode(errors="replace").strip())
                time.sleep(pause)
            return walls
        busy = self.fresh(self.work / "compact-busy")
        shutil.copytree(store, busy)
        idle = add_walls(busy, count=30)
        done, during = threading.Event(), []
        adder = threading.Thread(target=lambda: during.extend(add_walls(busy, until=done)))
        adder.start()
        try:
            out = json.loads(run_quiet(self.ev(busy, "log", "compact", "--before", last, "--json")).stdout)
        finally:
            done.set()
            adder.join()
        typical = statistics.median(idle)
        during = during or [0.0]
        wait = max(during) - typical
        log(f"  {len(during)} adds during a compaction: slowest {fmt_t(max(during))}, an add alone "
            f"{fmt_t(typical)} (median of {len(idle)}); the data file {'was left as it was' if 'heldOpenBy' in out.get('dataFile', {}) else 'shrank'}")

        # The sizes: a store that imported the same records (as they are now) once, and SQLite with an audit
        # table holding the same history.
        once = self.fresh(self.work / "compact-once")
        run_quiet(self.ev(once, "import", "Holiday", "-"), stdin_bytes=run_quiet(self.ev(store, "list", "Holiday", "--json")).stdout)
        audit = self.work / "compact-audit.sqlite"
        audit.unlink(missing_ok=True)
        script = self.work / "compact.sql"
        script.write_text(sqlite_import_script(SQLITE_AUDIT_SCHEMA, data))
        with open(script, "rb") as f:
            run_quiet(["sqlite3", audit], stdin_bytes=f.read())
        edits = "".join(f"BEGIN; UPDATE holiday SET details = 'edit {r}: ' || details; COMMIT;\n" for r in range(1, changes + 1))
        run_quiet(["sqlite3", audit], stdin_bytes=(edits + "PRAGMA wal_checkpoint(TRUNCATE);\n").encode())
        compacted_file = disk_bytes(copy / "data.mdb")[0]
        once_file = disk_bytes(once / "data.mdb")[0]
        archive = disk_bytes(copy / "archive")[0]
        archived_live = before["liveBytes"] * report["archivedEvents"] / before["liveEvents"]
        wal = Path(str(audit) + "-wal")
        whole, peer = disk_bytes(copy)[0], disk_bytes(audit)[0] + (disk_bytes(wal)[0] if wal.exists() else 0)
        for what, path, records in (("evsync store before `log compact`", store, n),
                                    ("evsync store after `log compact` (data file, lock file, archive/)", copy, n),
                                    ("  of which archive/", copy / "archive", n),
                                    ("evsync store that imported the same records, as they are now, once", once, n),
                                    (f"SQLite with audit triggers after {changes} edits of every record", audit, n)):
            on_disk, apparent = disk_bytes(path)
            self.footprint.append((what, records, on_disk, apparent))

        def add(name, ok, detail):
            self.more_targets.append((name, "PASS" if ok else "FAIL", detail))
        add("compacted data file ≤ 1.3× a store that imported the records once", compacted_file <= 1.3 * once_file,
            f"{fmt_mib(compacted_file)} vs {fmt_mib(once_file)} ({compacted_file / once_file:.2f}×)")
        add("archive ≤ 1/3 of the bytes its events took in the live log", archive <= archived_live / 3,
            f"{fmt_mib(archive)} vs {fmt_mib(archived_live)} ({archive / archived_live:.2f}×)")
        add("compaction no slower than rebuild-views of the same log", compact.wall <= rebuild.wall,
            f"{fmt_t(compact.wall)} vs {fmt_t(rebuild.wall)} ({compact.wall / rebuild.wall:.2f}×)")
        add("no local add waits > 100 ms behind a compaction (nor fails)", wait <= 0.1 and not failed,
            f"slowest of {len(during)} adds {fmt_t(max(during))}, {fmt_t(wait)} more than an add alone ({fmt_t(typical)})"
            + (f"; {len(failed)} failed: {failed[0]}" if failed else ""))
        add("history with the archive present ≤ 2× before the compaction", history_after.wall <= 2 * history_before.wall,
            f"{fmt_t(history_after.wall)} vs {fmt_t(history_before.wall)} ({history_after.wall / history_before.wall:.2f}×)")
        add("compacted store and archive in fewer bytes than SQLite with an audit table", whole < peer,
            f"{fmt_mib(whole)} vs {fmt_mib(peer)} ({whole / peer:.2f}×)")
        self.notes.append(f"compaction (case 14): {fmt_n(n)} records, {fmt_n(last)} events: a first pull, then {changes} "
                          f"rounds each changing every record once; {fmt_n(local)} changes of round 5 made here with "
                          f"`evsync edit` and pushed, the rest made in Kinto's PostgreSQL and pulled. `--before {last}`: "
                          f"every event but the last moves. The archive's share of the live log is the events tree's "
                          f"bytes before (`status --json` liveBytes) × archived/live events. SQLite's audit table keeps "
                          f"a whole row per change, evsync's log the fields that changed.")
        for path in (store, copy, busy, once):
            self.fresh(path)
        for f in (audit, script):
            f.unlink(missing_ok=True)
