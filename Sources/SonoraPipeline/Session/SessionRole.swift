/// A role of the session policy (`session.roles` of a config): its priority (higher wins),
/// the roles it interrupts or ducks when it becomes active, how deep and how fast it ducks,
/// and whether its sessions may record.
public struct SessionRole: Codable, Sendable, Equatable {
    public static let priorityRange = 0...1000
    public static let duckRange = -96.0...0.0
    public static let rampRange = 0...10_000
    public static let defaultDuckDB = -12.0
    public static let defaultAttackMilliseconds = 50
    public static let defaultReleaseMilliseconds = 300

    public var name: String
    public var priority: Int
    /// Roles whose non-mixable sessions are interrupted (faded out, told) when this one activates.
    public var interrupts: [String]
    /// Roles whose sessions are lowered by `duckDB` while this one is active.
    public var ducks: [String]
    /// How far this role lowers what it ducks (also with the duckOthers option); below 0, at least -96.
    public var duckDB: Double
    /// Ramp time of a duck going down, and of it coming back up.
    public var attackMilliseconds: Int
    public var releaseMilliseconds: Int
    /// Whether sessions of this role may take the input (record, playAndRecord, capture streams).
    public var mayRecord: Bool

    public init(
        name: String, priority: Int, interrupts: [String] = [], ducks: [String] = [],
        duckDB: Double = SessionRole.defaultDuckDB, attackMilliseconds: Int = SessionRole.defaultAttackMilliseconds,
        releaseMilliseconds: Int = SessionRole.defaultReleaseMilliseconds, mayRecord: Bool = true
    ) {
        self.name = name
        self.priority = priority
        self.interrupts = interrupts
        self.ducks = ducks
        self.duckDB = duckDB
        self.attackMilliseconds = attackMilliseconds
        self.releaseMilliseconds = releaseMilliseconds
        self.mayRecord = mayRecord
    }
}
