/// Why a control request was refused: a stable `code` scripts can test, the request field
/// at fault (when one is), and a message for people.
public struct ControlFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// Stable error codes; the raw values are part of the protocol.
    public enum Code: String, Codable, Sendable, CaseIterable {
        /// The line is not JSON.
        case malformedJSON = "malformed-json"
        /// JSON, but not a request object.
        case badRequest = "bad-request"
        /// A request line over `ControlProtocol.maximumRequestBytes`.
        case tooLong = "too-long"
        /// No complete request within the server's deadline.
        case timeout
        /// The server has no room for another client.
        case busy
        /// The request names a protocol version this server does not speak.
        case unsupportedVersion = "unsupported-version"
        case unknownCommand = "unknown-command"
        /// A field the command does not take (a typo would otherwise be ignored).
        case unknownField = "unknown-field"
        case missingField = "missing-field"
        /// A field of the wrong JSON type, or a value that cannot be used.
        case badField = "bad-field"
        case unknownNode = "unknown-node"
        case unknownParameter = "unknown-parameter"
        case unknownProperty = "unknown-property"
        case unknownPreset = "unknown-preset"
        /// An element, value or ramp outside what the target accepts.
        case outOfRange = "out-of-range"
        case readOnly = "read-only"
        /// `reload` found errors in the file; the running pipeline is unchanged.
        case reloadRefused = "reload-refused"
        /// The operation was valid but failed (a unit or the file system said no).
        case failed
    }

    public var code: Code
    /// The request field at fault ("element", "value", …), if one is.
    public var field: String?
    public var message: String
    /// For `reload-refused`: each problem in the file, with its position.
    public var diagnostics: [String]?

    public init(_ code: Code, field: String? = nil, _ message: String, diagnostics: [String]? = nil) {
        self.code = code
        self.field = field
        self.message = message
        self.diagnostics = diagnostics
    }

    public var description: String { message }
}
