import SonoraCore
import SonoraDSP
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Round-trip latency of a device in the spirit of jack_iodelay: a maximum-length
/// sequence is played on every output channel at known frames, the first input channel
/// is recorded, and each burst is found in the recording by cross-correlation (sub-sample
/// estimate, polarity). Compared with the theoretical `periods × period` and with what
/// ALSA reports through `snd_pcm_delay`.
public final class RoundTripMeasurement: IOCycleTarget, @unchecked Sendable {
    public struct Result: Hashable, Sendable, Codable {
        /// Median of the bursts found, frames (fractional); nil when no burst was heard.
        public var measuredFrames: Double?
        public var measuredMilliseconds: Double?
        /// Each burst's estimate (nil: not found).
        public var bursts: [Double?]
        /// Periods × period: what the device's buffering alone accounts for.
        public var theoreticalFrames: Int
        /// Capture plus playback delay as ALSA reported it during the run (nil: not ALSA).
        public var reportedFrames: Int?
        public var isInverted: Bool
        /// The recording held no clear copy of the signal.
        public var noSignal: Bool
        public var xruns: Int
        public var cycles: Int
        public var sampleRate: Int
        public var periodFrames: Int
        public var periods: Int
    }

    public let signal: [Float]
    public let sampleRate: Int
    /// Frames each burst's search spans.
    public let maximumLatency: Int
    private let capacity: Int
    private let recording: UnsafeMutablePointer<Float>
    private let burstStarts: [Int]
    private var inputFrames = 0
    private var outputFrames = 0
    private let finished = Atomic<Bool>(false)
    private let framesNeeded: Int
    private let amplitude: Float

    /// - Parameters:
    ///   - seconds: how long to run; bursts are spaced so each search window fits.
    ///   - maximumLatency: longest round trip to search for, frames.
    ///   - amplitude: peak level of the burst (0.5 = −6 dBFS).
    public init(sampleRate: Int, seconds: Double, maximumLatency: Int, order: Int = 13, amplitude: Float = 0.5) {
        signal = MaximumLengthSequence.values(order: order)
        self.sampleRate = sampleRate
        self.maximumLatency = maximumLatency
        self.amplitude = amplitude
        let lead = sampleRate / 10
        let spacing = maximumLatency + signal.count + sampleRate / 20
        let total = max(Int(seconds * Double(sampleRate)), lead + spacing)
        var starts: [Int] = []
        var start = lead
        while start + spacing <= total {
            starts.append(start)
            start += spacing
        }
        burstStarts = starts
        framesNeeded = total
        capacity = total
        recording = .allocate(capacity: total)
        recording.initialize(repeating: 0, count: total)
    }

    deinit { recording.deallocate() }

    /// True once enough frames were recorded.
    public var isFinished: Bool { finished.load(ordering: .acquiring) }

    public override func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
        let frames = cycle.pointee.frameCount
        let input = cycle.pointee.input
        if input.channelCount > 0 {
            let count = min(frames, capacity - inputFrames)
            if count > 0 { (recording + inputFrames).update(from: input.samples(0), count: count) }
            inputFrames += count
        }
        let output = cycle.pointee.output
        signal.withUnsafeBufferPointer { signal in
            for frame in 0..<frames {
                let position = outputFrames + frame
                var value: Float = 0
                for start in burstStarts where position >= start && position < start + signal.count {
                    value = signal[position - start] * amplitude
                }
                for channel in 0..<output.channelCount { output.samples(channel)[frame] = value }
            }
        }
        outputFrames += frames
        if inputFrames >= framesNeeded { finished.store(true, ordering: .releasing) }
        return 0
    }

    /// Runs on `device` until done (or `timeout` seconds), then analyses.
    public func run(on device: any AudioDevice, timeout: Double? = nil) throws(AudioError) -> Result {
        guard device.format.inputChannels > 0 && device.format.outputChannels > 0 else {
            throw AudioError(.badDevice, "latency needs a device with both capture and playback")
        }
        let alsa = device as? ALSADevice
        alsa?.samplesReportedDelay = true
        try device.start(IOProcedure(self))
        let limit = HostTime.now.seconds + (timeout ?? (Double(framesNeeded) / Double(sampleRate) * 3 + 5))
        while !isFinished && HostTime.now.seconds < limit { usleep(10_000) }
        let reported = alsa?.statistics.reportedDelayFrames
        device.stop()
        guard isFinished else { throw AudioError(.hardwareNotRunning, "the device stopped delivering periods (\(inputFrames) of \(framesNeeded) frames after the timeout)") }
        return analyse(device: device, reported: reported)
    }

    /// Finds each burst in the recording.
    public func analyse(device: any AudioDevice, reported: Int?) -> Result {
        let recorded = Array(UnsafeBufferPointer(start: recording, count: min(inputFrames, capacity)))
        var estimates: [DelayEstimate?] = []
        for start in burstStarts {
            guard start < recorded.count else { estimates.append(nil); continue }
            let window = Array(recorded[start..<min(recorded.count, start + maximumLatency + signal.count)])
            estimates.append(DelayEstimator.estimate(signal: signal, in: window, maximumDelay: maximumLatency))
        }
        // Thousandths of a frame: below that the FFT's rounding, not the device, speaks.
        let found = estimates.compactMap { $0 }.map { ($0.frames * 1000).rounded() / 1000 }.sorted()
        let median = found.isEmpty ? nil : found[found.count / 2]
        let format = device.format
        let statistics = device.statistics
        return Result(
            measuredFrames: median, measuredMilliseconds: median.map { $0 * 1000 / Double(sampleRate) },
            bursts: estimates.map { $0.map { ($0.frames * 1000).rounded() / 1000 } }, theoreticalFrames: format.roundTripFrames,
            reportedFrames: reported, isInverted: estimates.compactMap { $0 }.contains { $0.isInverted },
            noSignal: found.isEmpty, xruns: statistics.xruns, cycles: statistics.cycles,
            sampleRate: format.sampleRate, periodFrames: format.periodFrames, periods: format.periods)
    }
}
