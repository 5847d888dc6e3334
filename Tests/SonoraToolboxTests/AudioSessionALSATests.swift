import Foundation
import SonoraCore
import SonoraHAL
import SonoraTestSupport
@testable import SonoraToolbox
import Testing

/// The local session on a real ALSA PCM (Sonora's `sonoraloop` plugin): the PCM vanishes
/// (ENODEV injected at the ALSA chokepoint), the driver re-opens it after two failed
/// attempts. Realtime: run this suite alone (`--no-parallel`, REALTIME_SUITES).
@Suite("Audio session on the sonoraloop ALSA plugin", .serialized, .enabled(if: ALSAConfiguration.loopPluginPath != nil))
struct AudioSessionALSATests {
    func waitUntil(seconds: Double = 20, _ condition: () -> Bool) -> Bool {
        let deadline = HostTime.now.seconds + seconds
        while !condition() && HostTime.now.seconds < deadline { usleep(2000) }
        return condition()
    }

    @Test("a player on a PCM that vanishes and comes back: interruption and route changes in order, the player paused and playing on, its delegate told")
    func playerRidesOutAVanishedPCM() throws {
        let session = AudioSession(backend: LocalAudioSessionBackend())
        let events = SessionEvents()
        session.addListener { events.add(SessionEvents.describe($0)) }
        try session.setActive(true)
        let folder = try TemporaryFolder()
        let path = folder.path("tone.wav")
        try AudioPlayerTests.sine(path, seconds: 4)
        let faults = PCMFaults()
        defer { faults.clear() }
        let device = try AudioQueueALSALoopTests.openLoop(faults: faults)
        let output = try AudioQueueOutput(device: device)
        let player = try inSession(session) { try AudioPlayer(contentsOf: URL(fileURLWithPath: path), output: output) }
        let delegate = AudioPlayerTests.Events()
        player.delegate = delegate
        // ENODEV after ~30 cycles; the first two re-opens fail, the third works.
        faults.inject(.availUpdate, errno: ENODEV, afterCalls: 120)
        faults.inject(.open, errno: ENODEV, afterCalls: 0, times: 2)
        try player.play()
        #expect(waitUntil { events.all.count >= 4 }, "\(events.all) stop: \(String(describing: player.preparedQueue?.stopReason)) interruptions: \(device.statistics.interruptions) faults: \(faults.injectedFailures(.availUpdate)) \(faults.injectedFailures(.open))")
        let name = output.deviceName
        #expect(events.all == [
            "began", "route oldDeviceUnavailable [\"\(name)\"] → []",
            "route newDeviceAvailable [] → [\"\(name)\"]", "ended true",
        ])
        #expect(events.allOffRealtime, "listeners never on the SCHED_FIFO I/O thread")
        #expect(delegate.lock.withLock { delegate.interruptions } == ["began", "ended true"])
        #expect(delegate.lock.withLock { delegate.finished }.isEmpty, "paused, not finished")
        #expect(player.isPlaying && device.statistics.interruptions >= 1)
        let resumedAt = player.currentTime
        #expect(waitUntil { player.currentTime > resumedAt + 0.1 }, "plays on after the PCM is back")
        player.stop()
    }
}
