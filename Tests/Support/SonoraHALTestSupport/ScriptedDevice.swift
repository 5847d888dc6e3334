import Foundation
import SonoraCore
import SonoraHAL
import SonoraTestSupport

/// An `AudioDevice` whose cycles the test drives: `start` only takes the procedure (no
/// thread), and each `run(cycles:)` runs that many periods on the caller's thread through
/// an offline or unpaced in-process `TimerDevice`, so tests of whatever drives a
/// device (I/O units, pipelines, controllers) are deterministic and need no clock.
///
/// Subclass and override `process(_:)` to script the device: change the captured input
/// before calling `super.process(_:)` (a room, a fault, a burst of noise), or look at the
/// output after it.
open class ScriptedDevice: AudioDevice, @unchecked Sendable {
    public let inner: TimerDevice
    private var procedure: IOProcedure?
    private var started = false
    private lazy var target = Target(self)
    /// Held through each cycle: `stop()` from another thread (a queue's thread stopping its
    /// unit) waits for the cycle in progress, as a real device joins its I/O thread; from
    /// inside a cycle (the same thread) it does not wait (recursive).
    private let cycleLock = NSRecursiveLock()

    /// Heap calls the started procedure made on the cycles run while `countsAllocations`
    /// was true (the device's own work is not counted).
    public private(set) var allocations = 0
    public var countsAllocations = false

    /// `latencyFrames` nil: an offline device (silence in); otherwise capture hears
    /// playback exactly that many frames later.
    public init(configuration: AudioDeviceConfiguration, inProcessLatency latencyFrames: Int? = nil) throws {
        inner = try TimerDevice(
            configuration: configuration,
            mode: latencyFrames.map { .inProcess(latencyFrames: $0, paced: false) } ?? .offline)
    }

    open var driver: String { "scripted:" + inner.driver }
    public var format: DeviceFormat { inner.format }
    public var isRunning: Bool {
        cycleLock.lock()
        defer { cycleLock.unlock() }
        return started
    }
    public func start(_ procedure: IOProcedure) throws(AudioError) {
        cycleLock.lock()
        defer { cycleLock.unlock() }
        guard !started else { throw AudioError(.illegalOperation, "device is already running") }
        self.procedure = procedure
        started = true
    }
    public func stop() {
        cycleLock.lock()
        defer { cycleLock.unlock() }
        started = false
    }
    public var statistics: DeviceStatistics { inner.statistics }
    public func takeEvents() -> [DeviceEvent] { inner.takeEvents() }
    public func resetLoad() { inner.resetLoad() }

    /// Runs `cycles` periods on the calling thread; a stopped device runs nothing (stopped
    /// during the run: silence for the rest).
    public func run(cycles: Int) throws(AudioError) {
        guard isRunning else { return }
        try inner.run(cycles: cycles, IOProcedure(target))
    }

    /// One period under the cycle lock (a stop from another thread waits for it).
    fileprivate func lockedProcess(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
        cycleLock.lock()
        defer { cycleLock.unlock() }
        return process(cycle)
    }

    /// One period: calls the started procedure. Override to script what it sees.
    /// Once stopped (say by a queue's thread, between two cycles of a run), the rest of the
    /// run plays silence and the procedure is not called: the clock goes on, the unit is left alone.
    open func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
        guard started, let procedure else {
            cycle.pointee.output.clear()
            return 0
        }
        if countsAllocations { AllocationCounter.begin() }
        let status = procedure.function(procedure.context, UnsafeMutableRawPointer(cycle))
        if countsAllocations { allocations += AllocationCounter.end() }
        return status
    }

    private final class Target: IOCycleTarget, @unchecked Sendable {
        unowned let device: ScriptedDevice
        init(_ device: ScriptedDevice) { self.device = device }
        override func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 { device.lockedProcess(cycle) }
    }
}
