// The storage engine's two public types, `CrashGuard` and `StorageError`, stay where an app has always found
// them, in `import EventStore`: everything else of the `Storage` target is the package's own (`package`).
@_exported public import Storage
