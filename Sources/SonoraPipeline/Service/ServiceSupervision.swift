import Foundation
import SonoraCore
import SonoraHAL

/// What `sonora run` tells its supervisor (systemd, `Type=notify`) through `ServiceNotifier`:
/// `READY=1` once the I/O thread has finished its first cycle, `STATUS=` with each status
/// line, `WATCHDOG=1` while the I/O thread's cycle count advances (`ServiceWatchdog`),
/// `RELOADING=1` … `READY=1` around a reload, `STOPPING=1` when it stops. Called from the
/// runtime's control side only (its loop and the control socket's reload), never from
/// the I/O thread: it reads the device's counters, which are atomics.
final class ServiceSupervision: @unchecked Sendable {
    let notifier: ServiceNotifier
    private let lock = NSLock()
    private var watchdog: ServiceWatchdog?
    private(set) var isReady = false
    private var interrupted = false

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        notifier = ServiceNotifier(environment: environment)
        watchdog = ServiceWatchdog(environment: environment, processID: getpid(), now: HostTime.now.seconds)
    }

    var isEnabled: Bool { notifier.isEnabled }

    /// Notes interruptions from the device's events (the runtime takes and logs them).
    func saw(_ event: DeviceEvent) {
        switch event {
        case .interruptionBegan: lock.withLock { interrupted = true }
        case .interruptionEnded: lock.withLock { interrupted = false }
        default: break
        }
    }

    /// Each turn of the runtime's loop: READY once the device has cycled, then watchdog pings.
    func tick(statistics: DeviceStatistics, running: String) {
        guard notifier.isEnabled else { return }
        let now = HostTime.now.seconds
        lock.withLock {
            if !isReady && statistics.cycles > 0 {
                isReady = true
                notifier.send("READY=1", ServiceNotifier.statusLine(running))
            }
            if isReady, watchdog?.shouldPing(now: now, cycles: statistics.cycles, interrupted: interrupted) == true {
                notifier.send("WATCHDOG=1")
            }
        }
    }

    func status(_ line: String) {
        notifier.send(ServiceNotifier.statusLine(line))
    }

    /// `RELOADING=1` (with the monotonic time systemd's notify-reload wants), the reload,
    /// then `READY=1` and a status saying how it went — refused reloads keep the pipeline running.
    func reloading<T>(_ reload: () -> T, outcome: (T) -> String) -> T {
        notifier.send("RELOADING=1", ServiceNotifier.monotonicLine)
        let result = reload()
        notifier.send("READY=1", ServiceNotifier.statusLine(outcome(result)))
        return result
    }

    func stopping(_ reason: String) {
        notifier.send("STOPPING=1", ServiceNotifier.statusLine(reason))
    }
}
