extension PipelineConfiguration {
    /// The `session:` section: the appliance serves other programs' sessions and streams
    /// on a socket and applies this policy to them (SESSION.md "Session policy").
    public struct Session: Sendable {
        public static let maxClientsRange = 1...256
        public static let defaultMaxClients = 64

        /// As written (nil: the default appliance socket); `PipelineConfiguration.sessionSocketPath` is the resolved one.
        public var socketPath: String?
        /// A group that may attach too (the socket is then 0660 with that group); nil: only the appliance's user (0600).
        public var group: String?
        /// The most clients attached at once.
        public var maxClients = Session.defaultMaxClients
        /// Fade-out on interruption, fade-in on resume.
        public var fadeMilliseconds = SessionPolicy.defaultFadeMilliseconds
        /// Higher priority wins.
        public var roles: [SessionRole] = []
        /// A session's role when it names none, by its category.
        public var categoryRoles: [SessionCategory: String] = [:]
        public var location: SourceLocation?
        public var socketLocation: SourceLocation?
        public var groupLocation: SourceLocation?

        public init() {}
    }

    /// The session socket's path, resolved against the config's folder (nil: not written;
    /// the appliance then uses its default path).
    public var sessionSocketPath: String? { session?.socketPath.map(resolvedPath) }
}
