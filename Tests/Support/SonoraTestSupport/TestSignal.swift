#if canImport(Glibc)
import Glibc
#endif

/// Deterministic test signals: no files, nothing that differs between runs.
public enum TestSignal {
    /// A sine at `frequency`, computed in Double for every sample.
    public static func sine(frequency: Double, sampleRate: Double, count: Int, amplitude: Double = 1) -> [Float] {
        (0..<count).map { Float(amplitude * sin(2 * Double.pi * frequency * Double($0) / sampleRate)) }
    }

    /// Uniform white noise in ±`amplitude` from Numerical Recipes' 32-bit LCG, seeded with
    /// `seed`: cheap, and the exact sequence the suites' noise inputs were built from.
    public static func whiteNoise(count: Int, seed: UInt32, amplitude: Float = 1) -> [Float] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 1_664_525 &+ 1_013_904_223
            return Float(Int32(bitPattern: state)) / Float(Int32.max) * amplitude
        }
    }

    /// Gaussian noise (deviation `deviation`) from a `SeededGenerator`.
    public static func gaussianNoise(count: Int, seed: UInt64, deviation: Double = 1) -> [Float] {
        var random = SeededGenerator(seed: seed)
        return (0..<count).map { _ in Float(random.nextGaussian() * deviation) }
    }

    /// `count` zeros with `amplitude` at `index`.
    public static func impulse(count: Int, at index: Int = 0, amplitude: Float = 1) -> [Float] {
        var samples = [Float](repeating: 0, count: count)
        if index >= 0 && index < count { samples[index] = amplitude }
        return samples
    }

    /// `count` non-zero values that `bits`-bit integer samples hold exactly, so a round
    /// trip through a device or a file at that depth must return them bit for bit.
    public static func quantized(count: Int, bits: Int, seed: UInt64 = 0x5EED) -> [Float] {
        var random = SeededGenerator(seed: seed)
        let scale = Float(1 << (bits - 1))
        return (0..<count).map { _ in
            let value = Int(Int64(bitPattern: random.next()) >> 40) % Int(scale)
            return Float(value == 0 ? 1 : value) / scale
        }
    }

    /// `count` samples that `render(destination, frames)` writes in blocks of `block` frames
    /// (each next one `nextBlock(previous)`), to test a kernel across block boundaries;
    /// NaN wherever it wrote nothing.
    public static func rendered(
        count: Int, block: Int, nextBlock: (Int) -> Int = { $0 }, _ render: (UnsafeMutablePointer<Float>, Int) -> Void
    ) -> [Float] {
        var samples = [Float](repeating: .nan, count: count)
        samples.withUnsafeMutableBufferPointer { buffer in
            var offset = 0, block = block
            while offset < count {
                let length = min(block, count - offset)
                render(buffer.baseAddress! + offset, length)
                offset += length
                block = nextBlock(block)
            }
        }
        return samples
    }

    /// `samples` scaled so their RMS level is `level` dBFS (silence stays silent).
    public static func scaled(_ samples: [Float], toRMSdB level: Double) -> [Float] {
        let rms = (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, samples.count))).squareRoot()
        let gain = rms > 0 ? pow(10, level / 20) / rms : 0
        return samples.map { Float(Double($0) * gain) }
    }

    /// The sample-wise sum, as long as the shorter signal.
    public static func sum(_ a: [Float], _ b: [Float]) -> [Float] { zip(a, b).map { $0 + $1 } }
}
