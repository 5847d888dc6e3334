import SonoraCore

/// The policy's answer to an activation.
public enum SessionDecision: Sendable, Equatable {
    /// Active; these effects on other clients (and on the new session's own level) follow.
    case granted([SessionEffect])
    /// Not active; nothing changed.
    case refused(SessionRefusal)
}

/// Why an activation was refused: Core Audio's status code, the reason, and who holds the
/// audio when another session is the reason.
public struct SessionRefusal: Error, Sendable, Equatable {
    public var code: AudioError.Code
    public var reason: String
    public var holder: SessionHolder?

    public init(code: AudioError.Code, reason: String, holder: SessionHolder? = nil) {
        self.code = code
        self.reason = reason
        self.holder = holder
    }

    /// As the client sees it (the reply's status and text).
    public var error: AudioError { AudioError(code, reason) }
}
