/// White or pink noise from a seeded generator: the same seed gives the same samples on
/// every machine, which tests and reproducible measurements rely on.
///
/// White noise is uniform in [−1, 1) times the amplitude (RMS amplitude/√3). Pink noise
/// (−3 dB/octave) is white noise through Paul Kellet's refined filter (within ±0.05 dB of
/// ideal above 9 Hz at 44.1 kHz), scaled to the same RMS as white noise; its peaks
/// therefore reach beyond the amplitude, typically about 2× it.
public struct NoiseGenerator: Sendable {
    public enum Color: Sendable {
        case white, pink
    }

    public let color: Color
    /// SplitMix64 state: a 64-bit counter, so every seed (0 included) gives a full-period stream.
    @usableFromInline var state: UInt64
    /// Kellet's filter state.
    @usableFromInline var b0: Float = 0, b1: Float = 0, b2: Float = 0, b3: Float = 0
    @usableFromInline var b4: Float = 0, b5: Float = 0, b6: Float = 0

    public init(color: Color = .white, seed: UInt64 = 1) {
        self.color = color
        self.state = seed
    }

    /// Writes `count` samples, replacing what was there.
    @inlinable
    public mutating func render(into samples: UnsafeMutablePointer<Float>, count: Int, amplitude: Float) {
        switch color {
        case .white:
            var index = 0
            while index < count {
                samples[index] = nextWhite() * amplitude
                index &+= 1
            }
        case .pink:
            // 1 / 3.0525: the filter's RMS gain, from the sum of its squared impulse response.
            let gain = amplitude * 0.327_597_37
            // Locals, so the filter state stays in registers across the loop.
            var b0 = self.b0, b1 = self.b1, b2 = self.b2, b3 = self.b3
            var b4 = self.b4, b5 = self.b5, b6 = self.b6
            var index = 0
            while index < count {
                let white = nextWhite()
                b0 = 0.99886 * b0 + white * 0.055_517_9
                b1 = 0.99332 * b1 + white * 0.075_075_9
                b2 = 0.96900 * b2 + white * 0.153_852_0
                b3 = 0.86650 * b3 + white * 0.310_485_6
                b4 = 0.55000 * b4 + white * 0.532_952_2
                b5 = -0.7616 * b5 - white * 0.016_898_0
                let pink = b0 + b1 + b2 + b3 + b4 + b5 + b6 + white * 0.5362
                b6 = white * 0.115_926
                samples[index] = pink * gain
                index &+= 1
            }
            self.b0 = b0; self.b1 = b1; self.b2 = b2; self.b3 = b3
            self.b4 = b4; self.b5 = b5; self.b6 = b6
        }
    }

    /// Uniform in [−1, 1) in steps of 2⁻²³: the top 24 bits of the next random word, which
    /// Float holds exactly.
    @inlinable
    mutating func nextWhite() -> Float {
        Float(nextRandom() >> 40) * (1 / 8_388_608) - 1
    }

    /// SplitMix64 (Steele, Lea & Flood): small, fast, and passes BigCrush.
    @inlinable
    mutating func nextRandom() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
