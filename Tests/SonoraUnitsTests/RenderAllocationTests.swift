import SonoraCore
import SonoraTestSupport
import Testing
@testable import SonoraUnits

@Suite("No allocation while rendering", .serialized, .enabled(if: AllocationCounter.isAvailable))
struct RenderAllocationTests {
    /// A 20-node AudioGraph (generator → 17 gains → mixer → generic output)
    /// rendered for 10,000 cycles of 128 frames, with parameter changes and ramps
    /// arriving between cycles.
    @Test func twentyNodeGraphRendersWithoutHeapCalls() throws {
        let graph = AudioGraph()
        let generator = ToneGeneratorUnit()
        let gains = (0..<17).map { _ in GainUnit() }
        let mixer = MultiChannelMixerUnit(inputs: 1)
        let output = GenericOutputUnit()
        let units: [AudioUnit] = [generator] + gains + [mixer, output]
        for unit in units { try unit.setMaximumFramesPerSlice(128) }
        let nodes = units.map { graph.addNode($0) }
        for (source, destination) in zip(nodes, nodes.dropFirst()) {
            try graph.connect(source, bus: 0, to: destination, input: 0)
        }
        #expect(graph.nodes.count == 20)
        try graph.initialize()
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 128)
        let list = buffers.list
        func cycle(_ index: Int) -> AudioError.Code {
            var flags = RenderActionFlags()
            return graph.render(
                flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(index * 128)), frameCount: 128, into: list)
        }
        for index in 0..<50 { #expect(cycle(index) == .noError) }  // warm up every path
        try gains[3].rampParameter(GainUnit.Parameter.gain, to: -12, duration: 300)
        _ = cycle(50)

        var heapCalls = 0
        var failures = 0
        for index in 51..<10_051 {
            if index % 100 == 0 {
                try gains[index % 17].setParameter(GainUnit.Parameter.gain, to: Float(index % 12) - 6, bufferOffset: index % 128)
                try mixer.rampParameter(MultiChannelMixerUnit.Parameter.volume, scope: .input, element: 0, to: Float(index / 100 % 10 + 1) / 10, duration: 200)
            }
            AllocationCounter.begin()
            let status = cycle(index)
            heapCalls += AllocationCounter.end()
            if status != .noError { failures += 1 }
        }
        #expect(failures == 0)
        #expect(heapCalls == 0, "\(heapCalls) heap calls in 10,000 render cycles")
        #expect(list[0].contains { $0 != 0 })
    }
}

@Suite("No allocation while a graph renders", .serialized, .enabled(if: AllocationCounter.isAvailable))
struct GraphAllocationTests {
    /// Through AudioGraph: two generators, EQs, a converter, a delay, a splitter
    /// feeding a mixer twice, a meter — 12 units — for 5,000 cycles, with a live
    /// update (a node inserted and removed) and parameter ramps along the way.
    @Test func graphWithEveryKindOfUnitRendersWithoutHeapCalls() throws {
        let graph = AudioGraph()
        func add(_ unit: AudioUnit) throws -> AudioGraph.Node {
            try unit.setMaximumFramesPerSlice(256)
            return graph.addNode(unit)
        }
        let tone = try add(ToneGeneratorUnit())
        let noiseUnit = ToneGeneratorUnit()
        try noiseUnit.setParameter(ToneGeneratorUnit.Parameter.waveform, to: Float(ToneGeneratorUnit.Waveform.pinkNoise.rawValue))
        let noise = try add(noiseUnit)
        let graphicEQ = GraphicEQUnit()
        try graphicEQ.setPresentPreset(graphicEQ.factoryPresets[16])
        let eq = try add(graphicEQ)
        let parametric = try add(ParametricEQUnit(bands: 4))
        let converterUnit = ConverterUnit()
        try converterUnit.setStreamFormat(.canonical(sampleRate: 44100, channels: 2), scope: .input, element: 0)
        let toneAt44k = ToneGeneratorUnit()
        try toneAt44k.setSampleRate(44100, scope: .global, element: 0)
        let slowTone = try add(toneAt44k)
        let converter = try add(converterUnit)
        let delay = try add(SampleDelayUnit())
        let splitter = try add(SplitterUnit(outputs: 2))
        let mixerUnit = MultiChannelMixerUnit(inputs: 4)
        let mixer = try add(mixerUnit)
        let meter = try add(MeterUnit())
        let output = try add(GenericOutputUnit())
        try graph.connect(tone, bus: 0, to: eq, input: 0)
        try graph.connect(eq, bus: 0, to: mixer, input: 0)
        try graph.connect(noise, bus: 0, to: parametric, input: 0)
        try graph.connect(parametric, bus: 0, to: splitter, input: 0)
        try graph.connect(splitter, bus: 0, to: mixer, input: 1)
        try graph.connect(splitter, bus: 1, to: delay, input: 0)
        try graph.connect(delay, bus: 0, to: mixer, input: 2)
        try graph.connect(slowTone, bus: 0, to: converter, input: 0)
        try graph.connect(converter, bus: 0, to: mixer, input: 3)
        try graph.connect(mixer, bus: 0, to: meter, input: 0)
        try graph.connect(meter, bus: 0, to: output, input: 0)
        try graph.initialize()

        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 256)
        let list = buffers.list
        func cycle(_ index: Int) -> AudioError.Code {
            var flags = RenderActionFlags()
            return graph.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(index * 256)), frameCount: 256, into: list)
        }
        for index in 0..<100 { #expect(cycle(index) == .noError) }
        // A live update: insert a gain between the meter and the output, render, take it out again.
        let gainUnit = GainUnit()
        try gainUnit.setMaximumFramesPerSlice(256)
        let gain = graph.addNode(gainUnit)
        try graph.connect(meter, bus: 0, to: gain, input: 0)
        try graph.connect(gain, bus: 0, to: output, input: 0)
        try graph.update()
        for index in 100..<200 { #expect(cycle(index) == .noError) }
        try graph.removeNode(gain)
        try graph.connect(meter, bus: 0, to: output, input: 0)
        try graph.update()
        for index in 200..<300 { #expect(cycle(index) == .noError) }

        var heapCalls = 0
        var failures = 0
        for index in 300..<5300 {
            if index % 250 == 0 {
                try mixerUnit.rampParameter(MultiChannelMixerUnit.Parameter.volume, scope: .input, element: index / 250 % 4, to: Float(index / 250 % 3 + 1) / 3, duration: 300)
                try graphicEQ.setParameter(3, to: Float(index / 250 % 7) - 3, bufferOffset: index % 256)
            }
            AllocationCounter.begin()
            if cycle(index) != .noError { failures += 1 }
            heapCalls += AllocationCounter.end()
        }
        #expect(failures == 0)
        #expect(heapCalls == 0, "\(heapCalls) heap calls in 5,000 graph cycles")
        #expect(try MeterUnit().parameter(MeterUnit.Parameter.averagePower) == -120)
        let level = try graph.unit(meter).parameter(MeterUnit.Parameter.averagePower)
        #expect(level > -40 && level < 6, "meter reads \(level) dB")
    }
}
