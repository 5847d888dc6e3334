#if canImport(Glibc)
import Glibc
#endif
import CSpeexDSP
import SonoraVoice

/// `sonora-bench voice`: Sonora's echo canceller beside SpeexDSP's (MDF, 2048 taps, with
/// its residual echo suppressor — the anchor aec-eval measures as "speex-mdf+res") on one
/// generated 16 kHz scenario: a speech-like far end (glottal pulses through moving
/// formants, pauses), a room of RT60 250 ms behind a 60 ms delay, −65 dBFS noise, and a
/// near-end talker from 10 s. Same signals, same 10 ms frames, same metrics for both.
enum VoiceBenchmark {
    struct Result {
        var erle: Double, nearGain: Double, nearSDR: Double, cpuPerSecond: Double
    }

    static let rate = 16000.0
    static let seconds = 20.0
    static let nearFrom = 10.0

    struct Scenario { var mic: [Float], ref: [Float], echo: [Float], near: [Float] }

    static func scenario() -> Scenario {
        var random = SplitMix(seed: 1)
        let ref = talker(&random, level: -24)
        var h = [Float](repeating: 0, count: Int(0.06 * rate) + Int(0.25 * rate * 80 / 60))
        let d = Int(0.06 * rate)
        h[d] = 1
        var tail = 0.0
        for n in 8..<(h.count - d) {
            let v = random.gaussian() * exp(-3 * log(10) * Double(n) / (0.25 * rate))
            h[d + n] = Float(v)
            tail += v * v
        }
        for n in 8..<(h.count - d) { h[d + n] /= Float(tail.squareRoot()) }
        var echo = [Float](repeating: 0, count: ref.count)
        for (k, c) in h.enumerated() where c != 0 {
            for n in k..<ref.count { echo[n] += c * ref[n - k] }
        }
        echo = scaled(echo, to: -30)
        var near = [Float](repeating: 0, count: ref.count)
        let talk = talker(&random, level: -30)
        for n in Int(nearFrom * rate)..<ref.count { near[n] = talk[n] }
        let mic = (0..<ref.count).map { echo[$0] + near[$0] + Float(random.gaussian() * pow(10, -65.0 / 20)) }
        return Scenario(mic: mic, ref: ref, echo: echo, near: near)
    }

    static func runSonora(_ s: Scenario) throws -> [Float] {
        let canceller = try EchoCanceller(sampleRate: rate)
        var out = [Float](repeating: 0, count: s.mic.count)
        s.mic.withUnsafeBufferPointer { m in
            s.ref.withUnsafeBufferPointer { r in
                out.withUnsafeMutableBufferPointer { o in
                    var position = 0
                    while position + 160 <= m.count {
                        canceller.process(microphone: m.baseAddress! + position, reference: r.baseAddress! + position, output: o.baseAddress! + position, frames: 160)
                        position += 160
                    }
                }
            }
        }
        // Undo the fixed latency so both outputs line up with the microphone.
        return Array(out.dropFirst(canceller.latencyFrames)) + [Float](repeating: 0, count: canceller.latencyFrames)
    }

    static func runSpeex(_ s: Scenario) -> [Float] {
        let frame: Int32 = 160
        let echoState = speex_echo_state_init(frame, 2048)
        let preprocess = speex_preprocess_state_init(frame, Int32(rate))
        var sampleRate = Int32(rate)
        speex_echo_ctl(echoState, SPEEX_ECHO_SET_SAMPLING_RATE, &sampleRate)
        speex_preprocess_ctl(preprocess, SPEEX_PREPROCESS_SET_ECHO_STATE, UnsafeMutableRawPointer(echoState))
        // As aec-eval's anchor (speex_aec -p -N 0): denoiser on at 0 dB, echo suppression
        // −40 dB (−15 dB while the near end talks), no AGC or dereverb (VAD is off by default).
        var on: Int32 = 1, off: Int32 = 0, noise: Int32 = 0, echoSuppress: Int32 = -40, echoSuppressActive: Int32 = -15
        speex_preprocess_ctl(preprocess, SPEEX_PREPROCESS_SET_DENOISE, &on)
        speex_preprocess_ctl(preprocess, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &noise)
        speex_preprocess_ctl(preprocess, SPEEX_PREPROCESS_SET_ECHO_SUPPRESS, &echoSuppress)
        speex_preprocess_ctl(preprocess, SPEEX_PREPROCESS_SET_ECHO_SUPPRESS_ACTIVE, &echoSuppressActive)
        speex_preprocess_ctl(preprocess, SPEEX_PREPROCESS_SET_AGC, &off)
        speex_preprocess_ctl(preprocess, SPEEX_PREPROCESS_SET_DEREVERB, &off)
        defer { speex_echo_state_destroy(echoState); speex_preprocess_state_destroy(preprocess) }
        func int16(_ x: [Float]) -> [Int16] { x.map { Int16(max(-32768, min(32767, ($0 * 32768).rounded()))) } }
        let mic = int16(s.mic), ref = int16(s.ref)
        var out = [Int16](repeating: 0, count: mic.count)
        var position = 0
        while position + Int(frame) <= mic.count {
            mic.withUnsafeBufferPointer { m in
                ref.withUnsafeBufferPointer { r in
                    out.withUnsafeMutableBufferPointer { o in
                        speex_echo_cancellation(echoState, m.baseAddress! + position, r.baseAddress! + position, o.baseAddress! + position)
                        _ = speex_preprocess_run(preprocess, o.baseAddress! + position)
                    }
                }
            }
            position += Int(frame)
        }
        // The preprocessor's overlap delays its output by one frame (aec-eval measures 160
        // samples): undo it, as Sonora's latency is undone.
        return Array(out.dropFirst(Int(frame)).map { Float($0) / 32768 }) + [Float](repeating: 0, count: Int(frame))
    }

    static func measure(_ s: Scenario, cancel: (Scenario) throws -> [Float]) rethrows -> Result {
        let start = clock()
        let out = try cancel(s)
        let cpu = Double(clock() - start) / Double(CLOCKS_PER_SEC) / seconds
        let block = 320
        var micSum = 0.0, outSum = 0.0, dot = 0.0, nearSum = 0.0, dtOut = 0.0
        var index = Int(4 * rate)
        while index + block <= s.mic.count {
            var echoEnergy = 0.0, nearEnergy = 0.0
            for n in index..<(index + block) {
                echoEnergy += Double(s.echo[n] * s.echo[n])
                nearEnergy += Double(s.near[n] * s.near[n])
            }
            if nearEnergy == 0 && echoEnergy > Double(block) * 1e-6 {
                for n in index..<(index + block) { micSum += Double(s.mic[n] * s.mic[n]); outSum += Double(out[n] * out[n]) }
            }
            if nearEnergy > Double(block) * 1e-6 && echoEnergy > Double(block) * 1e-6 {
                for n in index..<(index + block) {
                    dot += Double(out[n] * s.near[n]); nearSum += Double(s.near[n] * s.near[n]); dtOut += Double(out[n] * out[n])
                }
            }
            index += block
        }
        let gain = dot / max(nearSum, 1e-30)
        let kept = gain * gain * nearSum
        return Result(
            erle: 10 * log10(micSum / max(outSum, 1e-30)), nearGain: 10 * log10(max(gain * gain, 1e-30)),
            nearSDR: 10 * log10(kept / max(dtOut - 2 * gain * dot + kept, 1e-30)), cpuPerSecond: cpu)
    }

    static func scaled(_ x: [Float], to level: Double) -> [Float] {
        let rms = (x.reduce(0.0) { $0 + Double($1 * $1) } / Double(x.count)).squareRoot()
        return x.map { Float(Double($0) * pow(10, level / 20) / max(rms, 1e-30)) }
    }

    /// Syllables of glottal pulses (or breath noise) through three formants, with pauses.
    static func talker(_ random: inout SplitMix, level: Double) -> [Float] {
        let count = Int(seconds * rate)
        var out = [Float](repeating: 0, count: count)
        var index = 0
        var state = [Double](repeating: 0, count: 6)
        while index < count {
            let syllable = Int((0.08 + 0.17 * random.next()) * rate), pause = Int((0.05 + 0.35 * random.next()) * rate)
            let voiced = random.next() < 0.75, pitch = 90 + 120 * random.next()
            let formants = [300 + 600 * random.next(), 900 + 1600 * random.next(), 2200 + 1500 * random.next()]
            let poles = formants.map { (2 * 0.88 * cos(2 * Double.pi * $0 / rate), -0.88 * 0.88) }
            for n in 0..<syllable where index + n < count {
                var x = random.gaussian() * (voiced ? 0.3 : 1)
                if voiced && Int(Double(n) * pitch / rate) != Int(Double(n + 1) * pitch / rate) { x += 2 }
                var y = 0.0
                for (k, (a1, a2)) in poles.enumerated() {
                    let v = x + a1 * state[2 * k] + a2 * state[2 * k + 1]
                    state[2 * k + 1] = state[2 * k]; state[2 * k] = v
                    y += v
                }
                out[index + n] = Float(y * sin(Double.pi * Double(n) / Double(syllable)))
            }
            index += syllable + pause
        }
        return scaled(out, to: level)
    }

    struct SplitMix {
        var state: UInt64
        init(seed: UInt64) { state = seed }
        mutating func next() -> Double {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Double((z ^ (z >> 31)) >> 11) / Double(1 << 53)
        }
        mutating func gaussian() -> Double {
            (-2 * log(max(next(), 1e-12))).squareRoot() * cos(2 * Double.pi * next())
        }
    }
}
