"""The results: a series of samples per contender, a row per comparison, and their formatting."""

import statistics


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
