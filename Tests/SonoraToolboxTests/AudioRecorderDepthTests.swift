import Foundation
import SonoraCore
import SonoraFile
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
@testable import SonoraToolbox
import SonoraUnits
import Testing

/// A scripted input whose samples are 24-bit integers with content down to the lowest bit
/// (a 16-bit path would round them away): Float32 holds every 24-bit value exactly.
final class DeepRampInput: ScriptedDevice, @unchecked Sendable {
    private(set) var next = 0

    init(channels: Int) throws {
        try super.init(configuration: AudioDeviceConfiguration(
            sampleRate: 48000, periodFrames: 256, inputChannels: channels, outputChannels: 0, realtimePriority: nil))
    }

    /// Frame n on channel c: an odd-stepped walk through the 24-bit range, so every low bit toggles.
    static func sample(_ frame: Int, _ channel: Int) -> Float {
        let value = (frame * 40_961 + channel * 1_234_567 + 3) % (1 << 24) - (1 << 23)
        return Float(value) / 8_388_608
    }

    override func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
        let input = cycle.pointee.input
        for channel in 0..<input.channelCount {
            for frame in 0..<cycle.pointee.frameCount { input.samples(channel)[frame] = Self.sample(next + frame, channel) }
        }
        next += cycle.pointee.frameCount
        return super.process(cycle)
    }
}

/// ALAC recorder settings at 24 bits: the file is lossless to the last bit of 24-bit data.
@Suite("AudioRecorder bit depth", .serialized)
struct AudioRecorderDepthTests {
    @Test("a 24-bit signal with content in its low bits, recorded as ALAC in CAF, decodes bit-exact", arguments: [1, 2])
    func alac24(channels: Int) throws {
        let folder = try TemporaryFolder()
        let url = folder.url("deep.caf")
        let device = try DeepRampInput(channels: channels)
        let io = IOUnit()
        try io.setDevice(device)
        let settings = AudioRecorderSettings(formatID: .appleLossless, sampleRate: 48000, numberOfChannels: channels, bitDepth: 24)
        let recorder = try AudioRecorder(url: url, settings: settings, inputUnit: io)
        try recorder.record()
        for _ in 0..<40 {
            try device.run(cycles: 1)
            try recorder.preparedQueue?.flush()
        }
        recorder.stop()
        let file = try AudioFile.open(url.path)
        #expect(file.dataFormat.formatID == .appleLossless)
        #expect(file.dataFormat.formatFlags.rawValue == 3, "ALAC's flags say 24-bit source data")
        let samples = try AudioQueueCodecTests.extAudioFileSamples(url.path)
        let expected = (0..<device.next).flatMap { frame in (0..<channels).map { DeepRampInput.sample(frame, $0) } }
        #expect(samples.count == expected.count)
        let differing = zip(samples, expected).filter { $0 != $1 }.count
        #expect(differing == 0, "\(differing) of \(expected.count) samples differ")
    }

    @Test("ALAC depths the encoder cannot write are refused with the reason; 16 and 24 are taken")
    func refusals() throws {
        let folder = try TemporaryFolder()
        for bits in [16, 24] {
            _ = try AudioRecorder(url: folder.url("ok\(bits).caf"), settings: AudioRecorderSettings(formatID: .appleLossless, bitDepth: bits), device: "null")
        }
        for bits in [8, 20, 32] {
            let refused = try #require(throws: AudioError.self) {
                try AudioRecorder(url: folder.url("x\(bits).caf"), settings: AudioRecorderSettings(formatID: .appleLossless, bitDepth: bits), device: "null")
            }
            #expect(refused.code == .unsupportedDataFormat && refused.message.contains("\(bits)-bit") && refused.message.contains("x\(bits).caf"), "\(refused)")
        }
    }

    @Test("a recorder recording, metering, pausing and resuming (ALAC 24-bit and WAV): no heap call in the I/O cycles", arguments: ["take.caf", "take.wav"])
    func noHeapCalls(name: String) throws {
        let folder = try TemporaryFolder()
        let device = try DeepRampInput(channels: 2)
        let io = IOUnit()
        try io.setDevice(device)
        let formatID: AudioFormatID = name.hasSuffix(".caf") ? .appleLossless : .linearPCM
        let recorder = try AudioRecorder(
            url: folder.url(name), settings: AudioRecorderSettings(formatID: formatID, sampleRate: 48000, numberOfChannels: 2, bitDepth: 24),
            inputUnit: io)
        recorder.isMeteringEnabled = true
        try recorder.record()
        func cycle() throws {
            try device.run(cycles: 1)
            try recorder.preparedQueue?.flush()
        }
        // Warm-up, not counted: every path (capture, a pause and a resume) runs once first.
        for _ in 0..<4 { try cycle() }
        recorder.pause()
        try recorder.record()
        for _ in 0..<4 { try cycle() }
        device.countsAllocations = true
        for index in 0..<60 {
            if index == 20 { recorder.pause() }
            if index == 30 { try recorder.record() }
            try cycle()
        }
        device.countsAllocations = false
        #expect(device.allocations == 0, "\(device.allocations) heap calls in the I/O cycles")
        recorder.updateMeters()
        #expect(recorder.peakPower(forChannel: 0) > -20)
        recorder.stop()
        let samples = try AudioQueueCodecTests.extAudioFileSamples(folder.path(name))
        #expect(samples.count == device.next * 2)
    }
}
