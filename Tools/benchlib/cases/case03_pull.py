"""Tools/bench case 3: first pull."""

import json
import math

from ..common import KINTO_HTTP_CLIENT, PAGE_SIZE, VENV_PY, fmt_n, log
from ..fixtures import dataset
from ..kinto_server import CURL_PULL_LOOP
from ..table import Row, Series


class PullCase:
    """Case 3, a mixin of Bench (runner.py): its method reads Bench's state and helpers."""

    # ---- case 3 (and 5, which reuses its store)
    def case_pull(self):
        n = self.a.pull_records
        title = f"3. first pull of {fmt_n(n)} records"
        log(title)
        k = self.need_kinto()
        data = dataset(self.datadir, n)
        k.seed("bench", "holidays", data, n)
        remote = f"{k.url}/buckets/bench"
        store = self.work / "pull-store"
        ev = Series("evsync sync (first pull)", f"evsync sync --remote {remote} (empty store)")
        cu = Series("curl loop", f"curl per page following Next-Page, _limit={PAGE_SIZE}&_sort=last_modified, "
                    "bodies to /dev/null (holidays, then birthdays)")
        kh = Series("kinto-http", f"kinto-http Client.get_records(_limit={PAGE_SIZE}, _sort=last_modified, "
                    "pages=inf) of holidays and birthdays")
        expected_pages = max(1, math.ceil(n / PAGE_SIZE))
        pull_urls = [f"{remote}/collections/{c}/records?_limit={PAGE_SIZE}&_sort=last_modified"
                     for c in ("holidays", "birthdays")]

        def check_evsync(s):
            try:
                out = json.loads(s.stdout)
            except ValueError:
                return "no JSON output"
            return None if out.get("pulled") == n and out.get("result") == "newData" else f"sync said {out}"

        def run_evsync(r):
            self.fresh(store)
            self.measure(f"run {r + 1} evsync sync", ev,
                         self.ev(store, "sync", "--remote", remote, "--auth-file", k.auth_file, "--json"),
                         check=check_evsync, sample_anon=True)

        def run_curl(r):
            self.measure(f"run {r + 1} curl loop", cu, ["bash", "-c", CURL_PULL_LOOP, "curl-pull", k.auth_file, *pull_urls],
                         check=lambda s: None if int(s.stdout.strip() or 0) >= expected_pages + 1
                         else f"only {s.stdout.strip()} pages")

        def run_kinto_http(r):
            self.measure(f"run {r + 1} kinto-http", kh,
                         [VENV_PY, KINTO_HTTP_CLIENT, "pull", "--server", k.url, "--auth-file", k.auth_file,
                          "--bucket", "bench", "--page-size", PAGE_SIZE, "holidays", "birthdays"],
                         check=lambda s: None if s.stdout.strip() == str(n) else f"fetched {s.stdout.strip()}")

        self.rounds(self.a.runs, [run_evsync, run_curl, run_kinto_http])
        self.rows += [Row(3, title, ev, cu), Row(3, title, ev, kh)]
        self.series.update(pull_ev=ev, pull_curl=cu, pull_khttp=kh)
        self.pull_store, self.pull_remote = store, remote
