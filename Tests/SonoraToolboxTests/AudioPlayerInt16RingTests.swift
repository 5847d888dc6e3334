import Foundation
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
@testable import SonoraToolbox
import Testing

/// A 16-bit file's frames stay 16-bit in the player's ring (AudioQueue+Int16Ring) and are
/// converted to float as the render side reads them: what plays must be what the float ring
/// plays, bit for bit — across the ring's wrap, loop seams, a pause, a seek and a volume ramp,
/// added straight into the mix or (metering) rendered into the source's scratch first.
@Suite("AudioPlayer: 16-bit frames in the ring", .serialized)
struct AudioPlayerInt16RingTests {
    /// What the device played, whether the ring held 16-bit frames, and heap calls in the cycles.
    func play(_ path: String, int16: Bool, metering: Bool) throws -> (played: [[Float]], heldInt16: Bool, allocations: Int) {
        let tap = try PlayedTap(channels: 2, capacity: 65536)
        let player = try AudioPlayer(contentsOf: URL(fileURLWithPath: path), output: try AudioQueueOutput(device: tap))
        player.prefersInt16Ring = int16
        // 5 × 9,600 frames, four loop seams; after the seek the ring (65,536 frames, filled to three
        // quarters at the start) is written across its wrap.
        player.numberOfLoops = 4
        player.volume = 0.7
        player.pan = -0.4
        player.isMeteringEnabled = metering
        try player.prepareToPlay()
        try player.play()
        try AudioPlayerTests.run(tap, [player], cycles: 4)
        tap.countsAllocations = true
        try AudioPlayerTests.run(tap, [player], cycles: 36)
        let held = player.preparedQueue?.renderer.holdsInt16.pointee.load(ordering: .relaxed) ?? false
        player.pause()
        try AudioPlayerTests.run(tap, [player], cycles: 3)
        try player.seek(to: 0.05)
        try player.play()
        try AudioPlayerTests.run(tap, [player], cycles: 20)
        player.volume = 0.25
        try AudioPlayerTests.run(tap, [player], cycles: 181)
        player.stop()
        return (tap.played, held, tap.allocations)
    }

    @Test("a looping, paused, sought 16-bit player plays the same samples through the 16-bit ring as through the float ring, with no heap call")
    func sameSamplesEitherRing() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("noise.wav")
        // Full-scale noise: every sample value's conversion is exercised, the extremes included.
        try runTool("/usr/bin/sox", ["-R", "-n", "-r", "48000", "-c", "2", "-b", "16", path, "synth", "0.2", "whitenoise"])
        _ = try play(path, int16: true, metering: false)  // warm-up (metadata, lazy globals)
        for metering in [false, true] {
            let viaInt16 = try play(path, int16: true, metering: metering)
            let viaFloat = try play(path, int16: false, metering: metering)
            #expect(viaInt16.heldInt16 && !viaFloat.heldInt16)
            for channel in 0..<2 {
                let played = viaInt16.played[channel]
                // Sound past the ring's 32,768 frames (the wrap), silence while paused.
                #expect(played.filter { $0 != 0 }.count > 40000, "channel \(channel)")
                #expect(played[10240..<11008].allSatisfy { $0 == 0 }, "channel \(channel): paused")
                #expect(played == viaFloat.played[channel], "channel \(channel), metering \(metering)")
            }
            #expect(viaInt16.played[0] != viaInt16.played[1])
            if !metering { #expect(viaInt16.allocations == 0, "\(viaInt16.allocations) heap calls in the I/O cycles") }
        }
    }
}
