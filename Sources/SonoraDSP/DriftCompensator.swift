/// Carries audio from one clock to another: a FIFO of the source's frames, read out at an
/// adaptive rate by a 4-point cubic (Hermite) interpolator whose step a PI controller
/// steers so the FIFO holds `targetFill` frames on average. The converged step is the
/// ratio of the two clocks — the drift. Realtime-safe: storage is allocated at init.
///
/// The loop is tuned as a critically damped second-order system on the fill level
/// (ωn = 1/150 per period: settled within ~700 periods), on a low-passed fill error so the whole-period arrival of
/// source frames does not modulate the pitch.
public final class DriftCompensator: @unchecked Sendable {
    public let channelCount: Int
    public let capacity: Int
    public let targetFill: Double
    public let periodFrames: Int
    private let storage: UnsafeMutablePointer<Float>
    /// Index of the first frame kept (one frame of history precedes the read position).
    private var readIndex = 1
    private var fraction = 0.0
    private var writeIndex = 1
    private var filteredError = 0.0
    private var integral = 0.0
    private let proportionalGain: Double
    private let integralGain: Double
    private let smoothing: Double
    /// Current read step (source frames per output frame).
    public private(set) var step = 1.0
    /// The drift averaged over `driftAveragingPeriods` reads: the loop's integral itself
    /// alternates by several hundred ppm when the source's frames arrive in whole periods
    /// (measured on the sonoraloop plugin), while its mean is the drift.
    public private(set) var averageDriftPPM = 0.0
    private let driftAveraging: Double
    private var averagedReads = 0
    /// Frames lost to an overflowing FIFO or filled with silence on underflow.
    public private(set) var overflows = 0
    public private(set) var underflows = 0

    /// - Parameters:
    ///   - periodFrames: output frames per `read`; sets the loop's time scale.
    ///   - targetFill: frames the FIFO should hold after each write: 2.5 periods rides out
    ///     a source period arriving one period late.
    ///   - driftAveragingPeriods: reads `averageDriftPPM` averages over (an exponential
    ///     average; the first reads average plainly, so it does not start from zero).
    public init(channelCount: Int, periodFrames: Int, targetFill: Double, capacityPeriods: Int = 16, driftAveragingPeriods: Int = 512) {
        driftAveraging = Double(max(1, driftAveragingPeriods))
        self.channelCount = channelCount
        self.periodFrames = periodFrames
        self.targetFill = targetFill
        capacity = periodFrames * capacityPeriods
        storage = .allocate(capacity: capacity * channelCount)
        storage.initialize(repeating: 0, count: capacity * channelCount)
        let naturalFrequency = 1.0 / 150  // per period
        integralGain = naturalFrequency * naturalFrequency
        proportionalGain = 2 * 1.0 * naturalFrequency  // critically damped: no overshoot
        smoothing = 0.05
        reset()
    }

    deinit { storage.deallocate() }

    /// Empties the FIFO and pre-fills it to the target with silence.
    public func reset(keepingRatio: Bool = false) {
        for channel in 0..<channelCount { (storage + channel * capacity).update(repeating: 0, count: capacity) }
        readIndex = 1
        fraction = 0
        writeIndex = 1 + Int(targetFill)
        filteredError = 0
        if !keepingRatio {
            integral = 0
            step = 1
            averageDriftPPM = 0
            averagedReads = 0
        }
    }

    /// Frames buffered ahead of the read position.
    public var fill: Double { Double(writeIndex - readIndex) - fraction }

    /// Drift of the source clock against the reader's, parts per million.
    public var driftPPM: Double { integral * 1e6 }

    /// Space for `frames` more frames: where to write them (channel pointers are
    /// `base + channel × capacity`), after moving the kept frames to the front if needed.
    /// Returns nil (and counts an overflow) if the FIFO cannot take them.
    public func writableRegion(frames: Int) -> (base: UnsafeMutablePointer<Float>, stride: Int)? {
        if writeIndex + frames > capacity { compact() }
        guard writeIndex + frames <= capacity else {
            overflows += 1
            return nil
        }
        return (storage + writeIndex, capacity)
    }

    /// Marks `frames` frames written after `writableRegion`.
    public func commitWrite(frames: Int) { writeIndex += frames }

    /// Writes `frames` frames of each channel from `channels` (one pointer per channel).
    public func write(_ channels: (Int) -> UnsafePointer<Float>, frames: Int) {
        guard let region = writableRegion(frames: frames) else { return }
        for channel in 0..<channelCount { (region.base + channel * region.stride).update(from: channels(channel), count: frames) }
        commitWrite(frames: frames)
    }

    /// Reads `frames` frames per channel into `output(channel)` at the controlled rate,
    /// then updates the controller from the fill level.
    public func read(into output: (Int) -> UnsafeMutablePointer<Float>, frames: Int) {
        // Steer: error in periods, low-passed; PI on it.
        let error = (fill - targetFill) / Double(periodFrames)
        filteredError += smoothing * (error - filteredError)
        // Clamped (anti-windup): no real pair of clocks is 2 % apart.
        integral = max(-0.02, min(0.02, integral + integralGain * filteredError))
        let adjustment = max(-0.02, min(0.02, integral + proportionalGain * filteredError))
        step = 1 + adjustment
        averagedReads += 1
        averageDriftPPM += (integral * 1e6 - averageDriftPPM) / min(Double(averagedReads), driftAveraging)
        let needed = Int((Double(frames) * step + fraction).rounded(.up)) + 2
        if writeIndex - readIndex < needed {
            // Underflow: silence this period and restart from the target.
            underflows += 1
            for channel in 0..<channelCount { output(channel).update(repeating: 0, count: frames) }
            reset(keepingRatio: true)
            return
        }
        var position = fraction
        for channel in 0..<channelCount {
            let source = storage + channel * capacity + readIndex
            let destination = output(channel)
            position = fraction
            var base = 0
            for frame in 0..<frames {
                let t = Float(position - Double(base))
                let xm1 = source[base - 1], x0 = source[base], x1 = source[base + 1], x2 = source[base + 2]
                // 4-point, 3rd-order Hermite (Catmull-Rom).
                let c1 = 0.5 * (x1 - xm1)
                let c2 = xm1 - 2.5 * x0 + 2 * x1 - 0.5 * x2
                let c3 = 0.5 * (x2 - xm1) + 1.5 * (x0 - x1)
                destination[frame] = ((c3 * t + c2) * t + c1) * t + x0
                position += step
                while position - Double(base) >= 1 { base += 1 }
            }
        }
        let advanced = Int(position.rounded(.down))
        readIndex += advanced
        fraction = position - Double(advanced)
    }

    private func compact() {
        let keep = writeIndex - readIndex + 1
        guard readIndex > 1 else { return }
        for channel in 0..<channelCount {
            let base = storage + channel * capacity
            // Overlapping move: copyMemory has memmove semantics.
            UnsafeMutableRawPointer(base).copyMemory(from: base + readIndex - 1, byteCount: keep * MemoryLayout<Float>.stride)
        }
        writeIndex = keep
        readIndex = 1
    }
}
