import SonoraCore
import SonoraTestSupport
import Testing
@testable import SonoraUnits

/// The graph's transport as units see it through Core Audio's host callbacks: changes
/// from the control side land at the exact frame they were scheduled for, between
/// them the position moves with the tempo, and the render path allocates nothing.
@Suite("Host callbacks and the graph transport", .serialized)
struct HostCallbackTransportTests {
    /// Writes, per frame, what the host callbacks report: beat on channel 0, tempo on
    /// channel 1, play state on channel 2, timeline frame on channel 3.
    final class TransportProbe: AudioUnit, @unchecked Sendable {
        init() throws {
            super.init(
                description: AudioComponentDescription(type: .generator, subType: "tprb", manufacturer: .sonora), name: "probe",
                inputs: 0, outputs: 1)
            try setStreamFormat(.canonical(sampleRate: 48000, channels: 4), scope: .output, element: 0)
        }

        override func process(_ context: RenderContext) -> AudioError.Code {
            guard let callbacks = hostCallbacks else { return .uninitialized }
            for frame in 0..<context.frameCount {
                let offset = context.frameOffset + frame
                let beat = callbacks.beatAndTempo(atFrame: offset)
                let state = callbacks.transportState(atFrame: offset)
                context.output.samples(0)[frame] = Float(beat.currentBeat)
                context.output.samples(1)[frame] = Float(beat.currentTempo)
                context.output.samples(2)[frame] = state.isPlaying ? 1 : 0
                context.output.samples(3)[frame] = Float(state.currentSampleInTimeLine)
            }
            return .noError
        }
    }

    func graph(_ transport: Transport) throws -> AudioGraph {
        let graph = AudioGraph()
        let probe = graph.addNode(try TransportProbe(), name: "probe")
        let output = GenericOutputUnit()
        try output.setStreamFormat(.canonical(sampleRate: 48000, channels: 4), scope: .input, element: 0)
        try output.setStreamFormat(.canonical(sampleRate: 48000, channels: 4), scope: .output, element: 0)
        let head = graph.addNode(output, name: "out")
        try graph.connect(probe, bus: 0, to: head, input: 0)
        try graph.attachTransport(transport)
        try graph.initialize()
        return graph
    }

    @Test func changesLandAtTheirExactFrames() throws {
        let transport = try Transport(sampleRate: 48000, tempo: 120)
        let graph = try graph(transport)
        defer { graph.uninitialize() }
        // Inside 512-frame cycles: play at 100, tempo 60 at 700, locate to beat 8 at 900, stop at 1500.
        try transport.play(at: 100)
        try transport.setTempo(60, at: 700)
        try transport.locate(toBeat: 8, at: 900)
        try transport.stop(at: 1500)
        let out = try graph.renderOffline(frameCount: 2048, sliceFrames: 512)
        let perFrame120 = 2.0 / 48000, perFrame60 = 1.0 / 48000
        func beat(_ frame: Int) -> Double {
            switch frame {
            case ..<100: 0
            case ..<700: Double(frame - 100) * perFrame120
            case ..<900: 600 * perFrame120 + Double(frame - 700) * perFrame60
            case ..<1500: 8 + Double(frame - 900) * perFrame60
            default: 8 + 600 * perFrame60
            }
        }
        for frame in [0, 99, 100, 101, 511, 512, 699, 700, 701, 899, 900, 901, 1499, 1500, 2047] {
            #expect(abs(Double(out[0][frame]) - beat(frame)) < 1e-6, "beat at frame \(frame): \(out[0][frame]), expected \(beat(frame))")
        }
        #expect(out[1][699] == 120 && out[1][700] == 60)
        #expect(out[2][99] == 0 && out[2][100] == 1 && out[2][1499] == 1 && out[2][1500] == 0)
        // Timeline frame: moves only while playing; locating to beat 8 at 60 BPM puts it at 8 s.
        #expect(out[3][100] == 0 && out[3][699] == 599 && out[3][900] == 384_000 && out[3][1499] == 384_599)
        #expect(out[3][2047] == 384_600)
        #expect(transport.position.isPlaying == false)
        #expect(abs(transport.position.beat - beat(2047)) < 1e-9)
        #expect(transport.sampleTime == 2048)
    }

    @Test func musicalTimeLocationFollowsTheTimeSignature() throws {
        let transport = try Transport(sampleRate: 48000, tempo: 120, timeSignature: try TimeSignature(parsing: "3/4"), isPlaying: true)
        let graph = try graph(transport)
        defer { graph.uninitialize() }
        try transport.locate(toBeat: 7.5)
        _ = try graph.renderOffline(frameCount: 512, sliceFrames: 512)
        let callbacks = transport.hostCallbacks
        // After the cycle the position is beat 7.5 + 512 frames at 120 BPM.
        let position = transport.position
        #expect(abs(position.beat - (7.5 + 512 * 2.0 / 48000)) < 1e-9)
        #expect(position.bar == 2 && position.downBeat == 6)
        let location = callbacks.musicalTimeLocation()
        #expect(location.timeSignatureNumerator == 3 && location.timeSignatureDenominator == 4)
        #expect(location.currentMeasureDownBeat == 6)
        #expect(location.deltaSampleOffsetToNextBeat == Int(((8 - position.beat) * 24000).rounded(.up)))
    }

    @Test func badValuesAreRefusedWithTheReason() throws {
        #expect(throws: AudioError.self) { try Transport(sampleRate: 48000, tempo: 0) }
        let transport = try Transport(sampleRate: 48000)
        let tempo = #expect(throws: AudioError.self) { try transport.setTempo(.nan) }
        #expect(tempo?.message.contains("1…999") == true)
        #expect(throws: AudioError.self) { try transport.locate(toBeat: -1) }
        #expect(throws: AudioError.self) { try transport.play(at: -5) }
        let meter = #expect(throws: AudioError.self) { try TimeSignature(parsing: "3/5") }
        #expect(meter?.message.contains("beat unit") == true)
        #expect(throws: AudioError.self) { try TimeSignature(parsing: "four") }
        #expect(try TimeSignature(parsing: " 6/8 ").description == "6/8")
    }

    @Test(.enabled(if: AllocationCounter.isAvailable))
    func advancingTheTransportAllocatesNothing() throws {
        let transport = try Transport(sampleRate: 48000, isPlaying: true)
        let graph = try graph(transport)
        defer { graph.uninitialize() }
        let buffers = try OwnedAudioBufferList(channelCount: 4, frameCapacity: 512)
        func cycle(_ index: Int) -> AudioError.Code {
            var flags = RenderActionFlags()
            return graph.render(
                flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(index * 512)), frameCount: 512,
                into: buffers.list(frameCount: 512))
        }
        for index in 0..<10 { #expect(cycle(index) == .noError) }
        var heapCalls = 0
        for index in 10..<400 {
            // Control side (not counted): a change every cycle, some at exact frames.
            switch index % 4 {
            case 0: try transport.setTempo(Double(60 + index % 100), at: Int64(index * 512 + 17))
            case 1: try transport.locate(toBeat: Double(index))
            case 2: try transport.stop(at: Int64(index * 512 + 300))
            default: try transport.play()
            }
            AllocationCounter.begin()
            let status = cycle(index)
            heapCalls += AllocationCounter.end()
            #expect(status == .noError)
        }
        #expect(heapCalls == 0, "\(heapCalls) heap calls in 390 cycles")
    }
}
