"""Tools/bench case 16: a store scoped to a tenth of a collection against one that holds it whole (issue 52)."""

import json
import subprocess
import tempfile
import time
from pathlib import Path

from ..common import REPO, fmt_n, log
from ..fixtures import dataset
from ..measure import run_quiet
from ..table import Row, Series, fmt_t

# The generated holidays' dates are uniform over 1950-2099: from 2085 on is a tenth of them.
SCOPE = "date>=2085-01-01"


class ScopedCase:
    """Case 16, a mixin of Bench (runner.py): its method reads Bench's state and helpers."""

    def case_scoped(self):
        n = 2_000 if self.a.quick else 20_000
        title = f"16. first pull of a tenth of {fmt_n(n)} records (evsync scope) against all of them"
        log(title)
        if "scope" not in run_quiet(self.ev(self.work / "help-store", "help")).stdout.decode():
            self.more_targets.append(("a scoped first pull: ≤ 15% of the bytes, ≤ 20% of the time", "—", "not measured: no evsync scope"))
            return
        k = self.need_kinto()
        data = dataset(self.datadir, n)
        expected = sum(1 for line in open(data) if json.loads(line)["date"] >= SCOPE.split(">=")[1])
        bucket = f"scoped{int(time.time())}"
        k.seed(bucket, "holidays", data, n)
        remote = f"{k.url}/buckets/{bucket}"
        store = self.work / "scoped-store"

        def sync(url=remote):
            return self.ev(store, "sync", "--remote", url, "--auth-file", k.auth_file, "--json")

        def fresh(scoped):
            self.fresh(store)
            run_quiet(self.ev(store, "remote", remote))
            if scoped:
                run_quiet(self.ev(store, "scope", "Holiday", "--where", SCOPE))

        def pulled(count):
            return lambda s: None if json.loads(s.stdout).get("pulled") == count else f"sync said {s.stdout[-300:]}"

        whole, part = Series("evsync sync, whole collection", f"first pull of {fmt_n(n)}"), Series("evsync sync, scoped", f"first pull of {fmt_n(expected)}")
        later_whole, later_part = Series("evsync sync, whole collection", "nothing new"), Series("evsync sync, scoped", "nothing new")

        def contender(scoped, series, later):
            def go(r):
                fresh(scoped)
                self.measure(f"run {r + 1} first pull {'scoped' if scoped else 'whole'}", series, sync(),
                             check=pulled(expected if scoped else n))
                self.measure(f"run {r + 1} next sync {'scoped' if scoped else 'whole'}", later, sync(), check=pulled(0))
            return go
        self.rounds(self.a.runs, [contender(False, whole, later_whole), contender(True, part, later_part)])

        # The bytes: one more pull of each, untimed, through Tools/slow-proxy counting every response body.
        moved = {}
        for scoped in (False, True):
            with tempfile.TemporaryDirectory() as tmp:
                counts, port_file = Path(tmp) / "bytes", Path(tmp) / "url"
                proxy = subprocess.Popen([str(REPO / "Tools" / "slow-proxy"), "--target", k.url.rsplit("/v1", 1)[0],
                                          "--port-file", str(port_file), "--bytes", str(counts)],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                try:
                    for _ in range(100):
                        if port_file.exists():
                            break
                        time.sleep(0.05)
                    base = port_file.read_text().strip()
                    fresh(scoped)
                    run_quiet(sync(base + "/v1/buckets/" + bucket))
                finally:
                    proxy.terminate()
                    proxy.wait()
                moved[scoped] = sum(int(line) for line in counts.read_text().split())

        self.rows += [Row(16, title, part, whole), Row(16, "16. the next sync, nothing new: scoped against whole", later_part, later_whole)]
        byte_ratio, time_ratio, later_ratio = moved[True] / moved[False], part.wall / whole.wall, later_part.wall / later_whole.wall
        self.more_targets += [
            ("a scoped first pull moves ≤ 15% of the whole pull's bytes", "PASS" if byte_ratio <= 0.15 else "FAIL",
             f"{moved[True]:,} vs {moved[False]:,} bytes ({byte_ratio:.1%})"),
            ("a scoped first pull takes ≤ 20% of the whole pull's time", "PASS" if time_ratio <= 0.20 else "FAIL",
             f"{fmt_t(part.wall)} vs {fmt_t(whole.wall)} ({time_ratio:.1%})"),
            ("a scoped store's later sync costs no more than a whole store's", "PASS" if later_ratio <= 1.05 else "FAIL",
             f"{fmt_t(later_part.wall)} vs {fmt_t(later_whole.wall)} ({later_ratio:.2f}×)"),
        ]
        self.notes.append(f"scoped sync: `{SCOPE}` holds {fmt_n(expected)} of {fmt_n(n)} records; bytes are response bodies "
                          "counted by Tools/slow-proxy in one more, untimed, pull of each")
