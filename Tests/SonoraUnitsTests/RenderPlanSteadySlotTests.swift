import SonoraCore
import SonoraTestSupport
import Testing
@_spi(Benchmark) @testable import SonoraUnits

/// Renders `cycles` cycles of `frames` through the graph, running `script` before each;
/// returns every channel's samples and the plan used last.
private func renderCycles(
    _ graph: AudioGraph, lean: Bool, cycles: Int, frames: Int = 128, channels: Int = 2, script: (Int) throws -> Void
) throws -> (output: [[Float]], plan: RenderPlan?) {
    graph.plansLeanSteps = lean
    try graph.initialize()
    let buffers = try OwnedAudioBufferList(channelCount: channels, frameCapacity: frames)
    var output = [[Float]](repeating: [], count: channels)
    for cycle in 0..<cycles {
        try script(cycle)
        var flags = RenderActionFlags()
        let status = graph.render(
            flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(cycle * frames)), frameCount: frames, into: buffers.list)
        #expect(status == .noError, "cycle \(cycle)")
        for channel in 0..<channels { output[channel] += buffers.list[channel] }
    }
    return (output, graph.plan)
}

@Suite("Render plan steady slots", .serialized)
struct RenderPlanSteadySlotTests {
    /// A chain of gains (one muted, one panned) whose parameters change now and then, with a
    /// ramp among the changes: the steady cycles run each gain from its compact slot, and
    /// give what the full step gives, sample for sample.
    @Test func gainChainFromSlotsEqualsTheFullStep() throws {
        func build() throws -> (AudioGraph, [GainUnit]) {
            let graph = AudioGraph()
            let gains = try (0..<6).map { try gainUnit(Float($0) - 3) }
            try gains[2].setParameter(GainUnit.Parameter.pan, to: -0.4)
            var previous = graph.addNode(try toneUnit(220))
            for unit in gains {
                let node = graph.addNode(unit)
                try graph.connect(previous, bus: 0, to: node, input: 0)
                previous = node
            }
            try graph.connect(previous, bus: 0, to: graph.addNode(GenericOutputUnit()), input: 0)
            return (graph, gains)
        }
        func script(_ gains: [GainUnit]) -> (Int) throws -> Void {
            { cycle in
                if cycle == 20 { try gains[1].setParameter(GainUnit.Parameter.gain, to: -9, bufferOffset: 40) }
                if cycle == 40 { try gains[3].setParameter(GainUnit.Parameter.mute, to: 1) }
                if cycle == 60 { try gains[4].rampParameter(GainUnit.Parameter.gain, to: 6, duration: 500) }
                if cycle == 80 { try gains[3].setParameter(GainUnit.Parameter.mute, to: 0) }
                if cycle == 90 { try gains[5].setParameter(GainUnit.Parameter.pan, to: 0.7) }
            }
        }
        let (fullGraph, fullGains) = try build()
        let full = try renderCycles(fullGraph, lean: false, cycles: 120, script: script(fullGains))
        fullGraph.uninitialize()
        let (graph, gains) = try build()
        let lean = try renderCycles(graph, lean: true, cycles: 120, script: script(gains))
        expectSameSamples(lean.output, full.output)
        let plan = try #require(lean.plan)
        #expect(plan.compactSteadySteps == gains.count, "every gain runs from its slot; the tone and the output do not")
        // Other suites' units bump the command epoch now and then; most cycles are still steady.
        #expect(plan.steadyCycles > 0, "steady cycles ran")
        graph.uninitialize()
    }

    /// Mono gains: the slot's one-channel kernel, the same samples as the full step.
    @Test func monoGainChainFromSlotsEqualsTheFullStep() throws {
        func build() throws -> AudioGraph {
            let graph = AudioGraph()
            let mono = StreamFormat.canonical(sampleRate: 48000, channels: 1)
            let tone = try toneUnit(440)
            try tone.setStreamFormat(mono, scope: .output, element: 0)
            var previous = graph.addNode(tone)
            for index in 0..<3 {
                let gain = try gainUnit(Float(index) * 2 - 1)
                try gain.setStreamFormat(mono, scope: .input, element: 0)
                try gain.setStreamFormat(mono, scope: .output, element: 0)
                let node = graph.addNode(gain)
                try graph.connect(previous, bus: 0, to: node, input: 0)
                previous = node
            }
            let output = GenericOutputUnit()
            try output.setStreamFormat(mono, scope: .input, element: 0)
            try output.setStreamFormat(mono, scope: .output, element: 0)
            try graph.connect(previous, bus: 0, to: graph.addNode(output), input: 0)
            return graph
        }
        let full = try renderCycles(try build(), lean: false, cycles: 30, channels: 1) { _ in }
        let graph = try build()
        let lean = try renderCycles(graph, lean: true, cycles: 30, channels: 1) { _ in }
        expectSameSamples(lean.output, full.output)
        #expect(lean.plan?.compactSteadySteps == 3)
        graph.uninitialize()
    }
}
