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
