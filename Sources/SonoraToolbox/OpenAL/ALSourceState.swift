/// A source's playback state (AL_SOURCE_STATE), with OpenAL 1.1's transitions:
/// play from initial/stopped starts at the beginning (or a set offset), from paused
/// resumes, from playing restarts; pause only moves playing → paused; stop moves
/// playing/paused → stopped; rewind moves any state → initial.
public enum ALSourceState: Sendable, Hashable {
    case initial, playing, paused, stopped

    /// AL_INITIAL 0x1011 … AL_STOPPED 0x1014.
    public var alValue: Int32 {
        switch self {
        case .initial: 0x1011
        case .playing: 0x1012
        case .paused: 0x1013
        case .stopped: 0x1014
        }
    }
}
