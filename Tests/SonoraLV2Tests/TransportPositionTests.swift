import SonoraCore
import SonoraTestSupport
import SonoraUnits
import Testing
@testable import SonoraLV2

/// The graph's transport reaches LV2 plugins as time:Position at the plugin's first frame and
/// at the exact frame of every change, tested against Debian's eg-metro (lv2-examples), which
/// starts a click on the beat a position puts it on and stays silent while stopped.
@Suite("Transport to LV2 time:Position", .serialized)
struct TransportPositionTests {
    static let metro = "http://lv2plug.in/plugins/eg-metro"

    /// eg-metro → generic output in a graph with `transport`; `schedule` runs before rendering.
    func render(_ transport: Transport, frames: Int = 48000, schedule: () throws -> Void = {}) throws -> [Float] {
        let graph = AudioGraph()
        let unit = try Fixtures.unit(Self.metro, maximumFrames: 512)
        let output = GenericOutputUnit()
        try output.setStreamFormat(.canonical(sampleRate: 48000, channels: 1), scope: .input, element: 0)
        try output.setStreamFormat(.canonical(sampleRate: 48000, channels: 1), scope: .output, element: 0)
        let node = graph.addNode(unit, name: "metro")
        let head = graph.addNode(output, name: "out")
        try graph.connect(node, bus: 0, to: head, input: 0)
        try graph.attachTransport(transport)
        try graph.initialize()
        defer { graph.uninitialize() }
        try schedule()
        return try graph.renderOffline(frameCount: frames, sliceFrames: 512)[0]
    }

    func firstSound(_ samples: [Float], from start: Int = 0) -> Int? {
        samples[start...].firstIndex { $0 != 0 }
    }

    @Test func aPlayingTransportReachesThePluginAtItsFirstFrame() throws {
        let rolling = try render(try Transport(sampleRate: 48000, tempo: 120, isPlaying: true))
        let stopped = try render(try Transport(sampleRate: 48000, tempo: 120))
        #expect(stopped.allSatisfy { $0 == 0 }, "a stopped transport: eg-metro silent")
        let first = try #require(firstSound(rolling))
        #expect(first < 4, "click at the first frame, heard from frame \(first)")
        // 120 BPM at 48 kHz: the next beat is 24,000 frames on.
        #expect(firstSound(rolling, from: 20000) == 24000 + first)
    }

    @Test func playAtAnExactFrameStartsTheClickThere() throws {
        let reference = try render(try Transport(sampleRate: 48000, tempo: 120, isPlaying: true))
        let transport = try Transport(sampleRate: 48000, tempo: 120)
        // Frame 1000 is 488 frames into the second 512-frame cycle.
        let out = try render(transport) { try transport.play(at: 1000) }
        #expect(firstSound(reference) != nil && firstSound(out) != nil, "the metronome clicks")
        #expect(out[0..<1000].allSatisfy { $0 == 0 })
        #expect(Array(out[1000..<48000]) == Array(reference[0..<47000]), "the same clicks, 1000 frames later, bit for bit")
    }

    @Test func aTempoChangeAtAnExactFrameMovesTheNextBeat() throws {
        let transport = try Transport(sampleRate: 48000, tempo: 120, isPlaying: true)
        // At 12,000 (beat 0.5) the tempo doubles: half a beat left at 12,000 frames a beat is 6,000 frames.
        let out = try render(transport) { try transport.setTempo(240, at: 12000) }
        let first = try #require(firstSound(out))
        #expect(firstSound(out, from: 10000) == 18000 + first)
        #expect(transport.position.tempo == 240)
    }

    @Test func aLocateAtAnExactFrameRestartsTheBeatThere() throws {
        let transport = try Transport(sampleRate: 48000, tempo: 120, isPlaying: true)
        // 30,000 is 304 frames into a cycle; the click of beat 1 (at 24,000) has died away by then.
        let out = try render(transport) { try transport.locate(toBeat: 4, at: 30000) }
        let first = try #require(firstSound(out))
        #expect(out[29000..<30000].allSatisfy { $0 == 0 })
        #expect(firstSound(out, from: 29000) == 30000 + first)
        #expect(firstSound(out, from: 31000) == 54000 + first || out.count < 54000 + first)
    }

    /// At a cycle boundary: eg-metro's stopped branch clears `end - begin` floats from the start
    /// of its buffer, not from `begin` (lv2-examples 1.18's metro.c), so a stop inside a cycle
    /// leaves its output wrong whatever the host does; the exact frame of a mid-cycle stop is
    /// checked through the host callbacks (HostCallbackTransportTests) and by the event's time here.
    @Test func stopSilencesThePlugin() throws {
        let transport = try Transport(sampleRate: 48000, tempo: 120, isPlaying: true)
        let reference = try render(try Transport(sampleRate: 48000, tempo: 120, isPlaying: true))
        let out = try render(transport) { try transport.stop(at: 1024) }
        #expect(firstSound(out) != nil, "it clicked before the stop")
        #expect(Array(out[0..<1024]) == Array(reference[0..<1024]))
        #expect(out[1024...].allSatisfy { $0 == 0 })
    }

    @Test(.enabled(if: AllocationCounter.isAvailable))
    func positionsAllocateNothingOnTheRenderPath() throws {
        let transport = try Transport(sampleRate: 48000, isPlaying: true)
        let graph = AudioGraph()
        let unit = try Fixtures.unit(Self.metro, maximumFrames: 512)
        let output = GenericOutputUnit()
        try output.setStreamFormat(.canonical(sampleRate: 48000, channels: 1), scope: .input, element: 0)
        try output.setStreamFormat(.canonical(sampleRate: 48000, channels: 1), scope: .output, element: 0)
        let node = graph.addNode(unit, name: "metro")
        let head = graph.addNode(output, name: "out")
        try graph.connect(node, bus: 0, to: head, input: 0)
        try graph.attachTransport(transport)
        try graph.initialize()
        defer { graph.uninitialize() }
        let buffers = try OwnedAudioBufferList(channelCount: 1, frameCapacity: 512)
        func cycle(_ index: Int) -> AudioError.Code {
            var flags = RenderActionFlags()
            return graph.render(
                flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(index * 512)), frameCount: 512,
                into: buffers.list(frameCount: 512))
        }
        for index in 0..<10 { #expect(cycle(index) == .noError) }
        var heapCalls = 0
        for index in 10..<300 {
            for change in 0..<3 {  // several changes inside each cycle, each a time:Position event
                try transport.setTempo(Double(80 + (index + change) % 60), at: Int64(index * 512 + change * 150))
            }
            if index % 7 == 0 { try transport.stop() }
            if index % 7 == 3 { try transport.play(at: Int64(index * 512 + 99)) }
            AllocationCounter.begin()
            let status = cycle(index)
            heapCalls += AllocationCounter.end()
            #expect(status == .noError)
        }
        #expect(heapCalls == 0, "\(heapCalls) heap calls in 290 cycles with time:Position events")
    }
}
