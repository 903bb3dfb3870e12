import EventSync

/// The `--help` text of each command.
enum Help {
    static let version = "evsync \(EvsyncVersion.current)"

    static let overview = """
    evsync: an offline-first sync engine. Every change is an event in an append-only log;
    the tables are views of it.

    Usage: evsync [--store DIR] [--schemas DIR] <command> [arguments]

    Records:
      add <Entity> [--id ID] field=value… [field:=json…]    create a record, print its id
      edit <Entity> <id> field=value… [--unset field…]      change fields
      delete <Entity> <id>                                  delete a record
      show <Entity> <id> [--json] [--as-of SEQ|TIME]        one record, now or then
      list <Entity> [--json] [--as-of SEQ|TIME]             a table, now or then
      import <Entity> FILE|-                                JSON Lines, all or nothing
    Log:
      history <id> [--json]                                 every event of a record
      log tail [-n N] [--follow] [--json]                   the newest events
      rebuild-views [--verify]                              replay the log into the views
      status [--json]                                       counts and what is waiting to sync
    Server:
      sync [--remote URL] [--conflicts POLICY] [--json] [--watch SECONDS]

    Options:
      --store DIR      the store (or EVSYNC_STORE; default ./.evsync)
      --schemas DIR    extra entity schemas (or EVSYNC_SCHEMAS)
      --help           help for any command
      --version        print the version

    Exit codes: 0 ok, 64 bad usage, 65 bad data, 66 missing file, store or record,
    69 server unavailable, 75 sync already in progress, 77 credentials refused, 1 anything else.
    """

    static let commands: [String: String] = [
        "add": """
        Usage: evsync add <Entity> [--id ID] field=value… [field:=json…]
        Creates a record and prints its id (a new UUID unless --id is given).
        field=value sets a string; field:=json sets any JSON value (e.g. observedBy:='["US"]').
        """,
        "edit": """
        Usage: evsync edit <Entity> <id> field=value… [field:=json…] [--unset field…]
        Changes fields of a record. Nothing is written when the values are already those.
        """,
        "delete": """
        Usage: evsync delete <Entity> <id>
        Deletes a record. Its events stay in the log; `history` still shows them.
        """,
        "show": """
        Usage: evsync show <Entity> <id> [--json] [--as-of SEQ|TIME]
        Shows one record. --as-of shows it as it was after event SEQ or at an ISO 8601 time.
        """,
        "list": """
        Usage: evsync list <Entity> [--json] [--as-of SEQ|TIME]
        Lists the records of an entity as a table, or with --json as an array of objects with `id` and the fields.
        """,
        "import": """
        Usage: evsync import <Entity> FILE|-
        Imports JSON Lines (one object per line: the fields and optionally `id`) from FILE or standard input.
        The whole import is one transaction: one bad line and nothing is written; the error names the line.
        """,
        "history": """
        Usage: evsync history <id> [--json]
        Every event of the record, oldest first: when, who, from where, and what each field became.
        --json prints an array of events (seq, kind, origin, at, entity, id, set, unset, …).
        """,
        "log": """
        Usage: evsync log tail [-n N] [--follow] [--json]
        Prints the last N events (default 10), newest last. --follow keeps printing events as they are
        appended, by this or any other process. --json prints one event object per line.
        """,
        "rebuild-views": """
        Usage: evsync rebuild-views [--verify]
        Replays the whole log into fresh views and swaps them in atomically.
        --verify rebuilds aside, compares, prints every difference and exits 1 if there is one.
        """,
        "status": """
        Usage: evsync status [--json]
        Events in the log, records per entity, local changes not yet acknowledged by a server,
        the remote and the last successful sync.
        """,
        "sync": """
        Usage: evsync sync [--remote URL] [--conflicts server-wins|client-wins] [--json] [--watch SECONDS] [--auth-file FILE]
        Pulls what changed on the server, then pushes what changed here.
        The remote is a Kinto bucket URL (or EVSYNC_REMOTE), remembered once used.
        Credentials: EVSYNC_AUTH=user:password or --auth-file FILE holding user:password.
        --json prints {"result": "newData"|"noData"|"failed", "pulled", "pushed", "conflicts", …}.
        --watch SECONDS syncs again every SECONDS until interrupted.
        Exit 69 when the server cannot be reached or keeps failing, 77 when it refuses the credentials,
        75 when a sync is already running.
        """,
    ]
}
