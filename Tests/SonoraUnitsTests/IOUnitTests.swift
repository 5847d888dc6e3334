#if canImport(Glibc)
import Glibc
#endif
import SonoraCore
import SonoraHAL
import SonoraUnits
import Testing

@Suite("The I/O unit (RemoteIO)", .serialized)
struct IOUnitTests {
    @Test("Core Audio's element conventions, EnableIO, and errors for wrong addresses")
    func conventions() throws {
        let io = IOUnit()
        #expect(io.componentDescription.subType == "rioc")
        #expect(try flag(io.property(.enableIO, scope: .output, element: 0)) == true)
        #expect(try flag(io.property(.enableIO, scope: .input, element: 1)) == false)
        try io.setProperty(.enableIO, scope: .input, element: 1, to: .flag(true))
        #expect(io.isIOEnabled(scope: .input, element: 1))
        #expect(throws: AudioError.self) { try io.setProperty(.enableIO, scope: .input, element: 0, to: .flag(true)) }
        if case .device(let name) = try io.property(.currentDevice, scope: .global, element: 0) { #expect(name == "null") } else { Issue.record("CurrentDevice is not a device") }
        #expect(try flag(io.property(.isRunning, scope: .global, element: 0)) == false)
        #expect(try io.propertyInfo(.isRunning, scope: .global, element: 0).isWritable == false)
    }

    @Test("a graph headed by the I/O unit plays through the device and hears its input through bus 1")
    func graphThroughInProcessLoopback() throws {
        let latency = 512
        let device = try TimerDevice(
            configuration: AudioDeviceConfiguration(periodFrames: 128, inputChannels: 2, outputChannels: 2, realtimePriority: nil),
            mode: .inProcess(latencyFrames: latency, paced: true))
        let graph = AudioGraph()
        let io = IOUnit()
        try io.setDevice(device)
        try io.setIOEnabled(true, scope: .input, element: 1)
        let ioNode = graph.addNode(io)
        let tone = try graph.addNode(ToneGeneratorUnit.componentDescription)
        try graph.connect(tone, bus: 0, to: ioNode, input: 0)
        let recorder = InputRecorder(unit: io, capacity: 48000)
        try io.setInputCallback(recorder)
        try graph.initialize()
        #expect(io.latency == Double(latency) / 48000)
        try graph.start()
        #expect(io.isRunning)
        let deadline = HostTime.now.seconds + 10
        while recorder.frames < 128 * 40 && HostTime.now.seconds < deadline { usleep(5000) }
        graph.stop()
        #expect(!io.isRunning)
        #expect(recorder.frames >= 128 * 40)
        // The tone generator's output comes back `latency` frames later; before that, silence.
        let heard = Array(recorder.samples.prefix(recorder.frames))
        // (The sine starts at sin 0 = 0, so its second frame is the first non-zero one.)
        let first = heard.firstIndex { $0 != 0 }
        #expect(first == latency + 1)
        #expect(device.statistics.renderErrors == 0)
        graph.uninitialize()
    }

    @Test("a client rate the unit cannot convert to the device's is refused with both rates named")
    func rateMismatch() throws {
        // (Other rates are converted, as RemoteIO does: IOUnitConversionTests.)
        let device = try TimerDevice(configuration: AudioDeviceConfiguration(sampleRate: 44100, inputChannels: 0), mode: .offline)
        let io = IOUnit()
        try io.setDevice(device)
        try io.setStreamFormat(.canonical(sampleRate: 100, channels: 2), scope: .input, element: 0)
        #expect {
            try io.initialize()
        } throws: { error in
            let message = (error as? AudioError)?.message ?? ""
            return message.contains("100.0 Hz") && message.contains("44100")
        }
    }
}

private func flag(_ value: AudioUnitPropertyValue) -> Bool? {
    if case .flag(let on) = value { return on }
    return nil
}

/// Pulls the I/O unit's bus 1 from its input callback, as a Core Audio app does.
final class InputRecorder: RenderCallbackTarget, @unchecked Sendable {
    unowned let unit: IOUnit
    let samples: UnsafeMutableBufferPointer<Float>
    private(set) var frames = 0
    let buffers: OwnedAudioBufferList

    init(unit: IOUnit, capacity: Int) {
        self.unit = unit
        samples = .allocate(capacity: capacity)
        samples.initialize(repeating: 0)
        buffers = try! OwnedAudioBufferList(channelCount: 2, frameCapacity: 4096)
    }

    deinit { samples.deallocate() }

    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        let count = request.pointee.frameCount
        var flags = RenderActionFlags()
        let status = unit.render(flags: &flags, timeStamp: request.pointee.timeStamp, bus: 1, frameCount: count, into: buffers.list(frameCount: count))
        guard status == .noError else { return status }
        let take = min(count, samples.count - frames)
        if take > 0 { (samples.baseAddress! + frames).update(from: buffers.list.samples(0), count: take) }
        frames += take
        return .noError
    }
}
