import Foundation
import SonoraCore
import SonoraFile
import SonoraHAL
import SonoraTestSupport
@testable import SonoraToolbox
import SonoraUnits
import Testing

/// AudioRecorder on a scripted input device whose samples are a known ramp (`RampInput`):
/// the file holds exactly what was captured, in each format a recorder writes.
@Suite("AudioRecorder", .serialized)
struct AudioRecorderTests {
    final class Events: AudioRecorderDelegate, @unchecked Sendable {
        let lock = NSLock()
        var finished: [Bool] = []
        var errors: [AudioError] = []
        let done = DispatchSemaphore(value: 0)
        func audioRecorderDidFinishRecording(_ recorder: AudioRecorder, successfully: Bool) {
            lock.withLock { finished.append(successfully) }
            done.signal()
        }
        func audioRecorderEncodeErrorDidOccur(_ recorder: AudioRecorder, error: AudioError) { lock.withLock { errors.append(error) } }
    }

    static func recorder(_ url: URL, _ settings: AudioRecorderSettings, channels: Int) throws -> (AudioRecorder, RampInput) {
        let device = try RampInput(channels: channels)
        let io = IOUnit()
        try io.setDevice(device)
        return (try AudioRecorder(url: url, settings: settings, inputUnit: io), device)
    }

    /// Runs cycles, letting the queue's thread write each one (as a period's wait lets it).
    static func run(_ device: RampInput, _ recorder: AudioRecorder, cycles: Int) throws {
        for _ in 0..<cycles {
            try device.run(cycles: 1)
            try recorder.preparedQueue?.flush()
        }
    }

    static func ramp(frames: Range<Int>, channels: Int) -> [Float] {
        frames.flatMap { frame in (0..<channels).map { RampInput.sample(frame, $0) } }
    }

    /// The file's frames decoded as interleaved Float32 (ExtAudioFile: priming and remainder removed).
    static func decoded(_ path: String) throws -> [Float] {
        try AudioQueueCodecTests.extAudioFileSamples(path)
    }

    @Test("16-bit WAV and CAF: the file is what was captured, hidden until stop completes it; the delegate hears of it", arguments: ["take.wav", "take.caf"])
    func records(name: String) throws {
        let folder = try TemporaryFolder()
        let url = folder.url(name)
        let (recorder, device) = try Self.recorder(url, AudioRecorderSettings(sampleRate: 48000, numberOfChannels: 2), channels: 2)
        let events = Events()
        recorder.delegate = events
        try recorder.prepareToRecord()
        try recorder.record()
        #expect(recorder.isRecording)
        try Self.run(device, recorder, cycles: 20)
        #expect(!FileManager.default.fileExists(atPath: url.path), "not under its name before it is complete")
        #expect(recorder.currentTime == Double(20 * 256) / 48000)
        recorder.stop()
        #expect(!recorder.isRecording && recorder.currentTime == 0)
        #expect(events.lock.withLock { events.finished } == [true])
        let samples = try Self.decoded(url.path)
        #expect(samples == Self.ramp(frames: 0..<device.next, channels: 2))
    }

    @Test("record(forDuration:) stops by itself after exactly that many frames and tells the delegate")
    func forDuration() throws {
        let folder = try TemporaryFolder()
        let url = folder.url("memo.caf")
        let (recorder, device) = try Self.recorder(url, AudioRecorderSettings(sampleRate: 48000, numberOfChannels: 1), channels: 1)
        let events = Events()
        recorder.delegate = events
        try recorder.record(forDuration: 0.1)
        try Self.run(device, recorder, cycles: 30)
        #expect(events.done.wait(timeout: .now() + 5) == .success)
        #expect(!recorder.isRecording)
        let samples = try Self.decoded(url.path)
        #expect(samples == Self.ramp(frames: 0..<4800, channels: 1))
    }

    @Test("pause and record again: the device stops while paused (the scripted device's ramp stands still), and the file joins both stretches")
    func pauseResume() throws {
        let folder = try TemporaryFolder()
        let url = folder.url("paused.wav")
        let (recorder, device) = try Self.recorder(url, AudioRecorderSettings(sampleRate: 48000, numberOfChannels: 1), channels: 1)
        try recorder.record()
        try Self.run(device, recorder, cycles: 4)
        recorder.pause()
        #expect(!recorder.isRecording)
        try Self.run(device, recorder, cycles: 4)
        #expect(device.next == 1024, "no capture while paused")
        try recorder.record()
        try Self.run(device, recorder, cycles: 4)
        recorder.stop()
        #expect(try Self.decoded(url.path) == Self.ramp(frames: 0..<2048, channels: 1))
    }

    @Test("ALAC in CAF is lossless; FLAC from 16-bit settings too; IMA4 within its tolerance", arguments: [
        ("take.caf", AudioFormatID.appleLossless), ("take.flac", .linearPCM), ("take.aifc", .appleIMA4),
    ])
    func compressed(name: String, formatID: AudioFormatID) throws {
        let folder = try TemporaryFolder()
        let url = folder.url(name)
        let (recorder, device) = try Self.recorder(url, AudioRecorderSettings(formatID: formatID, sampleRate: 48000, numberOfChannels: 2), channels: 2)
        try recorder.record()
        try Self.run(device, recorder, cycles: 40)
        recorder.stop()
        let samples = try Self.decoded(url.path)
        let expected = Self.ramp(frames: 0..<device.next, channels: 2)
        #expect(samples.count == expected.count, "\(samples.count / 2) frames, captured \(device.next)")
        if formatID == .appleIMA4 {
            // A ramp wraps from +1 to −1 every 65,536/(c+1) frames: ADPCM needs a few samples after each jump.
            let close = zip(samples, expected).filter { abs($0 - $1) < 0.05 }.count
            #expect(Double(close) / Double(expected.count) > 0.9, "\(close) of \(expected.count) samples within 0.05")
        } else {
            #expect(samples == expected)
        }
    }

    @Test("deleteRecording removes the finished file, and refuses while recording")
    func delete() throws {
        let folder = try TemporaryFolder()
        let url = folder.url("gone.wav")
        let (recorder, device) = try Self.recorder(url, AudioRecorderSettings(sampleRate: 48000, numberOfChannels: 1), channels: 1)
        try recorder.record()
        try Self.run(device, recorder, cycles: 2)
        let busy = try #require(throws: AudioError.self) { try recorder.deleteRecording() }
        #expect(busy.message.contains("stop first"))
        recorder.stop()
        #expect(FileManager.default.fileExists(atPath: url.path))
        try recorder.deleteRecording()
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test("settings a recorder cannot write are refused at creation, naming the file and why")
    func refusals() throws {
        let folder = try TemporaryFolder()
        let mp3 = try #require(throws: AudioError.self) { try AudioRecorder(url: folder.url("x.mp3"), settings: AudioRecorderSettings(), device: "null") }
        #expect(mp3.code == .unsupportedFileType && mp3.message.contains("x.mp3"))
        let alacInWAV = try #require(throws: AudioError.self) { try AudioRecorder(url: folder.url("x.wav"), settings: AudioRecorderSettings(formatID: .appleLossless), device: "null") }
        #expect(alacInWAV.message.contains("WAV"))
        let depth = try #require(throws: AudioError.self) { try AudioRecorder(url: folder.url("x.caf"), settings: AudioRecorderSettings(bitDepth: 12), device: "null") }
        #expect(depth.code == .unsupportedDataFormat && depth.message.contains("12 bits"))
        let aac = try #require(throws: AudioError.self) { try AudioRecorder(url: folder.url("x.caf"), settings: AudioRecorderSettings(formatID: .mpeg4AAC), device: "null") }
        #expect(aac.message.contains("linear PCM, IMA4 or ALAC"))
        let noDevice = try AudioRecorder(url: folder.url("y.caf"), settings: AudioRecorderSettings(), device: "sonora_no_such_pcm")
        let failed = try #require(throws: AudioError.self) { try noDevice.prepareToRecord() }
        #expect(failed.message.contains("sonora_no_such_pcm"))
        #expect(!FileManager.default.fileExists(atPath: folder.path("y.caf")))
    }
}
