/// A granted activation, as the reply to `session_activate` describes it.
public struct SessionActivation: Codable, Sendable, Equatable {
    /// The role the session got (named, or its category's), nil when none applies.
    public var role: String?
    public var priority: Int?
    public var category: SessionCategory
    /// As in force: duckOthers brings mixWithOthers.
    public var options: [String]
    /// The level the session's own audio has now (it starts ducked when an active session ducks it), dB; 0 at full level.
    public var gainDB: Double
    /// What the activation did to other clients, in the order it was done.
    public var effects: [SessionEffect]

    public init(role: String?, priority: Int?, category: SessionCategory, options: [String], gainDB: Double, effects: [SessionEffect]) {
        self.role = role
        self.priority = priority
        self.category = category
        self.options = options
        self.gainDB = gainDB
        self.effects = effects
    }
}
