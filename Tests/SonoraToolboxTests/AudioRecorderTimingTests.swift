import Foundation
import SonoraCore
import SonoraFile
import SonoraHAL
import SonoraTestSupport
@testable import SonoraToolbox
import SonoraUnits
import Testing

/// AudioRecorder's start at a device time and its meters, on the scripted ramp input.
@Suite("AudioRecorder timing and meters", .serialized)
struct AudioRecorderTimingTests {
    @Test("record(atTime:) keeps the input from exactly that device sample on")
    func recordAtTime() throws {
        let folder = try TemporaryFolder()
        let url = folder.url("late.wav")
        let (recorder, device) = try AudioRecorderTests.recorder(url, AudioRecorderSettings(sampleRate: 48000, numberOfChannels: 1), channels: 1)
        try recorder.record(atTime: 1000.0 / 48000)
        try AudioRecorderTests.run(device, recorder, cycles: 12)
        recorder.stop()
        #expect(try AudioRecorderTests.decoded(url.path) == AudioRecorderTests.ramp(frames: 1000..<3072, channels: 1))
    }

    @Test("metering: peak and average power in dBFS equal the levels computed from the last slice's samples")
    func meters() throws {
        let folder = try TemporaryFolder()
        let url = folder.url("metered.caf")
        let (recorder, device) = try AudioRecorderTests.recorder(url, AudioRecorderSettings(sampleRate: 48000, numberOfChannels: 2), channels: 2)
        recorder.isMeteringEnabled = true
        try recorder.record()
        try AudioRecorderTests.run(device, recorder, cycles: 300)  // 76,800 frames: channel 0's ramp wraps once (65,536)
        recorder.updateMeters()
        // The last slice's levels, computed from the samples the ramp gave it.
        for channel in 0..<2 {
            let slice = (device.next - 256)..<device.next
            let samples = slice.map { RampInput.sample($0, channel) }
            let peak = 20 * log10(samples.map { abs($0) }.max()!)
            let average = 20 * log10((samples.reduce(0) { $0 + Double($1) * Double($1) } / Double(samples.count)).squareRoot())
            #expect(abs(Double(recorder.peakPower(forChannel: channel)) - Double(peak)) < 0.01, "channel \(channel) peak \(recorder.peakPower(forChannel: channel)) vs \(peak)")
            #expect(abs(Double(recorder.averagePower(forChannel: channel)) - average) < 0.01, "channel \(channel) average \(recorder.averagePower(forChannel: channel)) vs \(average)")
        }
        #expect(recorder.peakPower(forChannel: 5) == -160)
        recorder.stop()
    }
}
