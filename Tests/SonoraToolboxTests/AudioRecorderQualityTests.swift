import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
@testable import SonoraToolbox
import Testing

/// AVEncoderAudioQualityKey: the FLAC encoder's effort follows the recorder's quality, and
/// the file stays lossless at every quality.
@Suite("AudioRecorder encoder quality", .serialized)
struct AudioRecorderQualityTests {
    func record(_ quality: AudioQuality?, in folder: TemporaryFolder) throws -> (path: String, frames: Int) {
        let url = folder.url("take-\(quality.map { "\($0)" } ?? "default").flac")
        let settings = AudioRecorderSettings(sampleRate: 48000, numberOfChannels: 2, encoderQuality: quality)
        let (recorder, device) = try AudioRecorderTests.recorder(url, settings, channels: 2)
        try recorder.record()
        try AudioRecorderTests.run(device, recorder, cycles: 80)
        recorder.stop()
        let samples = try AudioRecorderTests.decoded(url.path)
        #expect(samples == AudioRecorderTests.ramp(frames: 0..<device.next, channels: 2), "quality \(String(describing: quality)) is not lossless")
        return (url.path, device.next)
    }

    func size(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
    }

    @Test("FLAC at max quality is smaller than at min (more encoder effort), both bit-exact")
    func flacEffort() throws {
        let folder = try TemporaryFolder()
        let fastest = try record(.min, in: folder)
        let smallest = try record(.max, in: folder)
        #expect(fastest.frames == smallest.frames)
        let small = try size(smallest.path), fast = try size(fastest.path)
        #expect(small < fast, "max \(small) bytes, min \(fast)")
    }

    @Test("the quality maps onto libsndfile's 0 … 1 compression level; codecs without one ignore it")
    func mapping() throws {
        #expect(AudioQuality.min.compressionLevel == 0)
        #expect(AudioQuality.max.compressionLevel == 1)
        #expect(AudioQuality.allCases.map(\.compressionLevel) == AudioQuality.allCases.map(\.compressionLevel).sorted())
        let folder = try TemporaryFolder()
        let url = folder.url("pcm.wav")
        let (recorder, device) = try AudioRecorderTests.recorder(url, AudioRecorderSettings(sampleRate: 48000, encoderQuality: .max), channels: 2)
        try recorder.record()
        try AudioRecorderTests.run(device, recorder, cycles: 4)
        recorder.stop()
        #expect(try AudioRecorderTests.decoded(url.path) == AudioRecorderTests.ramp(frames: 0..<device.next, channels: 2))
    }

    @Test("AudioFile refuses a compression level out of 0 … 1, and on a format without one")
    func fileRefusals() throws {
        let folder = try TemporaryFolder()
        let flac = try AudioFile.create(folder.path("a.flac"), type: .flac, format: .linearPCM(sampleRate: 48000, channels: 1, sample: .int16))
        defer { flac.abandon() }
        let outside = try #require(throws: AudioError.self) { try flac.setCompressionLevel(1.5) }
        #expect(outside.message.contains("outside 0 … 1"))
        try flac.setCompressionLevel(0.5)
        let ima4 = try AudioFile.create(folder.path("b.caf"), type: .caf, format: .appleIMA4(sampleRate: 48000, channels: 1))
        defer { ima4.abandon() }
        let none = try #require(throws: AudioError.self) { try ima4.setCompressionLevel(0.5) }
        #expect(none.message.contains("no compression level"), "\(none.message)")
    }
}
