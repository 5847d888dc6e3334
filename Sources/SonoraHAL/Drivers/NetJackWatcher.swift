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

    init(label: String, monitor: DeviceMonitor, logger: Logger, lostCycles: @escaping @Sendable () -> Int, recoveries: @escaping @Sendable () -> Int) {
        self.label = label
        self.monitor = monitor
        self.logger = logger
        self.lostCycles = lostCycles
        self.recoveries = recoveries
    }

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
                if poll(&descriptor, 1, Self.intervalMilliseconds) > 0 { _ = sonora_eventfd_drain(wake) }
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
