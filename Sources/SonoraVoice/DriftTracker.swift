/// Follows clock drift between the loudspeaker and the microphone: a slowly sliding echo
/// delay (100 ppm at 16 kHz is 1.6 samples a second), which would otherwise smear the
/// adaptive filter. The bulk delay estimator's fine delay (its correlation over the last
/// ~0.2 s, interpolated to a small fraction of a sample) is fitted against time by
/// exponentially weighted least squares (time constant ~12 s); its slope is the drift,
/// used after one second once the points can tell it from zero (every second of drift left
/// uncompensated is a second the filter spends re-learning a moving room). The reference is
/// then read through a fractional offset that integrates that slope, so the filter sees a
/// room that stays put. A jump of the peak (a new echo path or a re-opened device) restarts
/// the fit.
final class DriftTracker {
    /// Largest offset (samples) the tracker may apply, either way.
    static let maximumOffset = 2048
    let blockFrames: Int
    let sampleRate: Double
    let enabled: Bool
    /// Reference read offset, samples (positive: read further back).
    private(set) var offset = 0.0
    /// Estimated delay slope (samples per sample), applied once the fit is trusted.
    private(set) var slope = 0.0
    private var lastHop = 0
    private var lastDelay = 0.0
    private var origin = 0.0     // time of the first point (blocks), for conditioning
    private var weight = 0.0, sumT = 0.0, sumD = 0.0, sumTT = 0.0, sumTD = 0.0, sumDD = 0.0
    private var firstTime = 0.0
    private var time = 0.0       // blocks since start
    private var points = 0

    init(blockFrames: Int, sampleRate: Double, enabled: Bool) {
        self.blockFrames = blockFrames
        self.sampleRate = sampleRate
        self.enabled = enabled
    }

    var ppm: Double { slope * 1e6 }

    func reset() {
        offset = 0; slope = 0; lastHop = 0; lastDelay = 0
        restartFit()
        time = 0
    }

    private func restartFit() {
        weight = 0; sumT = 0; sumD = 0; sumTT = 0; sumTD = 0; sumDD = 0; points = 0
    }

    /// Once per block: reads the estimator's newest fine delay, updates the fit, moves the offset.
    func advance(_ estimator: BulkDelayEstimator) {
        time += 1
        guard enabled else { return }
        if estimator.fineDelayHops != lastHop {
            lastHop = estimator.fineDelayHops
            let delay = estimator.fineDelay
            if points > 0 && abs(delay - lastDelay) > 6 { restartFit() }
            lastDelay = delay
            if points == 0 { origin = time; firstTime = time }
            let t = (time - origin) * Double(blockFrames)  // samples
            // Forget with a ~12 s time constant (per point: one hop of 64 ms).
            let forget = 1 - 0.064 / 12
            weight = forget * weight + 1
            sumT = forget * sumT + t
            sumD = forget * sumD + delay
            sumTT = forget * sumTT + t * t
            sumTD = forget * sumTD + t * delay
            sumDD = forget * sumDD + delay * delay
            points += 1
            let span = (time - firstTime) * Double(blockFrames) / sampleRate
            if span >= 1 && points >= 12 {
                let meanT = sumT / weight, meanD = sumD / weight
                let variance = sumTT / weight - meanT * meanT
                if variance > 0 {
                    let covariance = sumTD / weight - meanT * meanD
                    let estimate = covariance / variance
                    // Its standard error from the scatter about the line: a slope the points
                    // cannot tell from zero is not applied (a wrong early slope leaves a
                    // fractional offset behind, and the filter re-learns the room twice).
                    let scatter = max(0, sumDD / weight - meanD * meanD - estimate * covariance)
                    // The points are not independent (the fine correlation is smoothed over ~3
                    // hops, and a room's peak wanders with what the far end says): count one in five.
                    let standardError = (scatter / (variance * weight / 5)).squareRoot()
                    let significant = abs(estimate) > 3 * standardError
                    // Only clock-like slopes (< 1000 ppm); below 3 ppm is estimation noise.
                    slope = significant && abs(estimate) < 1e-3 && abs(estimate) > 3e-6 ? estimate : 0
                }
            }
        }
        offset += slope * Double(blockFrames)
        offset = max(-Double(Self.maximumOffset), min(Double(Self.maximumOffset), offset))
    }
}
