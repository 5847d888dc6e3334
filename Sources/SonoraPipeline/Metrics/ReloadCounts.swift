import Synchronization

/// Reloads since the appliance started (SIGHUP and `ctl reload` alike), for `metrics`.
public final class ReloadCounts: Sendable {
    private let accepted = Atomic<Int>(0)
    private let refused = Atomic<Int>(0)

    public init() {}

    func record(accepted wasAccepted: Bool) {
        if wasAccepted { accepted.wrappingAdd(1, ordering: .relaxed) } else { refused.wrappingAdd(1, ordering: .relaxed) }
    }

    public var acceptedCount: Int { accepted.load(ordering: .relaxed) }
    public var refusedCount: Int { refused.load(ordering: .relaxed) }
}
