"""Tools/bench case 12: peak memory of a first pull of large records (1,000 of 200 KB: one page of some 200 MB)."""

from ..common import KINTO_HTTP_CLIENT, PAGE_SIZE, VENV_PY, fmt_n, log
from ..fixtures import wide_dataset
from ..table import Row, Series


class WideRecordsCase:
    """Case 12, a mixin of Bench (runner.py): its method reads Bench's state and helpers."""

    # ---- case 12
    def case_wide(self):
        n, size = 1_000, self.a.wide_bytes
        title = f"12. peak memory of a first pull of {fmt_n(n)} records of {size // 1000} KB"
        log(title)
        k = self.need_kinto()
        k.seed("bench-wide", "holidays", wide_dataset(self.datadir, n, size), n)
        remote = f"{k.url}/buckets/bench-wide"
        store = self.work / "pull-wide-store"
        ev = Series("evsync sync (first pull)", f"evsync sync --remote {remote} (empty store)")
        kh = Series("kinto-http", f"kinto-http Client.get_records(_limit={PAGE_SIZE}, _sort=last_modified, "
                    "pages=inf): the page held as Python objects")

        def run_evsync(r):
            self.measure_first_pull(f"run {r + 1} evsync sync (wide)", ev, store, remote, n, k)

        def run_kinto_http(r):
            self.measure(f"run {r + 1} kinto-http (wide)", kh,
                         [VENV_PY, KINTO_HTTP_CLIENT, "pull", "--server", k.url, "--auth-file", k.auth_file,
                          "--bucket", "bench-wide", "--page-size", PAGE_SIZE, "holidays", "birthdays"],
                         check=lambda s: None if s.stdout.strip() == str(n) else f"fetched {s.stdout.strip()}")

        self.rounds(self.a.runs, [run_evsync, run_kinto_http])
        self.rows.append(Row(12, title, ev, kh, by="rss"))
        self.fresh(store)
