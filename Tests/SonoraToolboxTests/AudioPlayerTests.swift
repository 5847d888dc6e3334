import Foundation
import SonoraCore
import SonoraFile
import SonoraHAL
import SonoraTestSupport
@testable import SonoraToolbox
import Testing

/// AudioPlayer on a scripted device (its cycles run on the test's thread, `PlayedTap`), with
/// files sox writes: what plays is the file, sample for sample.
@Suite("AudioPlayer", .serialized)
struct AudioPlayerTests {
    /// Delegate calls, and the threads they came on.
    final class Events: AudioPlayerDelegate, @unchecked Sendable {
        let lock = NSLock()
        var finished: [Bool] = []
        var decodeErrors: [AudioError] = []
        var interruptions: [String] = []
        var threads: [pthread_t] = []
        let done = DispatchSemaphore(value: 0)

        func audioPlayerDidFinishPlaying(_ player: AudioPlayer, successfully: Bool) {
            lock.withLock {
                finished.append(successfully)
                threads.append(pthread_self())
            }
            done.signal()
        }
        func audioPlayerDecodeErrorDidOccur(_ player: AudioPlayer, error: AudioError) { lock.withLock { decodeErrors.append(error) } }
        func audioPlayerBeginInterruption(_ player: AudioPlayer) { lock.withLock { interruptions.append("began") } }
        func audioPlayerEndInterruption(_ player: AudioPlayer, shouldResume: Bool) { lock.withLock { interruptions.append("ended \(shouldResume)") } }
    }

    static func sine(_ path: String, seconds: Double, frequency: Int = 440, channels: Int = 2, gain: Double = -6) throws {
        try runTool("/usr/bin/sox", ["-n", "-r", "48000", "-c", "\(channels)", "-b", "16", path, "synth", "\(seconds)", "sine", "\(frequency)", "gain", "\(gain)"])
    }

    /// Runs `cycles` device periods, bringing the player's queue thread to a fixed point
    /// before each (the scripted device runs faster than real time).
    static func run(_ tap: PlayedTap, _ players: [AudioPlayer], cycles: Int) throws {
        for _ in 0..<cycles {
            for player in players where player.isPlaying { _ = try player.preparedQueue?.prime() }
            try tap.run(cycles: 1)
        }
    }

    /// Channel `channel` of interleaved stereo samples.
    static func channel(_ interleaved: [Float], _ channel: Int, of channels: Int = 2) -> [Float] {
        stride(from: channel, to: interleaved.count, by: channels).map { interleaved[$0] }
    }

    @Test("plays the file sample for sample, then tells its delegate (successfully, off the I/O thread) and rests at time 0")
    func playsTheFile() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("tone.wav")
        try Self.sine(path, seconds: 0.25)
        let expected = try decodedSamples(of: path)
        let tap = try PlayedTap(channels: 2, capacity: 48000)
        let player = try AudioPlayer(contentsOf: URL(fileURLWithPath: path), output: try AudioQueueOutput(device: tap))
        let events = Events()
        player.delegate = events
        #expect(player.numberOfChannels == 2 && abs(player.duration - 0.25) < 1e-9 && player.format.sampleRate == 48000)
        try player.prepareToPlay()
        #expect(!player.isPlaying)
        try player.play()
        #expect(player.isPlaying)
        try Self.run(tap, [player], cycles: 60)  // 15,360 frames: the 12,000, then silence
        #expect(events.done.wait(timeout: .now() + 5) == .success)
        for channel in 0..<2 {
            let played = tap.played[channel]
            #expect(Array(played.prefix(12000)) == Self.channel(expected, channel))
            #expect(played.dropFirst(12000).allSatisfy { $0 == 0 })
        }
        #expect(events.lock.withLock { events.finished } == [true])
        #expect(events.lock.withLock { events.threads.allSatisfy { pthread_equal($0, pthread_self()) == 0 } }, "the delegate ran on the device's thread")
        #expect(!player.isPlaying && player.currentTime == 0)
    }

    @Test("currentTime follows the played frames; set while playing, the next frame played is the sample sought")
    func seekWhilePlaying() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("tone.wav")
        try Self.sine(path, seconds: 0.5, frequency: 1000)
        let expected = Self.channel(try decodedSamples(of: path), 0)
        let tap = try PlayedTap(channels: 2, capacity: 96000)
        let player = try AudioPlayer(contentsOf: URL(fileURLWithPath: path), output: try AudioQueueOutput(device: tap))
        try player.play()
        try Self.run(tap, [player], cycles: 8)
        #expect(player.currentTime == 2048.0 / 48000)
        try player.seek(to: 0.3)  // frame 14,400
        #expect(player.currentTime == 0.3 && player.isPlaying)
        try Self.run(tap, [player], cycles: 8)

        let played = tap.played[0]
        #expect(Array(played.prefix(2048)) == Array(expected.prefix(2048)))
        #expect(Array(played[2048..<4096]) == Array(expected[14400..<16448]))
        #expect(abs(player.currentTime - (14400.0 + 2048) / 48000) < 1e-9)
        // Paused, then sought, then played: from the sample sought.
        player.pause()
        #expect(!player.isPlaying)
        try player.seek(to: 0.1)
        try player.play()
        try Self.run(tap, [player], cycles: 2)
        #expect(Array(tap.played[0][4096..<4608]) == Array(expected[4800..<5312]))
        player.stop()
        #expect(abs(player.currentTime - (4800.0 + 512) / 48000) < 1e-9, "stop keeps the position")
    }

    @Test("numberOfLoops 2: the file three times, gapless, then the end")
    func loops() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("tone.wav")
        try Self.sine(path, seconds: 0.05, frequency: 700)  // 2,400 frames: loops inside a cycle
        let expected = Self.channel(try decodedSamples(of: path), 1)
        let tap = try PlayedTap(channels: 2, capacity: 48000)
        let player = try AudioPlayer(contentsOf: URL(fileURLWithPath: path), output: try AudioQueueOutput(device: tap))
        let events = Events()
        player.delegate = events
        player.numberOfLoops = 2
        try player.play()
        try Self.run(tap, [player], cycles: 40)
        #expect(events.done.wait(timeout: .now() + 5) == .success)
        let played = tap.played[1]
        #expect(Array(played.prefix(7200)) == expected + expected + expected)
        #expect(played.dropFirst(7200).allSatisfy { $0 == 0 })
        #expect(events.lock.withLock { events.finished } == [true])
    }

    @Test("rate 2 (enableRate before prepareToPlay) plays the file in half the frames")
    func rateTwo() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("tone.wav")
        try Self.sine(path, seconds: 0.25, frequency: 500)
        let tap = try PlayedTap(channels: 2, capacity: 48000)
        let player = try AudioPlayer(contentsOf: URL(fileURLWithPath: path), output: try AudioQueueOutput(device: tap))
        let events = Events()
        player.delegate = events
        player.enableRate = true
        player.rate = 2
        try player.play()
        try Self.run(tap, [player], cycles: 40)
        #expect(events.done.wait(timeout: .now() + 5) == .success)
        let played = tap.played[0]
        let lastSound = try #require(played.lastIndex { $0 != 0 })
        #expect(abs(lastSound - 6000) <= 4, "last non-zero frame \(lastSound)")
    }

    @Test("two players started for one device time begin on the same sample")
    func playAtTime() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("tone.wav")
        try Self.sine(path, seconds: 0.1, gain: -12)
        let expected = Self.channel(try decodedSamples(of: path), 0)
        let tap = try PlayedTap(channels: 2, capacity: 48000)
        let output = try AudioQueueOutput(device: tap)
        let first = try AudioPlayer(contentsOf: URL(fileURLWithPath: path), output: output)
        let second = try AudioPlayer(contentsOf: URL(fileURLWithPath: path), output: output)
        try first.prepareToPlay()
        try second.prepareToPlay()
        // The device runs (an idle queue) so its clock is known.
        let idle = try AudioPlayer(contentsOf: URL(fileURLWithPath: path), output: output)
        idle.volume = 0
        try idle.play()
        try Self.run(tap, [idle], cycles: 4)
        // Device sample time 2,048, eight periods from the device's start (four have run).
        let when = 2048.0 / 48000
        try first.play(atTime: when)
        try Self.run(tap, [first, idle], cycles: 1)
        try second.play(atTime: when)
        try Self.run(tap, [first, second, idle], cycles: 30)
        let played = tap.played[0]
        let start = Int((when * 48000).rounded())
        #expect(played[start - 1] == 0)
        #expect(Array(played[start..<start + 4800]) == expected.map { $0 * 2 })
    }

    @Test("metering: a −6 dB sine reads a peak of −6 dBFS and an average 3 dB under")
    func metering() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("tone.wav")
        try Self.sine(path, seconds: 0.25, frequency: 750)
        let tap = try PlayedTap(channels: 2, capacity: 48000)
        let player = try AudioPlayer(contentsOf: URL(fileURLWithPath: path), output: try AudioQueueOutput(device: tap))
        player.isMeteringEnabled = true
        try player.play()
        try Self.run(tap, [player], cycles: 10)
        player.updateMeters()
        for channel in 0..<2 {
            #expect(abs(player.peakPower(forChannel: channel) + 6.02) < 0.1, "\(player.peakPower(forChannel: channel))")
            #expect(abs(player.averagePower(forChannel: channel) + 9.03) < 0.1, "\(player.averagePower(forChannel: channel))")
        }
        #expect(player.peakPower(forChannel: 2) == -160)
    }

    @Test("an interruption pauses a playing player; its end with shouldResume plays on; the delegate hears both")
    func interruption() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("tone.wav")
        try Self.sine(path, seconds: 0.5)
        let tap = try PlayedTap(channels: 2, capacity: 48000)
        let player = try AudioPlayer(contentsOf: URL(fileURLWithPath: path), output: try AudioQueueOutput(device: tap))
        let events = Events()
        player.delegate = events
        try player.play()
        try Self.run(tap, [player], cycles: 4)
        player.beginInterruption()
        #expect(!player.isPlaying)
        let pausedAt = player.currentTime
        try Self.run(tap, [player], cycles: 4)
        #expect(player.currentTime == pausedAt)
        player.endInterruption(shouldResume: true)
        #expect(player.isPlaying)
        player.beginInterruption()
        player.endInterruption(shouldResume: false)
        #expect(!player.isPlaying)
        #expect(events.lock.withLock { events.interruptions } == ["began", "ended true", "began", "ended false"])
    }

    @Test("from Data in memory: plays like the file; its private copy goes with the player")
    func fromData() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("tone.wav")
        try Self.sine(path, seconds: 0.05)
        let expected = Self.channel(try decodedSamples(of: path), 0)
        let tap = try PlayedTap(channels: 2, capacity: 48000)
        var player: AudioPlayer? = try AudioPlayer(data: try Data(contentsOf: URL(fileURLWithPath: path)), output: try AudioQueueOutput(device: tap))
        let copy = try #require(player?.url.path)
        #expect(FileManager.default.fileExists(atPath: copy) && copy != path)
        try player?.play()
        try Self.run(tap, [player!], cycles: 12)
        #expect(Array(tap.played[0].prefix(2400)) == expected)
        player = nil
        #expect(!FileManager.default.fileExists(atPath: copy))
    }

    @Test("creation errors name the file and why, with Core Audio's status")
    func creationErrors() throws {
        let folder = try TemporaryFolder()
        let missing = folder.path("missing.wav")
        let notFound = try #require(throws: AudioError.self) { try AudioPlayer(contentsOf: URL(fileURLWithPath: missing), device: "null") }
        #expect(notFound.code == .fileNotFound && notFound.message.contains(missing), "\(notFound)")
        let garbage = folder.path("garbage.wav")
        try Data("not audio at all, just text".utf8).write(to: URL(fileURLWithPath: garbage))
        let notAudio = try #require(throws: AudioError.self) { try AudioPlayer(contentsOf: URL(fileURLWithPath: garbage), device: "null") }
        #expect(notAudio.message.contains(garbage), "\(notAudio)")
        let empty = try #require(throws: AudioError.self) { try AudioPlayer(data: Data(), device: "null") }
        #expect(empty.code == .invalidFileData && empty.message.contains("0 bytes"))
        let text = try #require(throws: AudioError.self) { try AudioPlayer(data: Data("hello".utf8), device: "null") }
        #expect(text.message.contains("data in memory"), "\(text)")
        let badDevice = try AudioPlayer(contentsOf: URL(fileURLWithPath: try { let p = folder.path("ok.wav"); try Self.sine(p, seconds: 0.01); return p }()), device: "sonora_no_such_pcm")
        let noDevice = try #require(throws: AudioError.self) { try badDevice.prepareToPlay() }
        #expect(noDevice.message.contains("sonora_no_such_pcm") && noDevice.message.contains("ok.wav"), "\(noDevice)")
    }
}
