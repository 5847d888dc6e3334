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
