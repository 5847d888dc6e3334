import Foundation
import Logging
import SonoraCore
import SonoraFile
import SonoraHAL
import SonoraPipeline
import SonoraTestSupport
import SonoraUnits
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A pipeline config with `voice_processing: on`, run end to end on Sonora's `sonoraloop`
/// ALSA plugin: its capture PCM is a room (taps after the loop's round trip, a noise floor)
/// plus a near-end talker from a file. The graph plays a far-end talker; what the device
/// plays comes back through the room, and `input` — the VPIO's cancelled capture — is
/// recorded. The far end's echo must be gone from the recording by about the canceller's
/// own ERLE (read as the `voice` node's `erle_db` meter over the control socket), while the
/// near-end talker passes; bypassing `voice` over the socket brings the echo back.
@Suite("Voice processing as a pipeline's device I/O, on the sonoraloop ALSA plugin with a room", .serialized,
       .enabled(if: ALSAConfiguration.loopPluginPath != nil))
struct VoiceProcessingLoopTests {
    static let rate = 16000, period = 160, periods = 3
    /// Direct path 15 ms after the round trip, reflections to 90 ms.
    static let taps: [(delay: Int, gain: Float)] = [(240, 0.6), (277, -0.3), (341, 0.2), (490, -0.12), (757, 0.08), (1180, 0.05), (1440, -0.03)]
    /// The near-end talker speaks over the far end from 10 s to 13 s (loop frames).
    static let nearFrom = 10 * rate, nearUntil = 13 * rate

    static func config(folder: String) -> String {
        """
        engine: {sample_rate: \(rate), period: \(period), periods: \(periods), channels: 1}
        device: {playback: vproom_playback, capture: vproom_capture, fallback: null, voice_processing: on}
        nodes:
          - {id: far_end, kind: player, file: far.wav}
          - {id: sent, kind: recorder, file: sent.wav}
          - id: speaker
            kind: mixer
            inputs: 2
            parameters:
              - {name: volume, scope: input, element: 1, value: 0}
          - {id: played, kind: recorder, file: played.wav}
        connections:
          - {from: far_end, to: "speaker:0"}
          - {from: input, to: sent}
          - {from: sent, to: "speaker:1"}
          - {from: speaker, to: played}
          - {from: played, to: output}
        control: {socket: control.sock}
        """
    }

    static func alsaConfiguration(near: String) -> String {
        let room = taps.map { "\($0.delay):\($0.gain)" }.joined(separator: " ")
        return """
        pcm.vproom_capture { type sonoraloop loop "vproom" format "FLOAT_LE" room "\(room)" noise_db -70 near "\(near)" }
        pcm.vproom_playback { type sonoraloop loop "vproom" format "FLOAT_LE" }
        """
    }

    static func writeWAV(_ samples: [Float], to path: String) throws {
        let format = StreamFormat.linearPCM(sampleRate: Double(rate), channels: 1, sample: .float32)
        let file = try AudioFile.create(path, type: .wave, format: format, erase: true)
        let buffers = try OwnedAudioBufferList(channelCount: 1, frameCapacity: samples.count)
        samples.withUnsafeBufferPointer { buffers.list.samples(0).update(from: $0.baseAddress!, count: samples.count) }
        try file.writeFrames(from: buffers.list(frameCount: samples.count))
        try file.close()
    }

    static func readWAV(_ path: String) throws -> [Float] {
        let file = try AudioFile.open(path)
        defer { try? file.close() }
        let buffers = try OwnedAudioBufferList(channelCount: Int(file.dataFormat.channelsPerFrame), frameCapacity: 4096)
        var result: [Float] = []
        while true {
            let read = try file.readFrames(into: buffers.list)
            if read == 0 { break }
            result += Array(UnsafeBufferPointer(start: buffers.list.samples(0), count: read))
        }
        return result
    }

    /// The voice node's meters, by name, over the socket.
    static func meters(_ client: ControlClient) throws -> [String: Double] {
        guard case .meters(let readings) = try client.send(.meters) else { return [:] }
        return Dictionary(readings.filter { $0.node == "voice" }.map { ($0.meter, $0.value) }, uniquingKeysWith: { a, _ in a })
    }

    @Test("the far end's echo is down by the canceller's ERLE while a near-end talker passes; bypass over the socket brings it back")
    func echoCancelledNearEndPasses() throws {
        let scratch = try TemporaryFolder(prefix: "sonora-vpio-loop")
        let folder = scratch.path
        let rate = Self.rate
        let far = TestSignal.talker(seconds: 16, rate: Double(rate), seed: 71, level: -22)
        var near = [Float](repeating: 0, count: Self.nearUntil)
        let talker = TestSignal.talker(seconds: 3, rate: Double(rate), seed: 913, level: -26)
        near.replaceSubrange(Self.nearFrom..<Self.nearUntil, with: talker)
        try Self.writeWAV(far, to: folder + "/far.wav")
        let nearPath = folder + "/near.f32"
        try near.withUnsafeBufferPointer { Data(buffer: $0) }.write(to: URL(fileURLWithPath: nearPath))
        let configPath = folder + "/intercom-loop.yaml"
        try Self.config(folder: folder).write(toFile: configPath, atomically: true, encoding: .utf8)

        let configuration = try ConfigurationParser.parse(contentsOf: configPath)
        #expect(PipelineBuilder.check(configuration).map(\.description) == [])
        let device = try ALSADevice(
            capture: "vproom_capture", playback: "vproom_playback",
            configuration: AudioDeviceConfiguration(sampleRate: rate, periodFrames: Self.period, periods: Self.periods,
                                                    inputChannels: 1, outputChannels: 1, realtimePriority: 60),
            alsaConfiguration: Self.alsaConfiguration(near: nearPath))
        let logger = Logger(label: "test")
        let pipeline = try PipelineBuilder.build(configuration, target: .live(device))
        let controller = PipelineController(pipeline: pipeline, device: device, configPath: configPath, logger: logger)
        let server = try ControlServer(path: try #require(configuration.socketPath), logger: logger) { request in controller.handle(request) }
        server.start()
        defer { server.stop() }
        let client = ControlClient(path: server.path)
        try pipeline.graph.start()

        /// Frames the device has captured so far (whole cycles).
        func captured() -> Int { device.statistics.cycles * Self.period }
        func wait(until frames: Int) -> Bool {
            let deadline = HostTime.now.seconds + 40
            while captured() < frames {
                if HostTime.now.seconds > deadline { return false }
                usleep(20_000)
            }
            return true
        }
        // Far end alone (converged from 7 s): the canceller's own ERLE.
        #expect(wait(until: 9 * rate + rate / 2))
        let farOnly = try Self.meters(client)
        // Both talking.
        var doubleTalkSeen = 0, polls = 0
        while captured() < Self.nearUntil - rate / 4 {
            if (try Self.meters(client))["double_talk"] == 1 { doubleTalkSeen += 1 }
            polls += 1
            usleep(50_000)
        }
        // Bypass over the socket: the echo comes back.
        #expect(wait(until: Self.nearUntil + rate / 4))
        let bypass = ControlRequest.ParameterSelector(node: "voice", parameter: .name("Bypass Voice Processing"))
        #expect(try client.send(.set(bypass, value: .flag(true), ramp: nil)).isSuccess)
        let bypassedFrom = captured() + rate / 4
        #expect(wait(until: bypassedFrom + rate))
        guard case .property(let latency) = try client.send(.getProperty(node: "voice", property: .latency)),
              case .seconds(let seconds) = latency.value
        else { Issue.record("latency of voice"); return }
        pipeline.graph.stop()
        try pipeline.finishRecorders()
        let statistics = device.statistics
        pipeline.graph.uninitialize()

        let played = try Self.readWAV(folder + "/played.wav")
        let sent = try Self.readWAV(folder + "/sent.wav")
        // Capture frame n holds the room's echo of played frame n − round trip − tap, and
        // near[n]; the recording lags the capture by the canceller's latency.
        let roundTrip = Self.period * Self.periods
        let lag = Int((seconds * Double(rate)).rounded()) - roundTrip
        func echo(_ range: Range<Int>) -> [Float] {
            range.map { m in
                let n = m - lag
                var sum: Float = 0
                for tap in Self.taps {
                    let index = n - roundTrip - tap.delay
                    if index >= 0 && index < played.count { sum += tap.gain * played[index] }
                }
                return sum
            }
        }
        func nearEnd(_ range: Range<Int>) -> [Float] { range.map { m in m - lag >= 0 && m - lag < near.count ? near[m - lag] : 0 } }
        func dB(_ a: [Float], over b: [Float]) -> Double {
            SignalMeasurement.decibels(SignalMeasurement.energy(a) / max(SignalMeasurement.energy(b), 1e-30))
        }
        let farWindow = (7 * rate)..<(9 * rate + rate / 2)
        let talkWindow = (Self.nearFrom + rate / 4)..<(Self.nearUntil - rate / 4)
        let bypassWindow = bypassedFrom..<(bypassedFrom + rate)
        try #require(sent.count >= bypassWindow.upperBound, "recorded \(sent.count) frames")

        // 1. Far end alone: the echo is down by at least 20 dB, and by about what the canceller says.
        let attenuation = dB(echo(farWindow), over: Array(sent[farWindow]))
        let erle = farOnly["erle_db"] ?? 0
        // 2. Both talking: what is left once the near end is taken away is the echo, still down;
        //    the near end itself comes through (its level and its waveform).
        let heard = Array(sent[talkWindow]), nearPart = nearEnd(talkWindow)
        let residual = zip(heard, nearPart).map { $0 - $1 }
        let echoDuringTalk = dB(echo(talkWindow), over: residual)
        let nearLevel = dB(heard, over: nearPart)
        let nearCorrelation = SignalMeasurement.correlation(heard, nearPart)
        // 3. Bypassed: the echo is back at its level (and the near end is silent by then).
        let bypassed = dB(echo(bypassWindow), over: Array(sent[bypassWindow]))
        print("voice: intercom pipeline on sonoraloop with a room at \(rate) Hz: echo down \(attenuation) dB (erle_db meter \(erle), delay_ms \(farOnly["delay_ms"] ?? -1)); during double talk echo down \(echoDuringTalk) dB, near end at \(nearLevel) dB correlation \(nearCorrelation), double_talk seen \(doubleTalkSeen)/\(polls); bypassed \(bypassed) dB; xruns \(statistics.xruns)")

        #expect(attenuation > 20, "far end alone: echo down only \(attenuation) dB")
        #expect(erle > 10, "erle_db meter \(erle)")
        // The recording also holds the room's noise, 45 dB under the echo: a measurement
        // cannot show more than that, so the meter is held to it up to the floor.
        let floor = 45.0
        #expect(attenuation > min(erle, floor - 5) - 6, "measured \(attenuation) dB against the meter's \(erle) dB (floor \(floor) dB)")
        #expect(abs((farOnly["delay_ms"] ?? -1) - 15) < 2, "delay_ms \(farOnly["delay_ms"] ?? -1): the room's direct path is 15 ms after the round trip")
        #expect(echoDuringTalk > 10, "during double talk the echo is down only \(echoDuringTalk) dB")
        #expect(abs(nearLevel) < 3, "the near end comes through at \(nearLevel) dB")
        #expect(nearCorrelation > 0.9, "the near end's waveform: correlation \(nearCorrelation)")
        #expect(doubleTalkSeen > 0, "double_talk never read 1 while both talked")
        #expect(abs(bypassed) < 3, "bypassed: echo over output \(bypassed) dB")
        #expect(statistics.renderErrors == 0)
    }

    @Test("the loop's near-end talker: a missing file, an empty one or one of odd bytes is refused when the PCM opens")
    func malformedNearEnd() throws {
        let scratch = try TemporaryFolder(prefix: "sonora-vpio-near")
        let odd = scratch.path + "/odd.f32", empty = scratch.path + "/empty.f32"
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: odd))
        try Data().write(to: URL(fileURLWithPath: empty))
        for near in [scratch.path + "/missing.f32", odd, empty] {
            let configuration = #"pcm.badnear { type sonoraloop loop "badnear" format "FLOAT_LE" room "240:0.6" near "\#(near)" }"#
            #expect(throws: AudioError.self, "near \(near)") {
                _ = try ALSADevice(capture: "badnear", playback: "sonoraloop:badnear",
                                   configuration: AudioDeviceConfiguration(sampleRate: 16000, periodFrames: 160, inputChannels: 1, outputChannels: 1, realtimePriority: nil),
                                   alsaConfiguration: configuration)
            }
        }
        // Without a room there is nothing to add it to.
        let noRoom = #"pcm.nearonly { type sonoraloop loop "nearonly" format "FLOAT_LE" near "\#(odd)" }"#
        #expect(throws: AudioError.self) {
            _ = try ALSADevice(capture: "nearonly", playback: "sonoraloop:nearonly",
                               configuration: AudioDeviceConfiguration(sampleRate: 16000, periodFrames: 160, inputChannels: 1, outputChannels: 1, realtimePriority: nil),
                               alsaConfiguration: noRoom)
        }
    }
}
