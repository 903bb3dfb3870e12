"""Tools/bench case 4: push creates."""

import json
import time

from ..common import KINTO_HTTP_CLIENT, VENV_PY, fmt_n, log
from ..fixtures import dataset
from ..measure import run_quiet
from ..table import Row, Series


class PushCase:
    """Case 4, a mixin of Bench (runner.py): its method reads Bench's state and helpers."""

    # ---- case 4
    def case_push(self):
        n = self.a.push_records
        title = f"4. push {fmt_n(n)} local creates"
        log(title)
        k = self.need_kinto()
        data = dataset(self.datadir, n)
        store = self.work / "push-store"
        ev = Series("evsync sync (push)", f"evsync sync after `evsync import Holiday` of {fmt_n(n)} lines into "
                    "a store already synced with an empty bucket")
        kh = Series("kinto-http batch", "kinto-http `with client.batch() as b: b.create_record(id=, data=)` "
                    "into a fresh collection")
        stamp = int(time.time())

        def run_evsync(r):
            self.fresh(store)
            remote = f"{k.url}/buckets/push-evsync-{stamp}-{r}"
            base = ["sync", "--remote", remote, "--auth-file", k.auth_file, "--json"]
            run_quiet(self.ev(store, *base))                      # creates the bucket, empty pull
            run_quiet(self.ev(store, "import", "Holiday", data))

            def check(s):
                out = json.loads(s.stdout)
                if out.get("pushed") != n:
                    return f"sync said {out}"
                got = k.count(f"push-evsync-{stamp}-{r}", "holidays")
                return None if got == n else f"server holds {got}"
            self.measure(f"run {r + 1} evsync sync (push)", ev, self.ev(store, *base), check=check)

        def run_kinto_http(r):
            bucket = f"push-khttp-{stamp}-{r}"
            k.create(bucket, "holidays")

            def check(s):
                got = k.count(bucket, "holidays")
                return None if got == n else f"server holds {got}"
            self.measure(f"run {r + 1} kinto-http batch", kh,
                         [VENV_PY, KINTO_HTTP_CLIENT, "push", "--server", k.url, "--auth-file", k.auth_file,
                          "--bucket", bucket, "--collection", "holidays", data], check=check)

        self.rounds(self.a.runs, [run_evsync, run_kinto_http])
        self.rows.append(Row(4, title, ev, kh))
        self.series.update(push_ev=ev, push_khttp=kh)
        self.fresh(store)
