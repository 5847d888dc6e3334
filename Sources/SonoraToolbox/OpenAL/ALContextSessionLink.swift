import SonoraCore

/// What a context registers with its audio session, which holds participants weakly: a weak
/// reference to the context itself would give it a side table (then every retain and release
/// of the context, one per API call, takes the runtime's slow path). The link holds the
/// context strongly until `ALContext.destroy` cuts it; the device holds the context until
/// then anyway, so no lifetime changes.
final class ALContextSessionLink: AudioSessionParticipant, @unchecked Sendable {
    private let context: ControlLock<ALContext?>

    init(_ context: ALContext) {
        self.context = ControlLock(context)
    }

    /// The context is destroyed: the session reaches it no more.
    func cut() { context.withLock { $0 = nil } }

    func audioSessionInterruptionBegan() {
        context.withLock { $0 }?.audioSessionInterruptionBegan()
    }

    func audioSessionInterruptionEnded(shouldResume: Bool) {
        context.withLock { $0 }?.audioSessionInterruptionEnded(shouldResume: shouldResume)
    }
}
