"""The Bench: its state, the helpers every case uses, the targets, and the report. Each case is a mixin from cases/."""

import json
import shutil
import time
from pathlib import Path

from .cases.case01_import import ImportCase
from .cases.case02_rebuild import RebuildCase
from .cases.case03_pull import PullCase
from .cases.case04_push import PushCase
from .cases.case05_noop import NothingToDoCase
from .cases.case06_history import HistoryCase
from .cases.case07_memory import MemoryCase
from .cases.case08_footprint import FootprintCase
from .cases.case09_reads import ReadsCase
from .cases.case10_many import ManyDevicesCase
from .cases.case11_propagation import PropagationCase
from .cases.case12_wide import WideRecordsCase
from .cases.case13_library import LibraryCase
from .cases.case14_compaction import CompactionCase
from .cases.case15_sealed import SealedCase
from .cases.case16_scoped import ScopedCase
from .common import EVSYNC, METHOD_NOTES, fmt_n, log
from .fixtures import dataset
from .kinto_server import Kinto
from .measure import CommandFailed, run_measured, run_quiet
from .table import fmt_fine, fmt_mib, fmt_range, fmt_rss, fmt_t


# --------------------------------------------------------------------------- the benchmark

class Bench(ImportCase, RebuildCase, PullCase, PushCase, NothingToDoCase, HistoryCase, MemoryCase, FootprintCase, ReadsCase, ManyDevicesCase, PropagationCase, WideRecordsCase, LibraryCase, CompactionCase, SealedCase, ScopedCase):
    def __init__(self, args):
        self.a = args
        self.work = Path(args.workdir).resolve()
        self.datadir = self.work / "data"
        self.logdir = self.work / "logs"
        self.rows = []
        self.series = {}           # for the targets: name -> Series
        self.notes = []
        self.kinto = None
        self.log_stores = {}       # events -> store dir holding that many import events
        self.footprint = []        # case 8: (what, records, bytes on disk, apparent bytes)
        self.edited = None         # case 8's stores after the edits: (evsync store, SQLite-with-audit DB)
        self.more_targets = []     # cases 10 and 11: (name, PASS/FAIL, detail), measured once rather than against a peer
        self.library = []          # case 13: (measurement, evsync, SQLite or None, unit, target, PASS/FAIL/-)

    # ---- helpers
    def ev(self, store, *args):
        return [EVSYNC, "--store", store, *args]

    def measure(self, label, series, stages, check=None, **kw):
        s = run_measured(stages, logdir=self.logdir, **kw)
        if check:
            problem = check(s)
            if problem:
                raise CommandFailed(f"{label}: {problem}\n  stdout: {s.stdout[-500:]}")
        series.add(s)
        anon = f" ({fmt_mib(s.anon)} anonymous)" if s.anon is not None else ""
        log(f"  {label}: {fmt_t(s.wall)} wall, {fmt_t(s.cpu)} CPU, {fmt_mib(s.rss)} peak RSS{anon}")
        return s

    def fresh(self, path):
        path = Path(path)
        if path.exists():
            shutil.rmtree(path)
        return path

    def rounds(self, n, contenders):
        """Runs each contender n times, interleaved, every other round in reverse (A B C, C B A, A B C, ...),
        so that no contender always runs first while this machine's speed drifts."""
        for r in range(n):
            for c in (contenders if r % 2 == 0 else contenders[::-1]):
                c(r)

    def import_store(self, events):
        """A store whose log holds `events` imported Holiday events (built untimed if needed)."""
        if events in self.log_stores:
            return self.log_stores[events]
        store = self.fresh(self.work / f"log-{events}")
        data = dataset(self.datadir, events)
        t0 = time.perf_counter()
        run_quiet(self.ev(store, "import", "Holiday", data))
        log(f"built a {fmt_n(events)}-event store (untimed, {time.perf_counter() - t0:.1f} s)")
        self.log_stores[events] = store
        return store

    def need_kinto(self):
        if not self.kinto:
            self.kinto = Kinto(self.a.port, self.work)
            self.kinto.start()
        return self.kinto

    def new_bucket(self, prefix):
        """A bucket name no earlier run used (the time, to the second) and its remote URL."""
        bucket = f"{prefix}{int(time.time())}"
        return bucket, f"{self.need_kinto().url}/buckets/{bucket}"

    def measure_first_pull(self, label, series, store, remote, n, k):
        """One first pull of n records into a fresh store, its memory sampled (cases 7 and 12)."""
        self.fresh(store)

        def check(s):
            out = json.loads(s.stdout)
            return None if out.get("pulled") == n else f"sync said {out}"
        self.measure(label, series, self.ev(store, "sync", "--remote", remote, "--auth-file", k.auth_file, "--json"),
                     check=check, sample_anon=True)

    # ---- targets
    def targets(self):
        s = self.series
        out = list(self.more_targets)

        def add(name, ok, detail):
            out.append((name, "PASS" if ok else "FAIL", detail))

        if "import_ev" in s:
            r = s["import_ev"].wall / s["import_mdb"].wall
            n = self.a.import_records
            add("import ≥ 1/3 of mdb_load's records/s", r <= 3,
                f"evsync {n / s['import_ev'].wall:,.0f} rec/s, mdb_load {n / s['import_mdb'].wall:,.0f} rec/s "
                f"(evsync at {1 / r:.2f}× of mdb_load's rate; needs ≥ 0.33×)")
            r2 = s["import_ev"].wall / s["import_mdb_nosync"].wall
            add("(informative) the same against mdb_load with fsync off", r2 <= 3,
                f"mdb_load {n / s['import_mdb_nosync'].wall:,.0f} rec/s (evsync at {1 / r2:.2f}×)")
            add("import faster than sqlite3", s["import_ev"].wall < s["import_sqlite"].wall,
                f"{fmt_t(s['import_ev'].wall)} vs {fmt_t(s['import_sqlite'].wall)}")
            add("import ≥ 0.8× mdb_load's records/s (round 2)", r <= 1 / 0.8, f"evsync at {1 / r:.2f}× of mdb_load's rate")
            if "import_audit" in s:
                r3 = s["import_audit"].wall / s["import_ev"].wall
                add("import ≥ 3× the SQLite-with-audit peer", r3 >= 3, f"evsync {r3:.2f}× as fast")
            add(f"import of {fmt_n(n)} peak RSS ≤ 256 MiB", s["import_ev"].rss <= 256 * 1048576, fmt_mib(s["import_ev"].rss))
        if "rebuild_ev" in s:
            r = s["rebuild_ev"].wall / s["rebuild_dl"].wall
            add("rebuild within 3× of mdb_dump | mdb_load", r <= 3, f"{r:.2f}×")
            r2 = s["rebuild_ev"].wall / s["rebuild_dl_nosync"].wall
            add("(informative) the same against mdb_load with fsync off", r2 <= 3, f"{r2:.2f}×")
        if "pull_ev" in s:
            r = s["pull_ev"].wall / s["pull_curl"].wall
            add("first pull wall within 1.15× of the curl floor", r <= 1.15, f"{r:.2f}×")
            add("first pull client CPU < kinto-http's", s["pull_ev"].cpu < s["pull_khttp"].cpu,
                f"{fmt_t(s['pull_ev'].cpu)} vs {fmt_t(s['pull_khttp'].cpu)}")
        if "push_ev" in s:
            add("push wall < kinto-http's", s["push_ev"].wall < s["push_khttp"].wall,
                f"{fmt_t(s['push_ev'].wall)} vs {fmt_t(s['push_khttp'].wall)}")
        if "noop_ev" in s:
            r = s["noop_ev"].wall / s["noop_curl"].wall
            add("nothing to do within 2× of one curl request", r <= 2, f"{r:.2f}×")
        if "history_large" in s:
            r = s["history_large"].wall / s["history_small"].wall
            add(f"history on {fmt_n(self.a.history_large)} events within 1.5× of {fmt_n(self.a.history_small)}",
                r <= 1.5, f"{r:.2f}×")
        if "memory_big" in s:
            big, small = s["memory_big"].rss, s["memory_small"].rss
            add(f"pull {fmt_n(self.a.memory_records)} peak RSS ≤ 1.25× of {fmt_n(self.a.pull_records)}",
                big <= 1.25 * small, f"{fmt_mib(big)} vs {fmt_mib(small)} ({big / small:.2f}×)")
            add(f"pull {fmt_n(self.a.memory_records)} peak RSS < 100 MiB", big < 100 * 1048576, fmt_mib(big))
            ab, asm = s["memory_big"].anon, s["memory_small"].anon
            if ab is not None and asm:
                add("(informative) the same two on anonymous memory only (sampled RssAnon, without "
                    "LMDB's mapped file pages)", ab <= 1.25 * asm and ab < 100 * 1048576,
                    f"{fmt_mib(ab)} vs {fmt_mib(asm)} ({ab / asm:.2f}×)")
        fp = {what: on_disk / records for what, records, on_disk, _ in self.footprint}
        ours, peer = fp.get("evsync store after `import` (log + views)"), fp.get("SQLite with audit triggers (WAL, checkpointed)")
        if ours and peer:
            add("bytes a record after import ≤ the SQLite-with-audit peer's", ours <= peer, f"{ours:,.0f} B vs {peer:,.0f} B")
        ours = fp.get("evsync store after 3 edits of every record (pulled)")
        peer = fp.get("SQLite with audit triggers after 3 edits of every record")
        if ours and peer:
            add("bytes a record after 3 edits ≤ the SQLite-with-audit peer's", ours <= peer, f"{ours:,.0f} B vs {peer:,.0f} B")
        return out

    # ---- report
    def report(self, meta):
        lines = [f"# evsync benchmark — {meta['date']} — commit {meta['commit']}", ""]
        lines.append(f"Machine: {meta['machine']}. Load average at start {meta['load_start']}, "
                     f"at end {meta['load_end']}. Runs per case: {self.a.runs}"
                     f"{' (quick sizes)' if self.a.quick else ''}; total {meta['elapsed']}.")
        lines.append("")
        lines.append("Wall: median (min–max). CPU: median user+sys of the client process (and its children). "
                     "Peak RSS: median of the process's max RSS (a pipeline: the sum of its stages); for evsync's "
                     "pulls also the peak of its anonymous memory, sampled. "
                     "Ratio: evsync median wall / alternative median wall (case 7: of peak RSS).")
        lines.append("")
        hdr = ["case", "alternative", "evsync median (min–max)", "alternative median (min–max)", "ratio",
               "evsync CPU", "alt CPU", "evsync peak RSS", "alt peak RSS"]
        lines.append("| " + " | ".join(hdr) + " |")
        lines.append("|" + "|".join(["---"] * 2 + ["---:"] * (len(hdr) - 2)) + "|")
        for row in self.rows:
            cells = [row.title, row.alt.label, fmt_range(row.evsync), fmt_range(row.alt), row.ratio_cell,
                     fmt_t(row.evsync.cpu), fmt_t(row.alt.cpu), fmt_rss(row.evsync), fmt_rss(row.alt)]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        if self.footprint:
            lines += ["", "## Bytes on disk", "", "| what | records | on disk | a record | apparent size |", "|---|---:|---:|---:|---:|"]
            for what, records, on_disk, apparent in self.footprint:
                lines.append(f"| {what} | {fmt_n(records)} | {fmt_mib(on_disk)} | {on_disk / records:,.0f} B | {fmt_mib(apparent)} |")
        if self.library:
            lines += ["", "## The library an app embeds (case 13)", "",
                      "| measurement | evsync | SQLite | evsync / SQLite | target | result |", "|---|---:|---:|---:|---|---|"]
            for what, ours, peer, unit, target, verdict in self.library:
                ratio = f"{ours / peer:.2f}" if peer else ""
                lines.append(f"| {what} | {fmt_fine(ours)} | {fmt_fine(peer) if peer is not None else '—'} | {ratio} | "
                             f"{target} | {('**' + verdict + '**') if verdict != '—' else verdict} |")
        lines.append("")
        lines.append("## Targets")
        lines.append("")
        lines.append("| target | result | measured |")
        lines.append("|---|---|---|")
        for name, verdict, detail in self.targets():
            lines.append(f"| {name.replace('|', chr(92) + '|')} | **{verdict}** | {detail} |")
        lines.append("")
        lines.append("## Commands")
        lines.append("")
        seen = set()
        for row in self.rows:
            for s in (row.evsync, row.alt):
                if id(s) not in seen:
                    seen.add(id(s))
                    lines.append(f"- case {row.case}, {s.label}: {s.command}")
        lines.append("")
        lines.append("## Method")
        lines.append("")
        lines += [f"- {n}" for n in METHOD_NOTES]
        if self.notes:
            lines.append("")
            lines.append("## Notes from this run")
            lines.append("")
            lines += [f"- {n}" for n in self.notes]
        lines.append("")
        lines.append("Versions: " + "; ".join(f"{k} {v}" for k, v in meta["versions"].items()))
        lines.append("")
        return "\n".join(lines)

    def as_json(self, meta):
        return {
            "meta": meta,
            "sizes": {k: getattr(self.a, k) for k in ("runs", "import_records", "rebuild_events", "pull_records",
                                                       "push_records", "history_small", "history_large",
                                                       "memory_records", "memory_runs", "footprint_records", "compact_records", "quick")},
            "rows": [{"case": r.case, "title": r.title, "evsync": r.evsync.as_json(), "alternative": r.alt.as_json(),
                      "ratio": r.ratio, "ratio_of": r.by} for r in self.rows],
            "targets": [{"target": n, "result": v, "measured": d} for n, v, d in self.targets()],
            "footprint": [{"what": w, "records": r, "bytes_on_disk": b, "apparent_bytes": a} for w, r, b, a in self.footprint],
            "notes": self.notes,
            "library": [{"measurement": w, "evsync_seconds": o, "sqlite_seconds": p, "target": t, "result": v}
                        for w, o, p, _, t, v in self.library],
        }
