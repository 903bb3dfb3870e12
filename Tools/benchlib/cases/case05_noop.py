"""Tools/bench case 5: sync, nothing to do."""

import json

from ..common import PAGE_SIZE, fmt_n, log
from ..table import Row, Series


class NothingToDoCase:
    """Case 5, a mixin of Bench (runner.py): its method reads Bench's state and helpers."""

    def case_noop(self):
        n = self.a.pull_records
        title = f"5. sync with nothing to do, {fmt_n(n)} records held"
        log(title)
        k = self.need_kinto()
        if not getattr(self, "pull_store", None):
            self.a.runs, runs = 1, self.a.runs
            self.case_pull()           # one untimed-for-the-table pull to get the store
            self.a.runs = runs
            self.rows = [r for r in self.rows if r.case != 3]
            for key in ("pull_ev", "pull_curl", "pull_khttp"):
                self.series.pop(key, None)
        store, remote = self.pull_store, self.pull_remote
        etag = k.etag("bench", "holidays")
        url = f"{remote}/collections/holidays/records?_sort=last_modified&_limit={PAGE_SIZE}&_since={etag}"
        runs = self.a.runs * 5
        ev = Series("evsync sync (no-op)", "evsync sync right after the first pull")
        cu = Series("one curl request", f"curl of holidays records ?_sort=last_modified&_limit={PAGE_SIZE}"
                    f"&_since=<ETag> with If-None-Match: \"<ETag>\" (a 304)")

        def check_evsync(s):
            out = json.loads(s.stdout)
            return None if out.get("result") == "noData" and out.get("pulled") == 0 else f"sync said {out}"

        self.rounds(runs, [
            lambda r: self.measure(f"run {r + 1} evsync sync", ev,
                                   self.ev(store, "sync", "--remote", remote, "--auth-file", k.auth_file, "--json"),
                                   check=check_evsync),
            lambda r: self.measure(f"run {r + 1} curl", cu,
                                   ["curl", "-sS", "-K", "-", "-o", "/dev/null", "-w", "%{http_code}",
                                    "-H", f'If-None-Match: "{etag}"', url],
                                   stdin_bytes=k.curl_config(),
                                   check=lambda s: None if s.stdout.strip() == "304" else f"HTTP {s.stdout}"),
        ])
        self.notes.append(f"nothing to do: evsync sends, per collection (holidays and birthdays), "
                          f"`GET …/records?_sort=last_modified&_limit={PAGE_SIZE}&_since=<cursor>` with "
                          f"`If-None-Match: \"<cursor>\"`; the curl side is that one request for holidays "
                          f"(→ 304 Not Modified), {runs} runs each.")
        self.rows.append(Row(5, title, ev, cu))
        self.series.update(noop_ev=ev, noop_curl=cu)
