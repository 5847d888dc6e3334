import Foundation
import SonoraCore
import SonoraDSP
import SonoraFile
import SonoraTestSupport
import Testing

/// The compact (minimum-phase, 32-tap) form of the MIT KEMAR set and its time-domain path.
@Suite("HRTF minimum-phase sets and the time-domain path", .serialized)
struct HRTFMinimumPhaseTests {
    static func energy(_ x: [Float]) -> Float { x.reduce(0) { $0 + $1 * $1 } }

    @Test func theCompactSetKeepsDelaysAndMostOfTheEnergy() throws {
        let full = try SOFAFile.load(path: SOFAFile.defaultPath, sampleRate: 48000)
        let compact = full.minimumPhase(taps: 32)
        #expect(compact.measurements.count == full.measurements.count)
        #expect(HRTFKernel(set: compact, blockSize: 128).isTimeDomain)
        #expect(!HRTFKernel(set: full, blockSize: 128).isTimeDomain)
        var worstLoss: Float = 0
        for (original, short) in zip(full.measurements, compact.measurements) {
            #expect(original.azimuth == short.azimuth && original.elevation == short.elevation)
            for (a, b) in [(original.left, short.left), (original.right, short.right)] {
                // The onset delay stays where it was: the first sample at a tenth of the peak.
                let peak = a.map(abs).max()!
                let onset = a.firstIndex { abs($0) >= 0.1 * peak }!
                #expect(b.firstIndex { $0 != 0 } == onset)
                worstLoss = max(worstLoss, 10 * log10(Self.energy(a) / Self.energy(b)))
            }
        }
        print("HRTF minimum phase, 32 taps: worst energy loss \(worstLoss) dB")
        #expect(worstLoss < 1.5, "a response lost \(worstLoss) dB in 32 minimum-phase taps")
        // Right of the head: the right ear hears first and louder.
        let right = try #require(compact.measurements.first { abs($0.azimuth - 90) < 0.5 && abs($0.elevation) < 0.5 })
        #expect(right.right.firstIndex { $0 != 0 }! < right.left.firstIndex { $0 != 0 }!)
        #expect(Self.energy(right.right) > 4 * Self.energy(right.left))
    }

    @Test(arguments: [64, 128])
    func theTimeDomainPathEqualsDirectConvolution(blockSize: Int) throws {
        let compact = try SOFAFile.load(path: SOFAFile.defaultPath, sampleRate: 48000).minimumPhase(taps: 32)
        let kernel = HRTFKernel(set: compact, blockSize: blockSize)
        #expect(kernel.isTimeDomain)
        let input = TestSignal.whiteNoise(count: 3000, seed: 21, amplitude: 0.5)
        for measurement in [0, 150, 355, compact.measurements.count - 1] {
            let renderer = BinauralRenderer(maximumFrames: 512)
            renderer.setKernel(kernel)
            let direction = (azimuth: compact.measurements[measurement].azimuth, elevation: compact.measurements[measurement].elevation)
            #expect(kernel.nearestMeasurement(azimuth: direction.azimuth, elevation: direction.elevation) == measurement)
            let output = BinauralRendererTests.render(renderer, input, calls: [blockSize, 37, 300, 1, 7, 90], gain: 0.5) { _ in direction }
            let expectedLeft = BinauralRendererTests.convolve(input, compact.measurements[measurement].left).map { $0 * 0.5 }
            let expectedRight = BinauralRendererTests.convolve(input, compact.measurements[measurement].right).map { $0 * 0.5 }
            let peak = max(expectedLeft.map(abs).max()!, expectedRight.map(abs).max()!)
            let error = max(
                zip(output.left, expectedLeft).map { abs($0 - $1) }.max()!, zip(output.right, expectedRight).map { abs($0 - $1) }.max()!)
            #expect(error < peak * 1e-5, "measurement \(measurement): off by \(error) (peak \(peak))")
        }
    }
}
