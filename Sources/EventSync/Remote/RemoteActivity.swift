/// What a remote reports while it works, for someone watching: each request
/// and its answer (`sync -v`), each wait before trying one again (`retrying in
/// 2 s, 2/5` on a terminal). Never credentials: a request is named by its
/// method and URL, and a remote URL never holds any.
public enum RemoteActivity: Sendable, Equatable {
    /// A request and the status it was answered with; `status` nil when no answer came (`failure` says why).
    case request(method: String, url: String, status: Int?, failure: String?)
    /// `failure` is tried again after `delay` seconds, as attempt `attempt` of `attempts`.
    case retrying(failure: String, delay: Double, attempt: Int, attempts: Int)
}
