import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// Compressed packet files against FFmpeg as the independent reference: packet tables
/// equal to `ffprobe -show_packets`, packet bytes equal to `ffmpeg -c copy -f data` (the
/// demuxer's own packets, concatenated), files Sonora writes read back by ffprobe/ffmpeg.
@Suite("Packet files (VBR, CAF pakt/kuki, M4A, MP3, ADTS, FLAC, Ogg)", .serialized)
struct PacketFileTests {
    static let ffmpeg = CLIRunner(executable: "/usr/bin/ffmpeg", timeout: 120)
    static let ffprobe = CLIRunner(executable: "/usr/bin/ffprobe", timeout: 120)
    static let fixtures: TemporaryFolder = {
        let folder = try! TemporaryFolder(prefix: "sonora-packets")
        let source = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100:duration=1.3", "-f", "lavfi", "-i",
                      "anoisesrc=color=pink:sample_rate=44100:duration=1.3:seed=7", "-filter_complex", "amerge,volume=0.4", "-ac", "2"]
        let opus = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1.3", "-ac", "2"]
        let made: [(String, [String])] = [
            ("aac.m4a", source + ["-c:a", "aac", "-b:a", "128k"]),
            ("alac.m4a", source + ["-c:a", "alac"]),
            ("alac.caf", source + ["-c:a", "alac"]),
            ("cbr.mp3", source + ["-c:a", "libmp3lame", "-b:a", "128k"]),
            ("vbr.mp3", source + ["-c:a", "libmp3lame", "-q:a", "4"]),
            ("adts.aac", source + ["-c:a", "aac", "-b:a", "96k"]),
            ("audio.flac", source + ["-c:a", "flac"]),
            ("opus.ogg", opus + ["-c:a", "libopus", "-b:a", "64k"]),
            ("vorbis.ogg", source + ["-c:a", "libvorbis", "-q:a", "3"]),
        ]
        for (name, arguments) in made {
            let outcome = try! ffmpeg.run(["-v", "error", "-y"] + arguments + [folder.path(name)])
            precondition(outcome.status == 0, "ffmpeg could not make \(name): \(outcome.stderr)")
        }
        return folder
    }()

    /// ffprobe's packet sizes for the audio stream.
    static func probedPackets(_ path: String) throws -> [(size: Int, Void)] {
        let outcome = try ffprobe.run(["-v", "error", "-select_streams", "a", "-show_entries", "packet=size", "-of", "csv=p=0", path])
        #expect(outcome.status == 0, "ffprobe \(path): \(outcome.stderr)")
        // A packet with side data (skip samples) prints as "338," and an empty line.
        return outcome.stdout.split(separator: "\n").compactMap { line in
            line.split(separator: ",").first.map { (Int($0) ?? -1, ()) }
        }
    }

    /// The demuxer's packets back to back, as ffmpeg copies them.
    static func copiedPacketBytes(_ path: String, raw: Bool = false, in folder: TemporaryFolder) throws -> [UInt8] {
        let output = folder.path("copy-\(UUID().uuidString).bin")
        let filter = raw ? ["-bsf:a", "aac_adtstoasc"] : []
        let outcome = try ffmpeg.run(["-v", "error", "-i", path, "-map", "0:a", "-c", "copy"] + filter + ["-f", "data", output])
        #expect(outcome.status == 0, "ffmpeg copy \(path): \(outcome.stderr)")
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: output)))
    }

    static func decodedMD5(_ path: String) throws -> String {
        let outcome = try ffmpeg.run(["-v", "error", "-i", path, "-map", "0:a", "-f", "md5", "-"])
        #expect(outcome.status == 0 && outcome.stderr.isEmpty, "ffmpeg decode \(path): \(outcome.stderr)")
        return outcome.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var type: AudioFileType
        var formatID: AudioFormatID
        /// ADTS: ffprobe's packets include the 7-byte header Sonora's raw AAC packets leave out.
        var headerBytes = 0
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(name: "aac.m4a", type: .m4a, formatID: .mpeg4AAC),
        Case(name: "alac.m4a", type: .m4a, formatID: .appleLossless),
        Case(name: "alac.caf", type: .caf, formatID: .appleLossless),
        Case(name: "cbr.mp3", type: .mp3, formatID: .mpegLayer3),
        Case(name: "vbr.mp3", type: .mp3, formatID: .mpegLayer3),
        Case(name: "adts.aac", type: .adts, formatID: .mpeg4AAC, headerBytes: 7),
        Case(name: "audio.flac", type: .flac, formatID: .flac),
        Case(name: "opus.ogg", type: .ogg, formatID: .opus),
        Case(name: "vorbis.ogg", type: .ogg, formatID: .vorbis),
    ]

    @Test(arguments: cases)
    func packetTableAndBytesEqualFFmpegs(_ fixture: Case) throws {
        let path = Self.fixtures.path(fixture.name)
        let file = try AudioFile.open(path)
        defer { try? file.close() }
        #expect(file.fileType == fixture.type)
        #expect(file.dataFormat.formatID == fixture.formatID)
        let probed = try Self.probedPackets(path)
        #expect(file.packetCount == probed.count, "\(fixture): \(String(describing: file.packetCount)) packets, ffprobe \(probed.count)")
        let read = try file.readPackets(from: 0, count: probed.count + 10)
        let descriptions = try #require(read.descriptions, "VBR packets come with descriptions")
        #expect(descriptions.map { Int($0.dataByteSize) } == probed.map { $0.size - fixture.headerBytes })
        // Offsets: each packet right after the one before, from 0.
        var offset: Int64 = 0
        for description in descriptions {
            #expect(description.startOffset == offset)
            offset += Int64(description.dataByteSize)
        }
        let reference = try Self.copiedPacketBytes(path, raw: fixture.type == .adts, in: Self.fixtures)
        #expect(read.bytes.count == reference.count)
        #expect(read.bytes == reference, "\(fixture): packet bytes differ from ffmpeg's")
        #expect(file.audioDataByteCount == reference.count)
        #expect(file.maximumPacketSize == descriptions.map { Int($0.dataByteSize) }.max())
        #expect((file.packetSizeUpperBound ?? 0) >= (file.maximumPacketSize ?? .max))
        #expect((file.bitRate ?? 0) > 0)
        if fixture.formatID != .mpegLayer3 { #expect(file.magicCookie != nil, "\(fixture): no magic cookie") }
    }

    /// Priming and valid frames as the containers say (ffprobe: the first packet's skip and the stream's duration).
    @Test func primingAndValidFramesFromTheContainers() throws {
        let m4a = try AudioFile.open(Self.fixtures.path("aac.m4a"))
        let info = try #require(m4a.packetTableInfo)
        #expect(info.primingFrames == 1024)
        #expect(info.validFrames == 57330)  // 1.3 s at 44.1 kHz: ffprobe's duration_ts
        #expect(info.totalFrames == Int64(m4a.packetCount! * 1024))
        #expect(m4a.frameCount == 57330)
        #expect(m4a.dataFormat == .compressed(.mpeg4AAC, sampleRate: 44100, channels: 2))
        let mp3 = try AudioFile.open(Self.fixtures.path("vbr.mp3"))
        #expect(mp3.packetTableInfo?.primingFrames == 1105)  // LAME's delay + decoder delay, as ffprobe's skip_samples
        #expect(mp3.packetTableInfo?.validFrames == 57330)
        let opus = try AudioFile.open(Self.fixtures.path("opus.ogg"))
        #expect(opus.packetTableInfo?.primingFrames == 312)  // OpusHead pre-skip
        #expect(opus.packetTableInfo?.validFrames == 62400)
    }

    /// Existing frame reading of compressed files libsndfile decodes keeps working.
    @Test func framesOfLibsndfileFormatsStillRead() throws {
        // ALAC in CAF as libsndfile writes it (it does not open ffmpeg's): frames and packets both.
        let scratch = try TemporaryFolder()
        let alac = scratch.path("sndfile-alac.caf")
        let writer = try AudioFile.create(alac, type: .caf, format: .compressed(.appleLossless, sampleRate: 44100, channels: 2))
        let noise = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 10000)
        for channel in 0..<2 { for frame in 0..<10000 { noise.list[channel][frame] = Float(0.3 * sin(Double(frame * (channel + 1)) * 0.01)) } }
        try writer.writeFrames(from: noise.list)
        try writer.close()
        let sndfileALAC = try AudioFile.open(alac)
        let alacPackets = try sndfileALAC.readPackets(from: 0, count: 3)
        #expect(sndfileALAC.packetCount == 3 && alacPackets.descriptions?.count == 3)
        for name in ["audio.flac", "opus.ogg", "cbr.mp3", alac] {
            let file = try AudioFile.open(name.hasPrefix("/") ? name : Self.fixtures.path(name))
            let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 4096)
            let read = try file.readFrames(into: buffers.list(frameCount: 4096), from: 0)
            #expect(read == 4096, "\(name): \(read) frames")
            #expect(SignalMeasurement.rms(UnsafeBufferPointer(start: buffers.list.samples(0), count: read)) > 0.01)
        }
    }

    @Test func packetFilesRefuseFramesWithAClearError() throws {
        let file = try AudioFile.open(Self.fixtures.path("aac.m4a"))
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 16)
        let error = #expect(throws: AudioError.self) { _ = try file.readFrames(into: buffers.list) }
        #expect(error?.code == .operationNotSupported)
        #expect(error?.message.contains("aac.m4a") == true)
    }

    @Test func readBytesAtAnyOffsetAndPacketDataByBytes() throws {
        let file = try AudioFile.open(Self.fixtures.path("aac.m4a"))
        let all = try file.readPackets(from: 0, count: 1000)
        for (start, count) in [(0, 1), (1, 3), (337, 2), (339, 1000), (5001, 777), (all.bytes.count - 3, 10), (all.bytes.count, 5)] {
            let bytes = try file.readBytes(from: start, count: count)
            #expect(bytes[...] == all.bytes[start..<min(start + count, all.bytes.count)], "bytes \(start)+\(count)")
        }
        #expect(throws: AudioError.self) { _ = try file.readBytes(from: all.bytes.count + 1, count: 1) }
        let sizes = all.descriptions!.map { Int($0.dataByteSize) }
        // A bound just below two packets gives one; below one gives none; a large one stops at `count`.
        let one = try file.readPacketData(from: 3, count: 10, maximumBytes: sizes[3] + sizes[4] - 1)
        #expect(one.packetCount == 1 && one.bytes.count == sizes[3])
        let none = try file.readPacketData(from: 3, count: 10, maximumBytes: sizes[3] - 1)
        #expect(none.packetCount == 0 && none.bytes.isEmpty)
        let capped = try file.readPacketData(from: 0, count: 5, maximumBytes: 1 << 20)
        #expect(capped.packetCount == 5 && capped.bytes[...] == all.bytes[0..<sizes[0..<5].reduce(0, +)])
        // PCM too: bytes in mid-frame.
        let scratch = try TemporaryFolder()
        let wav = scratch.path("pcm.wav")
        let pcm = try AudioFile.create(wav, type: .wave, format: .linearPCM(sampleRate: 8000, channels: 2, sample: .int16))
        try pcm.writePackets((0..<400).map { UInt8($0 & 0xFF) })
        try pcm.close()
        let reread = try AudioFile.open(wav)
        #expect(try reread.readBytes(from: 3, count: 5) == [3, 4, 5, 6, 7])
        #expect(try reread.readPacketData(from: 0, count: 100, maximumBytes: 9).packetCount == 2)
    }

    @Test func typeHintTriedFirstContentDecides() throws {
        // Right hints open; a wrong one is overruled by content that is sure of itself.
        #expect(try AudioFile.open(Self.fixtures.path("adts.aac"), typeHint: .adts).fileType == .adts)
        #expect(try AudioFile.open(Self.fixtures.path("aac.m4a"), typeHint: .mp3).fileType == .m4a)
        #expect(try AudioFile.open(Self.fixtures.path("aac.m4a"), typeHint: .m4a).fileType == .m4a)
        #expect(try AudioFile.open(Self.fixtures.path("cbr.mp3"), typeHint: .adts).fileType == .mp3)
        // ADTS under a name that says nothing.
        let scratch = try TemporaryFolder()
        let anonymous = scratch.path("stream.bin")
        try FileManager.default.copyItem(atPath: Self.fixtures.path("adts.aac"), toPath: anonymous)
        let file = try AudioFile.open(anonymous, typeHint: .adts)
        let probed = try Self.probedPackets(anonymous)
        #expect(file.fileType == .adts && file.packetCount == probed.count)
    }

    // MARK: Writing

    /// AAC packets from an ffmpeg-made M4A into CAF with cookie and packet table: ffprobe
    /// sees the same packets, ffmpeg decodes it, Sonora reads back the same.
    @Test func cafPacketTableRoundTrip() throws {
        let scratch = try TemporaryFolder()
        for source in ["aac.m4a", "alac.m4a", "vbr.mp3", "audio.flac", "opus.ogg"] {
            let input = try AudioFile.open(Self.fixtures.path(source))
            let packets = try input.readPackets(from: 0, count: input.packetCount!)
            let path = scratch.path(source + ".caf")
            let output = try AudioFile.create(path, type: .caf, format: input.dataFormat, magicCookie: input.magicCookie)
            #expect(!FileManager.default.fileExists(atPath: path), "the file appears only when closed")
            // In pieces, to cross write boundaries.
            let descriptions = packets.descriptions!
            for start in stride(from: 0, to: descriptions.count, by: 7) {
                let piece = Array(descriptions[start..<min(start + 7, descriptions.count)])
                let base = Int(piece[0].startOffset)
                let end = Int(piece.last!.startOffset) + Int(piece.last!.dataByteSize)
                let rebased = piece.map { AudioStreamPacketDescription(startOffset: $0.startOffset - Int64(base), variableFramesInPacket: $0.variableFramesInPacket, dataByteSize: $0.dataByteSize) }
                try output.writePackets(Array(packets.bytes[base..<end]), descriptions: rebased)
            }
            let info = try #require(input.packetTableInfo)
            try output.setPacketTableInfo(info)
            #expect(output.packetTableInfo == info)
            try output.close()

            let reread = try AudioFile.open(path)
            #expect(reread.fileType == .caf)
            // (ALAC in CAF reads as frames through libsndfile too, whose description leaves out the depth flags.)
            #expect(reread.dataFormat.formatID == input.dataFormat.formatID && reread.dataFormat.sampleRate == input.dataFormat.sampleRate
                && reread.dataFormat.channelsPerFrame == input.dataFormat.channelsPerFrame
                && reread.dataFormat.framesPerPacket == input.dataFormat.framesPerPacket && reread.dataFormat.bytesPerPacket == 0)
            #expect(reread.packetTableInfo == info)
            #expect(reread.magicCookie == input.magicCookie)
            #expect(reread.frameCount == Int(info.validFrames))
            let back = try reread.readPackets(from: 0, count: descriptions.count)
            #expect(back.bytes == packets.bytes && back.descriptions == descriptions, "\(source): packets differ after the CAF round trip")
            if source == "aac.m4a" || source == "alac.m4a" {
                // ffmpeg's CAF demuxer reads AAC and ALAC packets from the pakt table (it has no FLAC, Opus or MP3 in CAF).
                let probed = try Self.probedPackets(path)
                #expect(probed.map(\.size) == descriptions.map { Int($0.dataByteSize) }, "\(source): ffprobe's CAF packets differ")
                let decode = try Self.ffmpeg.run(["-v", "error", "-i", path, "-f", "null", "-"])
                #expect(decode.status == 0 && decode.stderr.isEmpty, "\(source): ffmpeg -i caf: \(decode.stderr)")
            }
        }
    }

    /// A CAF being written reads, after `updateHeader()`, as the packets written so far
    /// (a recording killed then keeps them); later packets replace the provisional table.
    @Test func cafBeingWrittenIsValidSoFar() throws {
        let scratch = try TemporaryFolder()
        let input = try AudioFile.open(Self.fixtures.path("aac.m4a"))
        let packets = try input.readPackets(from: 0, count: 1000)
        let descriptions = packets.descriptions!
        let half = descriptions.count / 2
        let cut = Int(descriptions[half].startOffset)
        let path = scratch.path("recording.caf")
        let output = try AudioFile.create(path, type: .caf, format: input.dataFormat, magicCookie: input.magicCookie)
        try output.writePackets(Array(packets.bytes[..<cut]), descriptions: Array(descriptions[..<half]))
        try output.updateHeader()
        let partial = try AudioFile.open(AudioFile.partialPath(for: path))
        #expect(partial.packetCount == half)
        #expect(try partial.readPackets(from: 0, count: 1000).bytes[...] == packets.bytes[..<cut])
        #expect(partial.magicCookie == input.magicCookie)
        let rest = descriptions[half...].map { AudioStreamPacketDescription(startOffset: $0.startOffset - Int64(cut), dataByteSize: $0.dataByteSize) }
        try output.writePackets(Array(packets.bytes[cut...]), descriptions: rest)
        try output.updateHeader()
        try output.setPacketTableInfo(input.packetTableInfo!)
        try output.close()
        let finished = try AudioFile.open(path)
        #expect(finished.packetCount == descriptions.count && finished.packetTableInfo == input.packetTableInfo)
        #expect(try finished.readPackets(from: 0, count: 1000).bytes == packets.bytes)
        let probed = try Self.probedPackets(path)
        #expect(probed.count == descriptions.count)
    }

    /// AAC and ALAC packets taken from ffmpeg-made M4A files, written by Sonora into M4A:
    /// ffprobe sees the same packets and ffmpeg decodes the very same PCM (priming and the
    /// end trimmed alike, so the edit list is right).
    @Test(arguments: [("aac.m4a", AudioFileType.m4a), ("alac.m4a", .m4a), ("aac.m4a", .mp4)])
    func m4aWrittenFromPacketsDecodesLikeTheSource(_ source: String, _ type: AudioFileType) throws {
        let scratch = try TemporaryFolder()
        let sourcePath = Self.fixtures.path(source)
        let input = try AudioFile.open(sourcePath)
        let packets = try input.readPackets(from: 0, count: input.packetCount!)
        let path = scratch.path(type == .m4a ? "sonora.m4a" : "sonora.mp4")
        let output = try AudioFile.create(path, type: type, format: input.dataFormat, magicCookie: input.magicCookie)
        try output.setPacketTableInfo(try #require(input.packetTableInfo))
        try output.writePackets(packets.bytes, descriptions: packets.descriptions)
        try output.close()
        let written = try Self.probedPackets(path).map(\.size)
        let original = try Self.probedPackets(sourcePath).map(\.size)
        #expect(written == original)
        let writtenMD5 = try Self.decodedMD5(path)
        let originalMD5 = try Self.decodedMD5(sourcePath)
        #expect(writtenMD5 == originalMD5)
        let reread = try AudioFile.open(path)
        #expect(reread.fileType == type && reread.packetTableInfo == input.packetTableInfo)
        #expect(try reread.readPackets(from: 0, count: 10_000).bytes == packets.bytes)
    }

    /// The valid frames survive exactly whatever their count: the edit list is kept in
    /// samples (at FFmpeg's default 1/1000 s its duration rounds, and the last packet was
    /// stretched to match — 45335 frames read back for 45334 written through ExtAudioFile).
    @Test(arguments: [57329, 57000, 56320 + 1])
    func m4aKeepsAnyValidFrameCount(_ valid: Int64) throws {
        let scratch = try TemporaryFolder()
        let input = try AudioFile.open(Self.fixtures.path("aac.m4a"))
        let packets = try input.readPackets(from: 0, count: 1000)
        let total = Int64(packets.descriptions!.count * 1024)
        let info = AudioFilePacketTableInfo(validFrames: valid, primingFrames: 1024, remainderFrames: Int32(total - 1024 - valid))
        let path = scratch.path("valid.m4a")
        let output = try AudioFile.create(path, type: .m4a, format: input.dataFormat, magicCookie: input.magicCookie)
        try output.setPacketTableInfo(info)
        try output.writePackets(packets.bytes, descriptions: packets.descriptions)
        try output.close()
        #expect(try AudioFile.open(path).packetTableInfo == info)
    }

    /// ADTS, MP3 and Ogg Opus written from packets: ffprobe finds the same packets and ffmpeg decodes them.
    @Test(arguments: [("adts.aac", AudioFileType.adts, "out.aac"), ("cbr.mp3", .mp3, "out.mp3"), ("opus.ogg", .ogg, "out.opus")])
    func rawStreamsWrittenFromPackets(_ source: String, _ type: AudioFileType, _ name: String) throws {
        let scratch = try TemporaryFolder()
        let input = try AudioFile.open(Self.fixtures.path(source))
        let packets = try input.readPackets(from: 0, count: input.packetCount!)
        let path = scratch.path(name)
        let output = try AudioFile.create(path, type: type, format: input.dataFormat, magicCookie: input.magicCookie)
        if let info = input.packetTableInfo { try output.setPacketTableInfo(info) }
        try output.writePackets(packets.bytes, descriptions: packets.descriptions)
        try output.close()
        let reread = try AudioFile.open(path)
        #expect(reread.fileType == type)
        #expect(try reread.readPackets(from: 0, count: 10_000).bytes == packets.bytes, "\(name): packets differ")
        let decode = try Self.ffmpeg.run(["-v", "error", "-i", path, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.stderr.isEmpty, "ffmpeg -i \(name): \(decode.stderr)")
        // Priming and remainder survive where the container keeps them: Opus pre-skip and end granule, the LAME header.
        if type == .ogg || type == .mp3 {
            #expect(reread.packetTableInfo == input.packetTableInfo, "\(name): \(String(describing: reread.packetTableInfo)) after \(String(describing: input.packetTableInfo))")
        }
    }

    @Test func writingRules() throws {
        let scratch = try TemporaryFolder()
        let aac = StreamFormat.compressed(.mpeg4AAC, sampleRate: 44100, channels: 2)
        let cookie = try AudioFile.open(Self.fixtures.path("aac.m4a")).magicCookie
        // VBR packets without descriptions: '!pkd', as the converter's.
        let file = try AudioFile.create(scratch.path("x.caf"), type: .caf, format: aac, magicCookie: cookie)
        let error = #expect(throws: AudioError.self) { try file.writePackets([1, 2, 3]) }
        #expect(error?.code == .requiresPacketDescriptions && error?.message.contains("x.caf") == true)
        // A description past the bytes given.
        #expect(throws: AudioError.self) {
            try file.writePackets([1, 2, 3], descriptions: [AudioStreamPacketDescription(startOffset: 2, dataByteSize: 2)])
        }
        // A packet table claiming more frames than written is refused at close; nothing appears.
        try file.writePackets([1, 2, 3], descriptions: [AudioStreamPacketDescription(startOffset: 0, dataByteSize: 3)])
        try file.setPacketTableInfo(AudioFilePacketTableInfo(validFrames: 5000, primingFrames: 1024, remainderFrames: 0))
        #expect(throws: AudioError.self) { try file.close() }
        #expect(!FileManager.default.fileExists(atPath: scratch.path("x.caf")))
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path)
            .filter { $0.contains("partial") }.isEmpty, "partials removed")
        // Existing files are not replaced without erase.
        _ = FileManager.default.createFile(atPath: scratch.path("exists.m4a"), contents: Data("keep".utf8))
        #expect(throws: AudioError.self) { _ = try AudioFile.create(scratch.path("exists.m4a"), type: .m4a, format: aac, magicCookie: cookie) }
        #expect(try String(contentsOfFile: scratch.path("exists.m4a"), encoding: .utf8) == "keep")
        // Formats a type cannot hold: 'fmt?' naming both.
        for (type, format) in [(AudioFileType.m4a, StreamFormat.compressed(.opus, sampleRate: 48000, channels: 2)),
                               (.adts, .compressed(.appleLossless, sampleRate: 44100, channels: 2)), (.mp3, aac)] {
            let refused = #expect(throws: AudioError.self) { _ = try AudioFile.create(scratch.path("r"), type: type, format: format, magicCookie: cookie) }
            #expect(refused?.code == .unsupportedDataFormat && refused?.message.contains("\(type)") == true && refused?.message.contains("\(format.formatID)") == true)
            #expect(!AudioFile.writableFormats(for: type).contains(format))
        }
        // And what is listed can be created and reads back as listed.
        for type in [AudioFileType.caf, .m4a, .mp4, .adts, .mp3, .ogg] {
            #expect(AudioFile.writableTypes.contains(type))
        }
        #expect(AudioFile.writableFormats(for: .m4a).map(\.formatID) == [.mpeg4AAC, .mpeg4AAC_HE, .appleLossless])
        // An abandoned packet file leaves nothing.
        let abandoned = try AudioFile.create(scratch.path("gone.m4a"), type: .m4a, format: aac, magicCookie: cookie)
        try abandoned.writePackets([1, 2, 3], descriptions: [AudioStreamPacketDescription(startOffset: 0, dataByteSize: 3)])
        abandoned.abandon()
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path).sorted() == ["exists.m4a"])
    }

    /// HE-AAC: Debian's FFmpeg has no HE-AAC encoder, so the M4A is written by Sonora from
    /// ffmpeg's AAC-LC packets at 22.05 kHz behind an AudioSpecificConfig that signals SBR
    /// explicitly (as HEAACDecodingTests). ffprobe decodes it at 44.1 kHz; Sonora reads
    /// it as 'aach', 2048 frames a packet at that rate, and copies its packets into CAF.
    @Test func heAACIsReadAsAACH() throws {
        let scratch = try TemporaryFolder()
        let lc = scratch.path("lc.m4a")
        let made = try Self.ffmpeg.run(["-v", "error", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=22050:duration=1", "-ac", "2", "-c:a", "aac", lc])
        #expect(made.status == 0, "\(made.stderr)")
        let input = try AudioFile.open(lc)
        let packets = try input.readPackets(from: 0, count: 1000)
        let he = scratch.path("he.m4a")
        let writer = try AudioFile.create(he, type: .m4a, format: .compressed(.mpeg4AAC_HE, sampleRate: 44100, channels: 2), magicCookie: [0x2B, 0x92, 0x08, 0x00])
        try writer.writePackets(packets.bytes, descriptions: packets.descriptions)
        try writer.close()
        let probe = try Self.ffprobe.run(["-v", "error", "-select_streams", "a", "-show_entries", "stream=profile,sample_rate", "-of", "csv=p=0", he])
        // (ffprobe names the core's profile, LC, but decodes at the SBR rate.)
        #expect(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "LC,44100", "\(probe.stdout)")
        let file = try AudioFile.open(he)
        #expect(file.dataFormat == .compressed(.mpeg4AAC_HE, sampleRate: 44100, channels: 2))
        #expect(file.packetCount == packets.descriptions!.count)
        #expect(try file.readPackets(from: 0, count: 1000).bytes == packets.bytes)
        let cookie = try #require(file.magicCookie)
        #expect(cookie.first == 0x03, "an esds, as Core Audio's AAC cookies")
        let caf = scratch.path("he.caf")
        let copy = try AudioFile.create(caf, type: .caf, format: file.dataFormat, magicCookie: cookie)
        try copy.writePackets(packets.bytes, descriptions: packets.descriptions)
        try copy.close()
        let reread = try AudioFile.open(caf)
        #expect(reread.dataFormat == file.dataFormat && reread.magicCookie == cookie)
        #expect(try reread.readPackets(from: 0, count: 1000).bytes == packets.bytes)
    }

    // MARK: Malformed input

    static func expectClearError(_ path: String, _ words: String..., sourceLocation: SourceLocation = #_sourceLocation) {
        let error = #expect(throws: AudioError.self, sourceLocation: sourceLocation) { _ = try AudioFile.open(path) }
        #expect(error?.message.contains((path as NSString).lastPathComponent) == true, "\(String(describing: error))", sourceLocation: sourceLocation)
        for word in words {
            #expect(error?.message.contains(word) == true, "\(String(describing: error)) lacks \(word)", sourceLocation: sourceLocation)
        }
    }

    @Test func malformedFilesGiveClearErrors() throws {
        let scratch = try TemporaryFolder()
        // A good AAC CAF to damage.
        let input = try AudioFile.open(Self.fixtures.path("aac.m4a"))
        let packets = try input.readPackets(from: 0, count: 1000)
        let good = scratch.path("good.caf")
        let writer = try AudioFile.create(good, type: .caf, format: input.dataFormat, magicCookie: input.magicCookie)
        try writer.writePackets(packets.bytes, descriptions: packets.descriptions)
        try writer.close()
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: good)))
        func write(_ name: String, _ content: [UInt8]) -> String {
            let path = scratch.path(name)
            _ = FileManager.default.createFile(atPath: path, contents: Data(content))
            return path
        }
        func find(_ id: String) -> Int {
            let tag = Array(id.utf8)
            return (8..<bytes.count - 4).first { Array(bytes[$0..<$0 + 4]) == tag }!
        }
        // Cut in the middle of the data: the data chunk's size says more than follows.
        Self.expectClearError(write("truncated.caf", Array(bytes.prefix(bytes.count / 2))), "truncated")
        // The pakt counts more packets than the data holds (its sizes doubled).
        let pakt = find("pakt")
        let kuki = find("kuki")
        let dataChunk = find("data")
        // pakt before a data chunk 200 bytes short of the packets it lists.
        var shortData = Array(bytes[0..<dataChunk]) + Array(bytes[pakt..<bytes.count]) + Array(bytes[dataChunk..<pakt - 200])
        let newData = dataChunk + (bytes.count - pakt)
        let dataSize = UInt64(pakt - 200 - dataChunk - 12)
        for index in 0..<8 { shortData[newData + 4 + index] = UInt8(truncatingIfNeeded: dataSize >> (56 - 8 * UInt64(index))) }
        Self.expectClearError(write("short-data.caf", shortData), "pakt")
        var counted = bytes
        counted[pakt + 12 + 6] = 0x7F  // packets: far more than entries
        Self.expectClearError(write("pakt-count.caf", counted), "pakt")
        // A kuki chunk saying it is huge.
        var huge = bytes
        huge[kuki + 6] = 0x10
        Self.expectClearError(write("kuki.caf", huge), "kuki")
        // Text named .m4a, and a zero-byte file.
        Self.expectClearError(write("text.m4a", Array("this is not an MPEG-4 file\n".utf8)), "not an audio file")
        Self.expectClearError(write("empty.m4a", []), "empty")
        // A CAF with no desc.
        Self.expectClearError(write("nodesc.caf", Array(bytes[0..<8]) + Array(bytes[dataChunk..<bytes.count])), "desc")
    }

    /// Opens `path` and reads all its packets and some bytes; the error, if any.
    static func exercise(_ path: String) -> AudioError? {
        do throws(AudioError) {
            let file = try AudioFile.open(path)
            guard let count = file.packetCount else { return nil }
            let read = try file.readPackets(from: 0, count: count)
            #expect(read.bytes.count == file.audioDataByteCount ?? read.bytes.count)
            _ = try file.readBytes(from: max(read.bytes.count - 5, 0), count: 11)
            return nil
        } catch {
            return error
        }
    }

    /// Damaged compressed files — cut at many lengths, bytes flipped at random (seeded) —
    /// open with an error or read their packets, never crash or allocate without bound.
    @Test func damagedFilesNeverCrash() throws {
        let scratch = try TemporaryFolder()
        let input = try AudioFile.open(Self.fixtures.path("aac.m4a"))
        let packets = try input.readPackets(from: 0, count: 1000)
        let caf = scratch.path("good.caf")
        let writer = try AudioFile.create(caf, type: .caf, format: input.dataFormat, magicCookie: input.magicCookie)
        try writer.setPacketTableInfo(input.packetTableInfo!)
        try writer.writePackets(packets.bytes, descriptions: packets.descriptions)
        try writer.close()
        var generator = SeededGenerator(seed: 16)
        for source in [caf, Self.fixtures.path("aac.m4a"), Self.fixtures.path("vbr.mp3"), Self.fixtures.path("opus.ogg")] {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: source)))
            let name = (source as NSString).lastPathComponent
            var variants: [[UInt8]] = stride(from: 1, to: bytes.count, by: max(bytes.count / 40, 1)).map { Array(bytes.prefix($0)) }
            for _ in 0..<40 {
                var damaged = bytes
                // Mostly the headers, where the sizes and tables are.
                for _ in 0..<4 {
                    let at = Int.random(in: 0..<min(bytes.count, 256 + Int.random(in: 0..<bytes.count, using: &generator) / 8), using: &generator)
                    damaged[at] = UInt8.random(in: 0...255, using: &generator)
                }
                variants.append(damaged)
            }
            for (number, variant) in variants.enumerated() {
                let path = scratch.path("damaged-\(number)-\(name)")
                _ = FileManager.default.createFile(atPath: path, contents: Data(variant))
                if let error = Self.exercise(path) {
                    #expect(error.message.contains(path), "\(error)")
                }
                unlink(path)
            }
        }
    }
}
