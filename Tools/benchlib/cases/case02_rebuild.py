"""Tools/bench case 2: rebuild views."""

from ..common import fmt_n, log
from ..table import Row, Series


class RebuildCase:
    """Case 2, a mixin of Bench (runner.py): its method reads Bench's state and helpers."""

    # ---- case 2
    def case_rebuild(self):
        n = self.a.rebuild_events
        title = f"2. rebuild views from a {fmt_n(n)}-event log"
        log(title)
        store = self.import_store(n)
        env_dir = self.work / "dump-load-env"
        ev = Series("evsync rebuild-views", "evsync rebuild-views")
        dl = Series("mdb_dump | mdb_load", "mdb_dump -s events STORE | mdb_load -s events NEWENV (fresh env)")
        dn = Series("mdb_dump | mdb_load, fsync off", "mdb_dump -s events STORE | eatmydata mdb_load -s events "
                    "NEWENV (fsync/fdatasync no-ops)")

        def run_evsync(r):
            self.measure(f"run {r + 1} evsync rebuild-views", ev, self.ev(store, "rebuild-views"),
                         check=lambda s: None if f"from {n} events" in s.stdout else "unexpected output")

        def run_dump_load(r):
            self.fresh(env_dir).mkdir(parents=True)
            self.measure(f"run {r + 1} mdb_dump | mdb_load", dl,
                         [["mdb_dump", "-s", "events", store], ["mdb_load", "-s", "events", env_dir]])

        def run_dump_load_nosync(r):
            self.fresh(env_dir).mkdir(parents=True)
            self.measure(f"run {r + 1} mdb_dump | eatmydata mdb_load", dn,
                         [["mdb_dump", "-s", "events", store], ["eatmydata", "mdb_load", "-s", "events", env_dir]])

        self.rounds(self.a.runs, [run_evsync, run_dump_load, run_dump_load_nosync])
        self.rows += [Row(2, title, ev, dl), Row(2, title, ev, dn)]
        self.series.update(rebuild_ev=ev, rebuild_dl=dl, rebuild_dl_nosync=dn)
        self.fresh(env_dir)
