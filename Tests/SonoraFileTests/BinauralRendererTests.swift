import Foundation
import SonoraCore
import SonoraDSP
import SonoraFile
import SonoraTestSupport
import Testing

/// The HRTF renderer against the SOFA file's own responses (read with libmysofa directly)
/// and against what a moving source must not do (click).
@Suite("Binaural rendering with the SOFA file's responses", .serialized)
struct BinauralRendererTests {
    /// Direct time-domain convolution, the reference.
    static func convolve(_ x: [Float], _ h: [Float]) -> [Float] {
        var y = [Float](repeating: 0, count: x.count)
        x.withUnsafeBufferPointer { x in
            h.withUnsafeBufferPointer { h in
                for n in 0..<x.count {
                    var acc: Float = 0
                    for k in 0..<min(h.count, n + 1) { acc += h[k] * x[n - k] }
                    y[n] = acc
                }
            }
        }
        return y
    }

    /// Renders `input` in calls of the given sizes (cycled), at fixed or per-call directions.
    static func render(
        _ renderer: BinauralRenderer, _ input: [Float], calls: [Int], gain: Float = 1,
        direction: (Int) -> (azimuth: Float, elevation: Float)
    ) -> (left: [Float], right: [Float]) {
        var left = [Float](repeating: 0, count: input.count), right = left
        var done = 0, call = 0
        input.withUnsafeBufferPointer { x in
            left.withUnsafeMutableBufferPointer { l in
                right.withUnsafeMutableBufferPointer { r in
                    while done < input.count {
                        let n = min(calls[call % calls.count], input.count - done)
                        let d = direction(done)
                        renderer.render(
                            x.baseAddress! + done, count: n, azimuth: d.azimuth, elevation: d.elevation, gain: gain,
                            addingInto: l.baseAddress! + done, r.baseAddress! + done)
                        done += n
                        call += 1
                    }
                }
            }
        }
        return (left, right)
    }

    @Test(arguments: [64, 128, 512])
    func equalsDirectConvolutionAtMeasuredDirections(blockSize: Int) throws {
        let reference = try MySofaReference()
        let set = try SOFAFile.load(path: SOFAFile.defaultPath, sampleRate: reference.sampleRate)
        let kernel = HRTFKernel(set: set, blockSize: blockSize)
        let input = TestSignal.whiteNoise(count: 3000, seed: 7, amplitude: 0.5)
        for measurement in [0, 101, 350, reference.left.count / 2, reference.left.count - 1] {
            let renderer = BinauralRenderer(maximumFrames: 512)
            renderer.setKernel(kernel)
            // Core Audio's azimuth is SOFA's, negated.
            let direction = (azimuth: -reference.azimuths[measurement], elevation: reference.elevations[measurement])
            #expect(kernel.nearestMeasurement(azimuth: direction.azimuth, elevation: direction.elevation) == measurement)
            // Call sizes that are and are not multiples of the block: the result is the same.
            let output = Self.render(renderer, input, calls: [blockSize, 37, 300, 1, 2 * blockSize, 90], gain: 0.5) { _ in direction }
            let expectedLeft = Self.convolve(input, reference.left[measurement]).map { $0 * 0.5 }
            let expectedRight = Self.convolve(input, reference.right[measurement]).map { $0 * 0.5 }
            let peak = max(expectedLeft.map(abs).max()!, expectedRight.map(abs).max()!)
            let errorLeft = zip(output.left, expectedLeft).map { abs($0 - $1) }.max()!
            let errorRight = zip(output.right, expectedRight).map { abs($0 - $1) }.max()!
            #expect(errorLeft < peak * 1e-5, "measurement \(measurement): left off by \(errorLeft) (peak \(peak))")
            #expect(errorRight < peak * 1e-5, "measurement \(measurement): right off by \(errorRight) (peak \(peak))")
        }
    }

    /// The nearest measurement wins for directions between measurements too.
    @Test func findsTheNearestMeasuredDirection() throws {
        let set = try SOFAFile.load(path: SOFAFile.defaultPath, sampleRate: 44100)
        let kernel = HRTFKernel(set: set, blockSize: 128)
        func vector(_ a: Float, _ e: Float) -> SIMD3<Float> {
            let a = a * .pi / 180, e = e * .pi / 180
            return SIMD3(sin(a) * cos(e), sin(e), cos(a) * cos(e))
        }
        var generator = SeededGenerator(seed: 11)
        for _ in 0..<500 {
            let azimuth = Float(generator.nextUnit()) * 400 - 200, elevation = Float(generator.nextUnit()) * 180 - 90
            let query = vector(azimuth, elevation)
            let found = kernel.nearestMeasurement(azimuth: azimuth, elevation: elevation)
            let best = set.measurements.map { (vector($0.azimuth, $0.elevation) * query).sum() }.max()!
            let foundCosine = (vector(set.measurements[found].azimuth, set.measurements[found].elevation) * query).sum()
            #expect(foundCosine >= best - 1e-6, "(\(azimuth), \(elevation)) → \(found)")
        }
    }

    /// A noise swept all round the head (and up and down) over 10 s at 48 kHz: no output step
    /// (sample to sample) is larger than the steepest step of the same noise rendered at fixed
    /// directions — the signal's own slope. A filter switched without a cross-fade steps by
    /// the difference of two filters' outputs on top of it.
    @Test func aSourceSweptRoundTheHeadHasNoClicks() throws {
        let rate = 48000.0, count = 480_000
        let set = try SOFAFile.load(path: SOFAFile.defaultPath, sampleRate: rate)
        let kernel = HRTFKernel(set: set, blockSize: 128)
        // Noise through two one-pole low-passes (~230 Hz): a gentle slope, so a step stands out
        // (a switch of filters moves the output by the change of delay times the slope).
        let white = TestSignal.whiteNoise(count: count, seed: 3, amplitude: 1)
        var input = [Float](repeating: 0, count: count)
        var first: Float = 0, second: Float = 0
        for n in 0..<count {
            first += 0.03 * (white[n] - first)
            second += 0.03 * (first - second)
            input[n] = 10 * second
        }
        func largestStep(_ output: (left: [Float], right: [Float])) -> Float {
            var largest: Float = 0
            for channel in [output.left, output.right] {
                for n in 1..<channel.count { largest = max(largest, abs(channel[n] - channel[n - 1])) }
            }
            return largest
        }
        // The signal's own slope: the steepest step of the same 10 s at fixed directions, the
        // loudest ones (at low frequencies, an ear facing the source) included.
        var ownSlope: Float = 0
        let still = input
        for direction: (Float, Float) in [(-90, 0), (90, 0), (-60, 20), (60, 20)] {
            let renderer = BinauralRenderer(maximumFrames: 256)
            renderer.setKernel(kernel)
            ownSlope = max(ownSlope, largestStep(Self.render(renderer, still, calls: [256]) { _ in direction }))
        }
        let renderer = BinauralRenderer(maximumFrames: 256)
        renderer.setKernel(kernel)
        let swept = Self.render(renderer, input, calls: [256]) { frame in
            let t = Float(frame) / Float(count)
            return (azimuth: -180 + 360 * t, elevation: 40 * sin(2 * .pi * 3 * t))
        }
        let largest = largestStep(swept)
        print("HRTF sweep: largest step \(largest), own slope \(ownSlope)")
        #expect(largest <= ownSlope, "a step of \(largest) in the sweep; the signal's own steepest is \(ownSlope)")
    }

    @Test func aNewKernelAndResetAreTakenAtTheNextRender() throws {
        let set = try HRTFSet(
            sampleRate: 48000, filterLength: 3,
            measurements: [HRTFMeasurement(azimuth: 0, elevation: 0, left: [1, 0.5, 0], right: [0, 0, 2])])
        let renderer = BinauralRenderer(maximumFrames: 64)
        var left = [Float](repeating: 0, count: 4), right = left
        let impulse: [Float] = [1, 0, 0, 0]
        renderer.render(impulse, count: 4, azimuth: 0, elevation: 0, gain: 1, addingInto: &left, &right)
        #expect(left == [0, 0, 0, 0])  // no kernel: adds nothing
        renderer.setKernel(HRTFKernel(set: set, blockSize: 16))
        renderer.render(impulse, count: 4, azimuth: 0, elevation: 0, gain: 1, addingInto: &left, &right)
        #expect(left.map { ($0 * 1e4).rounded() / 1e4 } == [1, 0.5, 0, 0])
        #expect(right.map { ($0 * 1e4).rounded() / 1e4 } == [0, 0, 2, 0])
        // The impulse's tail would continue; after reset the history is silence.
        renderer.reset()
        left = [0, 0, 0, 0]; right = left
        let silence: [Float] = [0, 0, 0, 0]
        renderer.render(silence, count: 4, azimuth: 0, elevation: 0, gain: 1, addingInto: &left, &right)
        #expect(left.map(abs).max()! < 1e-6)
        renderer.setKernel(nil)
        renderer.render(impulse, count: 4, azimuth: 0, elevation: 0, gain: 1, addingInto: &left, &right)
        #expect(left.map(abs).max()! < 1e-6)
    }
}

@Suite("No allocation in binaural rendering", .serialized, .enabled(if: AllocationCounter.isAvailable))
struct BinauralRendererAllocationTests {
    @Test func renderingAMovingSourceMakesNoHeapCalls() throws {
        let set = try SOFAFile.load(path: SOFAFile.defaultPath, sampleRate: 48000)
        let kernel = HRTFKernel(set: set, blockSize: 128)
        let renderer = BinauralRenderer(maximumFrames: 512)
        let input = TestSignal.whiteNoise(count: 512, seed: 5)
        var left = [Float](repeating: 0, count: 512), right = left
        var heapCalls = 0
        input.withUnsafeBufferPointer { x in
            left.withUnsafeMutableBufferPointer { l in
                right.withUnsafeMutableBufferPointer { r in
                    for cycle in 0..<400 {
                        // A new kernel now and then: the handover is taken inside render.
                        if cycle % 100 == 0 { renderer.setKernel(kernel) }
                        if cycle % 150 == 75 { renderer.reset() }
                        let count = [512, 128, 77, 1, 300][cycle % 5]
                        let azimuth = Float(cycle) * 7 - 180, elevation = Float(cycle % 60) - 30
                        if cycle >= 5 { AllocationCounter.begin() }
                        renderer.render(
                            x.baseAddress!, count: count, azimuth: azimuth, elevation: elevation, gain: Float(cycle % 3) * 0.5,
                            addingInto: l.baseAddress!, r.baseAddress!)
                        if cycle >= 5 { heapCalls += AllocationCounter.end() }
                    }
                }
            }
        }
        #expect(heapCalls == 0, "\(heapCalls) heap calls in 395 renders")
    }
}
