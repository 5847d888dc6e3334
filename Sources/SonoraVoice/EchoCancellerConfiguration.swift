import SonoraCore

/// How an `EchoCanceller` is built: fixed at creation (everything is sized from it), so
/// processing never allocates. The switchable stages (`suppressionStrength`,
/// `noiseSuppression`, `automaticGainControl`, `comfortNoise`, `isBypassed`) can also be
/// changed on a running canceller through its setters.
public struct EchoCancellerConfiguration: Sendable, Equatable {
    /// Sample rate of microphone, reference and output (8–96 kHz).
    public var sampleRate: Double
    /// Length of echo tail the linear filter models after the bulk delay, seconds.
    public var filterLength: Double = 0.32
    /// Largest bulk delay (reference → microphone) the delay estimator searches, seconds.
    public var maximumDelay: Double = 0.6
    /// Most frames one `process` call may carry.
    public var maximumFramesPerCall: Int = 4096
    /// Residual echo suppression strength, 0 (linear filter only) … 1 (most aggressive).
    public var suppressionStrength: Float = 0.5
    /// Stationary noise suppression on the output.
    public var noiseSuppression = true
    /// Automatic gain control of the near-end talker.
    public var automaticGainControl = false
    /// Fills suppressed bins with noise shaped like the background noise.
    public var comfortNoise = false
    /// Follows a slow delay drift (capture and playback on clocks tens of ppm apart).
    public var driftCompensation = true

    public init(sampleRate: Double) { self.sampleRate = sampleRate }

    /// Processing block: the largest power of two ≤ 10 ms (128 at 16 kHz, 256 at 48 kHz).
    public var blockFrames: Int {
        var block = 16
        while Double(block * 2) <= sampleRate * 0.010 { block *= 2 }
        return block
    }

    /// Fixed latency from microphone to output, frames: one block of input buffering and
    /// one block of overlap-add in the suppressor.
    public var latencyFrames: Int { 2 * blockFrames }

    func validated() throws(AudioError) -> EchoCancellerConfiguration {
        guard sampleRate.isFinite, sampleRate >= 8000, sampleRate <= 96000 else {
            throw AudioError(.formatNotSupported, "echo canceller: sample rate \(sampleRate) Hz is outside 8000…96000 Hz")
        }
        guard filterLength.isFinite, filterLength >= 0.02, filterLength <= 1.0 else {
            throw AudioError(.invalidParameter, "echo canceller: filter length \(filterLength) s is outside 0.02…1 s")
        }
        guard maximumDelay.isFinite, maximumDelay >= 0, maximumDelay <= 2.0 else {
            throw AudioError(.invalidParameter, "echo canceller: maximum delay \(maximumDelay) s is outside 0…2 s")
        }
        guard maximumFramesPerCall >= 1, maximumFramesPerCall <= 1 << 16 else {
            throw AudioError(.invalidParameter, "echo canceller: maximum frames per call \(maximumFramesPerCall) is outside 1…65536")
        }
        guard suppressionStrength.isFinite, (0...1).contains(suppressionStrength) else {
            throw AudioError(.invalidParameter, "echo canceller: suppression strength \(suppressionStrength) is outside 0…1")
        }
        return self
    }
}

/// What the canceller reports about itself, updated every block (read it off the
/// realtime thread through `EchoCanceller.metrics` or the units' properties).
public struct EchoCancellerMetrics: Sendable, Equatable, Codable {
    /// Bulk delay found between reference and microphone, seconds (nil: not found yet).
    public var estimatedDelay: Double?
    /// Echo return loss enhancement over recent far-end-only blocks, dB.
    public var erle: Double
    /// True while both talkers are active.
    public var isDoubleTalk: Bool
    /// Slope of the echo delay, ppm: negative when the loudspeaker's clock runs faster than
    /// the microphone's (the echo comes ever earlier), 0 when not (yet) tracked.
    public var driftPPM: Double
    /// Mean residual echo ratio the suppressor has learned (linear filter output over echo
    /// estimate, 0 … 2; lower is better converged).
    public var leak: Double
    /// Blocks processed.
    public var blocks: Int
    /// Times the echo path was found changed (the filter then re-learns it from scratch,
    /// the suppressor holding the echo down meanwhile).
    public var echoPathChanges: Int

    public init(estimatedDelay: Double? = nil, erle: Double = 0, isDoubleTalk: Bool = false, driftPPM: Double = 0, leak: Double = 1,
                blocks: Int = 0, echoPathChanges: Int = 0) {
        self.estimatedDelay = estimatedDelay
        self.erle = erle
        self.isDoubleTalk = isDoubleTalk
        self.driftPPM = driftPPM
        self.leak = leak
        self.blocks = blocks
        self.echoPathChanges = echoPathChanges
    }
}
