import Foundation
import SonoraCore
import SonoraHAL
import SonoraTestSupport
@testable import SonoraToolbox
import Testing

/// The player and system sounds add nothing to the I/O thread's work but their queues'
/// render sides: no heap call in the device's cycles while they play, seek, change volume
/// and overlap (the allocation counter around each scripted cycle).
@Suite("No allocation on the I/O thread for players and system sounds", .serialized)
struct ServicesAllocationTests {
    @Test("a player playing, seeking, fading and a system sound overlapping it: no heap call in the cycles")
    func noHeapCalls() throws {
        let folder = try TemporaryFolder()
        let song = folder.path("song.wav"), beep = folder.path("beep.wav")
        try runTool("/usr/bin/sox", ["-n", "-r", "48000", "-c", "2", "-b", "16", song, "synth", "1", "sine", "330", "gain", "-12"])
        try runTool("/usr/bin/sox", ["-n", "-r", "48000", "-c", "2", "-b", "16", beep, "synth", "0.05", "sine", "1500", "gain", "-12"])
        let tap = try PlayedTap(channels: 2, capacity: 96000)
        let output = try AudioQueueOutput(device: tap)
        let player = try AudioPlayer(contentsOf: URL(fileURLWithPath: song), output: output)
        let sounds = SystemSoundPlayer(output: output)
        let sound = try SystemSound(contentsOf: URL(fileURLWithPath: beep))
        try player.play()
        // Warm-up, not counted: every path (play, a seek, a fade, a voice) runs once first.
        try sounds.play(sound)
        try player.seek(to: 0.2)
        try player.setVolume(0.5, fadeDuration: 0.01)
        try AudioPlayerTests.run(tap, [player], cycles: 20)
        tap.countsAllocations = true
        for cycle in 0..<60 {
            if cycle == 10 { try sounds.play(sound) }
            if cycle == 20 { try player.seek(to: 0.5) }
            if cycle == 30 { try player.setVolume(1, fadeDuration: 0.02) }
            sounds.primeVoices()
            try AudioPlayerTests.run(tap, [player], cycles: 1)
        }
        tap.countsAllocations = false
        #expect(tap.allocations == 0, "\(tap.allocations) heap calls in the I/O cycles")
        #expect(player.isPlaying && player.underruns == 0)
        player.stop()
    }
}
