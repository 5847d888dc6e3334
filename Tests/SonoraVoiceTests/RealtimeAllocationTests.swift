import SonoraTestSupport
import Testing
@testable import SonoraVoice

@Suite("The canceller allocates nothing per frame", .serialized)
struct VoiceAllocationTests {
    @Test("10 ms frames at 16 and 48 kHz, with every stage switched on", .enabled(if: AllocationCounter.isAvailable), arguments: [16000.0, 48000.0])
    func noAllocations(rate: Double) throws {
        var configuration = EchoCancellerConfiguration(sampleRate: rate)
        configuration.automaticGainControl = true
        configuration.comfortNoise = true
        let canceller = try EchoCanceller(configuration: configuration)
        let frame = Int(rate / 100)
        let seconds = 3.0
        let ref = VoiceTestSignals.talker(seconds: seconds, rate: rate, seed: 4, level: -24)
        let mic = VoiceTestSignals.add(VoiceTestSignals.convolve(ref, VoiceTestSignals.room(rt60: 0.1, delay: 0.03, rate: rate, seed: 5)),
                                       VoiceTestSignals.noise(seconds: seconds, rate: rate, seed: 6, level: -60))
        var out = [Float](repeating: 0, count: frame)
        // Warm every path up (delay lock, re-alignment, copies) before counting.
        var position = 0
        let warm = Int(1.5 * rate)
        mic.withUnsafeBufferPointer { m in
            ref.withUnsafeBufferPointer { r in
                out.withUnsafeMutableBufferPointer { o in
                    while position + frame <= warm {
                        canceller.process(microphone: m.baseAddress! + position, reference: r.baseAddress! + position, output: o.baseAddress!, frames: frame)
                        position += frame
                    }
                    AllocationCounter.begin()
                    while position + frame <= mic.count {
                        canceller.process(microphone: m.baseAddress! + position, reference: r.baseAddress! + position, output: o.baseAddress!, frames: frame)
                        position += frame
                    }
                }
            }
        }
        let allocations = AllocationCounter.end()
        #expect(allocations == 0)
        #expect(canceller.metrics.estimatedDelay != nil)
    }
}
