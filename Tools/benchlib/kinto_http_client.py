#!/usr/bin/env python3
"""The kinto-http side of Tools/bench (tooling only; run as a script by Tools/benchlib, cases 3, 4 and 12).

    kinto_http_client.py pull --server URL --auth-file F --bucket B COLLECTION...
    kinto_http_client.py push --server URL --auth-file F --bucket B --collection C FILE.jsonl

pull: fetches every record of each collection with the official client,
      `Client.get_records(..., _sort="last_modified", _limit=PAGE, pages=inf)`,
      i.e. the same page size and order as `evsync sync`, following Next-Page.
      Prints the number of records fetched.
push: creates every line of FILE (JSON Lines, each with an "id") with
      `with client.batch() as batch: batch.create_record(id=..., data=...)`.
      kinto-http splits the batch into the server's batch_max_requests and
      sends `PUT .../records/<id>` with `If-None-Match: *` (as evsync does).
      Prints the number of records sent (any failed sub-request raises).

Credentials are read from the auth file (`user:password`), never from argv.
"""

import argparse
import json
import sys

from kinto_http import Client


def client_for(args):
    with open(args.auth_file) as f:
        user, password = f.read().strip().split(":", 1)
    return Client(server_url=args.server, auth=(user, password), bucket=args.bucket)


def pull(args):
    # get_records follows Next-Page recursively: one frame per page.
    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    client = client_for(args)
    total = 0
    for collection in args.collections:
        records = client.get_records(collection=collection, _sort="last_modified",
                                     _limit=args.page_size, pages=float("inf"))
        total += len(records)
    print(total)


def push(args):
    client = client_for(args)
    with open(args.file) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    with client.batch(collection=args.collection) as batch:
        for record in lines:
            rid = record.pop("id")
            batch.create_record(id=rid, data=record)
    # BatchSession.send raises on any 4xx/5xx sub-response, so reaching this
    # line means every create succeeded (Tools/bench also counts them).
    print(len(lines))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("pull", "push"):
        p = sub.add_parser(name)
        p.add_argument("--server", required=True)
        p.add_argument("--auth-file", required=True)
        p.add_argument("--bucket", required=True)
    p = sub.choices["pull"]
    p.add_argument("--page-size", type=int, default=1000)
    p.add_argument("collections", nargs="+")
    p = sub.choices["push"]
    p.add_argument("--collection", required=True)
    p.add_argument("file")
    args = ap.parse_args()
    {"pull": pull, "push": push}[args.cmd](args)


if __name__ == "__main__":
    main()
