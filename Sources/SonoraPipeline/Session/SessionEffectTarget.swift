/// What the coordinator tells a client (the server sends it as an event).
public enum SessionNotice: Codable, Sendable, Equatable {
    case interruptionBegan
    case interruptionEnded(shouldResume: Bool)
    /// The client's audio is lowered to `gainDB` (`active`), or back to full level (`active: false`, 0 dB).
    case duck(gainDB: Double, active: Bool)
}

/// Where the coordinator's decisions land: the appliance's stream table (gains) and its
/// server (notices). Called with the coordinator's lock held, so calls arrive in decision
/// order; an implementation must not call back into the coordinator.
public protocol SessionEffectTarget: AnyObject, Sendable {
    /// Ramp every stream of `pid` to `gain` (linear) over `rampFrames`: fades, ducks, restores.
    func setGain(pid: Int32, gain: Float, rampFrames: Int)
    /// Tell the client `pid`.
    func deliver(_ notice: SessionNotice, toClient pid: Int32)
}
