import Foundation
import Testing
import EventStore

/// `evsync sync` picks the adapter from the remote URL, or from `--remote-type`
/// / `EVSYNC_REMOTE_TYPE` where the URL cannot tell. No server needed: port 1
/// on 127.0.0.1 refuses every connection.
@Suite("CLI remote choice")
struct RemoteChoiceTests {
    static let bucket = "http://127.0.0.1:1/v1/buckets/x"
    static let notABucket = "http://127.0.0.1:1/v1/collections/x"

    @Test("refused with 64 and one line naming the way out, before the store is created", arguments: [
        // A URL no adapter recognises, and no type.
        (["sync", "--remote", notABucket], [:], ["--remote-type TYPE", "EVSYNC_REMOTE_TYPE", "kinto"]),
        (["sync"], ["EVSYNC_REMOTE": "http://127.0.0.1:1/"], ["--remote-type TYPE", "EVSYNC_REMOTE_TYPE", "kinto"]),
        // An unknown type, from the flag or the environment, even with a Kinto URL.
        (["sync", "--remote", notABucket, "--remote-type", "couchdb"], [:], ["'couchdb'", "--remote-type", "known types: kinto"]),
        (["sync", "--remote", bucket, "--remote-type=couchdb"], [:], ["'couchdb'", "known types: kinto"]),
        (["sync", "--remote", bucket], ["EVSYNC_REMOTE_TYPE": "couchdb"], ["'couchdb'", "EVSYNC_REMOTE_TYPE", "known types: kinto"]),
        // A given type sends any URL to its adapter, which refuses it in its own words.
        (["sync", "--remote", notABucket, "--remote-type", "kinto"], [:], ["must end in /buckets/<bucket id>"]),
        (["sync", "--remote", notABucket], ["EVSYNC_REMOTE_TYPE": "kinto"], ["must end in /buckets/<bucket id>"]),
        (["sync", "--remote", "ftp://127.0.0.1/v1/buckets/x"], [:], ["http(s)"]),
        // The flag wins over the environment.
        (["sync", "--remote", notABucket, "--remote-type", "kinto"], ["EVSYNC_REMOTE_TYPE": "couchdb"], ["must end in /buckets/<bucket id>"]),
        (["sync", "--remote-type"], [:], ["--remote-type needs a value"]),
        // DAV: credentials over plain http only to this machine; an http(s) URL only.
        (["sync", "--protocol", "dav", "--remote", "http://dav.example.com/"], ["EVSYNC_AUTH": "u:p"], ["refusing to send credentials unencrypted"]),
        (["sync", "--remote", "dav+http://dav.example.com/"], ["EVSYNC_AUTH": "u:p"], ["refusing to send credentials unencrypted"]),
        (["sync", "--protocol", "dav", "--remote", "ftp://127.0.0.1/"], [:], ["CalDAV/CardDAV"]),
    ] as [([String], [String: String], [String])])
    func refused(arguments: [String], environment: [String: String], mentions: [String]) throws {
        try withSandbox { sandbox in
            let result = try sandbox.run(arguments, environment: environment)
            #expect(result.status == Exit.usage, "\(result)")
            #expect(result.stderr.hasPrefix("evsync: ") && result.stderr.split(separator: "\n").count == 1, "\(result)")
            for mention in mentions { #expect(result.stderr.contains(mention), "\(mention): \(result)") }
            #expect(!FileManager.default.fileExists(atPath: sandbox.store.path), "a refused remote creates no store")
        }
    }

    @Test("credentials in a remote URL are refused without being echoed, whatever the URL's shape", arguments: [
        "http://me:S3cret-pw@127.0.0.1:1/v1/collections/x",
        "http://me:S3cret-pw@127.0.0.1:1/v1/buckets/x",
        "ftp://me:S3cret-pw@127.0.0.1/anything",
    ])
    func credentialsInURL(url: String) throws {
        try withSandbox { sandbox in
            let result = try sandbox.run(["sync", "--remote", url])
            #expect(result.status == Exit.usage, "\(result)")
            #expect(result.stderr == "evsync: put credentials in EVSYNC_AUTH or --auth-file, not in the remote URL\n", "\(result)")
            #expect(!result.stdout.contains("S3cret") && !result.stderr.contains("S3cret"))
        }
    }

    @Test("a bucket URL goes to Kinto, with or without the type (the server is then unreachable: 69)", arguments: [
        (["sync", "--remote", bucket], [:]),
        (["sync", "--remote", bucket, "--remote-type", "kinto"], [:]),
        (["sync", "--remote", bucket], ["EVSYNC_REMOTE_TYPE": "kinto"]),
        (["sync", "--remote", bucket + "/", "--remote-type", "KINTO"], [:]),
        (["sync"], ["EVSYNC_REMOTE": bucket]),
    ] as [([String], [String: String])])
    func kinto(arguments: [String], environment: [String: String]) throws {
        try withSandbox { sandbox in
            let result = try sandbox.run(arguments, environment: environment.merging(["EVSYNC_RETRIES": "1"]) { $1 })
            #expect(result.status == 69, "\(result)")
            #expect(result.stderr.contains("127.0.0.1:1/v1/buckets/x/"), "\(result)")
        }
    }

    @Test("a remembered remote is chosen the same way")
    func remembered() throws {
        try withSandbox { sandbox in
            // A failed sync remembers nothing (a mistyped remote must not stick); `evsync remote` sets it.
            _ = try sandbox.run(["sync", "--remote", Self.bucket], environment: ["EVSYNC_RETRIES": "1"])
            #expect(try sandbox.status()["remote"] == .null)
            try sandbox.succeed(["remote", Self.bucket])
            #expect(try sandbox.status()["remote"]?.stringValue == Self.bucket)
            let again = try sandbox.run(["sync"], environment: ["EVSYNC_RETRIES": "1"])
            #expect(again.status == 69, "\(again)")
            let unknown = try sandbox.run(["sync"], environment: ["EVSYNC_REMOTE_TYPE": "couchdb"])
            #expect(unknown.status == Exit.usage && unknown.stderr.contains("known types: kinto"), "\(unknown)")
        }
    }

    @Test("evsync remote sets a Parse server without its keys, which only a sync needs")
    func parseRemoteWithoutKeys() throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["remote", "parse+http://127.0.0.1:1337/parse/"])
            #expect(try sandbox.succeed(["remote", "--json"]).json() == ["remote": "parse+http://127.0.0.1:1337/parse", "type": "parse"])
        }
    }

    @Test("a value of EVSYNC_ALLOW_INSECURE_AUTH or EVSYNC_RETRIES evsync cannot use is refused by sync and verify alike",
          arguments: [["sync", "--remote", bucket], ["verify", "--remote"]])
    func badVariablesRefused(command: [String]) throws {
        try withSandbox { sandbox in
            try sandbox.succeed(["add", "Holiday", "name=Day", "date=2026-01-01"])
            for (name, value, says) in [("EVSYNC_ALLOW_INSECURE_AUTH", "yes", "takes 1 or 0, not 'yes'"),
                                        ("EVSYNC_RETRIES", "many", "takes a whole number from 1 to 100, not 'many'")] {
                let result = try sandbox.run(command, environment: [name: value])
                #expect(result.status == Exit.usage && result.stderr == "evsync: \(name) \(says)\n", "\(command) \(name): \(result)")
            }
        }
    }

    @Test("a dav+ URL goes to CalDAV/CardDAV, and `evsync remote` remembers it with its type")
    func dav() throws {
        try withSandbox { sandbox in
            let result = try sandbox.run(["sync", "--remote", "dav+http://127.0.0.1:1/"], environment: ["EVSYNC_RETRIES": "1"])
            #expect(result.status == 69, "\(result)")
            try sandbox.succeed(["remote", "http://127.0.0.1:1/"], environment: ["EVSYNC_REMOTE_TYPE": "dav"])
            #expect(try sandbox.status()["remote"]?.stringValue == "dav+http://127.0.0.1:1/")
        }
    }
}
