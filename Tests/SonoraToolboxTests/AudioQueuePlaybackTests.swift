import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import SonoraToolbox
import Testing

/// The reference document's three-buffer playback listing, rendered offline: the queue's
/// output is the file's decoded samples, then silence once IsRunning has gone false.
@Suite("AudioQueue playback")
struct AudioQueuePlaybackTests {
    @Test("a sox WAV through three re-enqueued buffers plays bit-exact, every frame once")
    func wavThreeBuffers() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("tone.wav")
        try runTool("/usr/bin/sox", ["-n", "-r", "44100", "-c", "2", "-b", "16", path, "synth", "0.5", "sine", "440", "sine", "1000", "vol", "0.5"])
        let expected = try decodedSamples(of: path)
        #expect(expected.count == 44100 * 2 / 2)
        let player = try FilePlayer(path: path, packetsPerBuffer: 1000)
        let output = try player.play(slice: 777)
        #expect(player.hasStopped)
        let played = Array(output.prefix(expected.count))
        let differing = zip(played, expected).filter { $0 != $1 }.count
        let firstDifference = zip(played, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(played.count == expected.count && differing == 0, "\(played.count) of \(expected.count) samples, \(differing) differ, first at \(String(describing: firstDifference))")
        #expect(output.dropFirst(expected.count).allSatisfy { $0 == 0 })
        #expect(player.queue.underruns == 0)
    }

    @Test("an IMA4 CAF written by Sonora plays as the converter decodes it")
    func ima4ThreeBuffers() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("tone.caf")
        let tone = TestSignal.sine(frequency: 300, sampleRate: 8000, count: 64 * 100 + 17, amplitude: 0.6)
        try writeIMA4CAF(path, tone)
        let expected = try decodedSamples(of: path)
        #expect(expected.count >= tone.count)
        let player = try FilePlayer(path: path, packetsPerBuffer: 7)
        let output = try player.play(slice: 500)
        #expect(player.hasStopped)
        let played = Array(output.prefix(expected.count))
        let differing = zip(played, expected).filter { $0 != $1 }.count
        let firstDifference = zip(played, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(played.count == expected.count && differing == 0, "\(played.count) of \(expected.count) samples, \(differing) differ, first at \(String(describing: firstDifference))")
        #expect(output.dropFirst(expected.count).allSatisfy { $0 == 0 })
    }

    @Test("an AAC M4A made by ffmpeg plays as the converter decodes it (magic cookie set)")
    func aacThreeBuffers() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("tone.m4a")
        try runTool("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=0.4", "-c:a", "aac", "-b:a", "96k", path])
        let expected = try decodedSamples(of: path)
        #expect(expected.count > 10000)
        let player = try FilePlayer(path: path, packetsPerBuffer: 5)
        #expect(player.queue.magicCookie != nil)
        let output = try player.play(slice: 1024)
        #expect(player.hasStopped)
        let played = Array(output.prefix(expected.count))
        let differing = zip(played, expected).filter { $0 != $1 }.count
        let firstDifference = zip(played, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(played.count == expected.count && differing == 0, "\(played.count) of \(expected.count) samples, \(differing) differ, first at \(String(describing: firstDifference))")
        #expect(output.dropFirst(expected.count).allSatisfy { $0 == 0 })
    }

    @Test("the same enqueued bytes render the same bytes twice")
    func deterministic() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("noise.wav")
        try runTool("/usr/bin/sox", ["-n", "-r", "48000", "-c", "1", "-b", "24", path, "synth", "0.3", "pinknoise", "vol", "0.3"])
        func run() throws -> [UInt8] {
            let player = try FilePlayer(path: path, packetsPerBuffer: 333)
            return bytes(try player.play(slice: 256))
        }
        let first = try run()
        let second = try run()
        #expect(!first.isEmpty)
        #expect(first == second)
    }
}
