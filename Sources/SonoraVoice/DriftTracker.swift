/// Follows clock drift between the reference and the microphone: a slowly moving echo
/// delay (100 ppm at 16 kHz is 1.6 samples per second). Every 16 blocks it locates the
/// direct path in the converged foreground filter (the peak of the impulse response of
/// its first partitions, refined by a parabola), and a PI loop moves a fractional offset
/// on the reference read so that the peak stays where it was first found. The filter
/// therefore sees a fixed room instead of one sliding under it; the loop's rate term is
/// the drift in ppm.
final class DriftTracker {
    /// Largest offset (samples) the loop may apply, either way.
    static let maximumOffset = 2048
    let blockFrames: Int
    let sampleRate: Double
    let enabled: Bool
    private let interval = 16
    private var counter = 0
    /// Reference read offset, samples (positive: read further back).
    private(set) var offset = 0.0
    /// Samples per interval the offset moves by (the integral term).
    private var rate = 0.0
    private var anchor: Double?
    private let partitionsSearched = 4

    init(blockFrames: Int, sampleRate: Double, enabled: Bool) {
        self.blockFrames = blockFrames
        self.sampleRate = sampleRate
        self.enabled = enabled
    }

    var ppm: Double { anchor == nil ? 0 : rate / Double(interval * blockFrames) * 1e6 }

    func reset() { counter = 0; offset = 0; rate = 0; anchor = nil }

    /// The filter moved by `samples` (whole blocks): the anchor moves with it.
    func shiftAnchor(by samples: Int) {
        if let a = anchor { anchor = a + Double(samples) }
    }

    func observe(_ filter: PartitionedFilter, fft: RealFFT, scratch: UnsafeMutablePointer<Float>, converged: Bool) {
        guard enabled else { return }
        counter += 1
        guard counter >= interval else { return }
        counter = 0
        guard converged, let position = peakPosition(filter, fft: fft, scratch: scratch) else { return }
        guard let anchor else { anchor = position; return }
        // A jump of more than a few samples is a new echo path, not drift: start over from it.
        if abs(position - anchor) > 3 { self.anchor = position; return }
        let error = position - anchor
        // PI loop on the peak position (ζ ≈ 0.8, settles in ~10 s).
        rate += 0.002 * error
        rate = max(-1, min(1, rate))
        offset += rate + 0.08 * error
        offset = max(-Double(Self.maximumOffset), min(Double(Self.maximumOffset), offset))
    }

    /// Fractional index of the largest tap in the filter's first partitions, or nil when
    /// no tap stands clearly above the rest.
    private func peakPosition(_ filter: PartitionedFilter, fft: RealFFT, scratch: UnsafeMutablePointer<Float>) -> Double? {
        let b = blockFrames, k = filter.binCount
        let count = min(partitionsSearched, filter.partitionCount)
        var bestValue: Float = 0
        var bestIndex = -1
        var squares: Float = 0
        // Pass 1: find the peak; pass 2 re-reads its neighbours (cheap: few partitions).
        for m in 0..<count {
            fft.inverse(real: filter.real.pointer + m * k, imaginary: filter.imaginary.pointer + m * k, output: scratch)
            for n in 0..<b {
                let v = abs(scratch[n])
                squares += v * v
                if v > bestValue { bestValue = v; bestIndex = m * b + n }
            }
        }
        guard bestIndex >= 0 else { return nil }
        let rms = (squares / Float(count * b)).squareRoot()
        guard bestValue > 4 * rms else { return nil }
        // Neighbours of the peak.
        func tap(_ index: Int) -> Float {
            guard index >= 0, index < count * b else { return 0 }
            let m = index / b
            fft.inverse(real: filter.real.pointer + m * k, imaginary: filter.imaginary.pointer + m * k, output: scratch)
            return abs(scratch[index - m * b])
        }
        let before = Double(tap(bestIndex - 1)), after = Double(tap(bestIndex + 1)), at = Double(bestValue)
        let denominator = before - 2 * at + after
        var fraction = denominator != 0 ? 0.5 * (before - after) / denominator : 0
        if abs(fraction) > 0.5 { fraction = 0 }
        return Double(bestIndex) + fraction
    }
}
