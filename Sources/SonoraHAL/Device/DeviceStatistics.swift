import SonoraCore
import Synchronization

/// A snapshot of what a running device measured on its I/O thread.
public struct DeviceStatistics: Hashable, Sendable, Codable {
    public var cycles: Int
    public var captureXruns: Int
    public var playbackXruns: Int
    /// Total time spent in xruns until recovery.
    public var xrunNanoseconds: UInt64
    public var renderErrors: Int
    public var interruptions: Int
    /// Fraction of the period spent in the cycle's work (read, render, write): mean since
    /// the last `resetLoad()`, and the maximum.
    public var loadMean: Double
    public var loadMax: Double
    /// Wake-up lateness against the device clock's predicted period boundary (ns).
    public var jitterMeanNanoseconds: Double
    public var jitterMaxNanoseconds: Double
    /// Actual over nominal rate of the device clock, from the delay-locked loop.
    public var rateScalar: Double
    /// Capture-to-playback drift measured between two clocks (ppm; 0 for one clock).
    public var driftPPM: Double
    public var sampleTime: Double
    /// Capture plus playback delay ALSA last reported (`snd_pcm_delay`), when sampled.
    public var reportedDelayFrames: Int?

    public var xruns: Int { captureXruns + playbackXruns }
}

/// Counters the I/O thread updates with relaxed atomics and the control side reads.
final class DeviceMonitor: @unchecked Sendable {
    let cycles = Atomic<Int>(0)
    let captureXruns = Atomic<Int>(0)
    let playbackXruns = Atomic<Int>(0)
    let xrunNanoseconds = Atomic<UInt64>(0)
    let renderErrors = Atomic<Int>(0)
    let interruptions = Atomic<Int>(0)
    let loadSumMillionths = Atomic<Int>(0)
    let loadCount = Atomic<Int>(0)
    let loadMaxMillionths = Atomic<Int>(0)
    let jitterSumNanoseconds = Atomic<Int>(0)
    let jitterCount = Atomic<Int>(0)
    let jitterMaxNanoseconds = Atomic<Int>(0)
    let rateScalarBits = Atomic<UInt64>(1.0.bitPattern)
    let driftBits = Atomic<UInt64>(0.0.bitPattern)
    let sampleTimeBits = Atomic<UInt64>(0.0.bitPattern)
    let reportedDelay = Atomic<Int>(-1)
    let events: MessageQueue<DeviceEvent>
    /// Every wake-up's lateness since the device was made (not cleared by `resetLoad`).
    let lateness = LatenessHistogram.allocate()

    init() {
        events = try! MessageQueue(capacity: 1024)
    }

    deinit { lateness.deallocate() }

    @inline(__always) func add(_ counter: borrowing Atomic<Int>, _ value: Int = 1) {
        counter.wrappingAdd(value, ordering: .relaxed)
    }

    @inline(__always) func recordLoad(_ fraction: Double) {
        let millionths = Int(fraction * 1e6)
        loadSumMillionths.wrappingAdd(millionths, ordering: .relaxed)
        loadCount.wrappingAdd(1, ordering: .relaxed)
        if millionths > loadMaxMillionths.load(ordering: .relaxed) { loadMaxMillionths.store(millionths, ordering: .relaxed) }
    }

    @inline(__always) func recordJitter(_ nanoseconds: Int) {
        let value = max(0, nanoseconds)
        lateness.record(nanoseconds: value)
        jitterSumNanoseconds.wrappingAdd(value, ordering: .relaxed)
        jitterCount.wrappingAdd(1, ordering: .relaxed)
        if value > jitterMaxNanoseconds.load(ordering: .relaxed) { jitterMaxNanoseconds.store(value, ordering: .relaxed) }
    }

    @inline(__always) func post(_ event: DeviceEvent) {
        _ = events.push(event)
    }

    func resetLoad() {
        loadSumMillionths.store(0, ordering: .relaxed)
        loadCount.store(0, ordering: .relaxed)
        loadMaxMillionths.store(0, ordering: .relaxed)
        jitterSumNanoseconds.store(0, ordering: .relaxed)
        jitterCount.store(0, ordering: .relaxed)
        jitterMaxNanoseconds.store(0, ordering: .relaxed)
    }

    var snapshot: DeviceStatistics {
        let loads = max(1, loadCount.load(ordering: .relaxed))
        let jitters = max(1, jitterCount.load(ordering: .relaxed))
        return DeviceStatistics(
            cycles: cycles.load(ordering: .relaxed),
            captureXruns: captureXruns.load(ordering: .relaxed),
            playbackXruns: playbackXruns.load(ordering: .relaxed),
            xrunNanoseconds: xrunNanoseconds.load(ordering: .relaxed),
            renderErrors: renderErrors.load(ordering: .relaxed),
            interruptions: interruptions.load(ordering: .relaxed),
            loadMean: Double(loadSumMillionths.load(ordering: .relaxed)) / Double(loads) / 1e6,
            loadMax: Double(loadMaxMillionths.load(ordering: .relaxed)) / 1e6,
            jitterMeanNanoseconds: Double(jitterSumNanoseconds.load(ordering: .relaxed)) / Double(jitters),
            jitterMaxNanoseconds: Double(jitterMaxNanoseconds.load(ordering: .relaxed)),
            rateScalar: Double(bitPattern: rateScalarBits.load(ordering: .relaxed)),
            driftPPM: Double(bitPattern: driftBits.load(ordering: .relaxed)),
            sampleTime: Double(bitPattern: sampleTimeBits.load(ordering: .relaxed)),
            reportedDelayFrames: reportedDelay.load(ordering: .relaxed) >= 0 ? reportedDelay.load(ordering: .relaxed) : nil)
    }

    /// Events posted since the last call (control side only).
    func takeEvents() -> [DeviceEvent] {
        var taken: [DeviceEvent] = []
        while let event = events.pop() { taken.append(event) }
        return taken
    }
}
