/// An interruption of the session (kAudioSessionBeginInterruption / EndInterruption).
public enum AudioSessionInterruption: Sendable, Hashable {
    /// Another, more important session took the device, or the device went away: the
    /// session's participants have paused (queues, players, recorders), stopped (units,
    /// graphs) or gone silent (system sounds).
    case began
    /// The interruption is over; `shouldResume`: the program may play again (players and
    /// queues paused by the interruption have resumed on their own).
    case ended(shouldResume: Bool)
}

/// A notice that the session's audio is lowered (another session ducks it) or restored.
/// The appliance applies the gain itself; this only tells the program.
public struct AudioSessionDuck: Sendable, Hashable {
    /// The gain the session's audio is at, dB (0 when restored).
    public var gainDB: Double
    /// Whether the duck is on now.
    public var isActive: Bool

    public init(gainDB: Double, isActive: Bool) {
        self.gainDB = gainDB
        self.isActive = isActive
    }
}

/// Everything the session tells its listeners, in the order it happened.
public enum AudioSessionEvent: Sendable, Hashable {
    case interruption(AudioSessionInterruption)
    case routeChange(AudioSessionRouteChange)
    case duck(AudioSessionDuck)
}
