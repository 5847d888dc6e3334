#if canImport(Glibc)
import Glibc
#endif

extension TestSignal {
    /// Speech-like: syllables of 80–250 ms — a glottal pulse train (90–210 Hz) plus some
    /// breath noise through formant resonances that differ per syllable — and pauses of
    /// 50–400 ms; broadband like speech, with speech's gaps. Deterministic per `seed`; the
    /// echo canceller's suites use it for far and near talkers.
    public static func talker(seconds: Double, rate: Double, seed: UInt64, level: Double) -> [Float] {
        var random = SeededGenerator(seed: seed)
        let count = Int(seconds * rate)
        var out = [Float](repeating: 0, count: count)
        var index = 0
        var state = [Double](repeating: 0, count: 6)
        while index < count {
            let syllable = Int((0.08 + 0.17 * random.nextUnit()) * rate)
            let pause = Int((0.05 + 0.35 * random.nextUnit()) * rate)
            let formants = [300 + 600 * random.nextUnit(), 900 + 1600 * random.nextUnit(), 2200 + 1500 * random.nextUnit()]
            let voiced = random.nextUnit() < 0.75
            let coefficients = formants.map { f -> (Double, Double) in
                let radius = 0.88
                return (2 * radius * cos(2 * .pi * min(f, rate * 0.45) / rate), -radius * radius)
            }
            let pitch = 90 + 120 * random.nextUnit()
            for n in 0..<syllable where index + n < count {
                let envelope = sin(.pi * Double(n) / Double(syllable))
                var x = random.nextGaussian() * (voiced ? 0.3 : 1)
                if voiced && Int(Double(n) * pitch / rate) != Int(Double(n + 1) * pitch / rate) { x += 2 }
                var y = 0.0
                for (k, (a1, a2)) in coefficients.enumerated() {
                    let v = x + a1 * state[2 * k] + a2 * state[2 * k + 1]
                    state[2 * k + 1] = state[2 * k]; state[2 * k] = v
                    y += v
                }
                out[index + n] = Float(y * envelope)
            }
            index += syllable + pause
        }
        return scaled(out, toRMSdB: level)
    }
}
