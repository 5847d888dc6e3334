import SonoraCore
import Testing
@testable import SonoraUnits

/// AUGraph checks formats when the graph initializes (or updates), not when a connection is
/// recorded: a porter connects first and sets formats after, as Core Audio allows.
@Suite("AudioGraph checks formats when Core Audio does")
struct GraphFormatCheckTests {
    func monoTone() throws -> ToneGeneratorUnit {
        let tone = ToneGeneratorUnit()
        try tone.setStreamFormat(.canonical(sampleRate: 48000, channels: 1), scope: .output, element: 0)
        return tone
    }

    @Test func formatsMaySettleAfterConnecting() throws {
        let graph = AudioGraph()
        let toneUnit = try monoTone()
        let tone = graph.addNode(toneUnit, name: "tone")
        let trim = graph.addNode(GainUnit(), name: "trim")
        let output = graph.addNode(GenericOutputUnit(), name: "out")
        try graph.connect(tone, bus: 0, to: trim, input: 0)  // mono into stereo: recorded, not refused
        try graph.connect(trim, bus: 0, to: output, input: 0)
        try toneUnit.setStreamFormat(.canonical(sampleRate: 48000, channels: 2), scope: .output, element: 0)
        try graph.initialize()
        #expect(graph.isInitialized)
        let rendered = try graph.renderOffline(frameCount: 64, sliceFrames: 32)
        #expect(rendered.count == 2)
    }

    @Test func aMismatchFailsInitializeNamingTheNodes() throws {
        let graph = AudioGraph()
        let tone = graph.addNode(try monoTone(), name: "tone")
        let trimUnit = GainUnit()
        let trim = graph.addNode(trimUnit, name: "trim")
        let output = graph.addNode(GenericOutputUnit(), name: "out")
        try graph.connect(tone, bus: 0, to: trim, input: 0)
        try graph.connect(trim, bus: 0, to: output, input: 0)
        let error = #expect(throws: AudioError.self) { try graph.initialize() }
        #expect(error?.code == .formatNotSupported)
        #expect(error?.message == "tone output 0 → trim input 0: tone produces LEF32@48000 deinterleaved, trim takes LEF32@48000x2 deinterleaved")
        #expect(!graph.isInitialized)
        #expect(!trimUnit.isInitialized)
        // A sample-rate mismatch too.
        let other = AudioGraph()
        let slow = ToneGeneratorUnit()
        try slow.setSampleRate(44100, scope: .global, element: 0)
        let slowNode = other.addNode(slow, name: "slow")
        let head = other.addNode(GenericOutputUnit(), name: "out")
        try other.connect(slowNode, bus: 0, to: head, input: 0)
        let rate = #expect(throws: AudioError.self) { try other.initialize() }
        #expect(rate?.code == .formatNotSupported)
        #expect(rate?.message.hasPrefix("slow output 0 → out input 0: slow produces LEF32@44100x2") == true)
    }

    @Test func bothEndsInitializedAreCheckedAtConnect() throws {
        let graph = AudioGraph()
        let toneUnit = try monoTone()
        let trimUnit = GainUnit()
        let tone = graph.addNode(toneUnit, name: "tone")
        let trim = graph.addNode(trimUnit, name: "trim")
        try toneUnit.initialize()
        // One end initialized: still deferred.
        try graph.connect(tone, bus: 0, to: trim, input: 0)
        try trimUnit.initialize()
        let error = #expect(throws: AudioError.self) { try graph.connect(tone, bus: 0, to: trim, input: 0) }
        #expect(error?.code == .formatNotSupported)
        #expect(error?.message == "tone output 0 → trim input 0: tone produces LEF32@48000 deinterleaved, trim takes LEF32@48000x2 deinterleaved")
    }

    @Test func aNodeAddedToARunningGraphIsCheckedAtUpdate() throws {
        let graph = AudioGraph()
        let source = ToneGeneratorUnit()
        let mixer = MultiChannelMixerUnit(inputs: 2)
        let sourceNode = graph.addNode(source, name: "tone")
        let mixerNode = graph.addNode(mixer, name: "mix")
        let output = graph.addNode(GenericOutputUnit(), name: "out")
        try graph.connect(sourceNode, bus: 0, to: mixerNode, input: 0)
        try graph.connect(mixerNode, bus: 0, to: output, input: 0)
        try graph.initialize()
        let late = graph.addNode(try monoTone(), name: "late")
        try graph.connect(late, bus: 0, to: mixerNode, input: 1)  // the new node is not initialized yet
        let error = #expect(throws: AudioError.self) { try graph.update() }
        #expect(error?.code == .formatNotSupported)
        #expect(error?.message == "update: late output 0 → mix input 1: late produces LEF32@48000 deinterleaved, mix takes LEF32@48000x2 deinterleaved")
        #expect(graph.isInitialized)
    }
}
