import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import SonoraToolbox
import Testing

private let ffmpegInstalled = FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg")

/// Compressed files (made by ffmpeg at run time) played through an output queue, offline, as a
/// Core Audio program plays them: packets read from the file, the file's magic cookie set on the
/// queue, stop after the queued buffers. The queue's output equals the file layer's own decoding
/// bit for bit (these decoders are deterministic): the packet reader + AudioConverter without
/// trims, and ExtAudioFile (which applies the packet table) when the program passes the file's
/// priming as the first buffer's trimFramesAtStart and its remainder as the last's trimFramesAtEnd.
@Suite("AudioQueue codecs", .enabled(if: ffmpegInstalled, "ffmpeg is not installed"))
struct AudioQueueCodecTests {
    static let codecs: [(name: String, file: String, arguments: [String])] = [
        ("AAC", "aac.m4a", ["-c:a", "aac", "-b:a", "128k"]),
        ("ALAC", "alac.m4a", ["-c:a", "alac"]),
        ("FLAC", "tone.flac", ["-c:a", "flac"]),
        ("Opus", "tone.opus", ["-c:a", "libopus", "-b:a", "96k"]),
    ]

    /// A 1.3-second stereo chirp and noise, made by ffmpeg.
    static func make(_ codec: (name: String, file: String, arguments: [String]), in folder: TemporaryFolder) throws -> String {
        let path = folder.path(codec.file)
        let rate = codec.name == "Opus" ? 48000 : 44100
        let source = ["-f", "lavfi", "-i", "aevalsrc=0.4*sin(2*PI*(100+2000*t)*t)|0.3*(random(0)-0.5):s=\(rate):d=1.3"]
        try runTool("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-y"] + source + codec.arguments + [path])
        return path
    }

    /// Plays every packet of `path` through a queue in `packetsPerBuffer`-packet buffers (all
    /// enqueued up front), trimming the packet table's priming and remainder if `trimmed`;
    /// returns the frames played (interleaved) and the queue's sample time at the end.
    static func playThroughQueue(_ path: String, packetsPerBuffer: Int, trimmed: Bool, rate: Float? = nil) throws -> (samples: [Float], played: Int) {
        let file = try AudioFile.open(path)
        let format = file.dataFormat
        let channels = Int(format.channelsPerFrame)
        let queue = try AudioQueue(format: format) { _, _ in }
        defer { try? queue.dispose(immediate: true) }
        let cookie = try #require(file.magicCookie, "\(path) has no magic cookie")
        try queue.setMagicCookie(cookie)
        try queue.setOfflineRenderFormat(floatFormat(like: format))
        if let rate {
            try queue.setTimePitchEnabled(true)
            try queue.setParameter(.playRate, rate)
        }
        let timeline = try queue.createTimeline()
        let table = trimmed ? file.packetTableInfo : nil
        let total = try #require(file.packetCount)
        var packet = 0
        while packet < total {
            let read = try file.readPackets(from: packet, count: min(packetsPerBuffer, total - packet))
            let descriptions = try #require(read.descriptions)
            let buffer = try queue.allocateBuffer(byteCapacity: read.bytes.count, packetDescriptionCapacity: descriptions.count)
            buffer.fill(with: read.bytes)
            let last = packet + descriptions.count == total
            try queue.enqueue(
                buffer, packetDescriptions: descriptions,
                trimFramesAtStart: packet == 0 ? Int(table?.primingFrames ?? 0) : 0,
                trimFramesAtEnd: last ? Int(table?.remainderFrames ?? 0) : 0)
            packet += descriptions.count
        }
        try queue.prime()
        try queue.start()
        try queue.stop(immediate: false)
        var output: [Float] = []
        var slices = 0
        while queue.isRunning && slices < 10_000 {
            output += floats(try queue.offlineRender(frames: 4096))
            slices += 1
        }
        #expect(queue.underruns == 0)
        #expect(queue.converterError == nil)
        let played = Int(timeline.currentTime().sampleTime)
        return (Array(output.prefix(played * channels)), played)
    }

    /// The file's frames as ExtAudioFile decodes them (priming and remainder removed).
    static func extAudioFileSamples(_ path: String) throws -> [Float] {
        let ext = try ExtAudioFile.open(path)
        let channels = Int(ext.file.dataFormat.channelsPerFrame)
        let client = StreamFormat.linearPCM(sampleRate: ext.file.dataFormat.sampleRate, channels: channels, sample: .float32, interleaved: true)
        try ext.setClientFormat(client)
        let buffers = try OwnedPCMBufferList(format: client, frameCapacity: 4096)
        var samples: [Float] = []
        while true {
            let read = try ext.read(into: buffers.list(frameCount: 4096), frameCount: 4096)
            if read == 0 { break }
            samples += buffers.bytes(0).bindMemory(to: Float.self).prefix(read * channels)
        }
        return samples
    }

    @Test("AAC in a CAF with Core Audio's 2112 priming frames: trimmed through a queue, exactly the file's frames")
    func aacWithAppleStylePriming() throws {
        let folder = try TemporaryFolder()
        let source = try AudioFile.open(try Self.make(Self.codecs[0], in: folder))
        let packets = try #require(source.packetCount)
        let read = try source.readPackets(from: 0, count: packets)
        // The packets rewritten as Core Audio's encoder files them: a pakt of 2112 priming frames.
        let path = folder.path("apple.caf")
        let caf = try AudioFile.create(path, type: .caf, format: source.dataFormat, magicCookie: try #require(source.magicCookie))
        let remainder = 500
        try caf.setPacketTableInfo(AudioFilePacketTableInfo(
            validFrames: Int64(packets * 1024 - 2112 - remainder), primingFrames: 2112, remainderFrames: Int32(remainder)))
        try caf.writePackets(read.bytes, descriptions: read.descriptions)
        try caf.close()
        let table = try #require(try AudioFile.open(path).packetTableInfo)
        #expect(table.primingFrames == 2112 && Int(table.remainderFrames) == remainder, "\(table)")
        let expected = try Self.extAudioFileSamples(path)
        #expect(expected.count / 2 == Int(table.validFrames))
        let queued = try Self.playThroughQueue(path, packetsPerBuffer: 16, trimmed: true)
        #expect(queued.played == Int(table.validFrames))
        let mismatch = SignalMeasurement.firstMismatch(queued.samples, expected)
        #expect(mismatch == nil, "first difference at sample \(mismatch ?? -1) of \(expected.count)")
    }

    @Test("trimmed to the packet table at rate 2 and 0.5, a queue plays ⌈valid frames / rate⌉ frames", arguments: [Float(2), 0.5])
    func trimmedAtRate(rate: Float) throws {
        let folder = try TemporaryFolder()
        let path = try Self.make(Self.codecs[3], in: folder)
        let table = try #require(try AudioFile.open(path).packetTableInfo)
        let queued = try Self.playThroughQueue(path, packetsPerBuffer: 16, trimmed: true, rate: rate)
        #expect(queued.played == Int((Double(table.validFrames) / Double(rate)).rounded(.up)), "\(queued.played) frames, packet table \(table)")
    }

    @Test("every packet through a queue equals the packet reader + AudioConverter", arguments: [0, 1, 2, 3])
    func untrimmed(codecIndex: Int) throws {
        let codec = Self.codecs[codecIndex]
        let folder = try TemporaryFolder()
        let path = try Self.make(codec, in: folder)
        let expected = try decodedSamples(of: path)
        let queued = try Self.playThroughQueue(path, packetsPerBuffer: 7, trimmed: false)
        #expect(queued.played * 2 == expected.count, "\(codec.name): \(queued.played) frames, the converter \(expected.count / 2)")
        let mismatch = SignalMeasurement.firstMismatch(queued.samples, expected)
        #expect(mismatch == nil, "\(codec.name): first difference at sample \(mismatch ?? -1)")
    }

    @Test("with the packet table's priming and remainder as trims, a queue plays exactly the file's frames", arguments: [0, 1, 2, 3])
    func trimmedToPacketTable(codecIndex: Int) throws {
        let codec = Self.codecs[codecIndex]
        let folder = try TemporaryFolder()
        let path = try Self.make(codec, in: folder)
        let table = try AudioFile.open(path).packetTableInfo
        // Lossy codecs have priming (AAC's encoder delay, Opus' pre-skip); the lossless ones may have no table.
        if codec.name == "AAC" || codec.name == "Opus" {
            #expect((table?.primingFrames ?? 0) > 0, "\(codec.name): \(String(describing: table))")
        }
        let expected = try Self.extAudioFileSamples(path)
        let validFrames = table.map { Int($0.validFrames) } ?? expected.count / 2
        #expect(expected.count / 2 == validFrames, "\(codec.name): ExtAudioFile \(expected.count / 2) frames, packet table \(String(describing: table))")
        // Buffers big enough that the priming lies in the first and the remainder in the last.
        let queued = try Self.playThroughQueue(path, packetsPerBuffer: 16, trimmed: table != nil)
        #expect(queued.played == validFrames, "\(codec.name): \(queued.played) frames, packet table \(String(describing: table))")
        let mismatch = SignalMeasurement.firstMismatch(queued.samples, expected)
        #expect(mismatch == nil, "\(codec.name): first difference at sample \(mismatch ?? -1) of \(expected.count)")
    }
}
