/// The control socket's protocol: one JSON object per line each way (requests decoded
/// into `ControlRequest`, answers encoded from `ControlResponse`). A request may carry
/// `"version": N`; a version the server does not speak is refused, never guessed at.
public enum ControlProtocol {
    /// The protocol version this server speaks (and the `version` command reports).
    public static let version = 1
    /// The versions a request may name.
    public static let supportedVersions = [1]
    /// Sonora's release, reported by the `version` command.
    public static let sonoraVersion = "0.1.0"
    /// The longest request line the server reads (bytes, without the newline).
    public static let maximumRequestBytes = 64 * 1024
    /// The longest answer the server builds; a bigger one becomes a `too-long` error, so a
    /// client's output buffer stays bounded.
    public static let maximumResponseBytes = 1024 * 1024

    /// "; did you mean 'x'?" for the closest of `candidates`, or nothing (for clients'
    /// own messages, with the same rule as the server's).
    public static func suggestion(for word: String, in candidates: [String]) -> String {
        SonoraPipeline.suggestion(for: String(word.prefix(64)), in: candidates)
    }
}
