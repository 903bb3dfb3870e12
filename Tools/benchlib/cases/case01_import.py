"""Tools/bench case 1: import."""

import subprocess
from pathlib import Path

from ..common import fmt_n, log
from ..fixtures import SQLITE_AUDIT_SCHEMA, dataset, sqlite_import_script
from ..measure import run_quiet
from ..table import Row, Series


class ImportCase:
    """Case 1, a mixin of Bench (runner.py): its method reads Bench's state and helpers."""

    # ---- case 1
    def case_import(self):
        n = self.a.import_records
        title = f"1. import {fmt_n(n)} Holiday records"
        log(title)
        data = dataset(self.datadir, n)
        store = self.work / f"log-{n}"
        dump = self.work / "events.dump"
        env_dir = self.work / "mdb-load-env"
        db = self.work / "holiday.sqlite"
        script = self.work / "sqlite-import.sql"
        script.write_text(f""".bail on
.mode list
.separator "\\037" "\\n"
BEGIN;
CREATE TABLE holiday (id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, date TEXT NOT NULL,
  details TEXT, observedBy TEXT, wikipediaLink TEXT, image TEXT, sync_status TEXT NOT NULL);
CREATE TEMP TABLE raw (line TEXT);
.import '{data}' raw
INSERT INTO holiday SELECT json_extract(line, '$.id'), json_extract(line, '$.name'),
  json_extract(line, '$.date'), json_extract(line, '$.details'), json_extract(line, '$.observedBy'),
  json_extract(line, '$.wikipediaLink'), json_extract(line, '$.image'), 'pending' FROM raw;
COMMIT;
""")
        ev = Series("evsync import", f"evsync import Holiday FILE ({fmt_n(n)} lines, fresh store)")
        ml = Series("mdb_load", "mdb_load -s events -f DUMP NEWENV (the events db of an evsync store "
                    "of the same data, from mdb_dump -s events; fresh env)")
        mn = Series("mdb_load, fsync off", "eatmydata mdb_load -s events -f DUMP NEWENV (the same, with "
                    "fsync/fdatasync made no-ops by libeatmydata: the write floor without mdb_load's "
                    "commit every 100 records)")
        sq = Series("sqlite3", "sqlite3 DB <script: BEGIN; .import the JSONL as one text column into a TEMP "
                    "table; INSERT INTO holiday SELECT json_extract(...)..., 'pending'; COMMIT (fresh DB)")
        audit_db = self.work / "holiday-audit.sqlite"
        audit_script = self.work / "sqlite-audit-import.sql"
        audit_script.write_text(sqlite_import_script(SQLITE_AUDIT_SCHEMA, data))
        sa = Series("sqlite3 + audit triggers", "sqlite3 DB <script: WAL; the holiday table and a history(seq, at, "
                    "id, kind, origin, by, data) table indexed on id, filled by AFTER INSERT/UPDATE/DELETE triggers; "
                    "BEGIN; .import into a TEMP table; INSERT INTO holiday SELECT json_extract(...); COMMIT (fresh DB)")

        def run_evsync(r):
            self.fresh(store)
            self.log_stores.pop(n, None)
            self.measure(f"run {r + 1} evsync import", ev, self.ev(store, "import", "Holiday", data),
                         check=lambda s: None if s.stdout.startswith(f"imported {n} ") else "unexpected output")
            self.log_stores[n] = store
            if not dump.exists():
                with open(dump, "wb") as f:
                    subprocess.run(["mdb_dump", "-s", "events", str(store)], stdout=f, check=True)
                self.notes.append(f"mdb_load input: `mdb_dump -s events` of an evsync store of the same "
                                  f"{fmt_n(n)} lines ({dump.stat().st_size / 1048576:.0f} MiB of dump text).")

        def run_mdb_load(r):
            self.fresh(env_dir).mkdir(parents=True)

            def check(s):
                out = run_quiet(["mdb_stat", "-s", "events", env_dir]).stdout.decode()
                return None if f"Entries: {n}\n" in out else f"mdb_stat says {out!r}"
            self.measure(f"run {r + 1} mdb_load", ml, ["mdb_load", "-s", "events", "-f", dump, env_dir],
                         check=check if r == 0 else None)

        def run_mdb_load_nosync(r):
            self.fresh(env_dir).mkdir(parents=True)
            self.measure(f"run {r + 1} eatmydata mdb_load", mn,
                         ["eatmydata", "mdb_load", "-s", "events", "-f", dump, env_dir])

        def run_sqlite(r):
            db.unlink(missing_ok=True)

            def check(s):
                got = run_quiet(["sqlite3", db, "SELECT count(*) FROM holiday WHERE sync_status = 'pending'"]).stdout
                return None if got.decode().strip() == str(n) else f"sqlite3 has {got!r} rows"
            self.measure(f"run {r + 1} sqlite3", sq, ["sqlite3", db], stdin_path=script,
                         check=check if r == 0 else None)

        def run_sqlite_audit(r):
            for f in (audit_db, Path(f"{audit_db}-wal"), Path(f"{audit_db}-shm")):
                f.unlink(missing_ok=True)

            def check(s):
                got = run_quiet(["sqlite3", audit_db, "SELECT count(*) FROM holiday; SELECT count(*) FROM history"]).stdout
                return None if got.decode().split() == [str(n), str(n)] else f"sqlite3 has {got!r} rows"
            self.measure(f"run {r + 1} sqlite3 + audit", sa, ["sqlite3", audit_db], stdin_path=audit_script,
                         check=check if r == 0 else None)

        self.rounds(self.a.runs, [run_evsync, run_mdb_load, run_mdb_load_nosync, run_sqlite, run_sqlite_audit])
        self.rows += [Row(1, title, ev, ml), Row(1, title, ev, mn), Row(1, title, ev, sq), Row(1, title, ev, sa)]
        self.series.update(import_ev=ev, import_mdb=ml, import_mdb_nosync=mn, import_sqlite=sq, import_audit=sa)
        for f in (audit_db, Path(f"{audit_db}-wal"), Path(f"{audit_db}-shm")):
            f.unlink(missing_ok=True)
        self.fresh(env_dir)
        db.unlink(missing_ok=True)
        dump.unlink(missing_ok=True)
