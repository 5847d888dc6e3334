import Foundation
import SonoraCore
import SonoraTestSupport
import SonoraUnits
import Testing
@testable import SonoraLV2

/// A mono plugin on a stereo bus runs as two linked instances (dual mono, as Ardour and
/// Carla run it): each channel through its own instance, one set of parameters for both.
@Suite("LV2 linked instances", .serialized)
struct LinkedInstancesTests {
    static let lowpass = "http://plugin.org.uk/swh-plugins/buttlow_iir"
    static let amp = "http://plugin.org.uk/swh-plugins/amp"

    /// Feeds the unit's input from two channels of samples, block after block.
    final class Feed: RenderCallbackTarget {
        let channels: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
        let count: Int
        let frames: Int

        init(_ samples: [[Float]]) {
            count = samples.count
            frames = samples[0].count
            channels = .allocate(capacity: count)
            for (index, channel) in samples.enumerated() {
                channels[index] = .allocate(capacity: frames)
                channels[index].initialize(from: channel, count: frames)
            }
        }

        deinit {
            for index in 0..<count { channels[index].deallocate() }
            channels.deallocate()
        }

        override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
            let start = Int(request.pointee.timeStamp.sampleTime) % frames
            let buffers = request.pointee.buffers
            for channel in 0..<buffers.channelCount {
                for frame in 0..<request.pointee.frameCount {
                    buffers.samples(channel)[frame] = channels[channel % count][(start + frame) % frames]
                }
            }
            return .noError
        }
    }

    static func linked(_ uri: String, instances: Int = 2, maximumFrames: Int = 512) throws -> LV2LinkedUnit {
        try LV2LinkedUnit(
            uri: uri, instances: instances, world: Fixtures.world,
            options: .init(sampleRate: Fixtures.sampleRate, maximumFrames: maximumFrames, workerMode: .inline))
    }

    /// Renders `frames` frames of the unit in blocks; returns its output channels.
    static func render(_ unit: AudioUnit, frames: Int, blockSize: Int) throws -> [[Float]] {
        let channels = Int(try unit.streamFormat(scope: .output, element: 0).channelsPerFrame)
        let buffers = try OwnedAudioBufferList(channelCount: channels, frameCapacity: blockSize)
        var result = Array(repeating: [Float](), count: channels)
        var done = 0
        while done < frames {
            let count = min(blockSize, frames - done)
            var flags = RenderActionFlags()
            let list = buffers.list(frameCount: count)
            let status = unit.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(done)), bus: 0, frameCount: count, into: list)
            guard status == .noError else { throw AudioError(status, "render failed at \(done)") }
            for channel in 0..<channels { result[channel] += Array(list[channel]) }
            done += count
        }
        return result
    }

    /// lv2apply on a mono file, one run() per frame: the reference for one channel.
    static func lv2apply(_ uri: String, input: [Float], controls: [String: Float], name: String) throws -> [Float] {
        let inputPath = Fixtures.directory + "/linked-\(name)-in.wav"
        let outputPath = Fixtures.directory + "/linked-\(name)-out.wav"
        try Fixtures.writeWAV([input], to: inputPath)
        var arguments = ["-i", inputPath, "-o", outputPath]
        for (symbol, value) in controls.sorted(by: { $0.key < $1.key }) { arguments += ["-c", symbol, "\(value)"] }
        let outcome = try CLIRunner(executable: "/usr/bin/lv2apply").run(arguments + [uri])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        return try Fixtures.readWAV(outputPath)[0]
    }

    @Test("dual mono lowpass: each channel as lv2apply renders it alone")
    func dualMonoMatchesLV2ApplyPerChannel() throws {
        let left = Fixtures.input
        let right = TestSignal.whiteNoise(count: left.count, seed: 7, amplitude: 0.5)
        let unit = try Self.linked(Self.lowpass)
        #expect(unit.instances.count == 2)
        #expect(try unit.streamFormat(scope: .input, element: 0).channelsPerFrame == 2)
        try unit.setParameter(try unit.instances[0].parameterID(symbol: "cutoff"), to: 800)
        let feed = Feed([left, right])
        try unit.setRenderCallback(feed, input: 0)
        try unit.initialize()
        defer { unit.uninitialize() }
        let rendered = try Self.render(unit, frames: left.count, blockSize: 64)
        let controls: [String: Float] = ["cutoff": 800, "resonance": try unit.instances[0].control("resonance")]
        let referenceLeft = try Self.lv2apply(Self.lowpass, input: left, controls: controls, name: "left")
        let referenceRight = try Self.lv2apply(Self.lowpass, input: right, controls: controls, name: "right")
        #expect(SignalMeasurement.maximumDifference([rendered[0]], [referenceLeft]) < 1e-5)
        #expect(SignalMeasurement.maximumDifference([rendered[1]], [referenceRight]) < 1e-5)
        // The channels really went through separate filters: the right is not the left's output.
        #expect(SignalMeasurement.maximumDifference([rendered[0]], [rendered[1]]) > 0.01)
    }

    @Test("a parameter set on the linked unit is set on every instance; get reads the first")
    func parametersReachEveryInstance() throws {
        let unit = try Self.linked(Self.amp, instances: 3)
        let gain = try unit.instances[0].parameterID(symbol: "gain")
        #expect(unit.parameterDefinitions.map(\.id) == unit.instances[0].parameterDefinitions.map(\.id))
        try unit.setParameter(gain, to: -6)
        for instance in unit.instances { #expect(try instance.control("gain") == -6) }
        #expect(try unit.parameter(gain) == -6)
        // Saved state restored into a fresh linked unit reaches all its instances.
        let state = unit.state
        let restored = try Self.linked(Self.amp, instances: 3)
        try restored.restore(state)
        for instance in restored.instances { #expect(try instance.control("gain") == -6) }
        // And the audio: each channel −6 dB.
        try unit.setRenderCallback(Feed([[0.5, 0.25, -0.5, 1]]), input: 0)
        try unit.initialize()
        defer { unit.uninitialize() }
        let rendered = try Self.render(unit, frames: 4, blockSize: 4)
        let factor = Float(pow(10, -6.0 / 20))
        for channel in rendered { #expect(SignalMeasurement.maximumDifference([channel], [[0.5, 0.25, -0.5, 1].map { $0 * factor }]) < 1e-5) }
    }

    @Test("latency is the first instance's, reported once (not summed over the instances); meters read the first")
    func latencyReportedOnce() throws {
        let unit = try Self.linked("http://plugin.org.uk/swh-plugins/artificialLatency", instances: 2, maximumFrames: 256)
        try unit.setParameter(try unit.instances[0].parameterID(symbol: "delay"), to: 10)
        try unit.setRenderCallback(Feed([Fixtures.input]), input: 0)
        try unit.initialize()
        defer { unit.uninitialize() }
        _ = try Self.render(unit, frames: 1024, blockSize: 256)
        // 10 ms at 48 kHz: 480 frames, once for the pair.
        #expect(unit.instances[0].latencyFrames == 480)
        #expect(unit.latency == 0.01)
        #expect(try unit.parameter(try unit.instances[0].parameterID(symbol: "latency")) == 480)
    }

    @Test("a plugin with unlike input and output buses cannot be linked, and says why")
    func refusesUnlikeBuses() throws {
        // eg-sampler has no audio input.
        #expect(throws: AudioError.self) { try Self.linked("http://lv2plug.in/plugins/eg-sampler") }
        do { _ = try Self.linked("http://lv2plug.in/plugins/eg-sampler") } catch let error as AudioError {
            #expect(error.message.contains("one audio input bus and one output bus of the same width"), "\(error.message)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("the linked unit's render makes no heap call", .enabled(if: AllocationCounter.isAvailable))
    func renderAllocatesNothing() throws {
        let unit = try Self.linked(Self.lowpass, maximumFrames: 256)
        try unit.setRenderCallback(Feed([Fixtures.input, Fixtures.input.reversed()]), input: 0)
        try unit.initialize()
        defer { unit.uninitialize() }
        let cutoff = try unit.instances[0].parameterID(symbol: "cutoff")
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 256)
        let list = buffers.list(frameCount: 256)
        func cycle(_ index: Int) -> AudioError.Code {
            var flags = RenderActionFlags()
            return unit.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(index * 256)), bus: 0, frameCount: 256, into: list)
        }
        for index in 0..<20 { #expect(cycle(index) == .noError) }
        var heapCalls = 0
        for index in 20..<420 {
            // Control side, not counted: parameter changes that split the render into slices.
            if index % 10 == 0 { try unit.setParameter(cutoff, to: Float(200 + index), bufferOffset: index % 256) }
            if index % 15 == 0 { try unit.rampParameter(cutoff, to: Float(1000 + index), duration: 300, bufferOffset: 17) }
            AllocationCounter.begin()
            let status = cycle(index)
            heapCalls += AllocationCounter.end()
            #expect(status == .noError)
        }
        #expect(heapCalls == 0)
        for instance in unit.instances { #expect(try instance.control("cutoff") == unit.instances[0].control("cutoff")) }
    }
}
