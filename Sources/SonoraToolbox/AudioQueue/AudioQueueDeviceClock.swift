import Foundation
import SonoraCore
import SonoraHAL
import Synchronization

/// A live output's clock: the render side publishes each slice's (device sample time, host
/// time) pair; the control side reads the latest pair to translate between device and host
/// time, and resolves start host times to device sample times.
///
/// Why a seqlock of atomics: the I/O thread writes four values per slice and must never
/// wait; a reader retries in the rare case a write was in progress.
final class AudioQueueDeviceClock: @unchecked Sendable {
    /// The nominal rate of the sample times (the output's client rate).
    let sampleRate: Double

    private let sequence = Atomic<Int>(0)
    private let sample = Atomic<Int>(0)
    private let host = Atomic<UInt64>(0)
    private let rateScalarBits = Atomic<UInt64>(1.0.bitPattern)
    private let frames = Atomic<Int>(0)
    private let jumps = Atomic<Int>(0)
    /// Frames the device still holds after a slice is rendered (its playback buffer), in
    /// this clock's frames: a stream's end is heard that long after it was rendered.
    private let latency = Atomic<Int>(0)

    // Render-side state.
    private var expectedSample = Int.min
    /// Start host times the render side resolved (it does when the control side had no
    /// reading yet), so the control side gives a later queue the same sample: written only
    /// by the I/O thread, host time last (0: free).
    private static let recentCount = 8
    private let recentHosts: UnsafeMutablePointer<Atomic<UInt64>>
    private let recentSamples: UnsafeMutablePointer<Atomic<Int>>
    private var recentNext = 0

    // Control side: start host times already resolved, so every queue started for the same
    // host time gets the same sample, whichever slice's reading it was converted with.
    private let lock = NSLock()
    private var resolved: [UInt64: Int] = [:]

    init(sampleRate: Double) {
        self.sampleRate = sampleRate
        recentHosts = .allocate(capacity: Self.recentCount)
        recentSamples = .allocate(capacity: Self.recentCount)
        for index in 0..<Self.recentCount {
            (recentHosts + index).initialize(to: Atomic<UInt64>(0))
            (recentSamples + index).initialize(to: Atomic<Int>(0))
        }
    }

    deinit {
        recentHosts.deinitialize(count: Self.recentCount)
        recentHosts.deallocate()
        recentSamples.deinitialize(count: Self.recentCount)
        recentSamples.deallocate()
    }

    /// Forgets every reading (control side, while the device is stopped: a device that starts
    /// again continues its sample time but not its host time, so an old reading would
    /// convert wrongly).
    func reset() {
        lock.lock()
        defer { lock.unlock() }
        sequence.store(0, ordering: .sequentiallyConsistent)
        expectedSample = Int.min
        resolved = [:]
        for index in 0..<Self.recentCount { recentHosts[index].store(0, ordering: .sequentiallyConsistent) }
    }

    /// One reading of the clock.
    struct Anchor: Hashable, Sendable {
        /// The device sample time of the last slice's first frame.
        var sampleTime: Int
        /// When that frame is heard (host ns).
        var hostTime: UInt64
        var rateScalar: Double
        /// The slice's length.
        var frames: Int

        func nanosecondsPerFrame(at rate: Double) -> Double { 1e9 / (rate * rateScalar) }
    }

    /// Takes the output latency from `device` (control side, before the device starts): its
    /// playback buffer (`roundTripFrames`, what the HAL prefills and keeps queued), converted
    /// from the device's rate to this clock's.
    func setOutputLatency(of device: (any AudioDevice)?) {
        guard let format = device?.format, format.sampleRate > 0 else { return }
        let frames = Double(format.roundTripFrames) * sampleRate / Double(format.sampleRate)
        latency.store(Int(frames.rounded(.up)), ordering: .relaxed)
    }

    /// The output latency in use (frames at this clock's rate).
    var outputLatencyFrames: Int { latency.load(ordering: .relaxed) }

    // MARK: Render side

    /// Publishes a slice's stamp (I/O thread); returns the render side's view of it.
    /// Realtime-safe: atomics only.
    @inline(__always)
    func slice(_ stamp: AudioTimeStamp, frames count: Int) -> RenderClock {
        let sampleTime = Int(stamp.sampleTime)
        let rateScalar = stamp.flags.contains(.rateScalarValid) && stamp.rateScalar > 0 ? stamp.rateScalar : 1
        let jumped = expectedSample != Int.min && sampleTime != expectedSample
        expectedSample = sampleTime + count
        sequence.wrappingAdd(1, ordering: .sequentiallyConsistent)
        sample.store(sampleTime, ordering: .relaxed)
        host.store(stamp.hostTime, ordering: .relaxed)
        rateScalarBits.store(rateScalar.bitPattern, ordering: .relaxed)
        frames.store(count, ordering: .relaxed)
        if jumped { jumps.wrappingAdd(1, ordering: .relaxed) }
        sequence.wrappingAdd(1, ordering: .sequentiallyConsistent)
        return RenderClock(
            sampleTime: sampleTime, hostTime: stamp.hostTime,
            nanosecondsPerFrame: 1e9 / (sampleRate * rateScalar), discontinuous: jumped,
            latencyFrames: latency.load(ordering: .relaxed),
            device: Unmanaged.passUnretained(self))
    }

    /// Render side: the device sample time a start at `hostTime` begins on, converted with
    /// `clock` unless a start for that host time was resolved already. Realtime-safe.
    func renderSideStartSample(forHostTime hostTime: UInt64, clock: RenderClock) -> Int {
        if let known = recentStart(forHostTime: hostTime) { return known }
        let sample = clock.sampleTime(forHostTime: hostTime)
        let slot = recentNext
        recentNext = (slot + 1) % Self.recentCount
        recentHosts[slot].store(0, ordering: .sequentiallyConsistent)
        recentSamples[slot].store(sample, ordering: .sequentiallyConsistent)
        recentHosts[slot].store(hostTime, ordering: .sequentiallyConsistent)
        return sample
    }

    private func recentStart(forHostTime hostTime: UInt64) -> Int? {
        for index in 0..<Self.recentCount where recentHosts[index].load(ordering: .sequentiallyConsistent) == hostTime {
            let sample = recentSamples[index].load(ordering: .sequentiallyConsistent)
            if recentHosts[index].load(ordering: .sequentiallyConsistent) == hostTime { return sample }
        }
        return nil
    }

    // MARK: Control side

    /// Times the device's sample time jumped (frames an xrun skipped, a re-opened device).
    var discontinuities: Int { jumps.load(ordering: .relaxed) }

    /// The latest reading; nil until the output has rendered a slice.
    var anchor: Anchor? {
        while true {
            let before = sequence.load(ordering: .sequentiallyConsistent)
            if before == 0 { return nil }
            if before & 1 == 1 { sched_yield(); continue }
            let reading = Anchor(
                sampleTime: sample.load(ordering: .relaxed), hostTime: host.load(ordering: .relaxed),
                rateScalar: Double(bitPattern: rateScalarBits.load(ordering: .relaxed)),
                frames: frames.load(ordering: .relaxed))
            if sequence.load(ordering: .sequentiallyConsistent) == before { return reading }
        }
    }

    /// The device sample time heard at `hostTime`, from the latest reading.
    func sampleTime(forHostTime hostTime: UInt64) -> Double? {
        guard let anchor else { return nil }
        let nanoseconds = Double(Int64(bitPattern: hostTime &- anchor.hostTime))
        return Double(anchor.sampleTime) + nanoseconds / anchor.nanosecondsPerFrame(at: sampleRate)
    }

    /// The host time at which device sample time `sampleTime` is heard.
    func hostTime(forSampleTime sampleTime: Double) -> UInt64? {
        guard let anchor else { return nil }
        let nanoseconds = (sampleTime - Double(anchor.sampleTime)) * anchor.nanosecondsPerFrame(at: sampleRate)
        return anchor.hostTime &+ UInt64(bitPattern: Int64(nanoseconds.rounded()))
    }

    /// The device sample time a start at `hostTime` begins on: the same for every queue
    /// started for that host time (a second reading could round to the neighbouring frame).
    func startSample(forHostTime hostTime: UInt64) -> Int? {
        lock.lock()
        defer { lock.unlock() }
        if let known = resolved[hostTime] ?? recentStart(forHostTime: hostTime) { return known }
        guard let exact = sampleTime(forHostTime: hostTime) else { return nil }
        let sample = Int(exact.rounded())
        if resolved.count >= 256 {
            // Forget starts more than a second past.
            let now = HostTime.now.nanoseconds
            resolved = resolved.filter { $0.key &+ 1_000_000_000 > now }
        }
        resolved[hostTime] = sample
        return sample
    }
}
