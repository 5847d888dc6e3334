import Foundation
import SonoraCore
import SonoraFile
import SonoraHAL
import SonoraTestSupport
@testable import SonoraToolbox
import Testing

/// A kiosk's dozen sounds: twelve players at once on one device, each a queue into the shared mixer.
@Suite("A dozen AudioPlayers", .serialized)
struct AudioPlayerManyTests {
    @Test("twelve players of different files on one device: the output is the sum of their files")
    func twelvePlayers() throws {
        let folder = try TemporaryFolder()
        let tap = try PlayedTap(channels: 2, capacity: 48000)
        let output = try AudioQueueOutput(device: tap)
        var players: [AudioPlayer] = []
        var expected = [Float](repeating: 0, count: 9600)
        for index in 0..<12 {
            let path = folder.path("sound\(index).wav")
            // Small integer-valued amplitudes keep the sum exact in Float.
            try runTool("/usr/bin/sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", path, "synth", "0.2", "square", "\(200 + 50 * index)", "gain", "-30"])
            let samples = try decodedSamples(of: path)
            for (frame, sample) in samples.enumerated() { expected[frame] += sample }
            let player = try AudioPlayer(contentsOf: URL(fileURLWithPath: path), output: output)
            try player.prepareToPlay()
            players.append(player)
        }
        for player in players { try player.play() }
        #expect(output.queueCount == 12)
        try AudioPlayerTests.run(tap, players, cycles: 45)
        #expect(players.allSatisfy { !$0.isPlaying })
        let played = tap.played[0]
        let worst = zip(played.prefix(9600), expected).map { abs($0 - $1) }.max() ?? 1
        #expect(worst < 1e-6, "largest difference from the sum \(worst)")
        #expect(played.dropFirst(9600).allSatisfy { $0 == 0 })
    }
}

/// A damaged file: the player says so through its delegate and still plays the rest.
@Suite("AudioPlayer decode errors", .serialized)
struct AudioPlayerDecodeErrorTests {
    final class Events: AudioPlayerDelegate, @unchecked Sendable {
        let lock = NSLock()
        var errors: [AudioError] = []
        var finished: [Bool] = []
        let done = DispatchSemaphore(value: 0)
        func audioPlayerDecodeErrorDidOccur(_ player: AudioPlayer, error: AudioError) { lock.withLock { errors.append(error) } }
        func audioPlayerDidFinishPlaying(_ player: AudioPlayer, successfully: Bool) {
            lock.withLock { finished.append(successfully) }
            done.signal()
        }
    }

    @Test("an ADTS AAC file with one packet's payload overwritten: a decode error to the delegate, then the end, unsuccessfully")
    func damagedPacket() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("damaged.aac")
        try runTool("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=0.5", "-c:a", "aac", "-f", "adts", path])
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        // Walk the ADTS frames by their lengths to the tenth, and fill its payload with 0xFF.
        var offset = 0
        for _ in 0..<10 { offset += (Int(bytes[offset + 3] & 3) << 11) | (Int(bytes[offset + 4]) << 3) | (Int(bytes[offset + 5]) >> 5) }
        let length = (Int(bytes[offset + 3] & 3) << 11) | (Int(bytes[offset + 4]) << 3) | (Int(bytes[offset + 5]) >> 5)
        #expect(bytes[offset] == 0xFF && bytes[offset + 1] & 0xF0 == 0xF0, "an ADTS sync word at \(offset)")
        for index in (offset + 7)..<(offset + length) { bytes[index] = 0xFF }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let tap = try PlayedTap(channels: 2, capacity: 96000)
        let player = try AudioPlayer(contentsOf: URL(fileURLWithPath: path), output: try AudioQueueOutput(device: tap))
        let events = Events()
        player.delegate = events
        try player.play()
        try AudioPlayerTests.run(tap, [player], cycles: 150)
        #expect(events.done.wait(timeout: .now() + 5) == .success)
        #expect(events.lock.withLock { events.errors.count } >= 1, "a decode error reported")
        #expect(events.lock.withLock { events.finished } == [false])
        #expect(tap.played[0].contains { $0 != 0 }, "the rest of the file played")
    }
}
