"""Tools/bench case 7: peak memory of a first pull."""

from ..common import fmt_n, log
from ..fixtures import dataset
from ..table import Row, Series


class MemoryCase:
    """Case 7, a mixin of Bench (runner.py): its method reads Bench's state and helpers."""

    # ---- case 7
    def case_memory(self):
        big, small = self.a.memory_records, self.a.pull_records
        title = f"7. peak memory of a first pull, {fmt_n(big)} vs {fmt_n(small)} records"
        log(title)
        k = self.need_kinto()
        small_series = self.series.get("pull_ev")
        if small_series is None:
            small_series = Series(f"evsync sync ({fmt_n(small)})", "evsync sync (first pull)")
        else:
            self.notes.append(f"case 7's {fmt_n(small)}-record side is case 3's evsync runs.")
        k.seed("bench-big", "holidays", dataset(self.datadir, big), big)
        remote_big = f"{k.url}/buckets/bench-big"
        store = self.work / "pull-big-store"
        ev = Series(f"evsync sync ({fmt_n(big)})", f"evsync sync --remote {remote_big} (empty store)")

        def run(series, remote, n, r, label):
            self.measure_first_pull(f"run {r + 1} {label}", series, store, remote, n, k)

        contenders = [lambda r: run(ev, remote_big, big, r, f"evsync sync ({fmt_n(big)})")]
        if not small_series.samples:
            data = dataset(self.datadir, small)
            k.seed("bench", "holidays", data, small)
            contenders.append(lambda r: run(small_series, f"{k.url}/buckets/bench", small, r,
                                            f"evsync sync ({fmt_n(small)})"))
        self.rounds(self.a.memory_runs, contenders)
        self.rows.append(Row(7, title, ev, small_series, by="rss"))
        self.series.update(memory_big=ev, memory_small=small_series)
        self.fresh(store)
