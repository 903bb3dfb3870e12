import CLMDBGuard

/// Turns the faults a damaged data file causes in LMDB into errors: opt-in, process-wide.
///
/// LMDB trusts the pages of its map, so a page of garbage can send it outside the map
/// (SIGSEGV), past the end of the file (SIGBUS) or into an assertion. evsync makes every
/// LMDB call that reads pages under a guard; with the guard installed, such a fault during
/// one of them ends that call, and the store operation throws a `StoreError` with code
/// `.corrupt` instead of the process crashing.
///
/// ```swift
/// CrashGuard.install()    // once, early; the `evsync` command does it as it starts
/// ```
///
/// The library installs no signal handler unless asked, since a handler is the whole
/// process's. Installed, the guard keeps the app's handlers working:
/// - A SIGSEGV or SIGBUS outside evsync's guarded calls goes to the handler that was in
///   place before, called as the kernel would have called it (with the same `siginfo_t` and
///   context for an `SA_SIGINFO` handler, with its mask); `SIG_DFL` takes the default action
///   (a core dump), and `SIG_IGN` ignores a signal another process sent.
/// - A handler the app installs afterwards is found at the next transaction evsync begins:
///   the guard takes its place again and forwards to it from then on. Until then (within a
///   transaction already begun) a fault in a guarded call goes to the app's handler first.
///
/// What it cannot do: a write through a damaged page can overrun the heap before anything
/// faults (LMDB copies a page sized by its own header), and the process then aborts later.
/// Reads copy nothing and are covered. Without it, LMDB's assertions still become errors
/// (they involve no signal), but a fault crashes the process as it would without evsync.
public enum CrashGuard {
    /// Installs the guard's SIGSEGV and SIGBUS handlers, chaining to those in place. Idempotent and
    /// thread-safe: calls after the first cost an atomic load.
    public static func install() {
        evsync_mdb_guard_install()
    }

    /// Whether `install()` has run in this process (it cannot be undone).
    public static var isInstalled: Bool {
        evsync_mdb_guard_is_installed() != 0
    }
}
