#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SonoraCore
import SonoraFile
import SonoraHAL
import SonoraTestSupport
@testable import SonoraToolbox
import SonoraUnits
import Synchronization
import Testing

/// Play and record on one duplex I/O unit (the playAndRecord case: one card, one clock), on
/// Sonora's `sonoraloop` ALSA plugin, whose playback is its capture: a player's queue output
/// and a recorder's input queue share the unit through IOUnitUsers, in either order, and
/// either one stops without stopping the other. Realtime: run alone (REALTIME_SUITES).
@Suite("Play and record on one duplex I/O unit (sonoraloop)", .serialized, .enabled(if: ALSAConfiguration.loopPluginPath != nil))
struct PlayAndRecordALSATests {
    typealias Loop = AudioQueueLoopbackALSATests
    typealias Finished = AudioPlayerALSATests.Finished

    /// A duplex device on a new loop and an I/O unit on it, nothing enabled or set yet.
    static func duplexUnit(_ label: String) throws -> (ALSADevice, IOUnit) {
        let loop = Loop.newLoop(label)
        let device = try ALSADevice(capture: loop, playback: loop, configuration: Loop.configuration(input: 1, output: 1))
        let io = IOUnit()
        try io.setDevice(device)
        return (device, io)
    }

    static func noise(_ path: String, seconds: Double) throws -> [Float] {
        try runTool("/usr/bin/sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", path, "synth", String(seconds), "whitenoise", "gain", "-6"])
        return try decodedSamples(of: path)
    }

    /// The last attempt's recording holds `expected`, unless every attempt had an xrun (said, not compared).
    static func expectHolds(_ outcome: (recorded: [Float], xruns: Int), _ expected: [Float], sourceLocation: SourceLocation = #_sourceLocation) {
        guard outcome.xruns == 0 else {
            Issue.record("every run had an xrun (\(outcome.xruns) in the last); the recording was not compared", sourceLocation: sourceLocation)
            return
        }
        expectHolds(outcome.recorded, expected, sourceLocation: sourceLocation)
    }

    /// Where `recorded` holds `expected` (from its first non-zero sample on), checked frame by frame.
    static func expectHolds(_ recorded: [Float], _ expected: [Float], sourceLocation: SourceLocation = #_sourceLocation) {
        guard let lead = expected.firstIndex(where: { $0 != 0 }), let first = recorded.firstIndex(where: { $0 != 0 }) else {
            Issue.record("the recording is silent", sourceLocation: sourceLocation)
            return
        }
        let heard = Array(recorded[(first - lead)...].prefix(expected.count))
        #expect(heard.count == expected.count, "recorded \(heard.count) of \(expected.count) frames", sourceLocation: sourceLocation)
        let difference = zip(heard, expected).enumerated().first { $0.element.0 != $0.element.1 }
        #expect(difference == nil, "frame \(difference?.offset ?? -1) differs", sourceLocation: sourceLocation)
    }

    @Test("recorder first, then a player on the same unit: the recording is the file, bit for bit; both sides stay enabled")
    func recorderThenPlayer() throws {
        try withTemporaryFolder { folder in
            let path = folder.path("noise.wav")
            let expected = try Self.noise(path, seconds: 0.5)
            var outcome: (recorded: [Float], xruns: Int)?
            for attempt in 0..<3 where outcome?.xruns ?? 1 > 0 {
                let (device, io) = try Self.duplexUnit("pr-a")
                let url = folder.url("take\(attempt).wav")
                let recorder = try AudioRecorder(url: url, settings: AudioRecorderSettings(sampleRate: 48000, numberOfChannels: 1, bitDepth: 16), inputUnit: io)
                try recorder.prepareToRecord()
                #expect(io.isInputEnabled && !io.isOutputEnabled, "a recorder alone: capture only")
                let output = try AudioQueueOutput(unit: io, sampleRate: 48000, channels: 1)
                #expect(io.isInputEnabled && io.isOutputEnabled, "a player joins: both")
                let player = try AudioPlayer(contentsOf: URL(fileURLWithPath: path), output: output)
                let finished = Finished()
                player.delegate = finished
                try recorder.record()
                try player.play()
                #expect(finished.done.wait(timeout: .now() + 30) == .success)
                usleep(200_000)
                #expect(recorder.isRecording, "the player's end does not stop the recording")
                recorder.stop()
                player.stop()
                outcome = (try AudioRecorderTests.decoded(url.path), device.statistics.xruns)
                device.stop()
            }
            Self.expectHolds(try #require(outcome), expected)
        }
    }

    @Test("a recorder joins a playing player's unit and leaves it: the player plays on; then a player stopping leaves a recording running")
    func eitherSideStopsAlone() throws {
        try withTemporaryFolder { folder in
            let path = folder.path("loop.wav")
            let loop = try Self.noise(path, seconds: 0.25)
            let (device, io) = try Self.duplexUnit("pr-b")
            defer { device.stop() }
            let output = try AudioQueueOutput(unit: io, sampleRate: 48000, channels: 1)
            let player = try AudioPlayer(contentsOf: URL(fileURLWithPath: path), output: output)
            player.numberOfLoops = -1
            try player.play()
            usleep(200_000)
            #expect(io.isOutputEnabled && !io.isInputEnabled)

            // A recorder joins while the player plays (the unit re-initializes with capture on).
            let url = folder.url("joined.wav")
            let recorder = try AudioRecorder(url: url, settings: AudioRecorderSettings(sampleRate: 48000, numberOfChannels: 1, bitDepth: 16), inputUnit: io)
            try recorder.prepareToRecord()
            try recorder.record()
            #expect(io.isRunning && io.isInputEnabled && io.isOutputEnabled)
            let xrunsBefore = device.statistics.xruns
            usleep(600_000)
            recorder.stop()
            let xrunsWhileRecording = device.statistics.xruns - xrunsBefore

            // The recorder left: capture off, the player still playing on a running device.
            usleep(100_000)
            #expect(!io.isInputEnabled && io.isOutputEnabled, "capture off once the recorder left")
            let cycles = device.statistics.cycles
            usleep(200_000)
            #expect(player.isPlaying && io.isRunning && device.statistics.cycles > cycles, "the player plays on after the recorder stopped")

            // What was recorded is the looping file (any phase of it), where nothing dropped.
            let recorded = try AudioRecorderTests.decoded(url.path)
            #expect(recorded.count > 48000 / 4, "recorded \(recorded.count) frames in 0.6 s")
            if xrunsWhileRecording == 0, let first = recorded.firstIndex(where: { $0 != 0 }) {
                let window = Array(recorded[first...].prefix(64))
                let phase = (0..<loop.count).first { phase in window.indices.allSatisfy { window[$0] == loop[(phase + $0) % loop.count] } }
                let found = try #require(phase, "the recording's first frames are not in the file")
                let heard = Array(recorded[first...].dropLast(256))
                let mismatch = heard.indices.first { heard[$0] != loop[(found + $0) % loop.count] }
                #expect(mismatch == nil, "recorded frame \(mismatch ?? -1) is not the loop's")
            }

            // Another recorder joins; then the player stops: the recording goes on.
            let second = try AudioRecorder(url: folder.url("after.wav"), settings: AudioRecorderSettings(sampleRate: 48000, numberOfChannels: 1, bitDepth: 16), inputUnit: io)
            try second.prepareToRecord()
            try second.record()
            usleep(200_000)
            player.stop()
            usleep(100_000)
            let time = second.currentTime
            usleep(300_000)
            #expect(second.isRecording && second.currentTime > time + 0.2, "the recording goes on after the player stopped (\(time) → \(second.currentTime))")
            #expect(io.isRunning)
            second.stop()
        }
    }

    @Test("a unit that opens its device by name: the recorder opens capture only, the player's join re-opens it duplex")
    func namedDeviceReopensDuplex() throws {
        try withTemporaryFolder { folder in
            let path = folder.path("noise.wav")
            let expected = try Self.noise(path, seconds: 0.3)
            var outcome: (recorded: [Float], xruns: Int)?
            for attempt in 0..<3 where outcome?.xruns ?? 1 > 0 {
                let io = IOUnit()
                io.deviceConfiguration = Loop.configuration(input: 1, output: 1)
                try io.setDevice(named: Loop.newLoop("pr-d"))
                let url = folder.url("named\(attempt).wav")
                let recorder = try AudioRecorder(url: url, settings: AudioRecorderSettings(sampleRate: 48000, numberOfChannels: 1, bitDepth: 16), inputUnit: io)
                try recorder.prepareToRecord()
                #expect(io.device?.format.inputChannels == 1 && io.device?.format.outputChannels == 0, "capture only: \(String(describing: io.device?.format))")
                let player = try AudioPlayer(contentsOf: URL(fileURLWithPath: path), output: try AudioQueueOutput(unit: io, sampleRate: 48000, channels: 1))
                #expect(io.device?.format.inputChannels == 1 && io.device?.format.outputChannels == 1, "duplex: \(String(describing: io.device?.format))")
                let finished = Finished()
                player.delegate = finished
                try recorder.record()
                try player.play()
                #expect(finished.done.wait(timeout: .now() + 30) == .success)
                usleep(200_000)
                let xruns = io.device?.statistics.xruns ?? -1
                recorder.stop()
                player.stop()
                outcome = (try AudioRecorderTests.decoded(url.path), xruns)
                io.uninitialize()
            }
            Self.expectHolds(try #require(outcome), expected)
        }
    }

    @Test("a second player or recorder on a side already in use is refused, naming the unit")
    func oneOwnerPerSide() throws {
        let (device, io) = try Self.duplexUnit("pr-c")
        defer { device.stop() }
        let output = try AudioQueueOutput(unit: io, sampleRate: 48000, channels: 1)
        #expect(IOUnitUsers.shared.isClaimed(.playback, of: io))
        let queue = try AudioQueue(format: .linearPCM(sampleRate: 48000, channels: 1, sample: .int16)) { _, _ in }
        #expect(throws: AudioError.self) { try queue.setOutputUnit(io) }
        do {
            try queue.setOutputUnit(io)
        } catch {
            #expect(error.message.contains("playback is used by another"), "\(error.message)")
        }
        try queue.dispose(immediate: true)
        withExtendedLifetime(output) {}
    }
}

/// The sharing under churn, on the null device (duplex, timer-paced): players' outputs and
/// input queues claim, start, stop and release one unit from two threads at once, as an app
/// whose UI starts and stops playing and recording independently would. Nothing crashes or
/// hangs, each side's second owner is refused only while the first holds it, and when both
/// are gone the unit is stopped, uninitialized and free for the next owner.
@Suite("Play and record on one unit: claims from two threads at once")
struct PlayAndRecordChurnTests {
    @Test func claimsAndReleasesFromTwoThreads() throws {
        let device = try AudioDevices.open(named: "null", configuration: AudioDeviceConfiguration(
            sampleRate: 48000, periodFrames: 256, inputChannels: 1, outputChannels: 1))
        defer { device.stop() }
        let io = IOUnit()
        try io.setDevice(device)
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 1, sample: .int16)
        let failures = Mutex<[String]>([])
        let rounds = 60
        let done = DispatchGroup()
        done.enter()
        done.enter()
        let player = Thread {
            defer { done.leave() }
            for round in 0..<rounds {
                do {
                    let output = try AudioQueueOutput(unit: io, sampleRate: 48000, channels: 1)
                    let queue = try AudioQueue(format: format) { queue, buffer in
                        buffer.byteSize = buffer.byteCapacity
                        try? queue.enqueue(buffer)
                    }
                    defer { try? queue.dispose(immediate: true) }
                    try queue.setOutput(output)
                    for _ in 0..<3 {
                        let buffer = try queue.allocateBuffer(byteCapacity: 1024)
                        buffer.byteSize = 1024
                        try queue.enqueue(buffer)
                    }
                    try queue.start()
                    usleep(useconds_t(2000 + round % 3 * 1000))
                    try queue.stop(immediate: true)
                } catch {
                    failures.withLock { $0.append("player round \(round): \(error)") }
                }
            }
        }
        let recorder = Thread {
            defer { done.leave() }
            for round in 0..<rounds {
                do {
                    let queue = try AudioInputQueue(format: format) { queue, buffer, _, _ in try? queue.enqueue(buffer) }
                    defer { try? queue.dispose(immediate: true) }
                    for _ in 0..<3 { try queue.enqueue(try queue.allocateBuffer(byteCapacity: 1024)) }
                    try queue.setInputUnit(io)
                    try queue.start()
                    usleep(useconds_t(1500 + round % 4 * 1000))
                    try queue.stop(immediate: true)
                } catch {
                    failures.withLock { $0.append("recorder round \(round): \(error)") }
                }
            }
        }
        player.start()
        recorder.start()
        #expect(done.wait(timeout: .now() + 120) == .success, "the two threads did not finish: a hang")
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        // Both gone: the unit is stopped and free for the next owner of either side.
        usleep(50_000)
        #expect(!io.isRunning)
        #expect(!IOUnitUsers.shared.isClaimed(.playback, of: io) && !IOUnitUsers.shared.isClaimed(.capture, of: io))
        let output = try AudioQueueOutput(unit: io, sampleRate: 48000, channels: 1)
        #expect(io.isOutputEnabled)
        withExtendedLifetime(output) {}
    }
}
