#!/usr/bin/env python3
"""Benchmark driver for evsync (run it through Tools/bench, which installs what it needs).

Each case times an evsync command and, in the same run and interleaved with it, an
alternative that does the same work (or the floor of that work): for every command the
wall time, the client's CPU time (user+sys of the child process and everything it waited
for, from wait4's rusage) and its peak RSS (ru_maxrss; for a pipeline, the sum over its
stages). The table gives medians with min-max, and the ratio evsync/alternative of the
median wall times. See `Tools/bench --help` and the notes written with the results.
"""

import argparse
import base64
import calendar
import datetime as dt
import json
import math
import os
import platform
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV_PY = REPO / ".tools" / "venv" / "bin" / "python"
EVSYNC = REPO / ".build" / "release" / "evsync"
# Case 12's program: evsync's library and SQLite's C API doing the same work (its own package, built by Tools/bench).
LIBRARY_BENCH = REPO / "Tools" / "LibraryBench" / ".build" / "release" / "LibraryBench"
KINTO = REPO / "Tools" / "kinto"
KINTO_HTTP_CLIENT = REPO / "Tools" / "bench_kinto_http.py"
GNU_TIME = "/usr/bin/time"
PAGE_SIZE = 1000           # evsync's pull page: _limit=1000&_sort=last_modified
DATASET_VERSION = "v1"     # bump when the generator changes (invalidates cached files)

# Kinto on PostgreSQL accepts ~70-90 creates/s on the 2-core machine (server-bound, for
# any client): the issue's 10,000 pushes are ~2 min per run and side, most of a full run's
# ~20 minutes (--push-records 2000 for a shorter one).
# The 1M-record pull is ~1 min per run; peak RSS barely moves between runs: 1 run.
DEFAULTS = dict(runs=3, import_records=1_000_000, pull_records=100_000, push_records=10_000,
                history_small=1_000, history_large=None, rebuild_events=None,
                memory_records=1_000_000, memory_runs=1, footprint_records=100_000,
                compact_records=100_000)
QUICK = dict(runs=3, import_records=20_000, pull_records=5_000, push_records=100,
             history_small=1_000, history_large=None, rebuild_events=None,
             memory_records=20_000, memory_runs=None, footprint_records=5_000,
             compact_records=2_000)

METHOD_NOTES = [
    "Every case runs its contenders interleaved, every other round in reverse (A B C, C B A, …), so drift "
    "on this shared machine hits them alike and none always runs first; the load average at start and end "
    "is above. Before each timed command, `sync` writes dirty pages back (so no command pays for the "
    "previous one's writeback through its own fsync); the page cache stays warm (nothing is dropped).",
    "CPU: user+sys from wait4's rusage of the command (including the children it waited for). Peak RSS: "
    "GNU time's `%M` (ru_maxrss taken in a ~1 MiB forked parent: our own wait4 would report at least this "
    "Python driver's RSS, which Linux carries across exec). RSS includes the pages of LMDB's memory map "
    "a process touched (file-backed page cache, not its own allocations): for evsync's pulls the driver "
    "also samples /proc RssAnon every 25 ms (\"anon.\"), its own memory.",
    "mdb_load (LMDB 0.9.24) commits every 100 records, an fdatasync each (10,000 for 1M records), so on "
    "a busy disk it measures fsync latency more than LMDB; the `eatmydata` rows make those fsyncs no-ops "
    "(LD_PRELOAD) and are the write floor; the targets use plain mdb_load as specified and show the "
    "other as informative. evsync imports and rebuilds in one transaction (one sync). Its input is `mdb_dump`'s default hex format: 0.9.24's `-p` prints the "
    "key byte 0x5c (a backslash) unescaped and mdb_load then stops at \"unexpected end of input\".",
    "sqlite3 runs with its defaults (rollback journal, synchronous=FULL); the whole script is one "
    "transaction and the table has `id TEXT PRIMARY KEY` and a `sync_status` column set to 'pending'.",
    "Kinto 26.5 runs on PostgreSQL (Tools/kinto start --postgres, fsync off) on the same 2 cores as the "
    "client, so pull and push wall times are mostly the server's. Pull fixtures are written straight "
    "into Kinto's `objects` table (COPY into a temp table, then one INSERT with the bump_timestamp "
    "trigger disabled inside the transaction), one millisecond apart so `_sort=last_modified` paging "
    "is exact, after creating the bucket and collections through the HTTP API; each fixture is then "
    "checked through Kinto (HEAD Total-Records, a 2-record page and its Next-Page).",
    "The curl floor starts one curl per page (a new process and TCP connection each time); evsync and "
    "kinto-http keep one connection. evsync's first pull also lists the (empty) birthdays collection, "
    "so the curl loop and kinto-http fetch it too.",
]

CASE_TITLES = {
    1: "import",
    2: "rebuild views",
    3: "first pull",
    4: "push creates",
    5: "sync, nothing to do",
    6: "history of one record",
    7: "peak memory of a first pull",
    8: "bytes on disk per record",
    9: "reads: list all records, history of one record, against the SQLite-with-audit peer",
    10: "many devices: 20 stores syncing one bucket at once",
    11: "propagation between two stores on sync --watch 1, edits at random phases",
    12: "peak memory of a first pull of large records (1,000 of 200 KB: one page of some 200 MB)",
    13: "the library an app embeds, against SQLite's C API (issue 24's numbers)",
    14: "log compact of records changed 10 times each: sizes, time, adds beside it, history (issue 27's numbers)",
}


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def die(msg):
    log(f"error: {msg}")
    sys.exit(1)


def fmt_n(n):
    return f"{n:,}"


# --------------------------------------------------------------------------- measuring

class Sample:
    __slots__ = ("wall", "cpu", "rss", "anon", "stdout")

    def __init__(self, wall, cpu, rss, stdout="", anon=None):
        self.wall, self.cpu, self.rss, self.stdout, self.anon = wall, cpu, rss, stdout, anon

    def as_json(self):
        d = {"wall_s": round(self.wall, 6), "cpu_s": round(self.cpu, 6), "peak_rss_bytes": self.rss}
        if self.anon is not None:
            d["peak_anon_rss_bytes_sampled"] = self.anon
        return d


class AnonSampler(threading.Thread):
    """Polls /proc for the RssAnon of a command's processes (not GNU time itself), keeping the max.

    Peak RSS counts the pages of LMDB's memory map that the process touched: file-backed,
    shared with the page cache and dropped by the kernel at will. RssAnon is the process's
    own memory (heap, stacks). Sampled every 25 ms, so a shorter spike can be missed.
    """

    def __init__(self, roots):
        super().__init__(daemon=True)
        self.roots, self.peak, self.done = roots, 0, threading.Event()

    @staticmethod
    def children(pid):
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                return [int(c) for c in f.read().split()]
        except OSError:
            return []

    def run(self):
        while not self.done.is_set():
            total = 0
            todo = [c for r in self.roots for c in self.children(r)]
            while todo:
                pid = todo.pop()
                todo += self.children(pid)
                try:
                    with open(f"/proc/{pid}/status") as f:
                        for line in f:
                            if line.startswith("RssAnon:"):
                                total += int(line.split()[1]) * 1024
                                break
                except OSError:
                    pass
            self.peak = max(self.peak, total)
            self.done.wait(0.025)


class CommandFailed(Exception):
    pass


_live = []   # children currently running (killed on interrupt)


def child_env(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVSYNC_")}
    env["LC_ALL"] = "C.UTF-8"
    env.update(extra or {})
    return env


def run_measured(stages, *, stdin_path=None, stdin_bytes=None, env=None, cwd=None, logdir, sample_anon=False):
    """Runs one command (or a pipeline: a list of argv lists) and measures it.

    Wall: from just before the first fork to the last wait4. CPU: user+sys from wait4's
    rusage of each stage (it includes the stage's own waited-for children, so a shell loop
    counts every curl it ran). Peak RSS: GNU time's %M for each stage, summed over a
    pipeline's stages (they run at the same time); for a shell, the max over its
    sequential children. Not ru_maxrss of our own wait4: Linux carries the pre-exec
    image's high-water mark into it, i.e. this Python process's ~30 MiB, so every small
    command would read ~30 MiB. GNU time fork()s from a ~1 MiB process, which is then
    the floor. (GNU time's own CPU, well under 1 ms, is in the CPU figure.)

    Dirty pages are written back first (sync), so a command never pays for the
    writeback of the one before it (fsync on ext4 can wait for other files' data).
    """
    if stages and isinstance(stages[0], (str, os.PathLike)):
        stages = [stages]
    stages = [[str(a) for a in argv] for argv in stages]
    logdir.mkdir(parents=True, exist_ok=True)
    out_path = logdir / "last.stdout"
    err_path = logdir / "last.stderr"
    rss_paths = [logdir / f"last.rss{i}" for i in range(len(stages))]
    env = env or child_env()
    procs = []
    finished = False
    os.sync()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        stdin_file = open(stdin_path, "rb") if stdin_path else None
        try:
            t0 = time.perf_counter()
            prev = stdin_file if stdin_file else (subprocess.PIPE if stdin_bytes is not None else subprocess.DEVNULL)
            for i, argv in enumerate(stages):
                last = i == len(stages) - 1
                timed = [GNU_TIME, "-f", "%M", "-o", str(rss_paths[i]), "--", *argv]
                # Own process group: on interrupt we kill the whole command, not just GNU time.
                p = subprocess.Popen(timed, stdin=prev, stdout=out if last else subprocess.PIPE,
                                     stderr=err, env=env, cwd=cwd, close_fds=True, start_new_session=True)
                procs.append(p)
                _live.append(p)
                if i == 0 and stdin_bytes is not None:
                    p.stdin.write(stdin_bytes)
                    p.stdin.close()
                if i > 0 and prev is not None and hasattr(prev, "close"):
                    prev.close()
                prev = p.stdout if not last else None
            sampler = AnonSampler([p.pid for p in procs]) if sample_anon else None
            if sampler:
                sampler.start()
            cpu = 0.0
            codes = []
            for p in procs:
                _, status, ru = os.wait4(p.pid, 0)
                p.returncode = os.waitstatus_to_exitcode(status)
                codes.append(p.returncode)
                cpu += ru.ru_utime + ru.ru_stime
            wall = time.perf_counter() - t0
            if sampler:
                sampler.done.set()
                sampler.join()
            finished = True
        finally:
            if stdin_file:
                stdin_file.close()
            for p in procs:
                if not finished and p.returncode is None:
                    try:
                        os.killpg(p.pid, signal.SIGKILL)     # interrupted: the whole command goes
                        os.waitpid(p.pid, 0)
                    except OSError:
                        pass
                if p in _live:
                    _live.remove(p)
    stdout = out_path.read_text(errors="replace")
    if any(codes):
        tail = err_path.read_text(errors="replace")[-2000:]
        cmd = " | ".join(" ".join(a) for a in stages)
        raise CommandFailed(f"{cmd}\n  exit codes {codes}\n  stderr: {tail.strip()}")
    rss = 0
    for path in rss_paths:
        rss += int(path.read_text().split()[-1]) * 1024      # KiB
    return Sample(wall, cpu, rss, stdout, anon=sampler.peak if sampler else None)


def run_quiet(argv, *, env=None, stdin_bytes=None, check=True, capture=True, cwd=None):
    """An untimed helper command."""
    r = subprocess.run([str(a) for a in argv], input=stdin_bytes, env=env or child_env(), cwd=cwd,
                       stdout=subprocess.PIPE if capture else None, stderr=subprocess.PIPE)
    if check and r.returncode != 0:
        raise CommandFailed(f"{' '.join(map(str, argv))}: exit {r.returncode}\n"
                            f"{r.stderr.decode(errors='replace')[-2000:]}")
    return r


# --------------------------------------------------------------------------- results

class Series:
    def __init__(self, label, command):
        self.label, self.command, self.samples = label, command, []

    def add(self, s):
        self.samples.append(s)

    def stat(self, attr, fn):
        return fn([getattr(s, attr) for s in self.samples])

    @property
    def wall(self):
        return self.stat("wall", statistics.median)

    @property
    def cpu(self):
        return self.stat("cpu", statistics.median)

    @property
    def rss(self):
        return self.stat("rss", statistics.median)

    @property
    def anon(self):
        values = [s.anon for s in self.samples if s.anon is not None]
        return statistics.median(values) if values else None

    def as_json(self):
        d = {"label": self.label, "command": self.command, "samples": [s.as_json() for s in self.samples]}
        if self.samples:
            d["median"] = {"wall_s": self.wall, "cpu_s": self.cpu, "peak_rss_bytes": self.rss}
            if self.anon is not None:
                d["median"]["peak_anon_rss_bytes_sampled"] = self.anon
            d["min_wall_s"] = self.stat("wall", min)
            d["max_wall_s"] = self.stat("wall", max)
        return d


class Row:
    """One line of the table; `by` is what the ratio compares: median wall, or median peak RSS."""

    def __init__(self, case, title, evsync, alt, by="wall"):
        self.case, self.title, self.evsync, self.alt, self.by = case, title, evsync, alt, by

    @property
    def ratio(self):
        a, b = getattr(self.evsync, self.by), getattr(self.alt, self.by)
        return a / b if b > 0 else float("inf")

    @property
    def ratio_cell(self):
        return f"{self.ratio:.2f}" + ("" if self.by == "wall" else f" (peak RSS; wall {self.evsync.wall / self.alt.wall:.2f})")


def fmt_t(s):
    if s < 1:
        return f"{s * 1000:.0f} ms" if s >= 0.0995 else f"{s * 1000:.1f} ms"
    if s < 100:
        return f"{s:.2f} s" if s < 10 else f"{s:.1f} s"
    return f"{s:.0f} s"


def fmt_fine(s):
    """fmt_t, with microseconds below a millisecond (case 13's reads and latencies)."""
    return f"{s * 1e6:.1f} µs" if s < 0.001 else fmt_t(s)


def fmt_range(series):
    lo, hi = series.stat("wall", min), series.stat("wall", max)
    return f"{fmt_t(series.wall)} ({fmt_t(lo)}–{fmt_t(hi)})"


def fmt_mib(b):
    return f"{b / 1048576:.1f} MiB"


def fmt_rss(series):
    anon = series.anon
    return fmt_mib(series.rss) + (f" ({fmt_mib(anon)} anon.)" if anon is not None else "")


# --------------------------------------------------------------------------- data

HOLIDAY_NAMES = [
    "New Year's Day", "Martin Luther King Jr. Day", "Washington's Birthday", "Memorial Day",
    "Juneteenth National Independence Day", "Independence Day", "Labor Day", "Columbus Day",
    "Veterans Day", "Thanksgiving Day", "Christmas Day", "Good Friday", "Easter Monday",
    "Ascension Day", "Whit Monday", "Bastille Day", "Assumption Day", "All Saints' Day",
    "Armistice Day", "Boxing Day", "Canada Day", "Victoria Day", "Civic Holiday", "Australia Day",
    "Anzac Day", "King's Birthday", "Waitangi Day", "Labour Day", "May Day", "Epiphany",
    "Corpus Christi", "German Unity Day", "Reformation Day", "Constitution Day", "Republic Day",
    "Children's Day", "National Day", "Mid-Autumn Festival", "Lunar New Year", "Diwali",
]
COUNTRIES = ["US", "FR", "DE", "GB", "CA", "AU", "NZ", "JP", "IT", "ES", "NL", "BE", "CH", "AT",
             "SE", "NO", "DK", "FI", "IE", "PT", "PL", "CZ", "BR", "MX", "AR", "IN", "CN", "KR"]


def generate_holidays(path, n):
    """n deterministic Holiday records as JSON Lines; a prefix of the file for n+k records."""
    rng = random.Random("evsync-bench-holidays-" + DATASET_VERSION)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        for i in range(n):
            rid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            base = HOLIDAY_NAMES[rng.randrange(len(HOLIDAY_NAMES))]
            year = rng.randint(1950, 2099)
            month = rng.randint(1, 12)
            day = rng.randint(1, calendar.monthrange(year, month)[1])
            date = dt.date(year, month, day)
            observed = rng.sample(COUNTRIES, rng.randint(1, 3))
            name = f"{base} {year}" if rng.random() < 0.5 else f"{base} ({observed[0]} {i})"
            details = (f"{base}, {calendar.day_name[date.weekday()]}, {calendar.month_name[month]} {day}, "
                       f"{year}: public holiday in {', '.join(observed)}.")
            rec = {"id": rid, "name": name, "date": date.isoformat(), "details": details,
                   "observedBy": observed,
                   "wikipediaLink": "https://en.wikipedia.org/wiki/" + base.replace(" ", "_").replace("'", "%27")}
            f.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")))
            f.write("\n")
    tmp.rename(path)


def dataset(datadir, n):
    """Path of a JSONL file of the first n generated records (cached in datadir)."""
    datadir.mkdir(parents=True, exist_ok=True)
    path = datadir / f"holidays-{DATASET_VERSION}-{n}.jsonl"
    if path.exists():
        return path
    bigger = sorted((int(p.stem.rsplit("-", 1)[1]), p) for p in datadir.glob(f"holidays-{DATASET_VERSION}-*.jsonl"))
    bigger = [p for m, p in bigger if m >= n]
    t0 = time.perf_counter()
    if bigger:
        tmp = path.with_suffix(".tmp")
        with open(bigger[0]) as src, open(tmp, "w") as dst:
            for i, line in enumerate(src):
                if i >= n:
                    break
                dst.write(line)
        tmp.rename(path)
    else:
        log(f"generating {fmt_n(n)} Holiday records -> {path.relative_to(REPO)}")
        generate_holidays(path, n)
        log(f"  done in {time.perf_counter() - t0:.1f} s ({path.stat().st_size / 1048576:.0f} MiB)")
    return path


def wide_dataset(datadir, n, size):
    """n Holiday records whose details are `size` bytes each (cached in datadir): case 12's large records."""
    datadir.mkdir(parents=True, exist_ok=True)
    path = datadir / f"wide-holidays-{DATASET_VERSION}-{n}-{size}.jsonl"
    if path.exists():
        return path
    rng = random.Random("evsync-bench-wide-" + DATASET_VERSION)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        for i in range(n):
            rid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            # Letters at random: nothing along the way (a gzip proxy, the database) shrinks the page.
            details = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz ", k=size))
            f.write(json.dumps({"id": rid, "name": f"Wide {i}", "date": "2026-06-01", "details": details},
                               separators=(",", ":")) + "\n")
    tmp.rename(path)
    return path


def nth_id(path, index):
    with open(path) as f:
        for i, line in enumerate(f):
            if i == index:
                return json.loads(line)["id"]
    raise ValueError(f"{path} has fewer than {index + 1} lines")


# --------------------------------------------------------------------------- the SQLite peers

# What a developer writes instead of evsync for "a local table with an audit trail": the table,
# plus a history table filled by triggers, in WAL mode (issue 13's peer).
SQLITE_AUDIT_SCHEMA = """PRAGMA journal_mode=WAL;
CREATE TABLE holiday (id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, date TEXT NOT NULL,
  details TEXT, observedBy TEXT, wikipediaLink TEXT, image TEXT);
CREATE TABLE history (seq INTEGER PRIMARY KEY, at TEXT NOT NULL, id TEXT NOT NULL, kind TEXT NOT NULL,
  origin TEXT NOT NULL, by TEXT NOT NULL, data TEXT);
CREATE INDEX history_id ON history(id);
CREATE TRIGGER holiday_created AFTER INSERT ON holiday BEGIN
  INSERT INTO history (at, id, kind, origin, by, data) VALUES (strftime('%Y-%m-%dT%H:%M:%fZ'), NEW.id, 'created',
    'local', 'bench@host', json_object('name', NEW.name, 'date', NEW.date, 'details', NEW.details,
    'observedBy', json(NEW.observedBy), 'wikipediaLink', NEW.wikipediaLink, 'image', NEW.image));
END;
CREATE TRIGGER holiday_updated AFTER UPDATE ON holiday BEGIN
  INSERT INTO history (at, id, kind, origin, by, data) VALUES (strftime('%Y-%m-%dT%H:%M:%fZ'), NEW.id, 'updated',
    'local', 'bench@host', json_object('name', NEW.name, 'date', NEW.date, 'details', NEW.details,
    'observedBy', json(NEW.observedBy), 'wikipediaLink', NEW.wikipediaLink, 'image', NEW.image));
END;
CREATE TRIGGER holiday_deleted AFTER DELETE ON holiday BEGIN
  INSERT INTO history (at, id, kind, origin, by, data) VALUES (strftime('%Y-%m-%dT%H:%M:%fZ'), OLD.id, 'deleted',
    'local', 'bench@host', NULL);
END;
"""

# The plain table: the floor of what the records alone take in SQLite.
SQLITE_PLAIN_SCHEMA = """CREATE TABLE holiday (id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, date TEXT NOT NULL,
  details TEXT, observedBy TEXT, wikipediaLink TEXT, image TEXT);
"""


def sqlite_import_script(schema, data):
    """A sqlite3 script: the schema, then the JSONL imported in one transaction."""
    return f""".bail on
.mode list
.separator "\\037" "\\n"
{schema}
BEGIN;
CREATE TEMP TABLE raw (line TEXT);
.import '{data}' raw
INSERT INTO holiday (id, name, date, details, observedBy, wikipediaLink, image)
  SELECT json_extract(line, '$.id'), json_extract(line, '$.name'), json_extract(line, '$.date'),
  json_extract(line, '$.details'), json_extract(line, '$.observedBy'), json_extract(line, '$.wikipediaLink'),
  json_extract(line, '$.image') FROM raw;
COMMIT;
PRAGMA wal_checkpoint(TRUNCATE);
"""


def disk_bytes(path):
    """Bytes a file or a directory's files take on disk (allocated blocks), and their apparent size."""
    path = Path(path)
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_blocks * 512 for p in files), sum(p.stat().st_size for p in files)


def lmdb_free_bytes(path):
    """Bytes of an LMDB environment's pages that are free (kept in its file for later transactions); 0 if not one."""
    if not (Path(path) / "data.mdb").exists():
        return 0
    out = run_quiet(["mdb_stat", "-ef", str(path)]).stdout.decode()
    size = re.search(r"Page size: (\d+)", out)
    free = re.search(r"Free pages: (\d+)", out)
    return int(size.group(1)) * int(free.group(1)) if size and free else 0


# --------------------------------------------------------------------------- Kinto

class Kinto:
    """A throwaway Kinto server on PostgreSQL, started with Tools/kinto (stopped by stop())."""

    def __init__(self, port, workdir):
        self.port = port
        self.state = REPO / ".tools" / f"kinto-{port}"
        # Where Tools/bench's EXIT trap looks (whatever --workdir is).
        self.marker = REPO / ".tools" / "bench" / f"kinto-{port}.started"
        self.url = self.auth_file = None
        self.started = False
        self.seeded = {}

    def start(self):
        run_quiet([KINTO, "stop", "--port", self.port], check=False)
        self.marker.parent.mkdir(parents=True, exist_ok=True)
        self.marker.write_text(str(os.getpid()))   # Tools/bench's trap stops the server if we die
        self.started = True
        t0 = time.perf_counter()
        # Kinto's stock 4 request threads, made safe by the SERIALIZABLE isolation Tools/kinto
        # --postgres sets (docs/server.md): case 10 has concurrent writers.
        r = run_quiet([KINTO, "start", "--postgres", "--threads", "4", "--port", self.port])
        self.url, auth = r.stdout.decode().split("\n")[:2]
        self.auth_file = Path(auth)
        user, password = self.auth_file.read_text().strip().split(":", 1)
        self.user = user
        self._authz = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        self._curl_cfg = ('user = "%s"\n' % f"{user}:{password}".replace("\\", "\\\\").replace('"', '\\"')).encode()
        log(f"Kinto on PostgreSQL at {self.url} (started in {time.perf_counter() - t0:.1f} s)")

    def stop(self):
        if self.started:
            run_quiet([KINTO, "stop", "--port", self.port], check=False)
            self.started = False
            log(f"stopped Kinto on port {self.port}")
        self.marker.unlink(missing_ok=True)

    def curl_config(self):
        """curl -K - config (stdin) carrying the credentials: never on a command line."""
        return self._curl_cfg

    def request(self, method, path, body=None, headers=None):
        url = path if path.startswith("http") else self.url + path
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Authorization", self._authz)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                raw = r.read()
                return r.status, dict(r.headers), json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, dict(e.headers), json.loads(raw) if raw else None
            except ValueError:
                return e.code, dict(e.headers), None

    def create(self, bucket, *collections):
        for path in [f"/buckets/{bucket}"] + [f"/buckets/{bucket}/collections/{c}" for c in collections]:
            st, _, body = self.request("PUT", path, {"data": {}}, {"If-None-Match": "*"})
            if st not in (200, 201, 412):
                raise CommandFailed(f"PUT {path}: HTTP {st} {body}")

    def count(self, bucket, collection):
        st, headers, _ = self.request("HEAD", f"/buckets/{bucket}/collections/{collection}/records")
        if st != 200:
            raise CommandFailed(f"HEAD records of {bucket}/{collection}: HTTP {st}")
        return int({k.lower(): v for k, v in headers.items()}["total-records"])

    def etag(self, bucket, collection):
        st, headers, _ = self.request("GET", f"/buckets/{bucket}/collections/{collection}/records?_limit=1")
        if st != 200:
            raise CommandFailed(f"GET records of {bucket}/{collection}: HTTP {st}")
        return {k.lower(): v for k, v in headers.items()}["etag"].strip('"')

    def records(self, bucket, collection):
        """Every record of a collection (following Next-Page)."""
        out, url = [], f"/buckets/{bucket}/collections/{collection}/records?_limit=1000"
        while url:
            st, headers, body = self.request("GET", url)
            if st != 200:
                raise CommandFailed(f"GET records of {bucket}/{collection}: HTTP {st}")
            out += body["data"]
            url = {k.lower(): v for k, v in headers.items()}.get("next-page")
        return out

    def requests_logged(self):
        """Requests Kinto has answered so far: its log's request.summary lines."""
        with open(self.state / "kinto.log", errors="replace") as f:
            return sum('"request.summary"' in line for line in f)

    def pg_connect(self):
        import psycopg2
        url = None
        for line in (self.state / "kinto.ini").read_text().splitlines():
            if line.strip().startswith("kinto.storage_url"):
                url = line.split("=", 1)[1].strip()
        if not url or not url.startswith("postgresql"):
            raise CommandFailed(f"no PostgreSQL storage_url in {self.state}/kinto.ini")
        return psycopg2.connect(url)

    def seed(self, bucket, collection, jsonl, n, also_empty=("birthdays",)):
        """Loads the first n records of jsonl straight into Kinto's PostgreSQL `objects` table.

        The bucket and collections are created through the HTTP API first (so they have
        their permissions: the account owns the bucket, and bucket write implies reading
        every record, so the records need no ACL rows of their own). Each record gets a
        distinct last_modified, one millisecond apart and all in the past, in file order:
        Kinto's `_sort=last_modified` pagination (and its unique index on
        (parent_id, resource_name, last_modified)) needs them distinct. The
        bump_timestamp trigger would only rewrite a NULL or a repeated value, so it is
        disabled for the bulk INSERT (in the same transaction: other sessions never see
        it disabled). The collection's cached timestamp row is dropped so Kinto derives
        the collection ETag from the records.
        """
        if self.seeded.get((bucket, collection)) == n:
            return
        if (bucket, collection) in self.seeded:
            raise CommandFailed(f"{bucket}/{collection} already holds {self.seeded[bucket, collection]} records")
        t0 = time.perf_counter()
        self.create(bucket, collection, *also_empty)
        parent = f"/buckets/{bucket}/collections/{collection}"
        base_ms = int(time.time() * 1000) - n - 60_000
        tsv = jsonl.parent / f"seed-{bucket}-{collection}.tsv"
        with open(jsonl) as src, open(tsv, "w") as dst:
            for i, line in enumerate(src):
                if i >= n:
                    break
                rec = json.loads(line)
                rid = rec.pop("id")
                data = json.dumps(rec, ensure_ascii=False, separators=(",", ":"))
                data = data.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
                dst.write(f"{rid}\t{base_ms + i}\t{data}\n")
        conn = self.pg_connect()
        try:
            with conn:
                with conn.cursor() as cur:
                    cur.execute("SET TIME ZONE 'UTC'")
                    cur.execute("CREATE TEMP TABLE bench_seed (id TEXT, ms BIGINT, data TEXT) ON COMMIT DROP")
                    with open(tsv) as f:
                        cur.copy_expert("COPY bench_seed (id, ms, data) FROM STDIN", f)
                    cur.execute("ALTER TABLE objects DISABLE TRIGGER tgr_objects_last_modified")
                    cur.execute(
                        "INSERT INTO objects (id, parent_id, resource_name, last_modified, data, deleted) "
                        "SELECT id, %s, 'record', TIMESTAMP '1970-01-01' + ms * INTERVAL '1 millisecond', "
                        "data::jsonb, FALSE FROM bench_seed", (parent,))
                    inserted = cur.rowcount
                    cur.execute("ALTER TABLE objects ENABLE TRIGGER tgr_objects_last_modified")
                    cur.execute("DELETE FROM timestamps WHERE parent_id = %s AND resource_name = 'record'", (parent,))
                    cur.execute("SELECT count(*), count(DISTINCT last_modified), min(as_epoch(last_modified)), "
                                "max(as_epoch(last_modified)) FROM objects "
                                "WHERE parent_id = %s AND resource_name = 'record'", (parent,))
                    total, distinct, lo, hi = cur.fetchone()
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute("VACUUM ANALYZE objects")   # hint bits + planner statistics, so run 1 is not penalised
        finally:
            conn.close()
        tsv.unlink()
        if not (inserted == total == distinct == n and lo == base_ms and hi == base_ms + n - 1):
            raise CommandFailed(f"seeding {parent}: inserted {inserted}, total {total}, distinct timestamps "
                                f"{distinct}, range {lo}..{hi} (wanted {n} from {base_ms})")
        # Check Kinto itself sees them, with the pagination evsync uses.
        if self.count(bucket, collection) != n:
            raise CommandFailed(f"Kinto counts {self.count(bucket, collection)} records in {parent}, not {n}")
        st, headers, body = self.request("GET", f"{parent}/records?_sort=last_modified&_limit=2")
        headers = {k.lower(): v for k, v in headers.items()}
        if st != 200 or len(body["data"]) != min(2, n) or body["data"][0]["last_modified"] != base_ms \
                or (n > 2 and "next-page" not in headers):
            raise CommandFailed(f"listing the seeded {parent}: HTTP {st}, headers {headers}")
        if n > 2:
            st, _, body2 = self.request("GET", headers["next-page"])
            if st != 200 or [r["last_modified"] for r in body2["data"]] != [base_ms + 2, base_ms + 3][:n - 2]:
                raise CommandFailed(f"following Next-Page of the seeded {parent}: HTTP {st}")
        self.seeded[bucket, collection] = n
        log(f"seeded {fmt_n(n)} records into {parent} via PostgreSQL COPY in {time.perf_counter() - t0:.1f} s")

    def edit_all(self, bucket, collection, round_, skip=()):
        """Changes `details` of every record of the collection but those in `skip`, straight in PostgreSQL,
        with a new last_modified each (distinct, after every earlier one, one millisecond apart): what
        another device editing every record once looks like to a pull."""
        parent = f"/buckets/{bucket}/collections/{collection}"
        conn = self.pg_connect()
        try:
            with conn:
                with conn.cursor() as cur:
                    cur.execute("SELECT max(as_epoch(last_modified)) FROM objects WHERE parent_id = %s", (parent,))
                    start = max(cur.fetchone()[0] + 1, int(time.time() * 1000) - 3_600_000)
                    cur.execute("ALTER TABLE objects DISABLE TRIGGER tgr_objects_last_modified")
                    cur.execute(
                        "UPDATE objects o SET data = jsonb_set(o.data, '{details}', to_jsonb(%s || (o.data->>'details'))), "
                        "last_modified = TIMESTAMP '1970-01-01' + (%s + n.i) * INTERVAL '1 millisecond' "
                        "FROM (SELECT id, row_number() OVER (ORDER BY last_modified) - 1 AS i FROM objects "
                        "      WHERE parent_id = %s AND resource_name = 'record' AND NOT deleted "
                        "      AND NOT (id = ANY(%s))) n "
                        "WHERE o.id = n.id AND o.parent_id = %s AND o.resource_name = 'record'",
                        (f"edit {round_}: ", start, parent, list(skip), parent))
                    edited = cur.rowcount
                    cur.execute("ALTER TABLE objects ENABLE TRIGGER tgr_objects_last_modified")
                    cur.execute("DELETE FROM timestamps WHERE parent_id = %s AND resource_name = 'record'", (parent,))
        finally:
            conn.close()
        return edited


# The transport floor of a pull: curl, one process per page, following Next-Page.
# Credentials go to curl as a -K config on stdin (a here-string), never on argv.
CURL_PULL_LOOP = r'''
set -euo pipefail
auth_file=$1; shift
auth=; IFS= read -r auth <"$auth_file" || true
auth=${auth//\\/\\\\}; auth=${auth//\"/\\\"}
cfg="user = \"$auth\""
hdr=$(mktemp)
pages=0
for url in "$@"; do
  while [[ -n $url ]]; do
    curl -sS --fail -K - -D "$hdr" -o /dev/null "$url" <<<"$cfg"
    pages=$((pages + 1))
    url=
    while IFS= read -r line; do
      line=${line%$'\r'}
      case ${line,,} in next-page:*) url=${line#*:}; url=${url# } ;; esac
    done <"$hdr"
  done
done
rm -f "$hdr"
echo "$pages"
'''


# --------------------------------------------------------------------------- the benchmark

class Bench:
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

    # ---- case 1
    def case_import(self):
        n = self.a.import_records
        title = f"1. import {fmt_n(n)} Holiday records"
        log(title)
        data = dataset(self.datadir, n)
        store = self.work / f"log-{n}"
        dump = self.work / "events.dump"
        env_dir = self.work / "mdb-load-env"
        db = self.work / "holiday.sqlite"
        script = self.work / "sqlite-import.sql"
        script.write_text(f""".bail on
.mode list
.separator "\\037" "\\n"
BEGIN;
CREATE TABLE holiday (id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, date TEXT NOT NULL,
  details TEXT, observedBy TEXT, wikipediaLink TEXT, image TEXT, sync_status TEXT NOT NULL);
CREATE TEMP TABLE raw (line TEXT);
.import '{data}' raw
INSERT INTO holiday SELECT json_extract(line, '$.id'), json_extract(line, '$.name'),
  json_extract(line, '$.date'), json_extract(line, '$.details'), json_extract(line, '$.observedBy'),
  json_extract(line, '$.wikipediaLink'), json_extract(line, '$.image'), 'pending' FROM raw;
COMMIT;
""")
        ev = Series("evsync import", f"evsync import Holiday FILE ({fmt_n(n)} lines, fresh store)")
        ml = Series("mdb_load", "mdb_load -s events -f DUMP NEWENV (the events db of an evsync store "
                    "of the same data, from mdb_dump -s events; fresh env)")
        mn = Series("mdb_load, fsync off", "eatmydata mdb_load -s events -f DUMP NEWENV (the same, with "
                    "fsync/fdatasync made no-ops by libeatmydata: the write floor without mdb_load's "
                    "commit every 100 records)")
        sq = Series("sqlite3", "sqlite3 DB <script: BEGIN; .import the JSONL as one text column into a TEMP "
                    "table; INSERT INTO holiday SELECT json_extract(...)..., 'pending'; COMMIT (fresh DB)")
        audit_db = self.work / "holiday-audit.sqlite"
        audit_script = self.work / "sqlite-audit-import.sql"
        audit_script.write_text(sqlite_import_script(SQLITE_AUDIT_SCHEMA, data))
        sa = Series("sqlite3 + audit triggers", "sqlite3 DB <script: WAL; the holiday table and a history(seq, at, "
                    "id, kind, origin, by, data) table indexed on id, filled by AFTER INSERT/UPDATE/DELETE triggers; "
                    "BEGIN; .import into a TEMP table; INSERT INTO holiday SELECT json_extract(...); COMMIT (fresh DB)")

        def run_evsync(r):
            self.fresh(store)
            self.log_stores.pop(n, None)
            self.measure(f"run {r + 1} evsync import", ev, self.ev(store, "import", "Holiday", data),
                         check=lambda s: None if s.stdout.startswith(f"imported {n} ") else "unexpected output")
            self.log_stores[n] = store
            if not dump.exists():
                with open(dump, "wb") as f:
                    subprocess.run(["mdb_dump", "-s", "events", str(store)], stdout=f, check=True)
                self.notes.append(f"mdb_load input: `mdb_dump -s events` of an evsync store of the same "
                                  f"{fmt_n(n)} lines ({dump.stat().st_size / 1048576:.0f} MiB of dump text).")

        def run_mdb_load(r):
            self.fresh(env_dir).mkdir(parents=True)

            def check(s):
                out = run_quiet(["mdb_stat", "-s", "events", env_dir]).stdout.decode()
                return None if f"Entries: {n}\n" in out else f"mdb_stat says {out!r}"
            self.measure(f"run {r + 1} mdb_load", ml, ["mdb_load", "-s", "events", "-f", dump, env_dir],
                         check=check if r == 0 else None)

        def run_mdb_load_nosync(r):
            self.fresh(env_dir).mkdir(parents=True)
            self.measure(f"run {r + 1} eatmydata mdb_load", mn,
                         ["eatmydata", "mdb_load", "-s", "events", "-f", dump, env_dir])

        def run_sqlite(r):
            db.unlink(missing_ok=True)

            def check(s):
                got = run_quiet(["sqlite3", db, "SELECT count(*) FROM holiday WHERE sync_status = 'pending'"]).stdout
                return None if got.decode().strip() == str(n) else f"sqlite3 has {got!r} rows"
            self.measure(f"run {r + 1} sqlite3", sq, ["sqlite3", db], stdin_path=script,
                         check=check if r == 0 else None)

        def run_sqlite_audit(r):
            for f in (audit_db, Path(f"{audit_db}-wal"), Path(f"{audit_db}-shm")):
                f.unlink(missing_ok=True)

            def check(s):
                got = run_quiet(["sqlite3", audit_db, "SELECT count(*) FROM holiday; SELECT count(*) FROM history"]).stdout
                return None if got.decode().split() == [str(n), str(n)] else f"sqlite3 has {got!r} rows"
            self.measure(f"run {r + 1} sqlite3 + audit", sa, ["sqlite3", audit_db], stdin_path=audit_script,
                         check=check if r == 0 else None)

        self.rounds(self.a.runs, [run_evsync, run_mdb_load, run_mdb_load_nosync, run_sqlite, run_sqlite_audit])
        self.rows += [Row(1, title, ev, ml), Row(1, title, ev, mn), Row(1, title, ev, sq), Row(1, title, ev, sa)]
        self.series.update(import_ev=ev, import_mdb=ml, import_mdb_nosync=mn, import_sqlite=sq, import_audit=sa)
        for f in (audit_db, Path(f"{audit_db}-wal"), Path(f"{audit_db}-shm")):
            f.unlink(missing_ok=True)
        self.fresh(env_dir)
        db.unlink(missing_ok=True)
        dump.unlink(missing_ok=True)

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

    # ---- case 10
    def case_many(self):
        """20 stores, overlapping edits, all syncing at once against Kinto on PostgreSQL (SERIALIZABLE)."""
        n, shared, own = self.a.many_stores, 50, 5
        title = f"10. {n} stores syncing one bucket at once"
        log(title)
        k = self.need_kinto()
        bucket = f"many{int(time.time())}"
        remote = f"{k.url}/buckets/{bucket}"
        root = self.fresh(self.work / "many-stores")
        stores = [root / f"s{i:02d}" for i in range(n)]

        def sync(i):
            t0 = time.perf_counter()
            r = run_quiet(self.ev(stores[i], "sync", "--remote", remote, "--auth-file", k.auth_file, "--json"), check=False)
            return r.returncode, time.perf_counter() - t0, r.stderr.decode(errors="replace").strip()[-300:]

        for j in range(shared):
            run_quiet(self.ev(stores[0], "add", "Holiday", "--id", f"s{j:02d}", f"name=Shared {j}", "date=2026-01-01"))
        if sync(0)[0] != 0:
            raise CommandFailed("case 10: the first store's sync failed")
        with ThreadPoolExecutor(n) as pool:
            list(pool.map(sync, range(1, n)))
        edits = {}
        for i in range(n):
            for j in range(own):
                run_quiet(self.ev(stores[i], "add", "Holiday", "--id", f"c{i:02d}-{j}", f"name=Created by {i}",
                                  "date=2026-02-02"))
                target = f"s{(i * 3 + j) % shared:02d}"      # neighbours overlap on three records
                run_quiet(self.ev(stores[i], "edit", "Holiday", target, f"details=edited by {i}"))
                edits.setdefault(target, set()).add(f"edited by {i}")
        requests_before = k.requests_logged()
        t0 = time.perf_counter()
        with ThreadPoolExecutor(n) as pool:
            results = list(pool.map(sync, range(n)))
        wall = time.perf_counter() - t0
        requests = k.requests_logged() - requests_before
        failed = [r for r in results if r[0] != 0]
        times = sorted(r[1] for r in results)
        for _ in range(2):                       # settle what the conflicts merged
            for i in range(n):
                sync(i)
        server = {r["id"]: {f: v for f, v in r.items() if f not in ("id", "last_modified")}
                  for r in k.records(bucket, "holidays")}
        equal = 0
        for i in range(n):
            items = json.loads(run_quiet(self.ev(stores[i], "list", "Holiday", "--json")).stdout)
            ids = [x["id"] for x in items]
            local = {x["id"]: {f: v for f, v in x.items() if f != "id"} for x in items}
            equal += local == server and len(ids) == len(set(ids))
        creates = sum(f"c{i:02d}-{j}" in server for i in range(n) for j in range(own))
        kept_edits = sum(server.get(t, {}).get("details") in made for t, made in edits.items())
        writes = n * own * 2
        ok = not failed and equal == n and creates == n * own and kept_edits == len(edits) and len(server) == shared + n * own
        detail = (f"{n - len(failed)}/{n} syncs finished; {equal}/{n} stores equal to the server; "
                  f"{creates}/{n * own} creates and {kept_edits}/{len(edits)} edited records kept; "
                  f"{len(server)} records on the server (expected {shared + n * own}); wall {wall:.1f} s "
                  f"(median sync {statistics.median(times):.1f} s, slowest {times[-1]:.1f} s); "
                  f"{writes} writes, {writes / wall:.1f} writes/s, {requests} requests, {requests / wall:.1f} requests/s")
        log(f"  {detail}")
        for r in failed[:3]:
            log(f"  failed: {r[2]}")
        self.more_targets.append((f"{n} stores with overlapping edits syncing at once converge, nothing lost", 
                                  "PASS" if ok else "FAIL", detail))
        self.notes.append(f"many devices: Kinto on PostgreSQL, SERIALIZABLE, 4 request threads (Tools/kinto --postgres); "
                          f"store 0 creates {shared} shared records, all pull them, then each store creates {own} "
                          f"records and edits {own} shared ones (store i edits shared records 3i…3i+{own - 1} mod "
                          f"{shared}: neighbours overlap), and all {n} sync at once; two sequential rounds settle "
                          f"the merges. Requests counted from Kinto's log.")
        shutil.rmtree(root, ignore_errors=True)

    # ---- case 11
    def case_propagation(self):
        """An edit on one store appears on another, both on `evsync sync --watch 1`."""
        edits = self.a.propagation_edits
        title = f"11. propagation of {edits} edits between two stores on sync --watch 1"
        log(title)
        k = self.need_kinto()
        bucket = f"prop{int(time.time())}"
        remote = f"{k.url}/buckets/{bucket}"
        root = self.fresh(self.work / "propagation")
        a, b = root / "a", root / "b"
        run_quiet(self.ev(a, "add", "Holiday", "--id", "p", "name=start", "date=2026-01-01"))
        for store in (a, b):
            run_quiet(self.ev(store, "sync", "--remote", remote, "--auth-file", k.auth_file))
        watchers = [subprocess.Popen(self.ev(store, "sync", "--watch", "1", "--remote", remote, "--auth-file",
                                             k.auth_file, "--json"), stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, start_new_session=True) for store in (a, b)]
        _live.extend(watchers)
        # When each watcher finishes a sync (one JSON line each): B's ticks are 1 s apart, start to start.
        # A's syncs that pushed something time A's part of the propagation.
        finished = [[], []]
        pushes = []

        def follow(w, times):
            for line in w.stdout:
                times.append(time.perf_counter())
                if w is watchers[0] and json.loads(line).get("pushed", 0) > 0:
                    pushes.append(times[-1])
        readers = [threading.Thread(target=follow, args=(w, t), daemon=True) for w, t in zip(watchers, finished)]
        for r in readers:
            r.start()
        latencies = []
        edited = []
        try:
            for e in range(edits):
                # B's last sync has just brought the previous edit: a wait of 0-1 s puts this one at a uniformly
                # random phase of B's 1 s ticks (A pushes on the edit itself).
                time.sleep(random.uniform(0, 1))
                t0 = time.perf_counter()
                edited.append(t0)
                run_quiet(self.ev(a, "edit", "Holiday", "p", f"name=edit {e}"))
                while True:
                    shown = run_quiet(self.ev(b, "show", "Holiday", "p", "--json"), check=False)
                    if shown.returncode == 0 and json.loads(shown.stdout).get("name") == f"edit {e}":
                        break
                    if time.perf_counter() - t0 > 30:
                        raise CommandFailed(f"case 11: edit {e} did not reach the second store in 30 s")
                    time.sleep(0.02)
                latencies.append(time.perf_counter() - t0)
        finally:
            for w in watchers:
                w.terminate()
                w.wait()
                _live.remove(w)
        latencies.sort()
        cycles = [statistics.median([t1 - t0 for t0, t1 in zip(t, t[1:])]) if len(t) > 2 else float("nan")
                  for t in finished]
        median = statistics.median(latencies)
        pushed_after = [next((t - t0 for t in pushes if t > t0), float("nan")) for t0 in edited]
        push_median = statistics.median(pushed_after) if pushed_after else float("nan")
        p99 = latencies[min(len(latencies) - 1, math.ceil(0.99 * len(latencies)) - 1)]
        detail = (f"median {median:.2f} s, p99 {p99:.2f} s, slowest {latencies[-1]:.2f} s, fastest "
                  f"{latencies[0]:.2f} s over {edits} edits (needs median ≤ 0.8 s, p99 ≤ 1.6 s); median time "
                  f"between syncs A {cycles[0]:.2f} s (its ticks and its edits), B {cycles[1]:.2f} s (its ticks); A's "
                  f"sync pushing the edit ended a median {push_median:.2f} s after the edit started")
        log(f"  {detail}")
        self.more_targets.append(("propagation between two stores on sync --watch 1", 
                                  "PASS" if median <= 0.8 and p99 <= 1.6 else "FAIL", detail))
        self.notes.append("propagation: from the `evsync edit` on store A returning to `evsync show` on store B "
                          "(polled every 20 ms) printing the new value; both stores run `evsync sync --watch 1`; "
                          "each edit waits 0–1 s first, so that it falls at a uniformly random phase of B's ticks. "
                          "Where the time goes: A's watcher sees the edit in its log (`Store.logChanges`), waits "
                          "the 20 ms debounce and pushes it in a sync of its own; B pulls it at its next tick "
                          "(on average half a second away, at most 1 s): about half a tick plus the debounce, "
                          "a push and a pull.")
        shutil.rmtree(root, ignore_errors=True)

    # ---- case 13
    def case_library(self):
        """Issue 24's numbers: Tools/LibraryBench runs each measurement in a process of its own, evsync's
        library (Store, write, observe) or SQLite's C API (WAL, a table per entity, a history table filled by
        triggers), interleaved; each prints what it measured as JSON."""
        log("12. the library an app embeds, against SQLite's C API")
        if not LIBRARY_BENCH.exists():
            raise CommandFailed(f"{LIBRARY_BENCH} missing: run Tools/bench (it builds it)")
        quick = self.a.quick
        root = self.fresh(self.work / "library")
        count = [0]

        def run(side, case, *extra):
            count[0] += 1
            where = root / f"{side}-{case}-{count[0]}"
            os.sync()      # no run pays for the previous one's writeback
            out = run_quiet([str(LIBRARY_BENCH), side, case, str(where), *map(str, extra)]).stdout.decode()
            shutil.rmtree(where, ignore_errors=True)
            return json.loads(out)

        def pair(case, key, *extra, sides=("evsync", "sqlite"), runs=None):
            """The median of `key` over the runs of each side, interleaved; and every result."""
            results = {side: [] for side in sides}

            def one(side):
                def go(r):
                    result = run(side, case, *extra)
                    results[side].append(result)
                    log(f"  run {r + 1} {side} {case} {' '.join(map(str, extra))}: "
                        + ", ".join(f"{k} {v:.6g}" if isinstance(v, float) else f"{k} {v}" for k, v in result.items()))
                return go
            self.rounds(runs or self.a.runs, [one(side) for side in sides])
            return [statistics.median(r[key] for r in results[side]) for side in sides], results

        def add(what, ours, peer, unit, target, ok):
            self.library.append((what, ours, peer, unit, target, "PASS" if ok else ("FAIL" if ok is not None else "—")))

        n = 1_000 if quick else 10_000
        # The floor under a durable single write is LMDB's commit without LMDB: the bytes a record add writes,
        # flushed, then a meta page written and flushed (Tools/flush-floor), measured in the same rounds.
        probe = run("evsync", "single", "--n", 1_000)
        page_bytes = max(4096, int(probe["bytes_per_write"]) - 4096)
        floor_results = []

        def floor(r):
            where = self.fresh(self.work / "flush-floor")
            os.sync()
            out = run_quiet([str(REPO / "Tools" / "flush-floor"), str(where), "--n", str(n), "--pattern", "lmdb",
                             "--pages-bytes", str(page_bytes), "--json"]).stdout.decode()
            shutil.rmtree(where, ignore_errors=True)
            floor_results.append(json.loads(out))
            log(f"  run {r + 1} floor single --n {n}: seconds {floor_results[-1]['seconds']:.6g}")
        results = {"evsync": [], "sqlite": []}

        def side(name):
            def go(r):
                results[name].append(run(name, "single", "--n", n))
                log(f"  run {r + 1} {name} single --n {n}: seconds {results[name][-1]['seconds']:.6g}")
            return go
        self.rounds(self.a.runs, [floor, side("evsync"), side("sqlite")])
        ev = statistics.median(r["seconds"] for r in results["evsync"])
        sq = statistics.median(r["seconds"] for r in results["sqlite"])
        fl = statistics.median(r["seconds"] for r in floor_results)
        written = statistics.median(r["bytes_per_write"] for r in results["evsync"])
        add(f"{fmt_n(n)} single-record writes, each its own transaction (durability .full), against the floor of two "
            f"ordered flushes of the same bytes ({written / 1024:.0f} KiB a write; SQLite synchronous=FULL beside: "
            f"{sq:.2f} s)", ev, fl, "s", "≤ 1.2× the floor", ev <= 1.2 * fl)
        (ev, sq), _ = pair("single", "seconds", "--n", n, "--durability", "normal")
        add(f"(informative) the same with durability .normal / synchronous=NORMAL", ev, sq, "s", "", None)
        m = 1_600
        (seq,), _ = pair("sequential", "seconds", "--n", m, sides=("evsync",))
        (thr,), _ = pair("threads", "seconds", "--n", m, sides=("evsync",))
        add(f"{fmt_n(m)} synchronous single adds from 16 threads through two Stores on one directory, against the same "
            f"one after another ({seq:.2f} s)", thr, None, "s", f"≤ {seq / 5:.2f} s (5× faster)", thr <= seq / 5)
        (ev, sq), _ = pair("batch", "seconds", "--n", n)
        add(f"{fmt_n(n)} records in one transaction", ev, sq, "s", "at least the peer's records/s", ev <= sq)
        (ev, sq), res = pair("concurrent", "seconds", "--n", m)
        (hev, hsq) = [statistics.median(r["heartbeat_worst_wait"] for r in res[side]) for side in ("evsync", "sqlite")]
        add(f"{fmt_n(m)} single adds from 16 concurrent tasks (async write; SQLite: one connection on a serial queue)",
            ev, sq, "s", f"≤ {seq / 5:.2f} s (5× faster than one after another)", ev <= seq / 5)
        add("worst wait of a 10 ms heartbeat task on the pool meanwhile", hev, hsq, "s", "≤ 50 ms", hev <= 0.050)
        (ev, sq), _ = pair("readid", "per_read", "--n", n)
        add(f"read one record by id (10,000 random reads among {fmt_n(n)}, each a read transaction)", ev, sq, "s",
            "no slower than the peer", ev <= sq)
        (ev, sq), _ = pair("read100", "per_read", "--n", n)
        add(f"a `read` of 100 records by id from one snapshot (1,000 of them; SQLite: BEGIN … COMMIT)", ev, sq, "s",
            "no slower than the peer", ev <= sq)
        commits = 100 if quick else 200
        (ev, sq), res = pair("observe", "median", "--n", commits)
        (pev, psq) = [statistics.median(r["p99"] for r in res[side]) for side in ("evsync", "sqlite")]
        add(f"in-process commit → observer, median over {commits} commits (SQLite: sqlite3_commit_hook → callback)",
            ev, sq, "s", "≤ 1 ms", ev <= 0.001)
        add("in-process commit → observer, 99th percentile", pev, psq, "s", "≤ 5 ms", pev <= 0.005)
        (ev,), res = pair("crossprocess", "median", "--n", 100, sides=("evsync",))
        pxp = statistics.median(r["p99"] for r in res["evsync"])
        add("another process's commit → observer, median over 100 commits (p99 "
            f"{pxp * 1000:.1f} ms; SQLite has no cross-process notification: an app polls)", ev, None, "s", "≤ 20 ms",
            ev <= 0.020)
        idle = 10 if quick else 60
        (ev,), _ = pair("idle", "cpu", "--seconds", idle, sides=("evsync",), runs=1)
        add(f"CPU of an observing app left idle for {idle} s", ev, None, "s",
            "< 0.1 s over 60 s" + (" (quick: a shorter run)" if quick else ""), ev < 0.1 * idle / 60)
        self.notes.append("library (case 13): Tools/LibraryBench (its own Swift package, built release) runs each "
                          "measurement as a process of its own, interleaved with its peer, and reports the time it "
                          "measured itself (CLOCK_MONOTONIC), opening the store or database outside it. Records are "
                          "the app's typed Holiday (id, name, date as a Date, details); the SQLite side binds and "
                          "reads the same fields as columns and parses the date the same way. SQLite runs in WAL "
                          "mode with a history table filled by AFTER INSERT/UPDATE/DELETE triggers. Observer "
                          "latency is from the write call returning to the observer task seeing the record "
                          "(0 when it saw it before the call returned); the other process's commit time is the "
                          "writer's own clock reading after its add returned (CLOCK_MONOTONIC is one for all "
                          "processes). Medians over the runs.")
        shutil.rmtree(root, ignore_errors=True)

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

    def measure_first_pull(self, label, series, store, remote, n, k):
        """One first pull of n records into a fresh store, its memory sampled (cases 7 and 12)."""
        self.fresh(store)

        def check(s):
            out = json.loads(s.stdout)
            return None if out.get("pulled") == n else f"sync said {out}"
        self.measure(label, series, self.ev(store, "sync", "--remote", remote, "--auth-file", k.auth_file, "--json"),
                     check=check, sample_anon=True)

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

    # ---- case 8
    def case_footprint(self):
        n = self.a.footprint_records
        log(f"8. bytes on disk for {fmt_n(n)} Holiday records, then after 3 edits of each")
        data = dataset(self.datadir, n)
        store = self.fresh(self.work / "footprint-import")
        audit, plain = self.work / "footprint-audit.sqlite", self.work / "footprint-plain.sqlite"
        for db in (audit, plain):
            db.unlink(missing_ok=True)

        def note(what, path):
            on_disk, apparent = disk_bytes(path)
            free = lmdb_free_bytes(path)
            if free:
                what += f" (of which LMDB's free pages: {free / n:,.0f} B a record)"
            self.footprint.append((what, n, on_disk, apparent))
            log(f"  {what}: {fmt_mib(on_disk)} on disk, {on_disk / n:,.0f} B a record")

        note("the JSON Lines input", data)
        run_quiet(self.ev(store, "import", "Holiday", data))
        note("evsync store after `import` (log + views)", store)
        for db, schema in ((audit, SQLITE_AUDIT_SCHEMA), (plain, SQLITE_PLAIN_SCHEMA)):
            script = self.work / "footprint.sql"
            script.write_text(sqlite_import_script(schema, data))
            with open(script, "rb") as f:
                run_quiet(["sqlite3", db], stdin_bytes=f.read())
        note("SQLite with audit triggers (WAL, checkpointed)", audit)
        note("plain SQLite table", plain)
        shutil.rmtree(store, ignore_errors=True)

        # The edits come from another device through the server: the CLI edits one record per
        # process, and 3 × 100,000 processes would take most of an hour. A pulled edit is an
        # `updated` event with the fields that changed and the server's version, as a local one is.
        k = self.need_kinto()
        k.seed("footprint", "holidays", data, n)
        remote = f"{k.url}/buckets/footprint"
        pulled = self.fresh(self.work / "footprint-pulled")
        sync = self.ev(pulled, "sync", "--remote", remote, "--auth-file", k.auth_file, "--json")
        run_quiet(sync)
        note("evsync store after a first pull of the same records", pulled)
        for round_ in (1, 2, 3):
            if k.edit_all("footprint", "holidays", round_) != n:
                raise CommandFailed(f"edit round {round_} did not change {n} records on the server")
            out = json.loads(run_quiet(sync).stdout)
            if out.get("pulled") != n:
                raise CommandFailed(f"edit round {round_}: sync said {out}")
        note("evsync store after 3 edits of every record (pulled)", pulled)
        edits = "".join(f"BEGIN; UPDATE holiday SET details = 'edit {r}: ' || details; COMMIT;\n" for r in (1, 2, 3))
        run_quiet(["sqlite3", audit], stdin_bytes=(edits + "PRAGMA wal_checkpoint(TRUNCATE);\n").encode())
        note("SQLite with audit triggers after 3 edits of every record", audit)
        plain.unlink(missing_ok=True)
        self.edited = (pulled, audit)

    # ---- case 9
    def case_reads(self):
        if not self.edited:
            self.case_footprint()
        store, audit = self.edited
        n = self.a.footprint_records
        rid = nth_id(dataset(self.datadir, n), n // 2)
        assert all(c in "0123456789abcdef-" for c in rid)   # a UUID of our own data set, safe in SQL text
        runs = self.a.runs * 5
        title = f"9. list all {fmt_n(n)} records as JSON, each edited 3 times"
        ev = Series("evsync list --json", "evsync list Holiday --json > /dev/null")
        sq = Series("sqlite3 + audit: SELECT all", "sqlite3 -json DB 'SELECT * FROM holiday ORDER BY id' > /dev/null")
        self.rounds(self.a.runs, [
            lambda r: self.measure(f"run {r + 1} evsync list", ev, ["bash", "-c", 'exec "$@" >/dev/null', "list",
                                                                   *map(str, self.ev(store, "list", "Holiday", "--json"))]),
            lambda r: self.measure(f"run {r + 1} sqlite3 select", sq, ["bash", "-c", 'exec "$@" >/dev/null', "select",
                                                                      "sqlite3", "-json", str(audit),
                                                                      "SELECT * FROM holiday ORDER BY id"]),
        ])
        self.rows.append(Row(9, title, ev, sq))
        title = f"9. history of one record (4 events) among {fmt_n(n)} records"
        eh = Series("evsync history", "evsync history ID")
        sh = Series("sqlite3 + audit: history", "sqlite3 DB \"SELECT * FROM history WHERE id = 'ID' ORDER BY seq\"")

        def four(s):
            return None if s.stdout.count("\n") >= 4 else "fewer than 4 history lines"
        self.rounds(runs, [
            lambda r: self.measure(f"run {r + 1} evsync history", eh, self.ev(store, "history", rid), check=four),
            lambda r: self.measure(f"run {r + 1} sqlite3 history", sh,
                                   ["sqlite3", audit, f"SELECT * FROM history WHERE id = '{rid}' ORDER BY seq"],
                                   check=four),
        ])
        self.rows.append(Row(9, title, eh, sh))
        self.series.update(list_ev=ev, list_audit=sq, history_ev=eh, history_audit=sh)

    # ---- case 14
    def case_compaction(self):
        n, changes = self.a.compact_records, 10
        local = max(1, min(1_000, n // 100))
        title = f"14. log compact, {fmt_n(n)} records changed {changes} times each"
        log(title)
        k = self.need_kinto()
        data = dataset(self.datadir, n)
        ids = [json.loads(line)["id"] for line in data.read_text().splitlines()[:n]]
        bucket = f"compact-{int(time.time())}"
        k.seed(bucket, "holidays", data, n)
        remote = f"{k.url}/buckets/{bucket}"
        store = self.fresh(self.work / "compact-store")
        sync = self.ev(store, "sync", "--remote", remote, "--auth-file", k.auth_file, "--json")

        # The store, built untimed: a first pull, then ten rounds that change every record once. Most
        # changes come from another device (straight in PostgreSQL, as in case 8: 1.1 million edits through
        # Kinto's API would take hours at its 70-90 writes a second). In round 5, `local` records are edited
        # here, with `evsync edit`, and pushed, instead of on the server.
        t0 = time.perf_counter()
        run_quiet(sync)
        for round_ in range(1, changes + 1):
            mine = ids[:local] if round_ == 5 else []
            for rid in mine:
                run_quiet(self.ev(store, "edit", "Holiday", rid, f"details=local edit {round_}"))
            if k.edit_all(bucket, "holidays", round_, skip=mine) != n - len(mine):
                raise CommandFailed(f"case 14: edit round {round_} did not change {n - len(mine)} records on the server")
            out = json.loads(run_quiet(sync).stdout)
            if out.get("pulled") != n - len(mine) or out.get("pushed") != len(mine):
                raise CommandFailed(f"case 14: edit round {round_}: sync said {out}")
        before = json.loads(run_quiet(self.ev(store, "status", "--json")).stdout)
        last = before["events"]
        log(f"built a store of {fmt_n(last)} events ({fmt_n(local)} of the changes local) in "
            f"{time.perf_counter() - t0:.0f} s (untimed)")

        rid = ids[n // 2]
        runs = self.a.runs * 5
        history_before = Series("history, before", "evsync history ID (before the compaction)")
        history_after = Series("history, after", "evsync history ID (after it, its archive present)")

        def history(series, at, label):
            def eleven(s):
                entries = sum(line.startswith("#") for line in s.stdout.splitlines())
                return None if entries == changes + 1 else f"{entries} history entries, not {changes + 1}"
            return lambda r: self.measure(f"run {r + 1} history ({label})", series, self.ev(at, "history", rid), check=eleven)

        # Each compaction runs on a copy of the store; the rebuilds on the store itself, interleaved.
        copy = self.work / "compact-copy"
        rebuild = Series("evsync rebuild-views", f"evsync rebuild-views ({fmt_n(last)} events)")
        compact = Series("evsync log compact", f"evsync log compact --before {last} --json (a copy of the store)")
        report = {}

        def run_rebuild(r):
            self.measure(f"run {r + 1} rebuild-views", rebuild, self.ev(store, "rebuild-views"),
                         check=lambda s: None if f"from {last} events" in s.stdout else "unexpected output")

        def run_compact(r):
            self.fresh(copy)
            shutil.copytree(store, copy)

            def check(s):
                report.update(json.loads(s.stdout))
                if report.get("records", 0) < n - 1 or "heldOpenBy" in report.get("dataFile", {"heldOpenBy": None}):
                    return f"compact said {report}"
                return None
            self.measure(f"run {r + 1} log compact", compact, self.ev(copy, "log", "compact", "--before", last, "--json"),
                         check=check)

        self.rounds(self.a.runs, [run_rebuild, run_compact])
        # Before (the store) and after (the last compacted copy), interleaved.
        self.rounds(runs, [history(history_before, store, "before"), history(history_after, copy, "after")])
        self.rows += [Row(14, f"{title}: compaction vs rebuild-views", compact, rebuild),
                      Row(14, f"{title}: history of one record, after vs before", history_after, history_before)]

        # Local adds while one more compaction runs (not timed: the adds share the 2 cores with it).
        failed = []

        def add_walls(at, count=None, until=None, pause=0.02):
            walls = []
            while (count is not None and len(walls) < count) or (until is not None and not until.is_set()):
                t = time.perf_counter()
                r = run_quiet(self.ev(at, "add", "Holiday", "name=Added meanwhile", "date=2026-12-03"), check=False)
                walls.append(time.perf_counter() - t)
                if r.returncode != 0:
                    failed.append(r.stderr.decode(errors="replace").strip())
                time.sleep(pause)
            return walls
        busy = self.fresh(self.work / "compact-busy")
        shutil.copytree(store, busy)
        idle = add_walls(busy, count=30)
        done, during = threading.Event(), []
        adder = threading.Thread(target=lambda: during.extend(add_walls(busy, until=done)))
        adder.start()
        try:
            out = json.loads(run_quiet(self.ev(busy, "log", "compact", "--before", last, "--json")).stdout)
        finally:
            done.set()
            adder.join()
        typical = statistics.median(idle)
        during = during or [0.0]
        wait = max(during) - typical
        log(f"  {len(during)} adds during a compaction: slowest {fmt_t(max(during))}, an add alone "
            f"{fmt_t(typical)} (median of {len(idle)}); the data file {'was left as it was' if 'heldOpenBy' in out.get('dataFile', {}) else 'shrank'}")

        # The sizes: a store that imported the same records (as they are now) once, and SQLite with an audit
        # table holding the same history.
        once = self.fresh(self.work / "compact-once")
        run_quiet(self.ev(once, "import", "Holiday", "-"), stdin_bytes=run_quiet(self.ev(store, "list", "Holiday", "--json")).stdout)
        audit = self.work / "compact-audit.sqlite"
        audit.unlink(missing_ok=True)
        script = self.work / "compact.sql"
        script.write_text(sqlite_import_script(SQLITE_AUDIT_SCHEMA, data))
        with open(script, "rb") as f:
            run_quiet(["sqlite3", audit], stdin_bytes=f.read())
        edits = "".join(f"BEGIN; UPDATE holiday SET details = 'edit {r}: ' || details; COMMIT;\n" for r in range(1, changes + 1))
        run_quiet(["sqlite3", audit], stdin_bytes=(edits + "PRAGMA wal_checkpoint(TRUNCATE);\n").encode())
        compacted_file = disk_bytes(copy / "data.mdb")[0]
        once_file = disk_bytes(once / "data.mdb")[0]
        archive = disk_bytes(copy / "archive")[0]
        archived_live = before["liveBytes"] * report["archivedEvents"] / before["liveEvents"]
        wal = Path(str(audit) + "-wal")
        whole, peer = disk_bytes(copy)[0], disk_bytes(audit)[0] + (disk_bytes(wal)[0] if wal.exists() else 0)
        for what, path, records in (("evsync store before `log compact`", store, n),
                                    ("evsync store after `log compact` (data file, lock file, archive/)", copy, n),
                                    ("  of which archive/", copy / "archive", n),
                                    ("evsync store that imported the same records, as they are now, once", once, n),
                                    (f"SQLite with audit triggers after {changes} edits of every record", audit, n)):
            on_disk, apparent = disk_bytes(path)
            self.footprint.append((what, records, on_disk, apparent))

        def add(name, ok, detail):
            self.more_targets.append((name, "PASS" if ok else "FAIL", detail))
        add("compacted data file ≤ 1.3× a store that imported the records once", compacted_file <= 1.3 * once_file,
            f"{fmt_mib(compacted_file)} vs {fmt_mib(once_file)} ({compacted_file / once_file:.2f}×)")
        add("archive ≤ 1/3 of the bytes its events took in the live log", archive <= archived_live / 3,
            f"{fmt_mib(archive)} vs {fmt_mib(archived_live)} ({archive / archived_live:.2f}×)")
        add("compaction no slower than rebuild-views of the same log", compact.wall <= rebuild.wall,
            f"{fmt_t(compact.wall)} vs {fmt_t(rebuild.wall)} ({compact.wall / rebuild.wall:.2f}×)")
        add("no local add waits > 100 ms behind a compaction (nor fails)", wait <= 0.1 and not failed,
            f"slowest of {len(during)} adds {fmt_t(max(during))}, {fmt_t(wait)} more than an add alone ({fmt_t(typical)})"
            + (f"; {len(failed)} failed: {failed[0]}" if failed else ""))
        add("history with the archive present ≤ 2× before the compaction", history_after.wall <= 2 * history_before.wall,
            f"{fmt_t(history_after.wall)} vs {fmt_t(history_before.wall)} ({history_after.wall / history_before.wall:.2f}×)")
        add("compacted store and archive in fewer bytes than SQLite with an audit table", whole < peer,
            f"{fmt_mib(whole)} vs {fmt_mib(peer)} ({whole / peer:.2f}×)")
        self.notes.append(f"compaction (case 14): {fmt_n(n)} records, {fmt_n(last)} events: a first pull, then {changes} "
                          f"rounds each changing every record once; {fmt_n(local)} changes of round 5 made here with "
                          f"`evsync edit` and pushed, the rest made in Kinto's PostgreSQL and pulled. `--before {last}`: "
                          f"every event but the last moves. The archive's share of the live log is the events tree's "
                          f"bytes before (`status --json` liveBytes) × archived/live events. SQLite's audit table keeps "
                          f"a whole row per change, evsync's log the fields that changed.")
        for path in (store, copy, busy, once):
            self.fresh(path)
        for f in (audit, script):
            f.unlink(missing_ok=True)

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
               "13 the library against SQLite's C API, 14 log compact. Defaults: " + ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in
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
             (12, b.case_wide), (13, b.case_library), (14, b.case_compaction)]
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


if __name__ == "__main__":
    main()
