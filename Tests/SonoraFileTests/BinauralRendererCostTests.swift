import Foundation
import SonoraDSP
import SonoraFile
import Testing

/// Prints what HRTF rendering costs: CPU time per source per second of 48 kHz audio, 8
/// sources circling at different speeds over the MIT KEMAR set (558 taps at 48 kHz), 1024-frame
/// calls, 128-sample blocks; then the same with its 32-tap minimum-phase form (the
/// time-domain path). Asserts nothing (tests never judge wall-clock or CPU time);
/// meaningful in a release build (`swift test -c release --filter BinauralRendererCost`).
@Suite("HRTF rendering cost", .serialized)
struct BinauralRendererCostTests {
    @Test(arguments: [false, true])
    func printsTheCostPerSourceSecond(compact: Bool) throws {
        let full = try SOFAFile.load(path: SOFAFile.defaultPath, sampleRate: 48000)
        let set = compact ? full.minimumPhase(taps: 32) : full
        let kernel = HRTFKernel(set: set, blockSize: 128)
        let sources = 8, slice = 1024, seconds = 1
        let renderers = (0..<sources).map { _ in BinauralRenderer(maximumFrames: slice) }
        for renderer in renderers { renderer.setKernel(kernel) }
        var generator = SystemRandomNumberGenerator()
        let input = (0..<slice).map { _ in Float.random(in: -0.5...0.5, using: &generator) }
        var left = [Float](repeating: 0, count: slice), right = left
        func thisThreadCPU() -> Double {
            var time = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
            return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
        }
        let calls = seconds * 48000 / slice
        var start = 0.0
        for call in -4..<calls {
            if call == 0 { start = thisThreadCPU() }
            for (index, renderer) in renderers.enumerated() {
                let azimuth = Float(call * slice) / 48000 * 90 * Float(index + 1) - 180
                renderer.render(input, count: slice, azimuth: azimuth, elevation: 0, gain: 0.5, addingInto: &left, &right)
            }
        }
        let perSourceSecond = (thisThreadCPU() - start) / Double(sources * seconds)
        #if DEBUG
        let build = "debug build, not representative"
        #else
        let build = "release build"
        #endif
        print("HRTF cost: \(Int(perSourceSecond * 1e6)) µs CPU per source per second of 48 kHz (\(compact ? "32-tap minimum phase, time domain" : "\(set.filterLength) taps, partitioned FFT"), \(build))")
        #expect(perSourceSecond > 0)
    }
}
