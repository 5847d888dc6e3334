#if canImport(Glibc)
import Glibc
#endif
import Foundation
import SonoraCore
import SonoraHAL
import SonoraTestSupport
import SonoraToolbox
import SonoraUnits
import Testing

/// A 44.1 kHz queue and a 48 kHz queue on one 48 kHz output on Sonora's `sonoraloop` ALSA
/// plugin, captured back: the 44.1 kHz queue's thread converts it to the mix rate.
/// Realtime: run this suite alone (`--no-parallel`, REALTIME_SUITES).
@Suite("Queues of two rates on the sonoraloop ALSA plugin", .serialized, .enabled(if: ALSAConfiguration.loopPluginPath != nil))
struct AudioQueueMixRateALSATests {
    func waitUntil(seconds: Double = 20, _ condition: () -> Bool) {
        let deadline = HostTime.now.seconds + seconds
        while !condition() && HostTime.now.seconds < deadline { usleep(2000) }
    }

    /// One run; returns the capture and the device's xruns.
    func run() throws -> (captured: [[Float]], xruns: Int) {
        let device = CapturingDevice(try AudioQueueALSALoopTests.openLoop(), capacity: 48000 * 2)
        let output = try AudioQueueOutput(device: device)
        let slow = try AudioQueue(format: .linearPCM(sampleRate: 44100, channels: 2, sample: .float32)) { _, _ in }
        let native = try AudioQueue(format: .linearPCM(sampleRate: 48000, channels: 2, sample: .float32)) { _, _ in }
        defer { [slow, native].forEach { try? $0.dispose(immediate: true) } }
        for queue in [slow, native] { try queue.setOutput(output) }
        let sine = TestSignal.sine(frequency: 1000, sampleRate: 44100, count: 22050, amplitude: 0.5)
        try enqueue(sine.flatMap { [$0, 0] }, on: slow)
        try enqueue((0..<24000).flatMap { _ in [Float(0), 0.5] }, on: native)
        // One host time for both (the device starts with the first start): the same first frame.
        for queue in [slow, native] { try queue.prime() }
        let target = HostTime.now + 200_000_000
        for queue in [slow, native] {
            try queue.start(atHostTime: target)
            try queue.stop(immediate: false)
        }
        waitUntil { device.frames.load(ordering: .acquiring) >= 48000 * 2 || (!slow.isRunning && !native.isRunning && device.frames.load(ordering: .acquiring) >= 48000) }
        for queue in [slow, native] {
            if queue.isRunning { try queue.stop(immediate: true) }
            try queue.setOutput(nil)
        }
        return (device.captured, device.statistics.xruns)
    }

    @Test("the 44.1 kHz queue's 1 kHz sine is captured at 1 kHz, 24,000 frames long, beside the 48 kHz queue's 24,000 frames bit-exact")
    func twoRatesCaptured() throws {
        // An xrun re-aligns the loop mid-stream (now and then on this shared VM): take the first run without one.
        var result = try run()
        var attempts = 1
        while result.xruns > 0 && attempts < 4 {
            result = try run()
            attempts += 1
        }
        guard result.xruns == 0 else {
            Issue.record("every run had an xrun (\(result.xruns) in the last); not measured")
            return
        }
        let (left, right) = (result.captured[0], result.captured[1])
        let rightStart = try #require(right.firstIndex { $0 != 0 })
        #expect(Array(right[rightStart..<(rightStart + 24000)]).allSatisfy { $0 == 0.5 })
        #expect(right[(rightStart + 24000)...].allSatisfy { $0 == 0 })
        // Both started for one host time: the same first frame (the resampler's
        // first output, sin 0 filtered, may be exactly 0: the sine's first nonzero is at most 2 later).
        let leftStart = try #require(left.firstIndex { $0 != 0 })
        #expect(leftStart >= rightStart && leftStart <= rightStart + 2, "left began at \(leftStart), right at \(rightStart)")
        #expect(left[(rightStart + 24000)...].allSatisfy { $0 == 0 })
        #expect(left[(rightStart + 23990)..<(rightStart + 24000)].contains { $0 != 0 })
        let frequency = SignalMeasurement.frequency(of: Array(left[(rightStart + 500)..<(rightStart + 23500)]), sampleRate: 48000)
        #expect(abs(frequency - 1000) < 0.2, "\(frequency) Hz")
    }
}
