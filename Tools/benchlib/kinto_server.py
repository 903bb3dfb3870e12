"""The throwaway Kinto server on PostgreSQL the sync cases run against, and the curl floor of a pull."""

import base64
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from .common import KINTO, REPO, fmt_n, log
from .measure import CommandFailed, run_quiet


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
