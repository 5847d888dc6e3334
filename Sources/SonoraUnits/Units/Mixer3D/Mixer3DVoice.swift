import SonoraDSP

/// One input's render-side state: where its gains and delays stand (so the next slice ramps
/// from there), its filters, its delay line and its rate stage. Reached through raw pointers only.
struct Mixer3DVoice {
    var rate: Mixer3DRateStage
    let channels: Int
    /// False until the first slice after initialize, enable or reset: that slice starts at its targets.
    var hasState = false
    /// Current gain of each input channel into each output channel: [channel × 6 + output].
    let gains: UnsafeMutablePointer<Float>
    /// Current overall gain of the head paths (spherical head, HRTF), and of the reverb send.
    var scalarGain: Float = 0
    var sendGain: Float = 0
    /// Current delay (samples) of each ear of each channel: [channel × 2 + ear], ear 0 left.
    let delays: UnsafeMutablePointer<Float>
    /// Delay line of each channel (`ringSize` samples, a power of two).
    let ring: UnsafeMutablePointer<Float>
    let ringSize: Int
    var ringPosition = 0
    /// [occlusion ch0, ch1, obstruction ch0, ch1, shadow ch0 left, ch0 right, ch1 left, ch1 right].
    let filters: UnsafeMutablePointer<Biquad>
    /// The attenuations the occlusion and obstruction filters are designed for.
    var occlusionDB: Float = 0
    var obstructionDB: Float = 0
    /// The placement used in the last slice, and whether the head path starts afresh at its next slice.
    var algorithm: Mixer3DUnit.SpatializationAlgorithm = .equalPowerPanning
    var headRestarted = false
    /// Doppler: the distance last seen and the smoothed rate it changes at (m/s).
    var lastDistance: Float = 0
    var velocity: Float = 0
    /// One HRTF renderer per channel (owned by the unit on the control side).
    var binaural: (Unmanaged<BinauralRenderer>?, Unmanaged<BinauralRenderer>?) = (nil, nil)
    static let maximumOutputs = 6
    /// EFX shelves: [direct HF ch0, ch1, direct LF ch0, ch1, then per bus: HF, LF], and the
    /// gains (dB) they are designed for: [direct HF, direct LF, then per bus: HF, LF].
    let shelves: UnsafeMutablePointer<Biquad>
    let shelfDecibels: UnsafeMutablePointer<Float>
    /// Current level (linear) of each auxiliary send.
    let auxiliaryGains: UnsafeMutablePointer<Float>
    static let shelfCount = 4 + 2 * Mixer3DUnit.maximumAuxiliaryBuses
    /// The last input gain's dB and its linear value: a source whose gain did not change
    /// (most, from one slice to the next) reuses it rather than call `powf`.
    var gainDecibels: Float = 0
    var linearGain: Float = 1
    /// Per input channel [azimuth, elevation, left, right] of the last equal-power gains
    /// (NaN: none yet): a channel whose direction did not change reuses them rather than call
    /// `sinf`, `cosf` and `asinf` again. The same function of the same inputs, so the same gains.
    let panMemo: UnsafeMutablePointer<Float>

    @inline(__always)
    func binauralRenderer(_ channel: Int) -> Unmanaged<BinauralRenderer>? { channel == 0 ? binaural.0 : binaural.1 }

    init(rate: Mixer3DRateStage, channels: Int, ringSize: Int) {
        self.rate = rate
        self.channels = channels
        self.ringSize = ringSize
        gains = .allocate(capacity: 2 * Self.maximumOutputs)
        gains.initialize(repeating: 0, count: 2 * Self.maximumOutputs)
        delays = .allocate(capacity: 4)
        delays.initialize(repeating: 0, count: 4)
        ring = .allocate(capacity: 2 * ringSize)
        ring.initialize(repeating: 0, count: 2 * ringSize)
        filters = .allocate(capacity: 8)
        filters.initialize(repeating: Biquad(), count: 8)
        shelves = .allocate(capacity: Self.shelfCount)
        shelves.initialize(repeating: Biquad(), count: Self.shelfCount)
        shelfDecibels = .allocate(capacity: 2 + 2 * Mixer3DUnit.maximumAuxiliaryBuses)
        shelfDecibels.initialize(repeating: 0, count: 2 + 2 * Mixer3DUnit.maximumAuxiliaryBuses)
        auxiliaryGains = .allocate(capacity: Mixer3DUnit.maximumAuxiliaryBuses)
        auxiliaryGains.initialize(repeating: 0, count: Mixer3DUnit.maximumAuxiliaryBuses)
        panMemo = .allocate(capacity: 8)
        panMemo.initialize(repeating: .nan, count: 8)
    }

    /// Equal-power (left, right) gains of input channel `channel` at a direction: the memo's
    /// when the direction is the one it holds.
    @inline(__always)
    mutating func equalPowerGains(channel: Int, azimuth: Float, elevation: Float) -> (left: Float, right: Float) {
        let memo = panMemo + 4 * channel
        if memo[0] == azimuth && memo[1] == elevation { return (memo[2], memo[3]) }
        let gains = SpatialPanning.equalPowerGains(azimuth: azimuth, elevation: elevation)
        memo[0] = azimuth
        memo[1] = elevation
        memo[2] = gains.left
        memo[3] = gains.right
        return gains
    }

    /// `Mixer3DRenderer.gain(decibels:)` of the input's gain, through the memo.
    @inline(__always)
    mutating func inputGain(decibels: Float) -> Float {
        if decibels != gainDecibels {
            gainDecibels = decibels
            linearGain = Mixer3DRenderer.gain(decibels: decibels)
        }
        return linearGain
    }

    func deallocate() {
        rate.deallocate()
        gains.deallocate()
        delays.deallocate()
        ring.deallocate()
        filters.deallocate()
        shelves.deallocate()
        shelfDecibels.deallocate()
        auxiliaryGains.deallocate()
        panMemo.deallocate()
    }

    /// The head path resumes after another placement: an empty delay line, delays set, not swept.
    mutating func restartHead() {
        ring.update(repeating: 0, count: 2 * ringSize)
        for index in 4..<8 { filters[index].reset() }
        headRestarted = true
    }

    /// Clears filter memories and delay lines; the next slice starts at its targets.
    mutating func reset() {
        hasState = false
        ring.update(repeating: 0, count: 2 * ringSize)
        for index in 0..<8 { filters[index].reset() }
        for index in 0..<Self.shelfCount { shelves[index].reset() }
        auxiliaryGains.update(repeating: 0, count: Mixer3DUnit.maximumAuxiliaryBuses)
        rate.reset()
        binaural.0?._withUnsafeGuaranteedRef { $0.reset() }
        binaural.1?._withUnsafeGuaranteedRef { $0.reset() }
    }
}
