import Testing
@testable import SonoraVoice

@Suite("Bulk delay estimation")
struct DelayEstimationTests {
    static let rate = 16000.0

    static func estimate(delays: [(seconds: Double, until: Double)], total: Double) -> [Double?] {
        let ref = VoiceTestSignals.talker(seconds: total, rate: rate, seed: 21, level: -24)
        var mic = [Float](repeating: 0, count: ref.count)
        var start = 0.0
        for (delay, until) in delays {
            let d = Int(delay * rate)
            for n in Int(start * rate)..<min(ref.count, Int(until * rate)) where n >= d { mic[n] = 0.5 * ref[n - d] }
            start = until
        }
        mic = VoiceTestSignals.add(mic, VoiceTestSignals.noise(seconds: total, rate: rate, seed: 22, level: -60))
        let estimator = BulkDelayEstimator(sampleRate: rate, maximumDelay: 0.6)
        defer { estimator.free() }
        var found: [Double?] = []
        let block = 160
        var position = 0
        ref.withUnsafeBufferPointer { r in
            mic.withUnsafeBufferPointer { m in
                while position + block <= ref.count {
                    estimator.push(reference: r.baseAddress! + position, microphone: m.baseAddress! + position, count: block)
                    position += block
                    if position % Int(rate) == 0 { found.append(estimator.delay.map { Double($0) / rate }) }
                }
            }
        }
        return found
    }

    @Test("finds known delays to within 0.5 ms", arguments: [0.0, 0.037, 0.12, 0.3, 0.55])
    func knownDelay(seconds: Double) throws {
        let found = Self.estimate(delays: [(seconds, 6)], total: 6)
        let last = try #require(found.last ?? nil)
        #expect(abs(last - seconds) <= 0.0005, "found \(last) s for \(seconds) s")
    }

    @Test("re-finds the delay after it jumps (100 ms → 250 ms at 5 s) within 2 s")
    func jump() throws {
        let found = Self.estimate(delays: [(0.1, 5), (0.25, 10)], total: 10)
        let before = try #require(found[4])
        #expect(abs(before - 0.1) <= 0.0005)
        let after = try #require(found[6])
        #expect(abs(after - 0.25) <= 0.0005, "found \(after) s 2 s after the jump")
    }

    @Test("silence on the reference never invents a delay")
    func silence() {
        let estimator = BulkDelayEstimator(sampleRate: Self.rate, maximumDelay: 0.5)
        defer { estimator.free() }
        let zeros = [Float](repeating: 0, count: 16000)
        let noise = VoiceTestSignals.noise(seconds: 1, rate: Self.rate, seed: 5, level: -40)
        for _ in 0..<4 { estimator.push(reference: zeros, microphone: noise, count: zeros.count) }
        #expect(estimator.delay == nil)
    }
}
