"""Tools/bench case 8: bytes on disk per record."""

import json
import shutil

from ..common import fmt_n, log
from ..fixtures import SQLITE_AUDIT_SCHEMA, SQLITE_PLAIN_SCHEMA, dataset, disk_bytes, lmdb_free_bytes, sqlite_import_script
from ..measure import CommandFailed, run_quiet
from ..table import fmt_mib


class FootprintCase:
    """Case 8, a mixin of Bench (runner.py): its method reads Bench's state and helpers."""

    # ---- case 8
    def case_footprint(self):
        n = self.a.footprint_records
        log(f"8. bytes on disk for {fmt_n(n)} Holiday records, then after 3 edits of each")
        data = dataset(self.datadir, n)
        store = self.fresh(self.work / "footprint-import")
        audit, plain = self.work / "footprint-audit.sqlite", self.work / "footprint-plain.sqlite"
        for db in (audit, plain):
            db.unlink(missing_ok=True)

        def note(what, path):
            on_disk, apparent = disk_bytes(path)
            free = lmdb_free_bytes(path)
            if free:
                what += f" (of which LMDB's free pages: {free / n:,.0f} B a record)"
            self.footprint.append((what, n, on_disk, apparent))
            log(f"  {what}: {fmt_mib(on_disk)} on disk, {on_disk / n:,.0f} B a record")

        note("the JSON Lines input", data)
        run_quiet(self.ev(store, "import", "Holiday", data))
        note("evsync store after `import` (log + views)", store)
        for db, schema in ((audit, SQLITE_AUDIT_SCHEMA), (plain, SQLITE_PLAIN_SCHEMA)):
            script = self.work / "footprint.sql"
            script.write_text(sqlite_import_script(schema, data))
            with open(script, "rb") as f:
                run_quiet(["sqlite3", db], stdin_bytes=f.read())
        note("SQLite with audit triggers (WAL, checkpointed)", audit)
        note("plain SQLite table", plain)
        shutil.rmtree(store, ignore_errors=True)

        # The edits come from another device through the server: the CLI edits one record per
        # process, and 3 × 100,000 processes would take most of an hour. A pulled edit is an
        # `updated` event with the fields that changed and the server's version, as a local one is.
        k = self.need_kinto()
        k.seed("footprint", "holidays", data, n)
        remote = f"{k.url}/buckets/footprint"
        pulled = self.fresh(self.work / "footprint-pulled")
        sync = self.ev(pulled, "sync", "--remote", remote, "--auth-file", k.auth_file, "--json")
        run_quiet(sync)
        note("evsync store after a first pull of the same records", pulled)
        for round_ in (1, 2, 3):
            if k.edit_all("footprint", "holidays", round_) != n:
                raise CommandFailed(f"edit round {round_} did not change {n} records on the server")
            out = json.loads(run_quiet(sync).stdout)
            if out.get("pulled") != n:
                raise CommandFailed(f"edit round {round_}: sync said {out}")
        note("evsync store after 3 edits of every record (pulled)", pulled)
        edits = "".join(f"BEGIN; UPDATE holiday SET details = 'edit {r}: ' || details; COMMIT;\n" for r in (1, 2, 3))
        run_quiet(["sqlite3", audit], stdin_bytes=(edits + "PRAGMA wal_checkpoint(TRUNCATE);\n").encode())
        note("SQLite with audit triggers after 3 edits of every record", audit)
        plain.unlink(missing_ok=True)
        self.edited = (pulled, audit)
