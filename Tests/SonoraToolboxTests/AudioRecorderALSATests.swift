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
import Testing

/// The recorder and system sounds on a real ALSA PCM (Sonora's `sonoraloop` plugin): what is
/// played into the loop is what the recorder's file holds; a system sound leaves the device
/// one buffer after `play()`. Realtime: run alone (`make test` does, with the REALTIME_SUITES).
@Suite("AudioRecorder and system sounds on the sonoraloop ALSA plugin", .serialized, .enabled(if: ALSAConfiguration.loopPluginPath != nil))
struct AudioRecorderALSATests {
    typealias Loop = AudioQueueLoopbackALSATests

    @Test("a recorder's ALAC CAF holds, bit for bit, the signal played into the loop")
    func recorderFileIsWhatWasPlayed() throws {
        try withTemporaryFolder { folder in
            let signal = sixteenBitSignal(frames: 24000, channels: 1)
            var outcome: (recorded: [Float], xruns: Int)?
            for attempt in 0..<3 where outcome?.xruns ?? 1 > 0 {
                let loop = Loop.newLoop("recorder")
                let url = folder.url("take\(attempt).caf")
                let captureDevice = try ALSADevice(capture: loop, playback: nil, configuration: Loop.configuration(input: 1, output: 0))
                let captureIO = IOUnit()
                try captureIO.setDevice(captureDevice)
                let recorder = try AudioRecorder(url: url, settings: AudioRecorderSettings(formatID: .appleLossless, sampleRate: 48000, numberOfChannels: 1), inputUnit: captureIO)
                let playback = try ALSADevice(capture: nil, playback: loop, configuration: Loop.configuration(input: 0, output: 1))
                let source = LoopbackSignalSource(signal)
                let io = IOUnit()
                try io.setDevice(playback)
                try io.setStreamFormat(.canonical(sampleRate: 48000, channels: 1), scope: .input, element: IOUnit.outputElement)
                try io.setRenderCallback(source, input: IOUnit.outputElement)
                try io.initialize()
                try recorder.record(forDuration: 1)
                try io.start()
                let deadline = HostTime.now.seconds + 30
                while recorder.isRecording && HostTime.now.seconds < deadline { usleep(20000) }
                io.stop()
                recorder.stop()
                outcome = (try AudioRecorderTests.decoded(url.path), captureDevice.statistics.xruns + playback.statistics.xruns)
            }
            let (recorded, xruns) = try #require(outcome)
            guard xruns == 0 else {
                Issue.record("every run had an xrun (\(xruns) in the last); the recording was not compared")
                return
            }
            #expect(recorded.count == 48000, "record(forDuration: 1) holds \(recorded.count) frames")
            let lead = try #require(signal.firstIndex { $0 != 0 })
            let start = try #require(recorded.firstIndex { $0 != 0 }) - lead
            #expect(start >= 0 && recorded.count - start >= signal.count)
            #expect(Array(recorded[start...].prefix(signal.count)) == signal)
        }
    }

    @Test("a system sound played on a running device: its first frame leaves one device buffer after play() at most")
    func systemSoundLatency() throws {
        try withTemporaryFolder { folder in
            let path = folder.path("click.wav")
            try runTool("/usr/bin/sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", path, "synth", "0.05", "square", "1000", "gain", "-6"])
            let sound = try SystemSound(contentsOf: URL(fileURLWithPath: path))
            let (device, io, capture) = try Loop.duplexCapture("sound", channels: 1, seconds: 4)
            let output = try AudioQueueOutput(unit: io, sampleRate: 48000, channels: 1)
            let player = SystemSoundPlayer(output: output)
            let done = DispatchSemaphore(value: 0)
            // The first play starts the device; the measured one finds it running.
            try player.play(sound) { done.signal() }
            #expect(done.wait(timeout: .now() + 10) == .success)
            usleep(200_000)
            let before = capture.frames
            try player.play(sound) { done.signal() }
            let after = capture.frames
            #expect(done.wait(timeout: .now() + 10) == .success)
            usleep(100_000)
            io.stop()
            let captured = capture.interleaved
            guard device.statistics.xruns == 0 else {
                print("skipped the latency check: \(device.statistics.xruns) xruns on this VM")
                return
            }
            // The second sound's first frame in the capture, after the first sound's silence.
            let second = try #require(captured.indices.dropFirst(before).first { captured[$0] != 0 })
            let buffer = Loop.period * Loop.periods
            print("system sound: first frame captured \(second - after)…\(second - before) frames after play() (device buffer \(buffer))")
            // play() came between captured frames `before` and `after`; what plays leaves within
            // the next period and is captured one device buffer later.
            #expect(second - after <= buffer + Loop.period, "first frame \(second - after) frames after play() returned (buffer \(buffer), period \(Loop.period))")
            #expect(second - before >= buffer - Loop.period)
        }
    }
}
