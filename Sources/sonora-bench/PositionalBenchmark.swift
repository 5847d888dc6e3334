import Foundation
import SonoraPositionalTestSupport

/// `sonora-bench positional`: N sources circling the listener, each looping seeded noise with
/// a tangential velocity (so doppler resamples them), positions and velocities updated every
/// 800 frames (60 Hz, a game's update rate), rendered through an engine's loopback device on
/// this thread. Both engines get the identical change list; only the render loop and the
/// changes are timed (process CPU, so any helper thread of an engine counts too).
struct PositionalBenchmark {
    static let frequency = 48_000
    static let updateFrames = 800
    /// Seconds of audio each engine renders, untimed, to estimate how long a trial must be
    /// (less when a trial asks for less: a short check run stays short).
    static let calibrationSeconds = 1.0
    /// The longest a trial renders, in seconds of audio (a cap on the calibration's estimate).
    static let maximumTrialSeconds = 600.0

    /// Seconds of audio per trial at least (more when `minimumTrialCPU` needs it).
    var seconds: Double
    var trials: Int
    /// Process CPU seconds each trial must take at least, on the cheaper engine. At 32 sources
    /// 4 s of audio is ~12 ms of CPU: one scheduler tick or a neighbour's burst decided the
    /// ratio. Trials are lengthened, the same for both engines, until each is this long.
    var minimumTrialCPU = 0.2

    enum Mode: String, CaseIterable {
        case panning, hrtf
    }

    /// Both engines' CPU per second of audio in each trial (index i of each array is one
    /// alternation: OpenAL Soft, then Sonora, on the same scene and duration).
    struct Measurement {
        var sonoraTrials: [Double]
        var openALSoftTrials: [Double]
        /// Seconds of audio each engine rendered per trial.
        var trialSeconds: Double

        /// The medians are the row: a long trial is rarely disturbed, and the median of an odd
        /// count is a trial both engines really ran (no best-of-N luck on either side).
        var sonora: Double { Self.median(sonoraTrials) }
        var openALSoft: Double { Self.median(openALSoftTrials) }
        /// Sonora ÷ OpenAL Soft per alternation (≤ 1 meets the goal in that trial).
        var pairedRatios: [Double] { zip(sonoraTrials, openALSoftTrials).map { $0 / $1 } }

        static func median(_ values: [Double]) -> Double {
            let sorted = values.sorted()
            guard !sorted.isEmpty else { return .nan }
            let middle = sorted.count / 2
            return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        }
    }

    /// The scene's buffers and its first step (distance model, each source's buffer, loop, play).
    static func setup(sources: Int) -> (buffers: [SceneBuffer], changes: [SceneChange]) {
        let buffers = (0..<4).map { SceneBuffer.noise(frames: frequency, amplitude: 0.1, seed: UInt32($0 + 1), frequency: frequency) }
        var changes: [SceneChange] = [.distanceModel(.inverseClamped)]
        for source in 0..<sources {
            changes += [.buffer(source: source, buffer: source % buffers.count), .looping(source: source, true),
                        .distances(source: source, reference: 1, maximum: 50, rolloff: 1)]
        }
        changes.append(.play(Array(0..<sources)))
        return (buffers, changes)
    }

    /// Where source `source` of `count` is at update `update`: on a circle of 1–5 m, at its own
    /// speed and height, with the matching tangential velocity.
    static func motion(source: Int, of count: Int, update: Int) -> (position: SIMD3<Float>, velocity: SIMD3<Float>) {
        let radius = 1 + 4 * Float(source) / Float(max(count, 1))
        let angularSpeed = 0.5 + Float(source % 7) * 0.3  // rad/s
        let time = Float(update * updateFrames) / Float(frequency)
        let angle = angularSpeed * time + Float(source) * 2.399  // golden-angle spread
        let height = Float(source % 5) - 2
        return ([radius * sin(angle), height, -radius * cos(angle)],
                [radius * angularSpeed * cos(angle), 0, radius * angularSpeed * sin(angle)])
    }

    /// Process CPU seconds to render `seconds` of the scene through `engine` (after a 0.1 s warm-up).
    static func cpuSeconds(engine: PositionalEngine, sources: Int, seconds: Double) throws -> Double {
        let (buffers, changes) = setup(sources: sources)
        try engine.load(buffers, sourceCount: sources)
        for change in changes { _ = try engine.apply(change) }
        var block = [Float](repeating: 0, count: 2 * updateFrames)
        let warmUpdates = frequency / 10 / updateFrames
        let updates = max(1, Int((seconds * Double(frequency) / Double(updateFrames)).rounded()))
        var start = 0.0
        for update in 0..<(warmUpdates + updates) {
            if update == warmUpdates { start = processCPUSeconds() }
            for source in 0..<sources {
                let (position, velocity) = motion(source: source, of: sources, update: update)
                _ = try engine.apply(.position(source: source, position))
                _ = try engine.apply(.velocity(source: source, velocity))
            }
            block.withUnsafeMutableBufferPointer { engine.render(into: $0.baseAddress!, frames: updateFrames) }
        }
        return processCPUSeconds() - start
    }

    static func processCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// Seconds of audio per trial: `seconds`, or more so that the cheaper engine's trial takes
    /// `minimumTrialCPU` (estimated from one untimed render by each; 25 % margin, whole
    /// seconds; at most 10 × `minimumTrialCPU` for the dearer engine). The same for both
    /// engines, so the comparison is the scene's and nothing else.
    func trialSeconds(sources: Int, mode: Mode, sonoraEngine: () throws -> PositionalEngine) throws -> Double {
        guard minimumTrialCPU > 0 else { return seconds }
        let calibration = min(seconds, Self.calibrationSeconds)
        let reference = try OpenALSoftEngine(frequency: Self.frequency, hrtf: mode == .hrtf)
        let referenceRate = try Self.cpuSeconds(engine: reference, sources: sources, seconds: calibration) / calibration
        let sonoraRate = try Self.cpuSeconds(engine: try sonoraEngine(), sources: sources, seconds: calibration) / calibration
        let cheaper = max(min(referenceRate, sonoraRate), 1e-6), dearer = max(referenceRate, sonoraRate, 1e-6)
        // Capped where the dearer engine's trial would take 10× the minimum: only an engine
        // many times slower than the other (a debug build beside OpenAL Soft) reaches it.
        let needed = min((1.25 * minimumTrialCPU / cheaper).rounded(.up), 10 * minimumTrialCPU / dearer)
        return min(Self.maximumTrialSeconds, max(seconds, needed))
    }

    /// CPU per second of audio for both engines in each of `trials` alternations.
    func measure(sources: Int, mode: Mode, sonoraEngine: () throws -> PositionalEngine) throws -> Measurement {
        let duration = try trialSeconds(sources: sources, mode: mode, sonoraEngine: sonoraEngine)
        var measured = Measurement(sonoraTrials: [], openALSoftTrials: [], trialSeconds: duration)
        for _ in 0..<trials {
            let reference = try OpenALSoftEngine(frequency: Self.frequency, hrtf: mode == .hrtf)
            measured.openALSoftTrials.append(try Self.cpuSeconds(engine: reference, sources: sources, seconds: duration) / duration)
            let sonora = try sonoraEngine()
            measured.sonoraTrials.append(try Self.cpuSeconds(engine: sonora, sources: sources, seconds: duration) / duration)
        }
        return measured
    }
}
