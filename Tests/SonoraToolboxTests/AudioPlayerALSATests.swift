#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SonoraCore
import SonoraFile
import SonoraHAL
import SonoraTestSupport
import SonoraToolbox
import SonoraUnits
import Testing

/// AudioPlayer on a real ALSA PCM (Sonora's `sonoraloop` plugin), captured back on the same
/// duplex device: what the player plays is the file, every frame, at the device's latency.
/// Realtime: run alone (`make test` does, with the other REALTIME_SUITES).
@Suite("AudioPlayer on the sonoraloop ALSA plugin", .serialized, .enabled(if: ALSAConfiguration.loopPluginPath != nil))
struct AudioPlayerALSATests {
    typealias Loop = AudioQueueLoopbackALSATests

    final class Finished: AudioPlayerDelegate, @unchecked Sendable {
        let done = DispatchSemaphore(value: 0)
        func audioPlayerDidFinishPlaying(_ player: AudioPlayer, successfully: Bool) { done.signal() }
    }

    @Test("a player on one duplex device: the capture is the file from exactly one buffer in, every frame, to its end")
    func playerAtKnownLatency() throws {
        try withTemporaryFolder { folder in
            let path = folder.path("noise.wav")
            try runTool("/usr/bin/sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", path, "synth", "0.4", "whitenoise", "gain", "-6"])
            let expected = try decodedSamples(of: path)
            var outcome: (captured: [Float], xruns: Int)?
            for _ in 0..<4 where outcome?.xruns ?? 1 > 0 {
                let (device, io, capture) = try Loop.duplexCapture("player", channels: 1, seconds: 2)
                let output = try AudioQueueOutput(unit: io, sampleRate: 48000, channels: 1)
                let player = try AudioPlayer(contentsOf: URL(fileURLWithPath: path), output: output)
                let finished = Finished()
                player.delegate = finished
                try player.play()
                #expect(finished.done.wait(timeout: .now() + 30) == .success)
                // The device plays on (the player's queue stays attached): let the tail reach the capture.
                usleep(100_000)
                player.stop()
                outcome = (capture.interleaved, device.statistics.xruns)
            }
            let (captured, xruns) = try #require(outcome)
            guard xruns == 0 else {
                Issue.record("every run had an xrun (\(xruns) in the last); the capture was not compared")
                return
            }
            let latency = Loop.period * Loop.periods
            let leading = try #require(expected.firstIndex { $0 != 0 })
            let firstSound = try #require(captured.firstIndex { $0 != 0 })
            #expect(firstSound == latency + leading, "first sound at \(firstSound), the device's latency is \(latency)")
            let heard = Array(captured.dropFirst(latency).prefix(expected.count))
            #expect(heard.count == expected.count, "captured \(heard.count) of \(expected.count) frames")
            let firstDifference = zip(heard, expected).enumerated().first { $0.element.0 != $0.element.1 }
            #expect(firstDifference == nil, "frame \(firstDifference?.offset ?? -1) differs: \(String(describing: firstDifference?.element))")
            #expect(captured.dropFirst(latency + expected.count).allSatisfy { $0 == 0 }, "silence after the file")
        }
    }
}
