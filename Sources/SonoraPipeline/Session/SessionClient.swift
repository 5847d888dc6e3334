/// One attached client as the policy sees it: its session (role, category, options, active)
/// and what other sessions currently do to its audio.
public struct SessionClient: Sendable, Equatable {
    public var pid: Int32
    public var name: String
    /// The role of its last activation (nil: none named and its category maps to none).
    public var role: String?
    /// The category of its last activation (nil: never activated).
    public var category: SessionCategory?
    public var options: SessionOptions = []
    public var active = false
    /// Active sessions that interrupt it, in the order they did; it resumes when this empties.
    /// Kept when it deactivates itself: it is still told when the interruption ends.
    public var interruptedBy: [Int32] = []
    /// Active sessions that duck it, each with its depth; the deepest applies.
    public var duckedBy: [Int32: Double] = [:]

    public init(pid: Int32, name: String) {
        self.pid = pid
        self.name = name
    }

    public var isInterrupted: Bool { !interruptedBy.isEmpty }

    /// The duck that applies (the deepest), nil when none.
    public var duckDB: Double? { duckedBy.values.min() }

    /// Whether its session plays beside others (ambient, audioProcessing, or mixWithOthers/duckOthers).
    public var isMixable: Bool {
        guard let category else { return true }
        return category.alwaysMixes || !options.isDisjoint(with: [.mixWithOthers, .duckOthers])
    }

    /// The linear gain its streams should have now.
    public var gain: Float {
        if isInterrupted { return 0 }
        guard let duckDB else { return 1 }
        return Float(SessionPolicy.linearGain(decibels: duckDB))
    }

    /// Who it is, for refusal messages.
    public var holder: SessionHolder { SessionHolder(pid: pid, name: name, role: role) }
}
