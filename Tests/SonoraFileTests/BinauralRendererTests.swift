import Foundation
import Synchronization
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

    /// At the file's rate (44.1 kHz) and resampled to 48 kHz (the reference resampled by
    /// libmysofa in the test itself).
    @Test(arguments: [(64, nil), (128, 48000), (512, nil)] as [(Int, Float?)])
    func equalsDirectConvolutionAtMeasuredDirections(blockSize: Int, rate: Float?) throws {
        let reference = try MySofaReference(resampledTo: rate)
        let set = try SOFAFile.load(path: SOFAFile.defaultPath, sampleRate: reference.sampleRate)
        #expect(set.filterLength == reference.taps)
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
    /// Calls of one size (the fade inside a call) and of mixed sizes that split blocks (the
    /// fade spread over calls and partial blocks).
    /// The full set (partitioned FFT path) and its 32-tap minimum-phase form (time-domain path).
    @Test(arguments: [([256], false), ([100, 37, 300, 1, 64], false), ([256], true)])
    func aSourceSweptRoundTheHeadHasNoClicks(calls: [Int], compact: Bool) throws {
        let rate = 48000.0, count = 480_000
        let full = try SOFAFile.load(path: SOFAFile.defaultPath, sampleRate: rate)
        let kernel = HRTFKernel(set: compact ? full.minimumPhase(taps: 32) : full, blockSize: 128)
        #expect(kernel.isTimeDomain == compact)
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
        // steepest ones included (measured over every direction within ±40° of elevation, in a
        // release build: (−45°, −10°) for both sets here).
        var ownSlope: Float = 0
        let still = input
        for direction: (Float, Float) in [(-90, 0), (90, 0), (-60, 20), (60, 20), (-45, -10), (45, -10)] {
            let renderer = BinauralRenderer(maximumFrames: 256)
            renderer.setKernel(kernel)
            ownSlope = max(ownSlope, largestStep(Self.render(renderer, still, calls: [256]) { _ in direction }))
        }
        let renderer = BinauralRenderer(maximumFrames: 256)
        renderer.setKernel(kernel)
        let swept = Self.render(renderer, input, calls: calls) { frame in
            let t = Float(frame) / Float(count)
            return (azimuth: -180 + 360 * t, elevation: 40 * sin(2 * .pi * 3 * t))
        }
        let largest = largestStep(swept)
        print("HRTF sweep (calls \(calls), compact \(compact)): largest step \(largest), own slope \(ownSlope)")
        #expect(largest <= ownSlope, "a step of \(largest) in the sweep; the signal's own steepest is \(ownSlope)")
    }

    /// A muted source skips the filtering but keeps its input history: once the gain is back
    /// (after the one ramping call), the output is the direct convolution again.
    @Test func aMutedSourceComesBackExact() throws {
        let reference = try MySofaReference()
        let set = try SOFAFile.load(path: SOFAFile.defaultPath, sampleRate: reference.sampleRate)
        let renderer = BinauralRenderer(maximumFrames: 128)
        renderer.setKernel(HRTFKernel(set: set, blockSize: 128))
        let measurement = 200
        let direction = (azimuth: -reference.azimuths[measurement], elevation: reference.elevations[measurement])
        let input = TestSignal.whiteNoise(count: 128 * 30, seed: 9, amplitude: 0.5)
        var left = [Float](repeating: 0, count: input.count), right = left
        for call in 0..<30 {
            let gain: Float = (10..<20).contains(call) ? 0 : 1
            input.withUnsafeBufferPointer { x in
                left.withUnsafeMutableBufferPointer { l in
                    right.withUnsafeMutableBufferPointer { r in
                        renderer.render(
                            x.baseAddress! + call * 128, count: 128, azimuth: direction.azimuth, elevation: direction.elevation,
                            gain: gain, addingInto: l.baseAddress! + call * 128, r.baseAddress! + call * 128)
                    }
                }
            }
        }
        let expected = Self.convolve(input, reference.left[measurement])
        let peak = expected.map(abs).max()!
        // Calls 11…19 are silent (call 10 ramps down); from call 21 on (call 20 ramps up) exact.
        #expect(left[(11 * 128)..<(20 * 128)].allSatisfy { $0 == 0 })
        let error = (21 * 128..<input.count).map { abs(left[$0] - expected[$0]) }.max()!
        #expect(error < peak * 1e-5, "off by \(error) after the mute (peak \(peak))")
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
        // The partitioned FFT path and the time-domain path (a compact set) in turn.
        let kernels = [HRTFKernel(set: set, blockSize: 128), HRTFKernel(set: set.minimumPhase(taps: 32), blockSize: 128)]
        let renderer = BinauralRenderer(maximumFrames: 512)
        let input = TestSignal.whiteNoise(count: 512, seed: 5)
        var left = [Float](repeating: 0, count: 512), right = left
        var heapCalls = 0
        // Warm both paths up first: their first calls may instantiate runtime metadata.
        for kernel in kernels {
            let warm = BinauralRenderer(maximumFrames: 512)
            warm.setKernel(kernel)
            for count in [512, 77, 1] {
                warm.render(input, count: count, azimuth: 10, elevation: 0, gain: 1, addingInto: &left, &right)
                warm.render(input, count: count, azimuth: -100, elevation: 20, gain: 0.5, addingInto: &left, &right)
            }
        }
        input.withUnsafeBufferPointer { x in
            left.withUnsafeMutableBufferPointer { l in
                right.withUnsafeMutableBufferPointer { r in
                    for cycle in 0..<400 {
                        // A new kernel now and then: the handover is taken inside render.
                        if cycle % 100 == 0 { renderer.setKernel(kernels[cycle / 100 % 2]) }
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

/// Kernels handed over while the render side runs on its own thread are all taken: each
/// pair of quick `setKernel` calls ends with the second kernel sounding, however the render
/// thread interleaves with them. Large blocks make the state `setKernel` builds slow to
/// make, widening the window in which the render thread once took the first kernel and
/// then, its retired slot full, refused the second until a later `setKernel`.
@Suite("BinauralRenderer kernel handover across threads", .serialized)
struct BinauralRendererHandoverTests {
    final class RenderLoop: @unchecked Sendable {
        let renderer = BinauralRenderer(maximumFrames: 16)
        let heard = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)

        func run() {
            let ones = [Float](repeating: 1, count: 16)
            var left = [Float](repeating: 0, count: 16), right = left
            while !stop.load(ordering: .acquiring) {
                for i in 0..<16 { left[i] = 0 }
                renderer.render(ones, count: 16, azimuth: 0, elevation: 0, gain: 1, addingInto: &left, &right)
                heard.store(Int(left[15].rounded()), ordering: .releasing)
                sched_yield()
            }
        }
    }

    @Test func theLastOfTwoQuickHandoversIsTaken() throws {
        // Kernel i: one measurement whose left response is the single tap i.
        let kernels = try (0...160).map { value in
            HRTFKernel(
                set: try HRTFSet(sampleRate: 48000, filterLength: 1, measurements: [HRTFMeasurement(azimuth: 0, elevation: 0, left: [Float(value)], right: [0])]),
                blockSize: 2048)
        }
        let loop = RenderLoop()
        let thread = Thread { loop.run() }
        thread.start()
        defer { loop.stop.store(true, ordering: .releasing) }
        var stuck: [Int] = []
        for pair in 1...80 {
            loop.renderer.setKernel(kernels[2 * pair - 1])
            loop.renderer.setKernel(kernels[2 * pair])
            // A liveness bound, not a timing assertion: the render loop runs every few µs.
            var waited = 0
            while loop.heard.load(ordering: .acquiring) != 2 * pair && waited < 10_000 {
                usleep(100)
                waited += 1
            }
            if loop.heard.load(ordering: .acquiring) != 2 * pair { stuck.append(pair) }
        }
        #expect(stuck.isEmpty, "the second kernel was never taken after pairs \(stuck)")
    }
}
