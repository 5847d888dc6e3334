#if canImport(Glibc)
import Glibc
#endif
import Logging
import SonoraCore
@testable import SonoraHAL
import Synchronization
import Testing

/// The netjack watcher logs interruptions and recoveries off the I/O thread. Nudged by the
/// slave's restart callback, it sleeps through a healthy link (no wake-up a second in the
/// slave's process) and polls only while an interruption lasts.
@Suite("netjack watcher: wakes for interruptions only")
struct NetJackWatcherTests {
    final class Lines: LogHandler, @unchecked Sendable {
        let lines = Mutex<[String]>([])
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) { lines.withLock { $0.append(event.message.description) } }
        func contains(_ text: String) -> Bool { lines.withLock { $0.contains { $0.contains(text) } } }
    }

    final class Counters: Sendable {
        let lost = Atomic<Int>(0)
        let recovered = Atomic<Int>(0)
    }

    func makeWatcher(sleepsUntilNudged: Bool) -> (NetJackWatcher, DeviceMonitor, Counters, Lines) {
        let monitor = DeviceMonitor()
        let counters = Counters()
        let lines = Lines()
        let watcher = NetJackWatcher(
            label: "netjack:test", monitor: monitor, logger: Logger(label: "test") { _ in lines }, sleepsUntilNudged: sleepsUntilNudged,
            lostCycles: { counters.lost.load(ordering: .relaxed) }, recoveries: { counters.recovered.load(ordering: .relaxed) })
        return (watcher, monitor, counters, lines)
    }

    @Test("nudged: no wake-up on a healthy link; an interruption logged at once, polled until it ends, then asleep again")
    func sleepsUntilNudged() throws {
        let (watcher, monitor, counters, lines) = makeWatcher(sleepsUntilNudged: true)
        try watcher.start()
        defer { watcher.stop() }
        usleep(2_500_000)
        #expect(watcher.wakeUps.load(ordering: .relaxed) == 0)

        // What the slave's restart callback does.
        monitor.add(monitor.interruptions)
        watcher.nudge()
        #expect(waitFor(seconds: 10) { lines.contains("the master went silent") })
        // While it lasts the watcher polls (the end of an interruption is seen in a cycle, which must not signal).
        let polled = watcher.wakeUps.load(ordering: .relaxed)
        #expect(waitFor(seconds: 10) { watcher.wakeUps.load(ordering: .relaxed) >= polled + 2 })

        counters.lost.store(7, ordering: .relaxed)
        counters.recovered.store(1, ordering: .relaxed)
        #expect(waitFor(seconds: 10) { lines.contains("the master is back; 7 cycle(s) lost") })
        usleep(200_000)
        let settled = watcher.wakeUps.load(ordering: .relaxed)
        usleep(2_500_000)
        #expect(watcher.wakeUps.load(ordering: .relaxed) == settled)
    }

    @Test("not nudged (the master device): polls every interval")
    func polls() throws {
        let (watcher, _, _, _) = makeWatcher(sleepsUntilNudged: false)
        try watcher.start()
        defer { watcher.stop() }
        #expect(waitFor(seconds: 10) { watcher.wakeUps.load(ordering: .relaxed) >= 2 })
    }
}
