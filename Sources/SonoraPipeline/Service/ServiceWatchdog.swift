/// systemd's software watchdog for `sonora run`: with `WATCHDOG_USEC` set (and
/// `WATCHDOG_PID`, when set, naming this process) it says when to send `WATCHDOG=1` —
/// every half of the timeout, and only if the I/O thread finished cycles since the last
/// ping. A stuck I/O thread stops the pings, and systemd restarts the service. While the
/// device is in a reported interruption (vanished, being re-opened with back-off) the
/// I/O thread idles on purpose and the driver's recovery is what runs: it keeps pinging.
public struct ServiceWatchdog: Sendable {
    /// Seconds between pings: half the supervisor's timeout.
    public let interval: Double
    private var lastPing: Double
    private var lastCycles: Int

    /// Nil when no watchdog is asked for (no or invalid `WATCHDOG_USEC`, or another process's).
    public init?(environment: [String: String], processID: Int32, now: Double) {
        guard let text = environment["WATCHDOG_USEC"], let microseconds = UInt64(text), microseconds > 0 else { return nil }
        if let pid = environment["WATCHDOG_PID"], Int32(pid) != processID { return nil }
        interval = Double(microseconds) / 2e6
        lastPing = now
        lastCycles = 0
    }

    /// True when a ping is due and earned; the ping is then taken as sent.
    public mutating func shouldPing(now: Double, cycles: Int, interrupted: Bool) -> Bool {
        guard now - lastPing >= interval else { return false }
        // A device switch starts a new count: any change is progress.
        guard cycles != lastCycles || interrupted else { return false }
        lastPing = now
        lastCycles = cycles
        return true
    }
}
