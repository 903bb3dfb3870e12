"""Benchmark driver for evsync (run it through Tools/bench, which installs what it needs, then runs this package).

Each case times an evsync command and, in the same run and interleaved with it, an
alternative that does the same work (or the floor of that work): for every command the
wall time, the client's CPU time (user+sys of the child process and everything it waited
for, from wait4's rusage) and its peak RSS (ru_maxrss; for a pipeline, the sum over its
stages). The table gives medians with min-max, and the ratio evsync/alternative of the
median wall times. See `Tools/bench --help` and the notes written with the results.

Layout: common (paths, sizes, titles, notes), measure (running and measuring a command), table (series, rows,
formatting), fixtures (datasets, SQLite peers), kinto_server (the throwaway Kinto), runner (the Bench: state,
helpers, targets, report), cases/caseNN_* (one module per case, a mixin of the Bench), main (the command line),
kinto_http_client (the kinto-http side, run as a script by the venv's Python).
"""
