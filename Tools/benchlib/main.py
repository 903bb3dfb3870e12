"""The command line: arguments, the order of the cases, clean-up whatever happens, and where the results go."""

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from .common import CASE_TITLES, DEFAULTS, EVSYNC, QUICK, REPO, VENV_PY, die, fmt_n, log
from .measure import CommandFailed, _live
from .runner import Bench


# --------------------------------------------------------------------------- main

def git(*args):
    r = subprocess.run(["git", "-C", str(REPO), *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return r.stdout.strip()


def versions():
    def first_line(argv):
        try:
            r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            return (r.stdout.strip().splitlines() or ["?"])[0]
        except OSError:
            return "?"
    v = {
        "evsync": first_line([str(EVSYNC), "--version"]).replace("evsync ", ""),
        "LMDB (mdb_load)": first_line(["mdb_load", "-V"]).replace("LMDB ", "").split(":")[0],
        "sqlite3": " ".join(first_line(["sqlite3", "--version"]).split()[:1]),
        "curl": first_line(["curl", "--version"]).split()[1],
        "kinto": first_line([str(VENV_PY), "-c", "import importlib.metadata as m; print(m.version('kinto'))"]),
        "kinto-http": first_line([str(VENV_PY), "-c", "import importlib.metadata as m; print(m.version('kinto-http'))"]),
        "PostgreSQL": first_line([(sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"),
                                          key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0)
                                   or [Path("postgres")])[-1], "--version"]).replace("postgres (PostgreSQL) ", ""),
    }
    return v


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="Tools/bench",
        description="Benchmark evsync against side-by-side alternatives measured in the same run.",
        epilog="Cases: 1 import, 2 rebuild-views, 3 first pull, 4 push, 5 nothing-to-do sync, 6 history, "
               "7 peak memory of a pull, 8 bytes on disk, 9 reads against the SQLite-with-audit peer, 10 many stores "
               "syncing at once, 11 propagation between two watching stores, 12 peak memory of a pull of large records, "
               "13 the library against SQLite's C API, 14 log compact, 15 end-to-end encrypted sync against the same in clear, 16 a scoped store against a whole one. Defaults: " + ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in
                                                              DEFAULTS.items() if v is not None)
               + "; --quick: " + ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in QUICK.items() if v is not None)
               + ". --rebuild-events and --history-large default to --import-records (the case-1 log is reused).")
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run (a few minutes)")
    ap.add_argument("--runs", type=int, help="runs per case (default 3)")
    ap.add_argument("--import-records", type=int, help="case 1: lines imported (default 1,000,000)")
    ap.add_argument("--rebuild-events", type=int, help="case 2: events in the log (default: --import-records)")
    ap.add_argument("--pull-records", type=int, help="cases 3, 5 and the small side of 7 (default 100,000)")
    ap.add_argument("--push-records", type=int, help="case 4: local creates pushed (default 10,000: the server "
                    "takes ~70-90 creates/s, so that is ~12 min for the case)")
    ap.add_argument("--history-small", type=int, help="case 6: events in the small log (default 1,000)")
    ap.add_argument("--history-large", type=int, help="case 6: events in the large log (default: --import-records)")
    ap.add_argument("--memory-records", type=int, help="case 7: records in the large pull (default 1,000,000)")
    ap.add_argument("--memory-runs", type=int, help="case 7: runs of the large pull (default 1; --quick: --runs)")
    ap.add_argument("--footprint-records", type=int, help="cases 8 and 9: records (default 100,000)")
    ap.add_argument("--compact-records", type=int, help="case 14: records, each changed 10 times (default 100,000)")
    ap.add_argument("--many-stores", type=int, default=20, help="case 10: stores syncing at once (default 20)")
    ap.add_argument("--propagation-edits", type=int, default=100, help="case 11: edits timed (default 100)")
    ap.add_argument("--wide-bytes", type=int, default=200_000,
                    help="case 12: bytes of each record's details (default 200,000; 280,000 makes the page of 1,000 "
                    "pass the 256 MiB response cap, so that the pull halves it)")
    ap.add_argument("--cases", default="1,2,3,4,5,6,7,8,9,10,11,12,13,14", help="comma-separated case numbers (default all)")
    ap.add_argument("--port", type=int, default=8897, help="Kinto port (PostgreSQL uses port+10000; default 8897)")
    ap.add_argument("--workdir", default=str(REPO / ".tools" / "bench"),
                    help="scratch space: generated data (kept as a cache), stores (removed); default .tools/bench")
    ap.add_argument("--output", help="markdown results file (default bench-results/<date>-<short sha>.md; "
                                     "the JSON goes next to it)")
    a = ap.parse_args(argv)
    base = QUICK if a.quick else DEFAULTS
    for k, v in base.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    a.rebuild_events = a.rebuild_events or a.import_records
    a.history_large = a.history_large or a.import_records
    a.memory_runs = a.memory_runs or a.runs
    try:
        a.cases = sorted({int(c) for c in a.cases.split(",") if c.strip()})
    except ValueError:
        ap.error("--cases takes numbers, e.g. 1,3,5")
    if not set(a.cases) <= set(CASE_TITLES):
        ap.error(f"cases are 1..{max(CASE_TITLES)}")
    for k in ("runs", "import_records", "rebuild_events", "pull_records", "push_records", "history_small",
              "history_large", "memory_records", "memory_runs", "footprint_records", "compact_records"):
        if getattr(a, k) < 1:
            ap.error(f"--{k.replace('_', '-')} must be at least 1")
    if a.history_large < a.history_small or a.history_small < 2:
        ap.error("--history-large must be ≥ --history-small ≥ 2")
    return a


def main(argv=None):
    a = parse_args(argv if argv is not None else sys.argv[1:])
    if not EVSYNC.exists():
        die(f"{EVSYNC} missing: run Tools/bench (it builds it) or swift build -c release --product evsync")

    def on_term(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)
    # Started in the background by Tools/bench, where bash leaves SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)

    b = Bench(a)
    b.work.mkdir(parents=True, exist_ok=True)
    commit = git("rev-parse", "--short", "HEAD") or "nogit"
    if git("status", "--porcelain", "--untracked-files=no"):
        commit += "-dirty"
    started = time.time()
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    log(f"runs {a.runs}, cases {a.cases}; sizes: import {fmt_n(a.import_records)}, rebuild "
        f"{fmt_n(a.rebuild_events)}, pull {fmt_n(a.pull_records)}, push {fmt_n(a.push_records)}, history "
        f"{fmt_n(a.history_small)}/{fmt_n(a.history_large)}, memory {fmt_n(a.memory_records)} "
        f"(×{a.memory_runs}); load average {load_start}")
    order = [(1, b.case_import), (2, b.case_rebuild), (6, b.case_history),
             (3, b.case_pull), (5, b.case_noop), (4, b.case_push), (7, b.case_memory),
             (8, b.case_footprint), (9, b.case_reads), (10, b.case_many), (11, b.case_propagation),
             (12, b.case_wide), (13, b.case_library), (14, b.case_compaction), (15, b.case_sealed), (16, b.case_scoped)]
    try:
        for case, fn in order:
            if case in a.cases:
                fn()
    except CommandFailed as e:
        die(str(e))
    except KeyboardInterrupt:
        die("interrupted")
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)      # let the clean-up finish
        for p in list(_live):
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
        if b.kinto:
            b.kinto.stop()
        for store in ["pull-store", "pull-big-store", "push-store", "mdb-load-env", "dump-load-env", "footprint-import",
                      "footprint-pulled", "compact-store", "compact-copy", "compact-busy", "compact-once",
                      *[p.name for p in b.work.glob("log-*")]]:
            shutil.rmtree(b.work / store, ignore_errors=True)
        for f in ["events.dump", "holiday.sqlite", "holiday-audit.sqlite", "footprint-audit.sqlite",
                  "footprint-plain.sqlite", "footprint-audit.sqlite-wal", "footprint-audit.sqlite-shm"]:
            (b.work / f).unlink(missing_ok=True)

    elapsed = time.time() - started
    rows_by_case = {}
    for r in b.rows:
        rows_by_case.setdefault(r.case, []).append(r)
    b.rows = [r for c in sorted(rows_by_case) for r in rows_by_case[c]]
    meta = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit,
        "machine": f"{os.cpu_count()} CPUs, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB, "
                   f"{platform.platform()}",
        "load_start": load_start,
        "load_end": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "elapsed": f"{elapsed / 60:.1f} min",
        "versions": versions(),
    }
    md = b.report(meta)
    print()
    print(md)
    if a.output:
        out = Path(a.output)
    else:
        day = dt.date.today().isoformat()
        out = REPO / "bench-results" / f"{day}-{commit}{'-quick' if a.quick else ''}.md"
        i = 2
        while out.exists():
            out = REPO / "bench-results" / f"{day}-{commit}{'-quick' if a.quick else ''}-{i}.md"
            i += 1
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(md)
    out.with_suffix(".json").write_text(json.dumps(b.as_json(meta), indent=2, ensure_ascii=False) + "\n")
    log(f"wrote {out} and {out.with_suffix('.json').name}")

