import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import SonoraCore
import SonoraHAL
import SonoraUnits
import Testing
@testable import SonoraVoice

/// The voice I/O unit heading a graph on a real (timer-paced) I/O thread: AudioGraph
/// starts and stops it like RemoteIO, and on the in-process loopback — whose round trip
/// the driver declares exactly — the echo of what it plays is cancelled.
@Suite("Voice I/O unit in a running graph", .serialized)
struct VoiceIOGraphTests {
    @Test("AudioGraph drives the voice I/O unit on the paced loopback; the played noise is cancelled")
    func graphOnPacedLoopback() throws {
        let device = try TimerDevice(
            configuration: AudioDeviceConfiguration(sampleRate: 16000, periodFrames: 160, inputChannels: 1, outputChannels: 1, realtimePriority: nil),
            mode: .inProcess(latencyFrames: 480, paced: true))
        let graph = AudioGraph()
        let unit = VoiceProcessingIOUnit()
        try unit.setStreamFormat(.canonical(sampleRate: 16000, channels: 1), scope: .input, element: 0)
        try unit.setStreamFormat(.canonical(sampleRate: 16000, channels: 1), scope: .output, element: 1)
        try unit.setDevice(device)
        let node = graph.addNode(unit)
        let far = VoiceTestSignals.talker(seconds: 10, rate: 16000, seed: 51, level: -22)
        try graph.setRenderCallback(SignalSource(far), node: node, input: 0)
        let recorder = CaptureRecorder(unit: unit)
        try unit.setInputCallback(recorder)
        try graph.initialize()
        try graph.start()
        #expect(unit.isRunning)
        let deadline = HostTime.now.seconds + 10
        while recorder.recorded.load(ordering: .acquiring) < 16000 * 2 && HostTime.now.seconds < deadline { usleep(10000) }
        graph.stop()
        #expect(!unit.isRunning)
        let heard = recorder.samples
        #expect(heard.count >= 16000 * 2)
        // The loop returns what was played 480 frames later; after a second the canceller
        // has taken most of it out (the loop is a pure delay: nothing for the suppressor to guess).
        let played = far[(16000 - 480)..<(heard.count - 480)]
        let residual = heard[16000..<heard.count]
        let erle = VoiceTestSignals.decibels(VoiceTestSignals.energy(played) / max(VoiceTestSignals.energy(residual), 1e-30))
        print("voice: VPIO in a running graph, ERLE \(erle) dB after 1 s")
        #expect(erle > 10)
        #expect(device.statistics.renderErrors == 0)
        graph.uninitialize()
    }
}
