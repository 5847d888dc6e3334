#if canImport(Glibc)
import Glibc
#endif
import SonoraDSP
import SonoraTestSupport
@testable import SonoraVoice

/// Deterministic signals for the canceller's tests: speech-like far and near ends
/// (noise shaped by a two-pole resonance, switched on and off in syllables and pauses),
/// synthetic rooms, background noise. No files, no randomness between runs.
enum VoiceTestSignals {
    /// Speech-like talker (syllables and pauses), shared with the pipeline's suites: `TestSignal.talker`.
    static func talker(seconds: Double, rate: Double, seed: UInt64, level: Double) -> [Float] {
        TestSignal.talker(seconds: seconds, rate: rate, seed: seed, level: level)
    }

    static func noise(seconds: Double, rate: Double, seed: UInt64, level: Double) -> [Float] {
        var random = SeededGenerator(seed: seed)
        return scaled((0..<Int(seconds * rate)).map { _ in Float(random.nextGaussian()) }, toRMSdB: level)
    }

    /// A room: direct path after `delay` s, then an exponentially decaying tail (RT60),
    /// direct-to-reverberant ratio 0 dB, normalised to unit energy.
    static func room(rt60: Double, delay: Double, rate: Double, seed: UInt64) -> [Float] {
        var random = SeededGenerator(seed: seed)
        let d = Int(delay * rate)
        let tail = Int(rt60 * rate * 80 / 60)
        var h = [Double](repeating: 0, count: d + tail)
        var tailEnergy = 0.0
        for n in 8..<tail {
            let v = random.nextGaussian() * exp(-3 * log(10) * Double(n) / (rt60 * rate))
            h[d + n] = v
            tailEnergy += v * v
        }
        for n in 8..<tail { h[d + n] /= tailEnergy.squareRoot() }
        h[d] = 1
        let energy = h.reduce(0) { $0 + $1 * $1 }
        return h.map { Float($0 / energy.squareRoot()) }
    }

    /// Linear convolution (truncated to x's length) by FFT overlap-add.
    static func convolve(_ x: [Float], _ h: [Float]) -> [Float] {
        var size = 4
        while size < 2 * h.count { size *= 2 }
        let fft = RealFFT(size: size)
        let block = size - h.count + 1
        var hPadded = h + [Float](repeating: 0, count: size - h.count)
        var hr = [Float](repeating: 0, count: size / 2 + 1), hi = hr
        fft.forward(&hPadded, real: &hr, imaginary: &hi)
        var y = [Float](repeating: 0, count: x.count + size)
        var frame = [Float](repeating: 0, count: size)
        var xr = hr, xi = hi
        var start = 0
        while start < x.count {
            for n in 0..<size { frame[n] = n < block && start + n < x.count ? x[start + n] : 0 }
            fft.forward(&frame, real: &xr, imaginary: &xi)
            for k in 0..<xr.count {
                let r = xr[k] * hr[k] - xi[k] * hi[k]
                xi[k] = xr[k] * hi[k] + xi[k] * hr[k]
                xr[k] = r
            }
            fft.inverse(real: xr, imaginary: xi, output: &frame)
            for n in 0..<size { y[start + n] += frame[n] }
            start += block
        }
        return Array(y.prefix(x.count))
    }

    // The generic pieces live in SonoraTestSupport; these names stay for the suites using them.
    static func scaled(_ x: [Float], toRMSdB level: Double) -> [Float] { TestSignal.scaled(x, toRMSdB: level) }
    static func add(_ a: [Float], _ b: [Float]) -> [Float] { TestSignal.sum(a, b) }
    static func energy(_ x: ArraySlice<Float>) -> Double { SignalMeasurement.energy(x) }
    static func decibels(_ ratio: Double) -> Double { SignalMeasurement.decibels(ratio) }

    /// Runs `canceller` over whole signals in `frame`-sized calls, output aligned with mic.
    static func run(_ canceller: EchoCanceller, mic: [Float], ref: [Float], frame: Int) -> [Float] {
        let latency = canceller.latencyFrames
        let total = mic.count + latency
        let paddedMic = mic + [Float](repeating: 0, count: latency + frame)
        let paddedRef = ref + [Float](repeating: 0, count: latency + frame)
        var out = [Float](repeating: 0, count: total + frame)
        var position = 0
        paddedMic.withUnsafeBufferPointer { m in
            paddedRef.withUnsafeBufferPointer { r in
                out.withUnsafeMutableBufferPointer { o in
                    while position < total {
                        canceller.process(microphone: m.baseAddress! + position, reference: r.baseAddress! + position,
                                          output: o.baseAddress! + position, frames: frame)
                        position += frame
                    }
                }
            }
        }
        return Array(out[latency..<(latency + mic.count)])
    }

    /// Ratio (dB) of microphone to output energy from `from` seconds on, over blocks where
    /// the echo is above the noise (far-end single talk).
    static func erle(mic: [Float], out: [Float], echo: [Float], noiseLevel: Double, rate: Double, from: Double) -> Double {
        let block = Int(rate / 50)
        var micSum = 0.0, outSum = 0.0
        var start = Int(from * rate)
        let noisePower = pow(10, noiseLevel / 10)
        while start + block <= mic.count {
            let e = energy(echo[start..<(start + block)]) / Double(block)
            if e > noisePower {
                micSum += energy(mic[start..<(start + block)])
                outSum += energy(out[start..<(start + block)])
            }
            start += block
        }
        return decibels(micSum / max(outSum, 1e-30))
    }

    /// Near-end preservation in double talk: the least-squares gain of `near` in `out` and
    /// the ratio of that part to everything else, over blocks where both talk.
    static func nearEnd(out: [Float], near: [Float], echo: [Float], rate: Double, from: Double) -> (gainDB: Double, sdrDB: Double) {
        let block = Int(rate / 50)
        var dot = 0.0, nearSum = 0.0, outSum = 0.0
        var start = Int(from * rate)
        while start + block <= out.count {
            let nearEnergy = energy(near[start..<(start + block)])
            let echoEnergy = energy(echo[start..<(start + block)])
            if nearEnergy > 1e-7 * Double(block) && echoEnergy > 1e-7 * Double(block) {
                for n in start..<(start + block) {
                    dot += Double(out[n]) * Double(near[n])
                    nearSum += Double(near[n]) * Double(near[n])
                    outSum += Double(out[n]) * Double(out[n])
                }
            }
            start += block
        }
        let gain = dot / max(nearSum, 1e-30)
        let kept = gain * gain * nearSum
        return (decibels(gain * gain), decibels(kept / max(outSum - 2 * gain * dot + kept, 1e-30)))
    }
}
