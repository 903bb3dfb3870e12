"""Tools/bench case 6: history of one record."""

from ..common import fmt_n, log
from ..fixtures import dataset, nth_id
from ..table import Row, Series


class HistoryCase:
    """Case 6, a mixin of Bench (runner.py): its method reads Bench's state and helpers."""

    # ---- case 6
    def case_history(self):
        small, large = self.a.history_small, self.a.history_large
        title = f"6. history of one record, {fmt_n(large)}-event log vs {fmt_n(small)}-event log"
        log(title)
        big_store = self.import_store(large)
        small_store = self.import_store(small)
        rid = nth_id(dataset(self.datadir, small), small // 2)
        runs = self.a.runs * 5
        big = Series(f"history, {fmt_n(large)} events", f"evsync history ID ({fmt_n(large)}-event log)")
        little = Series(f"history, {fmt_n(small)} events", f"evsync history ID ({fmt_n(small)}-event log)")

        def ok(s):
            return None if rid in s.stdout or "created" in s.stdout else "no history printed"
        self.rounds(runs, [
            lambda r: self.measure(f"run {r + 1} history ({fmt_n(large)})", big, self.ev(big_store, "history", rid), check=ok),
            lambda r: self.measure(f"run {r + 1} history ({fmt_n(small)})", little, self.ev(small_store, "history", rid), check=ok),
        ])
        self.notes.append(f"history: record #{small // 2 + 1} of the file (in both logs), {runs} runs each "
                          f"(sub-second commands get 5× --runs).")
        self.rows.append(Row(6, title, big, little))
        self.series.update(history_large=big, history_small=little)

        # The foundation issue's benchmark also tails the log: the same two logs.
        tail_title = f"6. log tail -n 10, {fmt_n(large)}-event log vs {fmt_n(small)}-event log"
        tail_big = Series(f"log tail, {fmt_n(large)} events", f"evsync log tail -n 10 ({fmt_n(large)}-event log)")
        tail_little = Series(f"log tail, {fmt_n(small)} events", f"evsync log tail -n 10 ({fmt_n(small)}-event log)")

        def tailed(s):
            return None if s.stdout.count("\n") == 10 else "log tail did not print 10 events"
        self.rounds(runs, [
            lambda r: self.measure(f"run {r + 1} log tail ({fmt_n(large)})", tail_big,
                                   self.ev(big_store, "log", "tail", "-n", "10"), check=tailed),
            lambda r: self.measure(f"run {r + 1} log tail ({fmt_n(small)})", tail_little,
                                   self.ev(small_store, "log", "tail", "-n", "10"), check=tailed),
        ])
        self.rows.append(Row(6, tail_title, tail_big, tail_little))
