"""The data the cases work on (generated holidays, wide records) and the SQLite peers' schemas."""

import calendar
import datetime as dt
import json
import random
import re
import time
import uuid
from pathlib import Path

from .common import DATASET_VERSION, REPO, fmt_n, log
from .measure import run_quiet


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
