import SonoraCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What every driver's start and stop share: the running flag, the realtime I/O thread,
/// the event monitor — and, for drivers that need one, a normal-priority control thread
/// for work that must not run on the I/O thread (re-opening a vanished device). The I/O
/// thread wakes it with `requestControl()`, a semaphore post: no allocation, no lock.
final class DeviceRunner: @unchecked Sendable {
    let monitor = DeviceMonitor()
    private let running = Atomic<Bool>(false)
    private var ioThread: RealtimeThread?
    private var controlThread: RealtimeThread?
    private let wake: UnsafeMutablePointer<sem_t>

    init() {
        wake = .allocate(capacity: 1)
        sem_init(wake, 0, 0)
    }

    deinit {
        stop()
        sem_destroy(wake)
        wake.deallocate()
    }

    var isRunning: Bool { running.load(ordering: .relaxed) }

    /// Starts `ioLoop` on a thread named `name` — SCHED_FIFO at the configured priority
    /// when `realtime` — and `control`, if given, on a normal-priority thread. Both run
    /// until `stop()`; they poll `isRunning` (the control thread through
    /// `waitForControlRequest()`).
    func start(
        name: String, configuration: AudioDeviceConfiguration, realtime: Bool = true,
        ioLoop: @escaping @Sendable () -> Void, control: (@Sendable () -> Void)? = nil
    ) throws(AudioError) {
        guard !isRunning else { throw AudioError(.illegalOperation, "device is already running") }
        if configuration.locksMemory { RealtimeThread.lockMemory() }
        running.store(true, ordering: .releasing)
        do {
            if let control {
                controlThread = try RealtimeThread(RealtimeThreadOptions(name: "\(name)-ctl", priority: nil, flushDenormals: false), body: control)
            }
            ioThread = try RealtimeThread(
                RealtimeThreadOptions(name: name, priority: realtime ? configuration.realtimePriority : nil, cpu: configuration.cpu),
                body: ioLoop)
        } catch {
            running.store(false, ordering: .releasing)
            stopControl()
            throw error
        }
    }

    /// Stops and joins both threads. Returns false when the device was not running.
    @discardableResult
    func stop() -> Bool {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return false }
        ioThread?.join()
        ioThread = nil
        stopControl()
        return true
    }

    private func stopControl() {
        sem_post(wake)
        controlThread?.join()
        controlThread = nil
        while sem_trywait(wake) == 0 {}
    }

    /// From the I/O thread: wakes the control thread.
    @inline(__always)
    func requestControl() { sem_post(wake) }

    /// On the control thread: waits for a request; false once the device is stopping.
    func waitForControlRequest() -> Bool {
        while sem_wait(wake) != 0 && errno == EINTR {}
        return isRunning
    }

    /// On the control thread: how every driver gets back what vanished (a PCM, a server, a
    /// socket). Calls `attempt` after 50 ms, then with the wait doubling to 2 s, until it
    /// succeeds (the number of attempts made) or the device stops (nil); `attempt` is given
    /// its number. Sleeps in 10 ms steps so a stop is not held up by a long wait.
    func retryWithBackOff(_ attempt: (_ number: Int32) -> Bool) -> Int32? {
        var delay: UInt32 = 50_000
        var attempts: Int32 = 0
        while isRunning {
            var slept: UInt32 = 0
            while slept < delay && isRunning {
                usleep(10_000)
                slept += 10_000
            }
            guard isRunning else { return nil }
            attempts += 1
            if attempt(attempts) { return attempts }
            delay = min(delay * 2, 2_000_000)
        }
        return nil
    }
}
