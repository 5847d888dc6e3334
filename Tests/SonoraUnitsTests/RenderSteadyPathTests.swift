import SonoraCore
import SonoraTestSupport
import Testing
@testable import SonoraUnits

/// `AudioUnit.render`'s steady path (no event, ramp, notification, bypass or crossfade; no
/// output cache, not in place): the same output, pulls and statuses as the general path, and
/// no heap call.
@Suite("The steady render path", .serialized)
struct RenderSteadyPathTests {
    /// Two input elements, each pulled through a render callback; writes 2 × input 0 + input 1
    /// and a marker of the slice (its offset) into channel 1, so a split render would show.
    final class Summer: AudioUnit, @unchecked Sendable {
        var processCalls = 0

        init() throws {
            super.init(
                description: AudioComponentDescription(type: .effect, subType: "stdy", manufacturer: .sonora), name: "summer",
                inputs: 2, outputs: 1)
            for element in 0..<2 { try setStreamFormat(.canonical(sampleRate: 48000, channels: 2), scope: .input, element: element) }
            try setStreamFormat(.canonical(sampleRate: 48000, channels: 2), scope: .output, element: 0)
        }

        override func process(_ context: RenderContext) -> AudioError.Code {
            processCalls += 1
            let first = context.input(0)
            let second = context.input(1)
            for frame in 0..<context.frameCount {
                context.output.samples(0)[frame] = 2 * first.samples(0)[frame] + second.samples(1)[frame]
                context.output.samples(1)[frame] = first.samples(1)[frame] + Float(context.frameOffset)
            }
            return .noError
        }
    }

    final class Refusing: RenderCallbackTarget {
        override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code { .noConnection }
    }

    final class Observer: RenderCallbackTarget {
        var calls = 0
        override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
            calls += 1
            return .noError
        }
    }

    struct Setup {
        let unit: Summer
        let sources: [ConstantSource]
    }

    func setup(notified: Observer?) throws -> Setup {
        let unit = try Summer()
        try unit.setMaximumFramesPerSlice(256)
        let sources = [ConstantSource(0, counting: true), ConstantSource(0.25)]
        for (element, source) in sources.enumerated() { try unit.setRenderCallback(source, input: element) }
        try unit.initialize()
        if let notified { try unit.addRenderNotify(RenderCallback(notified), keeping: notified) }
        return Setup(unit: unit, sources: sources)
    }

    /// `frames` frames (0 allowed) of output 0 at `sampleTime`.
    func render(_ unit: AudioUnit, frames: Int, sampleTime: Double) throws -> [[Float]] {
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 256)
        var flags = RenderActionFlags()
        let status = unit.render(
            flags: &flags, timeStamp: AudioTimeStamp(sampleTime: sampleTime), bus: 0, frameCount: frames,
            into: buffers.list(frameCount: frames))
        guard status == .noError else { throw AudioError(status, "render failed") }
        return (0..<2).map { Array(buffers.list(frameCount: frames)[$0]) }
    }

    @Test func steadyRenderMatchesTheGeneralPath() throws {
        let observer = Observer()
        let steady = try setup(notified: nil)
        let general = try setup(notified: observer)  // a render notification takes the general path
        defer { steady.unit.uninitialize(); general.unit.uninitialize() }
        var sampleTime = 0.0
        for frames in [256, 100, 1, 0, 256, 37] {
            let a = try render(steady.unit, frames: frames, sampleTime: sampleTime)
            let b = try render(general.unit, frames: frames, sampleTime: sampleTime)
            #expect(a == b, "\(frames) frames at \(sampleTime)")
            // A second output render of the same cycle does not pull again, on either path.
            let again = try render(steady.unit, frames: frames, sampleTime: sampleTime)
            #expect(again == a)
            sampleTime += Double(frames)
        }
        #expect(steady.sources.map(\.calls) == general.sources.map(\.calls))
        #expect(steady.sources[0].calls == 6)  // one pull per time stamp, the repeats served from the first
        #expect(steady.unit.processCalls == 10)  // every render with frames processes once (0 frames: none)
        #expect(observer.calls == 12)  // pre and post of the general unit's six renders
    }

    @Test func aFailedPullFailsTheRenderOnBothPaths() throws {
        for notified in [nil, Observer()] {
            let unit = try Summer()
            try unit.setRenderCallback(ConstantSource(1), input: 0)
            try unit.setRenderCallback(Refusing(), input: 1)
            try unit.initialize()
            defer { unit.uninitialize() }
            if let notified { try unit.addRenderNotify(RenderCallback(notified), keeping: notified) }
            let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 64)
            var flags = RenderActionFlags()
            let status = unit.render(
                flags: &flags, timeStamp: AudioTimeStamp(sampleTime: 0), bus: 0, frameCount: 64, into: buffers.list(frameCount: 64))
            #expect(status == .noConnection)
            #expect(unit.processCalls == 0)
        }
    }

    @Test(.enabled(if: AllocationCounter.isAvailable))
    func steadyRenderMakesNoHeapCalls() throws {
        let steady = try setup(notified: nil)
        defer { steady.unit.uninitialize() }
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 256)
        let list = buffers.list(frameCount: 256)
        func cycle(_ index: Int) -> AudioError.Code {
            var flags = RenderActionFlags()
            return steady.unit.render(
                flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(index * 256)), bus: 0, frameCount: 256, into: list)
        }
        for index in 0..<20 { #expect(cycle(index) == .noError) }
        var heapCalls = 0
        var failures = 0
        for index in 20..<2_020 {
            AllocationCounter.begin()
            let status = cycle(index)
            heapCalls += AllocationCounter.end()
            if status != .noError { failures += 1 }
        }
        #expect(failures == 0)
        #expect(heapCalls == 0, "\(heapCalls) heap calls in 2,000 steady renders")
    }
}
