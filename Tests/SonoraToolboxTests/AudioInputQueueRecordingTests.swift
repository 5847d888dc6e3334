import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import SonoraToolbox
import Testing

/// Recording through an input queue, offline: the callback's buffers hold exactly what was
/// captured, every frame once, with contiguous start times; IMA4 and ALAC packets make files
/// that decode back to the capture.
@Suite("Input queue recording")
struct AudioInputQueueRecordingTests {
    @Test func pcmIsTheCaptureBitForBitWithContiguousStartTimes() throws {
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .int16)
        let recording = InputRecording()
        // 1,002 bytes: 250 whole frames per buffer (the odd 2 bytes unused).
        let queue = try inputQueue(format, recording: recording, byteCapacity: 1002)
        defer { try? queue.dispose() }
        let captured = sixteenBitSignal(frames: 10_007, channels: 2)
        try queue.start()
        try queue.offlineCapture(frames: captured, sliceFrames: 333)
        try queue.stop(immediate: false)

        #expect(recording.allBytes == int16Bytes(captured))
        let deliveries = recording.deliveries
        #expect(deliveries.count == 41)  // 40 full buffers and the last 7 frames
        var expectedStart = 0
        for delivery in deliveries {
            #expect(delivery.startTime == expectedStart)
            #expect(delivery.descriptions.isEmpty)
            expectedStart += delivery.bytes.count / 4
        }
        #expect(expectedStart == 10_007)
        #expect(queue.capturer.overruns == 0)
        #expect(!queue.isRunning)
    }

    @Test func float32RecordsWithoutConversion() throws {
        let format = StreamFormat.linearPCM(sampleRate: 44100, channels: 1, sample: .float32)
        let recording = InputRecording()
        let queue = try inputQueue(format, recording: recording, buffers: 2, byteCapacity: 4096)
        defer { try? queue.dispose() }
        let captured = TestSignal.sine(frequency: 997, sampleRate: 44100, count: 5000, amplitude: 0.7)
        try queue.start()
        try queue.offlineCapture(frames: captured, sliceFrames: 128)
        try queue.stop(immediate: false)
        #expect(recording.allBytes == captured.withUnsafeBytes { Array($0) })
    }

    @Test func alacPacketsInACafDecodeBitExact() throws {
        let scratch = try TemporaryFolder()
        let path = scratch.path("recorded.caf")
        let format = StreamFormat.compressed(.appleLossless, sampleRate: 44100, channels: 2)
        let recording = InputRecording()
        let queue = try inputQueue(format, recording: recording, byteCapacity: 40_000, descriptions: 8)
        defer { try? queue.dispose() }
        let frames = 20_000
        let captured = sixteenBitSignal(frames: frames, channels: 2)
        try queue.start()
        try queue.offlineCapture(frames: captured, sliceFrames: 480)
        try queue.stop(immediate: false)

        let cookie = try #require(try queue.magicCookie)
        let file = try AudioFile.create(path, type: .caf, format: format, magicCookie: cookie)
        var expectedStart = 0
        for delivery in recording.deliveries {
            #expect(!delivery.descriptions.isEmpty)
            #expect(delivery.startTime == expectedStart)
            expectedStart += delivery.descriptions.reduce(0) { $0 + Int($1.variableFramesInPacket == 0 ? 4096 : $1.variableFramesInPacket) }
            try file.writePackets(delivery.bytes, descriptions: delivery.descriptions)
        }
        try file.close()

        // The file's packet table and cookie, decoded: the capture again.
        let reread = try AudioFile.open(path)
        #expect(reread.dataFormat.formatID == .appleLossless)
        let packetCount = try #require(reread.packetCount)
        let read = try reread.readPackets(from: 0, count: packetCount)
        let decoder = try AudioConverter(from: reread.dataFormat, to: .linearPCM(sampleRate: 44100, channels: 2, sample: .float32))
        decoder.decompressionMagicCookie = reread.magicCookie
        var decoded = floats(try decoder.convert(packets: AudioConverterPackets(data: read.bytes, descriptions: read.descriptions ?? [])))
        decoded += floats(try decoder.flush())
        #expect(decoded.count == captured.count, "\(decoded.count) samples decoded")
        let differing = zip(decoded, captured).filter { $0 != $1 }.count
        #expect(differing == 0, "\(differing) of \(captured.count) samples differ")
        #expect(Array(decoded.prefix(captured.count)) == captured)
    }

    @Test func ima4PacketsAreTheConvertersOwnEncoding() throws {
        let format = StreamFormat.appleIMA4(sampleRate: 16000, channels: 1)
        let recording = InputRecording()
        // 34-byte packets: 10 per buffer, and 20 bytes left over that hold no packet.
        let queue = try inputQueue(format, recording: recording, byteCapacity: 360)
        defer { try? queue.dispose() }
        let captured = TestSignal.sine(frequency: 440, sampleRate: 16000, count: 7_000, amplitude: 0.5)
        try queue.start()
        try queue.offlineCapture(frames: captured, sliceFrames: 160)
        try queue.stop(immediate: false)

        let encoder = try AudioConverter(from: .linearPCM(sampleRate: 16000, channels: 1, sample: .float32), to: format)
        let reference = try encoder.convert(captured.withUnsafeBytes { Array($0) }) + encoder.flush()
        #expect(recording.allBytes == reference)
        #expect(recording.allBytes.count == (7_000 + 63) / 64 * 34)
        var expectedStart = 0
        for delivery in recording.deliveries {
            #expect(delivery.bytes.count % 34 == 0 && delivery.bytes.count <= 340)
            #expect(delivery.startTime == expectedStart)
            expectedStart += delivery.bytes.count / 34 * 64
        }
    }

    /// SpeakHere: record into a CAF, play the file back through an output queue offline.
    @Test func recordToCafThenPlayBackGivesTheSameSamples() throws {
        let scratch = try TemporaryFolder()
        let path = scratch.path("speakhere.caf")
        let format = StreamFormat.linearPCM(sampleRate: 22050, channels: 1, sample: .int16)
        let file = try AudioFile.create(path, type: .caf, format: format)
        let recording = InputRecording()
        let queue = try inputQueue(format, recording: recording, byteCapacity: 2048)
        defer { try? queue.dispose() }
        let captured = sixteenBitSignal(frames: 9_001, channels: 1)
        try queue.start()
        try queue.offlineCapture(frames: captured, sliceFrames: 256)
        try queue.stop(immediate: false)
        for delivery in recording.deliveries { try file.writePackets(delivery.bytes) }
        try file.close()

        let player = try FilePlayer(path: path, packetsPerBuffer: 1024)
        let played = try player.play(slice: 500)
        #expect(played.count >= 9_001)
        #expect(Array(played.prefix(9_001)) == captured)
    }

    @Test func meteringReportsTheCapturedLevel() throws {
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 1, sample: .float32)
        let recording = InputRecording()
        let queue = try inputQueue(format, recording: recording, byteCapacity: 4096)
        defer { try? queue.dispose() }
        try queue.setLevelMeteringEnabled(true)
        try queue.start()
        try queue.offlineCapture(frames: TestSignal.sine(frequency: 1000, sampleRate: 48000, count: 4800, amplitude: 0.5), sliceFrames: 480)
        let level = try #require(try queue.currentLevelMeter().first)
        #expect(abs(level.peak - 0.5) < 0.01)
        #expect(abs(level.average - Float(0.5 / 2.0.squareRoot())) < 0.01)
    }

    @Test func immediateStopDropsWhatIsNotInABufferAndPauseCapturesNothing() throws {
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 1, sample: .float32)
        let recording = InputRecording()
        let queue = try inputQueue(format, recording: recording, byteCapacity: 400)
        defer { try? queue.dispose() }
        try queue.start()
        try queue.offlineCapture(frames: [Float](repeating: 0.25, count: 250))
        try queue.pause()
        try queue.offlineCapture(frames: [Float](repeating: 0.5, count: 1000))  // paused: not captured
        try queue.start()
        try queue.offlineCapture(frames: [Float](repeating: 0.75, count: 30))
        try queue.stop(immediate: true)
        let samples = floats(recording.allBytes)
        #expect(samples == [Float](repeating: 0.25, count: 250) + [Float](repeating: 0.75, count: 30))
        #expect(recording.deliveries.map(\.startTime) == [0, 100, 200])
    }
}
