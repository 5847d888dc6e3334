#if canImport(Glibc)
import Glibc
#endif
import SonoraCore
import SonoraHAL
import SonoraTestSupport
import SonoraUnits
import Synchronization
import Testing

/// A graph headed by an I/O unit on a `jack:` device follows the server's format: a new
/// buffer size or rate re-initializes the graph (stream formats, MaximumFramesPerSlice,
/// sample rate) off the realtime thread, and the graph plays on at the new format.
/// Against a private jackd2 on the dummy backend (its own server name), Sonora's outputs
/// looped into its inputs (`jack:self`), so what the graph played is captured back.
@Suite("The I/O unit follows a JACK format change", .serialized, .enabled(if: JACKTestServer.isAvailable, "needs jackd2 (Debian: jackd2) and root"))
struct IOUnitJACKFormatChangeTests {
    /// Plays a counter (0, 1, … 65535, 0, …): exact in float, so a gap or a repeat shows.
    final class Counter: RenderCallbackTarget, @unchecked Sendable {
        private var next = 0
        override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
            let frames = request.pointee.frameCount
            for channel in 0..<request.pointee.buffers.channelCount {
                let samples = request.pointee.buffers.samples(channel)
                for frame in 0..<frames { samples[frame] = Float((next + frame) & 0xFFFF) }
            }
            next += frames
            return .noError
        }
    }

    /// Keeps what the input callback is given (channel 0) in a buffer allocated up front.
    final class Recorder: RenderCallbackTarget, @unchecked Sendable {
        let samples: UnsafeMutableBufferPointer<Float>
        let count = Atomic<Int>(0)
        let cycles = Atomic<Int>(0)
        init(capacity: Int) {
            samples = .allocate(capacity: capacity)
            samples.initialize(repeating: 0)
        }
        deinit { samples.deallocate() }
        override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
            let start = count.load(ordering: .relaxed)
            let frames = min(request.pointee.frameCount, samples.count - start)
            if frames > 0, request.pointee.buffers.channelCount > 0 {
                let source = request.pointee.buffers.samples(0)
                for frame in 0..<frames { samples[start + frame] = source[frame] }
                count.store(start + frames, ordering: .releasing)
            }
            cycles.add(1, ordering: .releasing)
            return .noError
        }
        func recorded() -> [Float] { Array(samples[0..<count.load(ordering: .acquiring)]) }
        func wait(cycles target: Int) -> Bool {
            for _ in 0..<1000 {
                if cycles.load(ordering: .acquiring) >= target { return true }
                usleep(10_000)
            }
            return false
        }
    }

    /// An I/O unit on `jack:self@server`, one channel each way, capture recorded; the graph
    /// and MaximumFramesPerSlice set to the server's period (so a larger period must be followed).
    func makeGraph(on server: JACKTestServer, recorder: Recorder) throws -> (graph: AudioGraph, io: IOUnit, node: AudioGraph.Node, device: any AudioDevice) {
        let device = try AudioDevices.open(named: "jack:self@\(server.name)", configuration: AudioDeviceConfiguration(inputChannels: 1, outputChannels: 1))
        let io = IOUnit()
        try io.setDevice(device)
        try io.setIOEnabled(true, scope: .input, element: IOUnit.inputElement)
        let rate = Double(server.rate)
        try io.setStreamFormat(.canonical(sampleRate: rate, channels: 1), scope: .input, element: IOUnit.outputElement)
        try io.setStreamFormat(.canonical(sampleRate: rate, channels: 1), scope: .output, element: IOUnit.inputElement)
        try io.setMaximumFramesPerSlice(server.period)
        try io.setInputCallback(recorder)
        let graph = AudioGraph()
        let node = graph.addNode(io)
        return (graph, io, node, device)
    }

    /// The length of the run of consecutive counter values at the end of `samples`.
    static func consecutiveTail(_ samples: [Float]) -> Int {
        guard samples.count > 1 else { return samples.count }
        var index = samples.count - 1
        while index > 0 {
            let previous = Int(samples[index - 1]), current = Int(samples[index])
            guard samples[index - 1] == Float(previous), current == (previous + 1) & 0xFFFF else { break }
            index -= 1
        }
        return samples.count - index
    }

    @Test("jack_bufsize past MaximumFramesPerSlice: the graph is re-initialized at the new period and plays on exactly")
    func bufferSizeBeyondMaximumFramesIsFollowed() throws {
        let server = try JACKTestServer(period: 256)
        let recorder = Recorder(capacity: 48000 * 30)
        let (graph, io, node, device) = try makeGraph(on: server, recorder: recorder)
        try graph.setRenderCallback(Counter(), node: node, input: 0)
        try graph.initialize()
        try graph.start()
        defer { graph.stop(); graph.uninitialize() }
        #expect(recorder.wait(cycles: 20))
        #expect(Self.consecutiveTail(recorder.recorded()) >= 10 * 256, "the loop plays the counter before the change")

        _ = server.tool("jack_bufsize", ["1024"])
        var events: [DeviceEvent] = []
        for _ in 0..<500 where device.format.periodFrames != 1024 {
            usleep(20_000)
            events += device.takeEvents()
        }
        #expect(device.format.periodFrames == 1024)
        let cycles = recorder.cycles.load(ordering: .acquiring)
        #expect(recorder.wait(cycles: cycles + 40))
        events += device.takeEvents()
        graph.stop()
        // Followed: the slice grew to the period, and the last 30 periods are the counter
        // played and captured without a gap or a repeat (before, every render failed: silence).
        #expect(io.maximumFramesPerSlice >= 1024)
        let tail = Self.consecutiveTail(recorder.recorded())
        #expect(tail >= 30 * 1024, "consecutive samples at the end: \(tail); events: \(events)")
        #expect(device.statistics.renderErrors == 0, "\(events)")
        #expect(events.contains(.formatChanged(sampleRate: 48000, periodFrames: 1024)), "\(events)")
    }

    @Test("the server back at another rate: the graph runs at the new rate (a 1 kHz tone stays 1 kHz, formats say the new rate)")
    func rateChangeOnReattachIsFollowed() throws {
        let server = try JACKTestServer(rate: 48000, period: 256)
        let recorder = Recorder(capacity: 48000 * 30)
        let (graph, io, node, device) = try makeGraph(on: server, recorder: recorder)
        let toneNode = try graph.addNode(ToneGeneratorUnit.componentDescription)
        let tone = try graph.unit(toneNode)
        try tone.setStreamFormat(.canonical(sampleRate: 48000, channels: 1), scope: .output, element: 0)
        try graph.connect(toneNode, bus: 0, to: node, input: 0)
        try graph.initialize()
        try graph.start()
        defer { graph.stop(); graph.uninitialize() }
        #expect(recorder.wait(cycles: 20))
        let before = recorder.recorded().suffix(8 * 256)
        #expect(abs(SignalMeasurement.frequency(of: Array(before), sampleRate: 48000) - 1000) < 2)

        server.kill()
        var events: [DeviceEvent] = []
        for _ in 0..<200 where !events.contains(where: { if case .interruptionBegan = $0 { true } else { false } }) {
            usleep(20_000)
            events += device.takeEvents()
        }
        try server.start(rate: 44100)
        for _ in 0..<500 where device.format.sampleRate != 44100 || !device.isRunning {
            usleep(20_000)
            events += device.takeEvents()
        }
        #expect(device.format.sampleRate == 44100)
        let cycles = recorder.cycles.load(ordering: .acquiring)
        #expect(recorder.wait(cycles: cycles + 40))
        events += device.takeEvents()
        graph.stop()
        let after = recorder.recorded().suffix(30 * 256)
        let frequency = SignalMeasurement.frequency(of: Array(after), sampleRate: 44100)
        #expect(abs(frequency - 1000) < 2, "measured \(frequency) Hz at 44100 Hz; events: \(events)")
        #expect(try io.streamFormat(scope: .output, element: IOUnit.outputElement).sampleRate == 44100)
        #expect(try io.streamFormat(scope: .input, element: IOUnit.outputElement).sampleRate == 44100)
        #expect(try tone.streamFormat(scope: .output, element: 0).sampleRate == 44100)
        #expect(events.contains(.formatChanged(sampleRate: 44100, periodFrames: 256)), "\(events)")
    }
}
