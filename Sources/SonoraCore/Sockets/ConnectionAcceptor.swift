import CSonoraSystem

#if canImport(Glibc)
import Glibc
#endif

/// Takes a listening socket's waiting connections for a `poll` loop, each non-blocking and
/// close-on-exec, without ever letting the loop spin.
///
/// When the process is out of descriptors (`EMFILE`, `ENFILE`), `accept` fails but the
/// connection stays queued, so the listener stays readable: polling it again at once
/// returns at once, for as long as the shortage lasts — a loop at 100 % CPU. The caller
/// either makes room (closes a client of its own) and accepts again, or `pause`s: the
/// listener is then left out of the poll set for a moment.
public struct ConnectionAcceptor {
    public enum Outcome: Equatable {
        /// A new connection (non-blocking, close-on-exec), the caller's to close.
        case connection(Int32)
        /// No connection is waiting (or the listener failed): poll again.
        case drained
        /// A connection is waiting but the process has no descriptor left for it.
        case outOfDescriptors
    }

    public let listener: Int32
    /// How long `pause()` leaves the listener out.
    public let pauseSeconds: Double
    /// Host seconds until which the listener is not polled (0: it is).
    public private(set) var pausedUntil = 0.0

    public init(listener: Int32, pauseSeconds: Double = 0.1) {
        self.listener = listener
        self.pauseSeconds = pauseSeconds
    }

    /// What to put in the poll set for the listener at `now` (host seconds): the listener,
    /// or −1 (skipped by `poll`) while paused.
    public func pollDescriptor(now: Double) -> Int32 { now >= pausedUntil ? listener : -1 }

    /// Milliseconds until the pause ends (the longest the loop may sleep so that it looks at
    /// the listener again), or nil when not paused.
    public func millisecondsToResume(now: Double) -> Int32? {
        guard now < pausedUntil else { return nil }
        return Int32(((pausedUntil - now) * 1000).rounded(.up))
    }

    /// Accepts one waiting connection.
    public func accept() -> Outcome {
        while true {
            let fd = sonora_accept_nonblocking(listener)
            if fd >= 0 { return .connection(fd) }
            switch errno {
            case EINTR, ECONNABORTED: continue
            case EMFILE, ENFILE: return .outOfDescriptors
            default: return .drained
            }
        }
    }

    /// Leaves the listener out of the poll set for `pauseSeconds` from `now`.
    public mutating func pause(now: Double) { pausedUntil = now + pauseSeconds }
}
