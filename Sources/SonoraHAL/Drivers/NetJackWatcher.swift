import CSonoraSystem
import Logging
import SonoraCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A normal-priority thread beside a netjack device that logs what the I/O side only
/// counts (interruptions, recoveries, cycles lost): logging is not allowed where they
/// are counted. It polls the counters once a second (a log line that late is soon enough;
/// each wake-up costs ~35 µs here, so at 50 ms they were ~0.5 ms of CPU per second, 2 % of
/// the slave's whole network work). Stopping wakes it at once through an eventfd.
///
/// A device that calls `nudge()` when an interruption begins (the slave: libjacknet's
/// restart callback, off the realtime path) makes it `sleepsUntilNudged`: it then sleeps
/// until nudged and polls once a second only while an interruption lasts (interruptions
/// counted > recoveries), so a healthy link costs the process no wake-up at all.
final class NetJackWatcher: @unchecked Sendable {
    private let label: String
    private let monitor: DeviceMonitor
    private let logger: Logger
    /// Reads of the device's counters (control side only).
    private let lostCycles: @Sendable () -> Int
    private let recoveries: @Sendable () -> Int
    private let running = Atomic<Bool>(false)
    private var thread: RealtimeThread?
    /// Written by `stop()` so the watcher does not sleep out its interval.
    private let wake = sonora_eventfd()
    static let intervalMilliseconds: Int32 = 1000
    /// Times it has woken (poll returned: a nudge, a stop, or the interval), for tests.
    let wakeUps = Atomic<Int>(0)
    /// Sleeps until `nudge()` while no interruption lasts (instead of polling every interval;
    /// without an eventfd it polls all the same).
    let sleepsUntilNudged: Bool

    init(
        label: String, monitor: DeviceMonitor, logger: Logger, sleepsUntilNudged: Bool = false,
        lostCycles: @escaping @Sendable () -> Int, recoveries: @escaping @Sendable () -> Int
    ) {
        self.label = label
        self.monitor = monitor
        self.logger = logger
        self.sleepsUntilNudged = sleepsUntilNudged
        self.lostCycles = lostCycles
        self.recoveries = recoveries
    }

    /// An interruption began: look at the counters now. Not for the realtime path (a
    /// syscall); the eventfd keeps a nudge that comes before the watcher sleeps.
    func nudge() {
        if wake >= 0 { sonora_eventfd_signal(wake) }
    }

    /// The eventfd `nudge()` signals (-1: none), for a caller that must not touch this object
    /// (libjacknet's restart callback: a weak or strong load there would retain it).
    var nudgeDescriptor: Int32 { wake }

    func start() throws(AudioError) {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        thread = try RealtimeThread(RealtimeThreadOptions(name: "sonora-netjack-w", priority: nil, flushDenormals: false)) { [self] in watch() }
    }

    deinit {
        if wake >= 0 { close(wake) }
    }

    func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        if wake >= 0 { sonora_eventfd_signal(wake) }
        thread?.join()
        thread = nil
        report()
    }

    private var loggedInterruptions = 0
    private var loggedRecoveries = 0

    private func watch() {
        loggedInterruptions = monitor.interruptions.load(ordering: .relaxed)
        loggedRecoveries = recoveries()
        var descriptor = pollfd(fd: wake, events: Int16(POLLIN), revents: 0)
        while running.load(ordering: .relaxed) {
            if wake >= 0 {
                // An interruption lasts while more have begun than ended: poll for its end.
                let lasting = monitor.interruptions.load(ordering: .relaxed) > recoveries()
                let timeout = sleepsUntilNudged && !lasting ? -1 : Self.intervalMilliseconds
                if poll(&descriptor, 1, timeout) > 0 { _ = sonora_eventfd_drain(wake) }
                wakeUps.wrappingAdd(1, ordering: .relaxed)
            } else {
                usleep(UInt32(Self.intervalMilliseconds) * 1000)
            }
            report()
        }
    }

    private func report() {
        let interruptions = monitor.interruptions.load(ordering: .relaxed)
        if interruptions > loggedInterruptions {
            logger.warning("\(label): the master went silent (network interrupted, \(interruptions) so far); waiting for it again")
            loggedInterruptions = interruptions
        }
        let recovered = recoveries()
        if recovered > loggedRecoveries {
            logger.notice("\(label): the master is back; \(lostCycles()) cycle(s) lost to interruptions so far")
            loggedRecoveries = recovered
        }
    }
}
