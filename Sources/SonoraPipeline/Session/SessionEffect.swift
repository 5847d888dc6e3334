/// What a policy decision does to another client's audio, in the order it must be done.
/// Ramps are in frames at the appliance's sample rate.
public enum SessionEffect: Codable, Sendable, Equatable {
    /// Fade the client's streams out and tell it its session is interrupted.
    case interrupt(pid: Int32, fadeFrames: Int)
    /// Lower the client's streams to `gainDB` (a deeper duck with the attack ramp, a shallower one with the release ramp).
    case duck(pid: Int32, gainDB: Double, rampFrames: Int)
    /// Bring the client's streams back to full level (the duck ended).
    case restore(pid: Int32, rampFrames: Int)
    /// Nothing interrupts the client any more: fade its streams back in and tell it whether to resume.
    case resume(pid: Int32, shouldResume: Bool, fadeFrames: Int)

    /// The client the effect is about.
    public var pid: Int32 {
        switch self {
        case .interrupt(let pid, _), .duck(let pid, _, _), .restore(let pid, _), .resume(let pid, _, _): pid
        }
    }
}
