/// The 3D mixer's one small reverb: a four-line feedback delay network (Householder
/// feedback, a one-pole damping low-pass in each line), mono in, stereo out. About a
/// 0.9 s decay: a room, cheap enough to run beside many sources. Realtime-safe.
struct Mixer3DReverb {
    static let lineCount = 4
    /// Line lengths at 48 kHz (mutually prime), scaled with the sample rate.
    static let lengths48k = [1_117, 1_277, 1_423, 1_619]
    let storage: UnsafeMutablePointer<Float>
    let lines: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    let lengths: UnsafeMutablePointer<Int>
    let positions: UnsafeMutablePointer<Int>
    let damping: UnsafeMutablePointer<Float>
    let totalLength: Int
    /// Per-pass feedback gain and the damping low-pass's pole.
    let feedback: Float = 0.83
    let pole: Float = 0.3

    init(sampleRate: Double) {
        let scale = sampleRate / 48_000
        var total = 0
        lengths = .allocate(capacity: Self.lineCount)
        for line in 0..<Self.lineCount {
            lengths[line] = max(64, Int((Double(Self.lengths48k[line]) * scale).rounded()))
            total += lengths[line]
        }
        totalLength = total
        storage = .allocate(capacity: total)
        storage.initialize(repeating: 0, count: total)
        lines = .allocate(capacity: Self.lineCount)
        var offset = 0
        for line in 0..<Self.lineCount {
            lines[line] = storage + offset
            offset += lengths[line]
        }
        positions = .allocate(capacity: Self.lineCount)
        positions.initialize(repeating: 0, count: Self.lineCount)
        damping = .allocate(capacity: Self.lineCount)
        damping.initialize(repeating: 0, count: Self.lineCount)
    }

    func deallocate() {
        storage.deallocate()
        lines.deallocate()
        lengths.deallocate()
        positions.deallocate()
        damping.deallocate()
    }

    func reset() {
        storage.update(repeating: 0, count: totalLength)
        positions.update(repeating: 0, count: Self.lineCount)
        damping.update(repeating: 0, count: Self.lineCount)
    }

    /// Reverberates `count` samples of `input` into `left` and `right` (overwritten).
    func process(_ input: UnsafePointer<Float>, count: Int, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>) {
        var outs: (Float, Float, Float, Float) = (0, 0, 0, 0)
        for frame in 0..<count {
            // Each line's output, damped.
            for line in 0..<Self.lineCount {
                let value = lines[line][positions[line]]
                damping[line] = value + pole * (damping[line] - value)
            }
            outs = (damping[0], damping[1], damping[2], damping[3])
            left[frame] = (outs.0 + outs.2) * 0.5
            right[frame] = (outs.1 + outs.3) * 0.5
            // Householder: y = x − (2/N)·Σx, lossless; the feedback gain sets the decay.
            let half = (outs.0 + outs.1 + outs.2 + outs.3) * 0.5
            let x = input[frame] * 0.5
            let feeds = (outs.0 - half, outs.1 - half, outs.2 - half, outs.3 - half)
            write(0, x + feedback * feeds.0)
            write(1, x + feedback * feeds.1)
            write(2, x + feedback * feeds.2)
            write(3, x + feedback * feeds.3)
        }
        // Flush subnormals the damping would otherwise decay into.
        for line in 0..<Self.lineCount where abs(damping[line]) < 1e-20 { damping[line] = 0 }
    }

    @inline(__always)
    private func write(_ line: Int, _ value: Float) {
        let position = positions[line]
        lines[line][position] = value
        positions[line] = position + 1 == lengths[line] ? 0 : position + 1
    }
}
