import KintoAdapter
import Testing

/// `Credentials(userPassword:)` says what is wrong with text that is not `user:password`, never the text.
struct CredentialsTests {
    @Test func parsesUserAndPasswordAtTheFirstColon() throws {
        let credentials = try Credentials(userPassword: "evsync:secret:with:colons\n")
        #expect(credentials.user == "evsync")
        #expect(credentials.description == "evsync:****")
        #expect(try Credentials(userPassword: "evsync:").user == "evsync", "an empty password is the server's to refuse")
    }

    @Test func refusesTextThatIsNotUserPasswordSayingWhyWithoutQuotingIt() {
        for (text, reason) in [("evsync-local-secret", "there is no ':' between the user and the password"),
                               (":evsync-local-secret", "the user before the ':' is empty"), ("", "there is no ':' between the user and the password")] {
            let error = #expect(throws: CredentialsError.self) { try Credentials(userPassword: text) }
            #expect(error?.reason == reason)
            #expect(error?.description == "credentials must be user:password: \(reason)")
            #expect(text.isEmpty || error?.description.contains(text) == false)
        }
        // What the deprecated failable initializer gave, spelled the new way.
        #expect((try? Credentials(userPassword: "no-colon")) == nil)
    }
}
