import SonoraDSP

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `ReverbUnit`'s render side: all memory allocated at initialize, reached through raw
/// pointers; `update` and `process` neither allocate nor lock.
struct ReverbKernel {
    static let lineCount = 8
    /// Line lengths at 48 kHz and density 1 (21–58 ms, mutually prime); density 0 halves them.
    static let lengths48k = [1_031, 1_327, 1_523, 1_871, 2_053, 2_311, 2_539, 2_803]
    /// Early-reflection taps after the reflections delay (seconds), alternately left and right.
    static let reflectionTaps = (0.0, 0.0043, 0.0097, 0.0151)
    static let allpassLengths48k = [142, 379]
    /// The late reverb's onset level per unit of late gain: set so that EFX's default reverb
    /// (decay 1.49 s, HF ratio 0.83) leaves the energy OpenAL Soft 1.19's does for the same
    /// send (measured in OpenALSoftEFXComparisonTests; the two algorithms differ elsewhere).
    static let onsetScale: Float = 0.71

    let sampleRate: Double
    let slots: UnsafeMutablePointer<Int>
    /// The parameter values the coefficients were made for (NaN: never).
    let seen: UnsafeMutablePointer<Float>
    let inputScratch: UnsafeMutablePointer<Float>
    let rightScratch: UnsafeMutablePointer<Float>

    // Pre-delay: one ring the reflections and the late input read from.
    let delay: UnsafeMutablePointer<Float>
    let delayMask: Int
    var delayPosition = 0
    var reflectionOffsets: (Int, Int, Int, Int) = (0, 0, 0, 0)
    var lateOffset = 0
    var reflectionsGain: Float = 0
    /// Input shelf (EFX's reverb GAINHF at 5 kHz).
    var inputShelf = Biquad()
    var inputShelfActive = false

    // Diffusing all-passes.
    let allpass: UnsafeMutablePointer<Float>
    let allpassLengths: (Int, Int)
    var allpassPositions = (0, 0)
    var allpassCoefficient: Float = 0.6

    // The feedback delay network.
    let lines: UnsafeMutablePointer<Float>
    let lineStarts: UnsafeMutablePointer<Int>
    let capacities: UnsafeMutablePointer<Int>
    let lengths: UnsafeMutablePointer<Int>
    let positions: UnsafeMutablePointer<Int>
    /// Per line: DC gain (the decay), the damping pole, and the damping state.
    let lineGains: UnsafeMutablePointer<Float>
    let poles: UnsafeMutablePointer<Float>
    let damped: UnsafeMutablePointer<Float>
    var lateGain: Float = 0
    var totalLine = 0

    init(sampleRate: Double, maximumFrames: Int, parameterSlots: [Int]) {
        self.sampleRate = sampleRate
        let count = parameterSlots.count
        slots = .allocate(capacity: count)
        slots.initialize(from: parameterSlots, count: count)
        seen = .allocate(capacity: count)
        seen.initialize(repeating: .nan, count: count)
        inputScratch = .allocate(capacity: 2 * maximumFrames)
        inputScratch.initialize(repeating: 0, count: 2 * maximumFrames)
        rightScratch = inputScratch + maximumFrames
        let scale = sampleRate / 48_000
        // Reflections delay (0.3 s) + late delay (0.1 s) + the last tap, as a power of two.
        let longest = Int(((0.3 + 0.1 + 0.02) * sampleRate).rounded(.up)) + 4
        var size = 1024
        while size < longest { size *= 2 }
        delay = .allocate(capacity: size)
        delay.initialize(repeating: 0, count: size)
        delayMask = size - 1
        let first = max(8, Int((Double(Self.allpassLengths48k[0]) * scale).rounded()))
        let second = max(8, Int((Double(Self.allpassLengths48k[1]) * scale).rounded()))
        allpassLengths = (first, second)
        allpass = .allocate(capacity: first + second)
        allpass.initialize(repeating: 0, count: first + second)
        lineStarts = .allocate(capacity: Self.lineCount)
        capacities = .allocate(capacity: Self.lineCount)
        lengths = .allocate(capacity: Self.lineCount)
        positions = .allocate(capacity: Self.lineCount)
        lineGains = .allocate(capacity: Self.lineCount)
        poles = .allocate(capacity: Self.lineCount)
        damped = .allocate(capacity: Self.lineCount)
        var total = 0
        for line in 0..<Self.lineCount {
            let capacity = max(16, Int((Double(Self.lengths48k[line]) * scale).rounded()))
            lineStarts[line] = total
            capacities[line] = capacity
            lengths[line] = capacity
            positions[line] = 0
            lineGains[line] = 0
            poles[line] = 0
            damped[line] = 0
            total += capacity
        }
        totalLine = total
        lines = .allocate(capacity: total)
        lines.initialize(repeating: 0, count: total)
    }

    func deallocate() {
        slots.deallocate()
        seen.deallocate()
        inputScratch.deallocate()
        delay.deallocate()
        allpass.deallocate()
        lines.deallocate()
        lineStarts.deallocate()
        capacities.deallocate()
        lengths.deallocate()
        positions.deallocate()
        lineGains.deallocate()
        poles.deallocate()
        damped.deallocate()
    }

    mutating func reset() {
        delay.update(repeating: 0, count: delayMask + 1)
        allpass.update(repeating: 0, count: allpassLengths.0 + allpassLengths.1)
        lines.update(repeating: 0, count: totalLine)
        damped.update(repeating: 0, count: Self.lineCount)
        inputShelf.reset()
    }

    // MARK: Parameters

    /// Reads the parameters; remakes the coefficients when one changed.
    mutating func update(_ context: RenderContext) {
        var changed = false
        for index in 0..<ReverbUnit.table.count {
            let value = context.parameter(slots[index])
            if value != seen[index] {
                seen[index] = value
                changed = true
            }
        }
        guard changed else { return }
        typealias P = ReverbUnit.Parameter
        let seen = self.seen
        @inline(__always) func value(_ id: AudioUnitParameterID) -> Float { seen[Int(id) - 1] }
        let density = Double(value(P.density)), diffusion = value(P.diffusion)
        let gain = value(P.gain)
        let decay = Double(max(value(P.decayTime), 0.1))
        let hfRatio = Double(min(max(value(P.decayHFRatio), 0.1), 1))
        // Input shelf.
        let gainHF = max(value(P.gainHF), 0.001)
        inputShelfActive = gainHF < 1
        if inputShelfActive {
            inputShelf.coefficients = .highShelf(
                frequency: min(5_000, 0.45 * sampleRate), q: 0.5.squareRoot(), gainDB: 40 * log10(Double(gainHF)), sampleRate: sampleRate)
        }
        // Delays.
        let reflections = Double(value(P.reflectionsDelay))
        func tap(_ offset: Double) -> Int { Int(((reflections + offset) * sampleRate).rounded()) }
        reflectionOffsets = (tap(Self.reflectionTaps.0), tap(Self.reflectionTaps.1), tap(Self.reflectionTaps.2), tap(Self.reflectionTaps.3))
        lateOffset = Int(((reflections + Double(value(P.lateReverbDelay))) * sampleRate).rounded())
        // Two taps per side: each at half the gain keeps the reflections' energy per side at gain².
        reflectionsGain = gain * value(P.reflectionsGain) * 0.70710678
        allpassCoefficient = 0.7 * diffusion
        // Lines: length by density, loss by decay time, damping by the HF ratio at 5 kHz.
        let scale = 0.5 + 0.5 * min(max(density, 0), 1)
        let omega = 2 * Double.pi * min(5_000, 0.45 * sampleRate) / sampleRate
        for line in 0..<Self.lineCount {
            let length = max(8, Int((Double(capacities[line]) * scale).rounded()))
            lengths[line] = length
            if positions[line] >= length { positions[line] = 0 }
            let g = pow(10, -3 * Double(length) / (sampleRate * decay))
            let gHigh = pow(10, -3 * Double(length) / (sampleRate * decay * hfRatio))
            lineGains[line] = Float(g)
            poles[line] = Float(Self.dampingPole(ratio: gHigh / g, omega: omega))
        }
        // A fixed onset level (EFX's late gain is the level where the late reverb begins), so
        // the energy grows with the decay time as a room's does.
        lateGain = gain * value(P.lateReverbGain) * Self.onsetScale
    }

    /// The pole p of g(1 − p)/(1 − p z⁻¹) whose gain at `omega` is `ratio` times its DC gain.
    static func dampingPole(ratio: Double, omega: Double) -> Double {
        guard ratio < 0.9999 else { return 0 }
        let r2 = ratio * ratio
        let a = 1 - r2, b = 1 - r2 * cos(omega)
        return (b - (b * b - a * a).squareRoot()) / a
    }

    // MARK: Render

    /// Reverberates `frames` of `inputScratch` into `left` and `right` (overwritten).
    mutating func process(frames: Int, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>) {
        if inputShelfActive { inputShelf.process(inputScratch, count: frames) }
        let mask = delayMask
        let n = Self.lineCount
        let outputScale = lateGain * 0.5  // four lines per side: unit energy per side
        for frame in 0..<frames {
            let position = delayPosition
            delay[position] = inputScratch[frame]
            let t = reflectionOffsets
            let early0 = delay[(position - t.0) & mask] + delay[(position - t.2) & mask]
            let early1 = delay[(position - t.1) & mask] + delay[(position - t.3) & mask]
            var x = delay[(position - lateOffset) & mask]
            delayPosition = (position + 1) & mask
            // Two Schroeder all-passes diffuse the late input.
            x = diffuse(x, buffer: allpass, length: allpassLengths.0, position: &allpassPositions.0)
            x = diffuse(x, buffer: allpass + allpassLengths.0, length: allpassLengths.1, position: &allpassPositions.1)
            // Line outputs, each through its loss and damping.
            var o0: Float = 0, o1: Float = 0, o2: Float = 0, o3: Float = 0, o4: Float = 0, o5: Float = 0, o6: Float = 0, o7: Float = 0
            for line in 0..<n {
                let value = lines[lineStarts[line] + positions[line]]
                let filtered = lineGains[line] * (1 - poles[line]) * value + poles[line] * damped[line]
                damped[line] = filtered
                switch line {
                case 0: o0 = filtered
                case 1: o1 = filtered
                case 2: o2 = filtered
                case 3: o3 = filtered
                case 4: o4 = filtered
                case 5: o5 = filtered
                case 6: o6 = filtered
                default: o7 = filtered
                }
            }
            left[frame] = reflectionsGain * early0 + outputScale * (o0 + o2 + o4 + o6)
            right[frame] = reflectionsGain * early1 + outputScale * (o1 - o3 + o5 - o7)
            // Hadamard feedback (fast Walsh–Hadamard, /√8), plus the input spread at 1/√8.
            let a0 = o0 + o1, a1 = o0 - o1, a2 = o2 + o3, a3 = o2 - o3
            let a4 = o4 + o5, a5 = o4 - o5, a6 = o6 + o7, a7 = o6 - o7
            let b0 = a0 + a2, b1 = a1 + a3, b2 = a0 - a2, b3 = a1 - a3
            let b4 = a4 + a6, b5 = a5 + a7, b6 = a4 - a6, b7 = a5 - a7
            let s: Float = 0.35355339
            let input = x * s
            write(0, (b0 + b4) * s + input)
            write(1, (b1 + b5) * s - input)
            write(2, (b2 + b6) * s + input)
            write(3, (b3 + b7) * s - input)
            write(4, (b0 - b4) * s + input)
            write(5, (b1 - b5) * s - input)
            write(6, (b2 - b6) * s + input)
            write(7, (b3 - b7) * s - input)
        }
        for line in 0..<n where abs(damped[line]) < 1e-20 { damped[line] = 0 }
    }

    @inline(__always)
    private func write(_ line: Int, _ value: Float) {
        let position = positions[line]
        lines[lineStarts[line] + position] = value
        positions[line] = position + 1 == lengths[line] ? 0 : position + 1
    }

    @inline(__always)
    private func diffuse(_ input: Float, buffer: UnsafeMutablePointer<Float>, length: Int, position: inout Int) -> Float {
        let delayed = buffer[position]
        let g = allpassCoefficient
        let v = input + g * delayed
        buffer[position] = v
        position = position + 1 == length ? 0 : position + 1
        return delayed - g * v
    }
}
