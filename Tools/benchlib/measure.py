"""Running a command and measuring it: wall time, the child's CPU time (wait4's rusage) and peak RSS."""

import os
import signal
import subprocess
import threading
import time

from .common import GNU_TIME


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
