#if canImport(Glibc)
import Glibc
#endif
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import SonoraUnits
import Testing

/// The I/O unit converts between its client formats and the device, as RemoteIO does: the
/// graph plays at the client rate and channels, capture arrives in the client format.
/// Deterministic: a scripted in-process loopback (capture hears playback a fixed latency later),
/// its cycles run on the test's thread.
@Suite("The I/O unit converts client formats to the device (rate and channels)", .serialized)
struct IOUnitConversionTests {
    static let tone = 1000.0

    /// Plays a `tone` sine at the client format through a scripted 48 kHz loopback and
    /// returns what capture delivered (client format) and what the device played.
    static func loop(
        client: (rate: Double, playChannels: Int, captureChannels: Int), amplitudes: [Float],
        deviceChannels: Int, cycles: Int = 400, frequency: Double = tone
    ) throws -> (capture: [[Float]], played: [[Float]], io: IOUnit, allocations: Int) {
        let period = 256
        let device = try OutputTap(
            configuration: AudioDeviceConfiguration(
                sampleRate: 48000, periodFrames: period, inputChannels: deviceChannels, outputChannels: deviceChannels,
                realtimePriority: nil),
            inProcessLatency: 512, capacity: cycles * period)
        let io = IOUnit()
        try io.setDevice(device)
        try io.setIOEnabled(true, scope: .input, element: 1)
        try io.setStreamFormat(.canonical(sampleRate: client.rate, channels: client.playChannels), scope: .input, element: 0)
        try io.setStreamFormat(.canonical(sampleRate: client.rate, channels: client.captureChannels), scope: .output, element: 1)
        let source = SineSource(frequency: frequency, sampleRate: client.rate, amplitudes: amplitudes)
        try io.setRenderCallback(source, input: 0)
        let recorder = ClientRecorder(unit: io, channels: client.captureChannels, capacity: Int(Double(cycles * period) * client.rate / 48000) + 4096)
        try io.setInputCallback(recorder)
        try io.initialize()
        try io.start()
        try device.run(cycles: 20)
        device.countsAllocations = true
        try device.run(cycles: cycles - 20)
        io.stop()
        #expect(device.statistics.renderErrors == 0)
        return (recorder.captured, device.played, io, device.allocations)
    }

    /// The last `seconds` of `samples` (past the start-up and the filters' delays).
    static func tail(_ samples: [Float], seconds: Double, rate: Double) -> [Float] {
        Array(samples.suffix(Int(seconds * rate)))
    }

    static func expectTone(_ samples: [Float], rate: Double, amplitude expected: Double, _ what: String, tone: Double = tone) {
        let window = tail(samples, seconds: 1, rate: rate)
        let frequency = SignalMeasurement.frequency(of: window, sampleRate: rate)
        let amplitude = SignalMeasurement.amplitude(of: window, frequency: tone, sampleRate: rate)
        let levelError = SignalMeasurement.amplitudeDecibels(amplitude / expected)
        #expect(abs(frequency - tone) < 0.5, "\(what): \(frequency) Hz instead of \(tone) Hz")
        #expect(abs(levelError) < 0.5, "\(what): level off by \(levelError) dB (amplitude \(amplitude), expected \(expected))")
    }

    @Test("a 22,050 Hz mono client on a 48 kHz stereo device: plays on both channels, captures at the client rate")
    func monoClientOnStereoDevice() throws {
        let (capture, played, io, _) = try Self.loop(client: (22050, 1, 1), amplitudes: [0.5], deviceChannels: 2)
        #expect(capture.count == 1 && capture[0].count > 22050 * 3 / 2)
        // Mono plays on every device channel (ChannelMap's default, as Core Audio's converter).
        Self.expectTone(played[0], rate: 48000, amplitude: 0.5, "device channel 0")
        Self.expectTone(played[1], rate: 48000, amplitude: 0.5, "device channel 1")
        // Stereo capture into the mono client is averaged: both channels carry the tone, so full level.
        Self.expectTone(capture[0], rate: 22050, amplitude: 0.5, "client capture")
        // The conversion's delay is part of the latency: the tone's onset comes back when the
        // reported latency says, within one device period (the FIFO's fill varies by a slice).
        #expect(io.latency > 512.0 / 48000)
        let onset = Double(capture[0].firstIndex { abs($0) > 0.25 } ?? 0) / 22050
        print("IOUnit conversion: onset \(onset * 1000) ms, reported latency \(io.latency * 1000) ms")
        #expect(abs(onset - io.latency) < 256.0 / 48000, "onset \(onset) s, latency \(io.latency) s")
        io.uninitialize()
    }

    @Test("the passband: tones up to 7 kHz from a 22,050 Hz client come back within 0.5 dB both ways", arguments: [100.0, 3000, 6000, 7000])
    func passband(frequency: Double) throws {
        let (capture, played, io, _) = try Self.loop(client: (22050, 1, 1), amplitudes: [0.5], deviceChannels: 2, frequency: frequency)
        Self.expectTone(played[0], rate: 48000, amplitude: 0.5, "device at \(frequency) Hz", tone: frequency)
        Self.expectTone(capture[0], rate: 22050, amplitude: 0.5, "client capture at \(frequency) Hz", tone: frequency)
        io.uninitialize()
    }

    @Test("a stereo client on a mono device is downmixed (averaged), and the mono capture feeds both client channels")
    func stereoClientOnMonoDevice() throws {
        // Left at 0.5, right silent: the device plays their mean, 0.25.
        let (capture, played, io, _) = try Self.loop(client: (22050, 2, 2), amplitudes: [0.5, 0], deviceChannels: 1)
        Self.expectTone(played[0], rate: 48000, amplitude: 0.25, "mono device")
        Self.expectTone(capture[0], rate: 22050, amplitude: 0.25, "client capture left")
        Self.expectTone(capture[1], rate: 22050, amplitude: 0.25, "client capture right")
        io.uninitialize()
    }

    @Test("a 44.1 kHz client on a 48 kHz device, same channels: rate conversion alone")
    func cdRateClient() throws {
        let (capture, played, io, _) = try Self.loop(client: (44100, 2, 2), amplitudes: [0.5, 0.25], deviceChannels: 2)
        Self.expectTone(played[0], rate: 48000, amplitude: 0.5, "device left")
        Self.expectTone(played[1], rate: 48000, amplitude: 0.25, "device right")
        Self.expectTone(capture[0], rate: 44100, amplitude: 0.5, "capture left")
        Self.expectTone(capture[1], rate: 44100, amplitude: 0.25, "capture right")
        io.uninitialize()
    }

    @Test("a playback-only unit needs no capture-side client format", .enabled(if: true))
    func playbackOnlyIgnoresCaptureFormat() throws {
        let period = 256
        let device = try OutputTap(
            configuration: AudioDeviceConfiguration(sampleRate: 48000, periodFrames: period, inputChannels: 0, outputChannels: 2, realtimePriority: nil),
            inProcessLatency: nil, capacity: 300 * period)
        let io = IOUnit()
        try io.setDevice(device)
        try io.setStreamFormat(.canonical(sampleRate: 22050, channels: 1), scope: .input, element: 0)
        // Capture is off: whatever its client format says (here a rate no conversion is set up for) must not matter.
        try io.setStreamFormat(.canonical(sampleRate: 8000, channels: 3), scope: .output, element: 1)
        try io.setRenderCallback(SineSource(frequency: Self.tone, sampleRate: 22050, amplitudes: [0.5]), input: 0)
        try io.initialize()
        try io.start()
        try device.run(cycles: 300)
        io.stop()
        Self.expectTone(device.played[0], rate: 48000, amplitude: 0.5, "playback-only left")
        Self.expectTone(device.played[1], rate: 48000, amplitude: 0.5, "playback-only right")
        io.uninitialize()
    }

    @Test("a playback-only unit at the device's rate initializes whatever its capture-side client format is")
    func playbackOnlyUnconverted() throws {
        let device = try TimerDevice(configuration: AudioDeviceConfiguration(sampleRate: 48000, inputChannels: 0), mode: .offline)
        let io = IOUnit()
        try io.setDevice(device)
        try io.setStreamFormat(.canonical(sampleRate: 48000, channels: 2), scope: .input, element: 0)
        try io.setStreamFormat(.canonical(sampleRate: 44100, channels: 2), scope: .output, element: 1)
        try io.initialize()
        #expect(io.isInitialized)
        io.uninitialize()
    }

    @Test("a graph headed by the converting I/O unit renders in client-rate slices (graph.start drives it)")
    func graphDriven() throws {
        let device = try OutputTap(
            configuration: AudioDeviceConfiguration(sampleRate: 48000, periodFrames: 256, inputChannels: 2, outputChannels: 2, realtimePriority: nil),
            inProcessLatency: 512, capacity: 400 * 256)
        let graph = AudioGraph()
        let io = IOUnit()
        try io.setDevice(device)
        try io.setIOEnabled(true, scope: .input, element: 1)
        try io.setStreamFormat(.canonical(sampleRate: 22050, channels: 1), scope: .input, element: 0)
        try io.setStreamFormat(.canonical(sampleRate: 22050, channels: 1), scope: .output, element: 1)
        let node = graph.addNode(io)
        try graph.setRenderCallback(SineSource(frequency: Self.tone, sampleRate: 22050, amplitudes: [0.5]), node: node, input: 0)
        let recorder = ClientRecorder(unit: io, channels: 1, capacity: 22050 * 3)
        try io.setInputCallback(recorder)
        try graph.initialize()
        try graph.start()
        try device.run(cycles: 400)
        graph.stop()
        #expect(device.statistics.renderErrors == 0)
        Self.expectTone(device.played[0], rate: 48000, amplitude: 0.5, "graph-driven device left")
        Self.expectTone(device.played[1], rate: 48000, amplitude: 0.5, "graph-driven device right")
        Self.expectTone(recorder.captured[0], rate: 22050, amplitude: 0.5, "graph-driven capture")
        graph.uninitialize()
    }

    @Test("no heap calls on the I/O thread while converting both ways", .enabled(if: AllocationCounter.isAvailable))
    func noAllocationWhileConverting() throws {
        let (capture, _, io, allocations) = try Self.loop(client: (22050, 1, 1), amplitudes: [0.5], deviceChannels: 2, cycles: 1000)
        #expect(capture[0].count > 0)
        #expect(allocations == 0)
        io.uninitialize()
    }

    @Test("a 22,050 Hz mono client on a paced 48 kHz in-process loopback (its own I/O thread)")
    func pacedInProcessDevice() throws {
        let device = try TimerDevice(
            configuration: AudioDeviceConfiguration(sampleRate: 48000, periodFrames: 256, inputChannels: 2, outputChannels: 2, realtimePriority: nil),
            mode: .inProcess(latencyFrames: 512, paced: true))
        let io = IOUnit()
        try io.setDevice(device)
        try io.setIOEnabled(true, scope: .input, element: 1)
        try io.setStreamFormat(.canonical(sampleRate: 22050, channels: 1), scope: .input, element: 0)
        try io.setStreamFormat(.canonical(sampleRate: 22050, channels: 1), scope: .output, element: 1)
        try io.setRenderCallback(SineSource(frequency: Self.tone, sampleRate: 22050, amplitudes: [0.5]), input: 0)
        let recorder = ClientRecorder(unit: io, channels: 1, capacity: 22050 * 3)
        try io.setInputCallback(recorder)
        try io.initialize()
        try io.start()
        let deadline = HostTime.now.seconds + 20
        while recorder.frames < 22050 * 2 && HostTime.now.seconds < deadline { usleep(10000) }
        io.stop()
        #expect(recorder.frames >= 22050 * 2)
        #expect(device.statistics.renderErrors == 0)
        Self.expectTone(recorder.captured[0], rate: 22050, amplitude: 0.5, "paced in-process capture")
        io.uninitialize()
    }
}

/// A sine per channel at the client format (phase kept across slices), rendered on the I/O thread.
final class SineSource: RenderCallbackTarget, @unchecked Sendable {
    let step: Double
    let amplitudes: UnsafeMutableBufferPointer<Float>
    private var phase = 0.0

    init(frequency: Double, sampleRate: Double, amplitudes: [Float]) {
        step = 2 * Double.pi * frequency / sampleRate
        self.amplitudes = .allocate(capacity: amplitudes.count)
        _ = self.amplitudes.initialize(from: amplitudes)
    }

    deinit { amplitudes.deallocate() }

    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        let buffers = request.pointee.buffers
        for frame in 0..<request.pointee.frameCount {
            let value = Float(sin(phase))
            for channel in 0..<buffers.channelCount {
                buffers.samples(channel)[frame] = channel < amplitudes.count ? value * amplitudes[channel] : 0
            }
            phase += step
            if phase > 2 * Double.pi { phase -= 2 * Double.pi }
        }
        return .noError
    }
}

/// Pulls bus 1 from the input callback (the client capture format) into preallocated channels.
final class ClientRecorder: RenderCallbackTarget, @unchecked Sendable {
    unowned let unit: IOUnit
    let storage: [UnsafeMutableBufferPointer<Float>]
    let scratch: OwnedAudioBufferList
    private(set) var frames = 0

    init(unit: IOUnit, channels: Int, capacity: Int) {
        self.unit = unit
        storage = (0..<channels).map { _ in
            let buffer = UnsafeMutableBufferPointer<Float>.allocate(capacity: capacity)
            buffer.initialize(repeating: 0)
            return buffer
        }
        scratch = try! OwnedAudioBufferList(channelCount: channels, frameCapacity: 4096)
    }

    deinit { storage.forEach { $0.deallocate() } }

    var captured: [[Float]] { storage.map { Array($0.prefix(frames)) } }

    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        let count = request.pointee.frameCount
        let list = scratch.list(frameCount: count)
        var flags = RenderActionFlags()
        let status = unit.render(flags: &flags, timeStamp: request.pointee.timeStamp, bus: 1, frameCount: count, into: list)
        guard status == .noError else { return status }
        let take = min(count, storage[0].count - frames)
        if take > 0 {
            for channel in 0..<list.channelCount { (storage[channel].baseAddress! + frames).update(from: list.samples(channel), count: take) }
        }
        frames += take
        return .noError
    }
}

/// A scripted device that keeps what it was given to play (device rate and channels).
final class OutputTap: ScriptedDevice, @unchecked Sendable {
    let outputs: [UnsafeMutableBufferPointer<Float>]
    private var frames = 0

    init(configuration: AudioDeviceConfiguration, inProcessLatency: Int?, capacity: Int) throws {
        outputs = (0..<configuration.outputChannels).map { _ in
            let buffer = UnsafeMutableBufferPointer<Float>.allocate(capacity: capacity)
            buffer.initialize(repeating: 0)
            return buffer
        }
        try super.init(configuration: configuration, inProcessLatency: inProcessLatency)
    }

    deinit { outputs.forEach { $0.deallocate() } }

    var played: [[Float]] { outputs.map { Array($0.prefix(frames)) } }

    override func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
        let status = super.process(cycle)
        let count = min(cycle.pointee.frameCount, (outputs.first?.count ?? 0) - frames)
        if count > 0 {
            for channel in 0..<min(outputs.count, cycle.pointee.output.channelCount) {
                (outputs[channel].baseAddress! + frames).update(from: cycle.pointee.output.samples(channel), count: count)
            }
            frames += count
        }
        return status
    }
}
