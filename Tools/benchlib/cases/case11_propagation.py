"""Tools/bench case 11: propagation between two stores on sync --watch 1, edits at random phases."""

import json
import math
import random
import shutil
import statistics
import subprocess
import threading
import time

from ..common import log
from ..measure import CommandFailed, _live, run_quiet


class PropagationCase:
    """Case 11, a mixin of Bench (runner.py): its method reads Bench's state and helpers."""

    # ---- case 11
    def case_propagation(self):
        """An edit on one store appears on another, both on `evsync sync --watch 1`."""
        edits = self.a.propagation_edits
        title = f"11. propagation of {edits} edits between two stores on sync --watch 1"
        log(title)
        k = self.need_kinto()
        _, remote = self.new_bucket("prop")
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
