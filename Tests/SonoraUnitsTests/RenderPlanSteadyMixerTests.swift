import Foundation
import SonoraCore
import SonoraTestSupport
import Testing
@_spi(Benchmark) @testable import SonoraUnits

/// Feeds each channel a different waveform that moves with the time stamp, so a sample
/// rendered from the wrong input, cycle or gain shows.
final class MovingSource: RenderCallbackTarget {
    let seed: Float

    init(_ seed: Float) { self.seed = seed }

    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        let buffers = request.pointee.buffers
        let start = Float(request.pointee.timeStamp.sampleTime)
        for channel in 0..<buffers.channelCount {
            let samples = buffers.samples(channel)
            for frame in 0..<request.pointee.frameCount {
                let t = start + Float(frame)
                samples[frame] = 0.4 * sin(t * 0.01 * seed + Float(channel)) + 0.05 * seed
            }
        }
        return .noError
    }
}

/// A graph of a metering mixer fed by render callbacks (stereo and mono), a tone unit (a
/// plan buffer bound directly) and one unconnected input, into a generic output.
private func steadyMixerGraph() throws -> (AudioGraph, MultiChannelMixerUnit, [MovingSource]) {
    let graph = AudioGraph()
    let mixer = MultiChannelMixerUnit(inputs: 6)
    try mixer.setStreamFormat(StreamFormat.canonical(sampleRate: 48000, channels: 1), scope: .input, element: 1)
    let node = graph.addNode(mixer)
    let sources = (0..<4).map { MovingSource(Float($0 + 1)) }
    for (element, source) in zip([0, 1, 2, 4], sources) { try graph.setRenderCallback(source, node: node, input: element) }
    try graph.connect(graph.addNode(try toneUnit(330)), bus: 0, to: node, input: 3)
    // Input 5: unconnected, silent (Core Audio's mixer).
    try mixer.setParameter(MultiChannelMixerUnit.Parameter.volume, scope: .input, element: 0, to: 0.5)
    try mixer.setParameter(MultiChannelMixerUnit.Parameter.pan, scope: .input, element: 1, to: -0.3)
    try mixer.setParameter(MultiChannelMixerUnit.Parameter.pan, scope: .input, element: 2, to: 0.6)
    for element in [0, 1, 3] { try mixer.setProperty(.meteringMode, scope: .input, element: element, to: .flag(true)) }
    try mixer.setProperty(.meteringMode, scope: .output, element: 0, to: .flag(true))
    try graph.connect(node, bus: 0, to: graph.addNode(GenericOutputUnit()), input: 0)
    return (graph, mixer, sources)
}

/// Every meter parameter of the mixer (inputs, output), in a fixed order.
private func meterValues(_ mixer: MultiChannelMixerUnit) throws -> [Float] {
    typealias Parameter = MultiChannelMixerUnit.Parameter
    var values: [Float] = []
    for channel in 0..<2 {
        let id = AudioUnitParameterID(channel)
        for element in 0..<6 {
            for base in [Parameter.preAveragePower, Parameter.prePeakHoldLevel, Parameter.postAveragePower, Parameter.postPeakHoldLevel] {
                values.append(try mixer.parameter(base + id, scope: .input, element: element))
            }
        }
        for base in [Parameter.postAveragePower, Parameter.postPeakHoldLevel] {
            values.append(try mixer.parameter(base + id, scope: .output, element: 0))
        }
    }
    return values
}

@Suite("Render plan: the mixer's steady form", .serialized)
struct RenderPlanSteadyMixerTests {
    typealias Parameter = MultiChannelMixerUnit.Parameter

    /// Parameter events with offsets, a volume ramp, enable, pan, the output volume and
    /// MeteringMode switches (which are not commands: they reach the render side in steady
    /// cycles) along 160 cycles: the lean plan, whose steady cycles run the mixer from its
    /// steady form, renders what the full step renders, sample for sample, and publishes the
    /// same meter values bit for bit after every cycle.
    @Test func mixerFromItsSteadyFormEqualsTheFullStep() throws {
        func script(_ mixer: MultiChannelMixerUnit) -> (Int) throws -> Void {
            { cycle in
                switch cycle {
                case 20: try mixer.setParameter(Parameter.volume, scope: .input, element: 2, to: 0.25, bufferOffset: 40)
                case 35: try mixer.setProperty(.meteringMode, scope: .input, element: 2, to: .flag(true))
                case 50: try mixer.rampParameter(Parameter.volume, scope: .input, element: 1, to: 0.2, duration: 700)
                case 70: try mixer.setParameter(Parameter.enable, scope: .input, element: 0, to: 0)
                case 80: try mixer.setProperty(.meteringMode, scope: .input, element: 1, to: .flag(false))
                case 90: try mixer.setParameter(Parameter.enable, scope: .input, element: 0, to: 1)
                case 100: try mixer.setParameter(Parameter.volume, scope: .output, element: 0, to: 0.7, bufferOffset: 17)
                case 110: try mixer.setProperty(.meteringMode, scope: .output, element: 0, to: .flag(false))
                case 120: try mixer.setParameter(Parameter.pan, scope: .input, element: 1, to: 0.8)
                case 130: try mixer.setProperty(.meteringMode, scope: .output, element: 0, to: .flag(true))
                case 140: try mixer.rampParameter(Parameter.volume, scope: .output, element: 0, to: 0.4, duration: 300)
                default: break
                }
            }
        }
        func render(lean: Bool) throws -> (output: [[Float]], meters: [[Float]], plan: RenderPlan?) {
            let (graph, mixer, sources) = try steadyMixerGraph()
            graph.plansLeanSteps = lean
            try graph.initialize()
            let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 128)
            var output: [[Float]] = [[], []]
            var meters: [[Float]] = []
            let run = script(mixer)
            for cycle in 0..<160 {
                try run(cycle)
                var flags = RenderActionFlags()
                let status = graph.render(
                    flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(cycle * 128)), frameCount: 128, into: buffers.list)
                #expect(status == .noError, "cycle \(cycle)")
                for channel in 0..<2 { output[channel] += buffers.list[channel] }
                meters.append(try meterValues(mixer))
            }
            let plan = graph.plan
            graph.uninitialize()
            withExtendedLifetime(sources) {}
            return (output, meters, plan)
        }
        let full = try render(lean: false)
        let lean = try render(lean: true)
        expectSameSamples(lean.output, full.output)
        let differing = zip(lean.meters, full.meters).enumerated().first { $0.element.0 != $0.element.1 }
        #expect(differing == nil, "meters differ first after cycle \(differing?.offset ?? -1)")
        #expect(full.meters.last!.contains { $0 > -120 }, "the meters measure something")
        let plan = try #require(lean.plan)
        #expect(plan.compactSteadySteps == 1, "the mixer runs from its steady form (the tone and the output do not)")
        // Other suites' units bump the command epoch now and then; most cycles are still steady.
        #expect(plan.steadyCycles > 0, "steady cycles ran")
    }

    /// A render callback that fails in a steady cycle fails the render as the lean step does:
    /// its status, kept as the mixer's LastRenderError.
    @Test func aFailingCallbackFailsTheSteadyCycle() throws {
        final class FailingLater: RenderCallbackTarget {
            var failAt = Double.infinity
            override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
                if request.pointee.timeStamp.sampleTime >= failAt { return .parameterError }
                request.pointee.buffers.clear()
                return .noError
            }
        }
        let graph = AudioGraph()
        let mixer = MultiChannelMixerUnit(inputs: 2)
        let node = graph.addNode(mixer)
        let good = MovingSource(1)
        let failing = FailingLater()
        try graph.setRenderCallback(good, node: node, input: 0)
        try graph.setRenderCallback(failing, node: node, input: 1)
        try graph.connect(node, bus: 0, to: graph.addNode(GenericOutputUnit()), input: 0)
        try graph.initialize()
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 128)
        func cycle(_ index: Int) -> AudioError.Code {
            var flags = RenderActionFlags()
            return graph.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(index * 128)), frameCount: 128, into: buffers.list)
        }
        var index = 0
        let plan = try #require(graph.plan)
        // Until a cycle ran steady (another suite's command can delay it).
        while plan.steadyCycles == 0 && index < 10_000 {
            #expect(cycle(index) == .noError)
            index += 1
        }
        #expect(plan.steadyCycles > 0)
        #expect(plan.compactSteadySteps == 1)
        failing.failAt = Double(index * 128)
        #expect(cycle(index) == .parameterError)
        #expect(mixer.lastRenderError == .parameterError)
        graph.uninitialize()
    }
}

/// A render callback that checks the buffers it is handed against its input's width and the
/// cycle's frame count (and that its channels do not overlap), reads every sample of them, then
/// fills them as `MovingSource` does.
final class CheckingSource: RenderCallbackTarget {
    let channels: Int
    let seed: Float
    /// Calls whose buffers were not of the input's width, the cycle's frame count, or distinct channels.
    var wrongBuffers = 0
    var calls = 0
    /// What the buffers held when handed over, summed (read, so a bad view would show under a sanitizer).
    var readSum: Float = 0

    init(channels: Int, seed: Float) {
        self.channels = channels
        self.seed = seed
    }

    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        calls += 1
        let buffers = request.pointee.buffers
        let frames = request.pointee.frameCount
        if buffers.channelCount != channels || buffers.frameCount != frames { wrongBuffers += 1 }
        for channel in 0..<buffers.channelCount {
            let samples = buffers.samples(channel)
            for other in 0..<buffers.channelCount where other != channel {
                let distance = buffers.samples(other) - samples
                if distance > -frames && distance < frames { wrongBuffers += 1 }
            }
            for frame in 0..<frames { readSum += samples[frame] }
        }
        let start = Float(request.pointee.timeStamp.sampleTime)
        for channel in 0..<buffers.channelCount {
            let samples = buffers.samples(channel)
            for frame in 0..<frames { samples[frame] = CheckingSource.sample(seed: seed, channel: channel, time: start + Float(frame)) }
        }
        return .noError
    }

    static func sample(seed: Float, channel: Int, time: Float) -> Float {
        0.3 * sin(time * 0.013 * seed + Float(channel) * 0.7) + 0.02 * seed * Float(channel + 1)
    }
}

/// Render callbacks of different widths on one mixer, pulled in its steady cycles.
@Suite("The mixer's steady cycle: callback inputs pulled into one buffer", .serialized)
struct RenderPlanSteadyMixerPullBufferTests {
    typealias Parameter = MultiChannelMixerUnit.Parameter

    /// A mono, a stereo and a four-channel callback (each with content of its own), a second
    /// stereo callback, into a stereo output, volumes and pans set: every cycle — steady ones
    /// included, where every callback input is pulled into the same memory — is the sum the
    /// mixer's rules give, computed here from the sources' samples; and every callback was
    /// handed a list of its input's width and the cycle's frame count, frame counts changing.
    @Test func callbackInputsOfDifferentWidthsMixAsTheirOwn() throws {
        let widths = [2, 1, 4, 2]
        let volumes: [Float] = [0.5, 0.8, 0.3, 1]
        let pans: [Float] = [0.2, -0.4, 0, -0.6]
        let graph = AudioGraph()
        let mixer = MultiChannelMixerUnit(inputs: widths.count)
        try mixer.setMaximumFramesPerSlice(256)
        let node = graph.addNode(mixer)
        let sources = widths.enumerated().map { CheckingSource(channels: $0.element, seed: Float($0.offset + 1)) }
        for (element, width) in widths.enumerated() {
            if width != 2 {
                try mixer.setStreamFormat(StreamFormat.canonical(sampleRate: 48000, channels: width), scope: .input, element: element)
            }
            try mixer.setParameter(Parameter.volume, scope: .input, element: element, to: volumes[element])
            try mixer.setParameter(Parameter.pan, scope: .input, element: element, to: pans[element])
            try graph.setRenderCallback(sources[element], node: node, input: element)
        }
        let head = GenericOutputUnit()
        try head.setMaximumFramesPerSlice(256)
        try graph.connect(node, bus: 0, to: graph.addNode(head), input: 0)
        try graph.initialize()
        let plan = try #require(graph.plan)
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 256)
        var sampleTime = 0
        var steadyRendered = 0
        var worst: Float = 0
        for cycle in 0..<300 {
            let frames = [128, 64, 256, 32, 128][cycle % 5]
            let steadyBefore = plan.steadyCycles
            var flags = RenderActionFlags()
            let status = graph.render(
                flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(sampleTime)), frameCount: frames, into: buffers.list)
            #expect(status == .noError, "cycle \(cycle)")
            if plan.steadyCycles != steadyBefore { steadyRendered += 1 }
            for frame in 0..<frames {
                var expected: [Float] = [0, 0]
                let time = Float(sampleTime + frame)
                for (element, width) in widths.enumerated() {
                    let sides = MultiChannelMixerKernel.Sides(pan: pans[element], inputChannels: width, outputChannels: 2)
                    for channel in 0..<width {
                        let post = CheckingSource.sample(seed: sources[element].seed, channel: channel, time: time) * volumes[element]
                        if width == 1 {
                            expected[0] += post * sides.left
                            expected[1] += post * sides.right
                        } else if width == 2 {
                            expected[channel] += post * (channel == 0 ? sides.left : sides.right)
                        } else {
                            expected[channel % 2] += post
                        }
                    }
                }
                for channel in 0..<2 { worst = max(worst, abs(buffers.list.samples(channel)[frame] - expected[channel])) }
            }
            sampleTime += frames
        }
        #expect(worst < 1e-5, "the mix differs from the sources' sum by up to \(worst)")
        #expect(steadyRendered > 100, "most cycles ran steady (\(steadyRendered) of 300)")
        #expect(plan.compactSteadySteps == 1)
        for source in sources {
            #expect(source.calls == 300)
            #expect(source.wrongBuffers == 0, "a \(source.channels)-channel callback was handed a wrong list \(source.wrongBuffers) times")
            #expect(source.readSum.isFinite)
        }
        graph.uninitialize()
    }

    /// Two stereo callbacks whose content differs (one silent, one loud), then swapped by
    /// their volumes: in steady cycles the silent input contributes nothing though it is pulled
    /// into the memory the loud one was just pulled into, and the mixer's pre-fader meters
    /// read each input's own level.
    @Test func aSilentInputAfterALoudOneStaysSilent() throws {
        final class Level: RenderCallbackTarget {
            var value: Float
            init(_ value: Float) { self.value = value }
            override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
                for channel in 0..<request.pointee.buffers.channelCount {
                    request.pointee.buffers.samples(channel).update(repeating: value, count: request.pointee.frameCount)
                }
                return .noError
            }
        }
        let graph = AudioGraph()
        let mixer = MultiChannelMixerUnit(inputs: 2)
        let node = graph.addNode(mixer)
        let loud = Level(0.5)
        let silent = Level(0)
        try graph.setRenderCallback(loud, node: node, input: 0)
        try graph.setRenderCallback(silent, node: node, input: 1)
        for element in 0..<2 { try mixer.setProperty(.meteringMode, scope: .input, element: element, to: .flag(true)) }
        try graph.connect(node, bus: 0, to: graph.addNode(GenericOutputUnit()), input: 0)
        try graph.initialize()
        let plan = try #require(graph.plan)
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 128)
        for cycle in 0..<200 {
            var flags = RenderActionFlags()
            #expect(graph.render(
                flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(cycle * 128)), frameCount: 128, into: buffers.list) == .noError)
            for channel in 0..<2 {
                #expect(buffers.list[channel].allSatisfy { $0 == 0.5 }, "cycle \(cycle): only the loud input sounds")
            }
        }
        #expect(plan.steadyCycles > 100)
        #expect(plan.compactSteadySteps == 1)
        let loudPeak = try mixer.parameter(Parameter.prePeakHoldLevel, scope: .input, element: 0)
        let silentPeak = try mixer.parameter(Parameter.prePeakHoldLevel, scope: .input, element: 1)
        #expect(abs(loudPeak - 20 * log10(0.5)) < 0.01, "the loud input's peak: \(loudPeak) dB")
        #expect(silentPeak <= -120, "the silent input's peak: \(silentPeak) dB")
        graph.uninitialize()
    }
}

@Suite("No allocation while a mixer renders from its steady form", .serialized, .enabled(if: AllocationCounter.isAvailable))
struct RenderPlanSteadyMixerAllocationTests {
    /// 4,000 cycles of the metering mixer graph, MeteringMode switching while steady and a
    /// parameter change now and then (each refills the steady form): no heap call.
    @Test func steadyMixerRendersWithoutHeapCalls() throws {
        let (graph, mixer, sources) = try steadyMixerGraph()
        try graph.initialize()
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 128)
        let list = buffers.list
        func cycle(_ index: Int) -> AudioError.Code {
            var flags = RenderActionFlags()
            return graph.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(index * 128)), frameCount: 128, into: list)
        }
        for index in 0..<50 { #expect(cycle(index) == .noError) }
        var heapCalls = 0
        var failures = 0
        for index in 50..<4050 {
            if index % 100 == 0 {
                try mixer.setProperty(.meteringMode, scope: .input, element: 2, to: .flag(index % 200 == 0))
            }
            if index % 500 == 0 {
                try mixer.setParameter(Parameter.volume, scope: .input, element: 4, to: Float(index % 1000) / 1000 + 0.2)
            }
            AllocationCounter.begin()
            if cycle(index) != .noError { failures += 1 }
            heapCalls += AllocationCounter.end()
        }
        #expect(failures == 0)
        #expect(heapCalls == 0, "\(heapCalls) heap calls in 4,000 render cycles")
        let plan = try #require(graph.plan)
        #expect(plan.compactSteadySteps == 1)
        #expect(plan.steadyCycles > 0, "steady cycles ran")
        graph.uninitialize()
        withExtendedLifetime(sources) {}
    }

    typealias Parameter = MultiChannelMixerUnit.Parameter
}
