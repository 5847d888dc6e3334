import Foundation
import SonoraCore
import Synchronization
import Testing
@testable import SonoraUnits

@Suite("AudioGraph", .serialized)
struct GraphTests {
    @Test func connectionsAreCheckedAndErrorsNameTheNodes() throws {
        let graph = AudioGraph()
        let a = graph.addNode(GainUnit(), name: "trim")
        let b = graph.addNode(GainUnit(), name: "level")
        let mono = ToneGeneratorUnit()
        try mono.setStreamFormat(.canonical(sampleRate: 48000, channels: 1), scope: .output, element: 0)
        let tone = graph.addNode(mono, name: "tone")
        try graph.connect(a, bus: 0, to: b, input: 0)
        let cycle = #expect(throws: AudioError.self) { try graph.connect(b, bus: 0, to: a, input: 0) }
        #expect(cycle?.code == .graphInvalidConnection)
        #expect(cycle?.message == "level output 0 → trim input 0 would close a cycle: level → trim → level")
        let selfLoop = #expect(throws: AudioError.self) { try graph.connect(a, bus: 0, to: a, input: 0) }
        #expect(selfLoop?.code == .graphInvalidConnection)
        // Formats are checked at initialize (GraphFormatCheckTests), not here.
        try graph.connect(tone, bus: 0, to: a, input: 0)
        #expect(AudioError.Code.of { try graph.connect(a, bus: 1, to: b, input: 0) } == .invalidElement)
        #expect(AudioError.Code.of { try graph.connect(99, bus: 0, to: b, input: 0) } == .graphNodeNotFound)
        let noHead = #expect(throws: AudioError.self) { try graph.initialize() }
        #expect(noHead?.code == .graphOutputNodeError)
    }

    @Test func fanOutRendersTheSourceOncePerCycle() throws {
        let graph = AudioGraph()
        let source = ConstantSource(0.25)
        let shared = graph.addNode(GainUnit(), name: "shared")
        let mixer = graph.addNode(MultiChannelMixerUnit(inputs: 2))
        let output = graph.addNode(GenericOutputUnit())
        try graph.setRenderCallback(source, node: shared, input: 0)
        try graph.connect(shared, bus: 0, to: mixer, input: 0)
        try graph.connect(shared, bus: 0, to: mixer, input: 1)
        try graph.connect(mixer, bus: 0, to: output, input: 0)
        try graph.initialize()
        let out = try graph.renderOffline(frameCount: 1024, sliceFrames: 256)
        #expect(source.calls == 4)
        #expect(out[0].allSatisfy { $0 == 0.5 })
    }

    @Test func latencyIsTheLongestPath() throws {
        let graph = AudioGraph()
        let tone = graph.addNode(ToneGeneratorUnit())
        let long1 = SampleDelayUnit()
        let long2 = SampleDelayUnit()
        try long1.setParameter(SampleDelayUnit.Parameter.delayFrames, to: 100)
        try long2.setParameter(SampleDelayUnit.Parameter.delayFrames, to: 50)
        let short = SampleDelayUnit()
        try short.setParameter(SampleDelayUnit.Parameter.delayFrames, to: 120)
        let d1 = graph.addNode(long1), d2 = graph.addNode(long2), d3 = graph.addNode(short)
        let mixer = graph.addNode(MultiChannelMixerUnit(inputs: 2))
        let output = graph.addNode(GenericOutputUnit())
        try graph.connect(tone, bus: 0, to: d1, input: 0)
        try graph.connect(d1, bus: 0, to: d2, input: 0)
        try graph.connect(tone, bus: 0, to: d3, input: 0)
        try graph.connect(d2, bus: 0, to: mixer, input: 0)
        try graph.connect(d3, bus: 0, to: mixer, input: 1)
        try graph.connect(mixer, bus: 0, to: output, input: 0)
        #expect(graph.latencyFrames == 150)
    }

    /// Renders on a second thread while the control thread inserts and removes a
    /// -6 dB gain in the path of a constant signal: nothing crashes, and the
    /// output never steps by more than the 64-frame crossfade allows.
    @Test func liveUpdatesCrossfadeWhileAnotherThreadRenders() throws {
        let graph = AudioGraph()
        let source = ConstantSource(0.5)
        let input = graph.addNode(GainUnit(), name: "input")
        let output = graph.addNode(GenericOutputUnit(), name: "out")
        try graph.setRenderCallback(source, node: input, input: 0)
        try graph.connect(input, bus: 0, to: output, input: 0)
        try graph.initialize()

        let cycles = 3000
        let frames = 64
        let rendered = UnsafeMutablePointer<Float>.allocate(capacity: cycles * frames)
        defer { rendered.deallocate() }
        let failures = Atomic<Int>(0)
        let progress = Atomic<Int>(0)
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames)
        let state = RenderState(graph: graph, buffers: buffers, rendered: rendered)
        let thread = try RealtimeThread(RealtimeThreadOptions(name: "graph-render", priority: nil)) {
            for cycle in 0..<cycles {
                var flags = RenderActionFlags()
                let status = state.graph.render(
                    flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(cycle * frames)), frameCount: frames,
                    into: state.buffers.list)
                if status != .noError { failures.add(1, ordering: .relaxed) }
                (state.rendered + cycle * frames).update(from: state.buffers.list.samples(0), count: frames)
                progress.store(cycle, ordering: .releasing)
                if cycle % 4 == 0 { usleep(100) }  // pace like a device, so updates land mid-stream
            }
        }
        var inserted: AudioGraph.Node?
        var updates = 0
        while progress.load(ordering: .acquiring) < cycles - 50 {
            if let gain = inserted {
                try graph.removeNode(gain)
                try graph.connect(input, bus: 0, to: output, input: 0)
                inserted = nil
            } else {
                let unit = GainUnit()
                try unit.setParameter(GainUnit.Parameter.gain, to: -6.0206)
                let gain = graph.addNode(unit, name: "gain")
                try graph.connect(input, bus: 0, to: gain, input: 0)
                try graph.connect(gain, bus: 0, to: output, input: 0)
                inserted = gain
            }
            try graph.update()
            updates += 1
            usleep(2000)
        }
        thread.join()
        #expect(failures.load(ordering: .relaxed) == 0)
        #expect(updates >= 20)
        let samples = UnsafeBufferPointer(start: rendered, count: cycles * frames)
        var largestStep: Float = 0
        for index in 1..<samples.count { largestStep = max(largestStep, abs(samples[index] - samples[index - 1])) }
        // A switch between 0.5 and 0.25 spread over 64 frames moves at most 0.25/64 a frame.
        #expect(largestStep <= 0.25 / 64 + 1e-5, "largest step \(largestStep)")
        #expect(samples.contains { abs($0 - 0.25) < 1e-4 } && samples.contains { $0 == 0.5 })
    }

    @Test func updateRefusesANodeThatCannotInitialize() throws {
        let graph = AudioGraph()
        let tone = graph.addNode(ToneGeneratorUnit())
        let output = graph.addNode(GenericOutputUnit())
        try graph.connect(tone, bus: 0, to: output, input: 0)
        try graph.initialize()
        let broken = MergerUnit(inputs: 2)  // two stereo inputs cannot fill a 2-channel output
        try broken.setStreamFormat(.canonical(sampleRate: 48000, channels: 2), scope: .input, element: 0)
        try broken.setStreamFormat(.canonical(sampleRate: 48000, channels: 2), scope: .input, element: 1)
        let node = graph.addNode(broken, name: "broken merger")
        _ = node
        let error = #expect(throws: AudioError.self) { try graph.update() }
        #expect(error?.message.contains("Merger: inputs carry 4 channels in all, output has 2") == true)
        // The running graph is untouched.
        #expect(try graph.renderOffline(frameCount: 256)[0].contains { $0 != 0 })
    }
}

/// What the render thread needs, passed as one Sendable value.
final class RenderState: @unchecked Sendable {
    let graph: AudioGraph
    let buffers: OwnedAudioBufferList
    let rendered: UnsafeMutablePointer<Float>

    init(graph: AudioGraph, buffers: OwnedAudioBufferList, rendered: UnsafeMutablePointer<Float>) {
        self.graph = graph
        self.buffers = buffers
        self.rendered = rendered
    }
}

@Suite("Subgraphs and latency compensation")
struct SubgraphTests {
    @Test func aSubgraphIsOneNodeOfABiggerGraph() throws {
        // Inner: endpoint gain (-6 dB) → meter → generic output.
        let inner = AudioGraph()
        let trim = GainUnit()
        try trim.setParameter(GainUnit.Parameter.gain, to: -6.0206)
        let trimNode = inner.addNode(trim)
        let meterNode = inner.addNode(MeterUnit())
        let innerOut = inner.addNode(GenericOutputUnit())
        try inner.connect(trimNode, bus: 0, to: meterNode, input: 0)
        try inner.connect(meterNode, bus: 0, to: innerOut, input: 0)
        let subgraph = try SubgraphUnit(graph: inner, endpoints: [(trimNode, 0)], name: "channel strip")

        // Outer: constant 0.8 → subgraph → gain (+6 dB, ramped half-way through) → output.
        let outer = AudioGraph()
        let source = ConstantSource(0.8)
        let strip = outer.addNode(subgraph)
        let makeUp = GainUnit()
        let makeUpNode = outer.addNode(makeUp)
        let output = outer.addNode(GenericOutputUnit())
        try outer.setRenderCallback(source, node: strip, input: 0)
        try outer.connect(strip, bus: 0, to: makeUpNode, input: 0)
        try outer.connect(makeUpNode, bus: 0, to: output, input: 0)
        try outer.initialize()
        #expect(inner.isInitialized)
        try makeUp.setParameter(GainUnit.Parameter.gain, to: 6.0206, bufferOffset: 100)
        let out = try outer.renderOffline(frameCount: 512, sliceFrames: 256)
        #expect(abs(out[0][50] - 0.4) < 1e-5)
        #expect(abs(out[1][99] - 0.4) < 1e-5 && abs(out[1][100] - 0.8) < 1e-5 && abs(out[0][511] - 0.8) < 1e-5)
        #expect(try inner.unit(meterNode).parameter(MeterUnit.Parameter.peakPower) > -8.1)
        outer.uninitialize()
        #expect(!inner.isInitialized)
    }

    @Test func compensationAlignsParallelPaths() throws {
        func impulsesArriving(compensated: Bool) throws -> [Int] {
            let graph = AudioGraph()
            let tone = ToneGeneratorUnit()
            try tone.setParameter(ToneGeneratorUnit.Parameter.waveform, to: Float(ToneGeneratorUnit.Waveform.impulse.rawValue))
            try tone.setParameter(ToneGeneratorUnit.Parameter.level, to: 0)
            let source = graph.addNode(tone)
            let split = graph.addNode(SplitterUnit(outputs: 2))
            let slow = SampleDelayUnit()
            try slow.setParameter(SampleDelayUnit.Parameter.delayFrames, to: 100)
            let slowNode = graph.addNode(slow)
            let mixer = graph.addNode(MultiChannelMixerUnit(inputs: 2))
            let output = graph.addNode(GenericOutputUnit())
            try graph.connect(source, bus: 0, to: split, input: 0)
            try graph.connect(split, bus: 0, to: slowNode, input: 0)
            try graph.connect(slowNode, bus: 0, to: mixer, input: 0)
            try graph.connect(split, bus: 1, to: mixer, input: 1)
            try graph.connect(mixer, bus: 0, to: output, input: 0)
            if compensated {
                try graph.compensateLatency()
                try graph.compensateLatency()  // a second call replaces the first, not adds to it
                #expect(graph.nodes.count == 6)
            }
            try graph.initialize()
            #expect(graph.latencyFrames == 100)
            let out = try graph.renderOffline(frameCount: 1000)[0]
            return out.indices.filter { out[$0] != 0 }
        }
        #expect(try impulsesArriving(compensated: false) == [0, 100])
        #expect(try impulsesArriving(compensated: true) == [100])
    }
}
