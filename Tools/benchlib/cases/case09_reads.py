"""Tools/bench case 9: reads: list all records, history of one record, against the SQLite-with-audit peer."""

from ..common import fmt_n
from ..fixtures import dataset, nth_id
from ..table import Row, Series


class ReadsCase:
    """Case 9, a mixin of Bench (runner.py): its method reads Bench's state and helpers."""

    # ---- case 9
    def case_reads(self):
        if not self.edited:
            self.case_footprint()
        store, audit = self.edited
        n = self.a.footprint_records
        rid = nth_id(dataset(self.datadir, n), n // 2)
        assert all(c in "0123456789abcdef-" for c in rid)   # a UUID of our own data set, safe in SQL text
        runs = self.a.runs * 5
        title = f"9. list all {fmt_n(n)} records as JSON, each edited 3 times"
        ev = Series("evsync list --json", "evsync list Holiday --json > /dev/null")
        sq = Series("sqlite3 + audit: SELECT all", "sqlite3 -json DB 'SELECT * FROM holiday ORDER BY id' > /dev/null")
        self.rounds(self.a.runs, [
            lambda r: self.measure(f"run {r + 1} evsync list", ev, ["bash", "-c", 'exec "$@" >/dev/null', "list",
                                                                   *map(str, self.ev(store, "list", "Holiday", "--json"))]),
            lambda r: self.measure(f"run {r + 1} sqlite3 select", sq, ["bash", "-c", 'exec "$@" >/dev/null', "select",
                                                                      "sqlite3", "-json", str(audit),
                                                                      "SELECT * FROM holiday ORDER BY id"]),
        ])
        self.rows.append(Row(9, title, ev, sq))
        title = f"9. history of one record (4 events) among {fmt_n(n)} records"
        eh = Series("evsync history", "evsync history ID")
        sh = Series("sqlite3 + audit: history", "sqlite3 DB \"SELECT * FROM history WHERE id = 'ID' ORDER BY seq\"")

        def four(s):
            return None if s.stdout.count("\n") >= 4 else "fewer than 4 history lines"
        self.rounds(runs, [
            lambda r: self.measure(f"run {r + 1} evsync history", eh, self.ev(store, "history", rid), check=four),
            lambda r: self.measure(f"run {r + 1} sqlite3 history", sh,
                                   ["sqlite3", audit, f"SELECT * FROM history WHERE id = '{rid}' ORDER BY seq"],
                                   check=four),
        ])
        self.rows.append(Row(9, title, eh, sh))
        self.series.update(list_ev=ev, list_audit=sq, history_ev=eh, history_audit=sh)
