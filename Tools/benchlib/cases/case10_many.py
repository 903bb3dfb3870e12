"""Tools/bench case 10: many devices: 20 stores syncing one bucket at once."""

import json
import shutil
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from ..common import log
from ..measure import CommandFailed, run_quiet


class ManyDevicesCase:
    """Case 10, a mixin of Bench (runner.py): its method reads Bench's state and helpers."""

    # ---- case 10
    def case_many(self):
        """20 stores, overlapping edits, all syncing at once against Kinto on PostgreSQL (SERIALIZABLE)."""
        n, shared, own = self.a.many_stores, 50, 5
        title = f"10. {n} stores syncing one bucket at once"
        log(title)
        k = self.need_kinto()
        bucket, remote = self.new_bucket("many")
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
