import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// Everything a parse of a compressed stream reports, packet by packet, for comparing parses.
struct CompressedParse: Equatable {
    var properties: [AudioFileStream.Property] = []
    /// Each packet's bytes, cut out by its description.
    var packets: [[UInt8]] = []
    /// Each packet's `variableFramesInPacket`.
    var packetFrames: [UInt32] = []
    var error: AudioError.Code?
    var errorMessage: String?
    /// A description pointed outside its buffer, overlapped another, or was missing.
    var badDescriptions = 0
    /// Bytes of constant-size packets (handed out without descriptions).
    var constantPacketBytes = 0

    var dataFormat: StreamFormat? {
        for case .dataFormat(let format) in properties { return format }
        return nil
    }
    var packetTableInfo: AudioFilePacketTableInfo? {
        for case .packetTableInfo(let info) in properties { return info }
        return nil
    }
    var magicCookie: [UInt8]? {
        for case .magicCookieData(let cookie) in properties { return cookie }
        return nil
    }
    var dataOffset: Int? {
        for case .dataOffset(let offset) in properties { return offset }
        return nil
    }
}

/// Collects a stream's properties and packets, checking every packets call's descriptions.
final class CompressedParseRecorder {
    var record = CompressedParse()
    private(set) var stream: AudioFileStream!

    init(hint: AudioFileType? = nil) {
        stream = AudioFileStream(
            fileTypeHint: hint,
            propertyListener: { [unowned self] in record.properties.append($0) },
            packetsHandler: { [unowned self] data, descriptions in
                guard let descriptions else {
                    // Constant-size packets (PCM, IMA4) come without descriptions; variable ones never do.
                    if let format = record.dataFormat, format.bytesPerPacket > 0, data.count % Int(format.bytesPerPacket) == 0 {
                        record.constantPacketBytes += data.count
                    } else {
                        record.badDescriptions += 1
                    }
                    return
                }
                var end: Int64 = 0
                for description in descriptions {
                    let start = description.startOffset
                    let stop = start + Int64(description.dataByteSize)
                    guard start >= end, stop <= Int64(data.count) else {
                        record.badDescriptions += 1
                        continue
                    }
                    record.packets.append(Array(data[Int(start)..<Int(stop)]))
                    record.packetFrames.append(description.variableFramesInPacket)
                    end = stop
                }
            })
    }

    /// Feeds `bytes[range]` in one call; false once the stream has failed.
    @discardableResult
    func feed(_ bytes: ArraySlice<UInt8>, discontinuity: Bool = false) -> Bool {
        do {
            try stream.parse(Array(bytes), discontinuity: discontinuity)
            return true
        } catch {
            if record.error == nil {
                record.error = error.code
                record.errorMessage = error.description
            }
            return false
        }
    }
}

/// Parses `bytes` in pieces whose sizes `nextPiece` picks.
func parseCompressed(_ bytes: [UInt8], hint: AudioFileType? = nil, nextPiece: () -> Int) -> CompressedParse {
    let recorder = CompressedParseRecorder(hint: hint)
    var offset = 0
    while offset < bytes.count {
        let end = min(bytes.count, offset + max(1, nextPiece()))
        guard recorder.feed(bytes[offset..<end]) else { break }
        offset = end
    }
    return recorder.record
}

func parseCompressed(_ bytes: [UInt8], hint: AudioFileType? = nil) -> CompressedParse {
    parseCompressed(bytes, hint: hint) { bytes.count }
}

/// One packet as ffprobe reports it: the independent reference for packet boundaries.
struct ProbedPacket: Equatable {
    var position: Int
    var size: Int
}

/// Real compressed files made by ffmpeg (and sox) from one sox-made tone, with ffprobe's packets.
enum CompressedStreamFixtures {
    static let names = ["cbr.mp3", "vbr.mp3", "tags.mp3", "mono22k.mp3", "mono8k.mp3", "sox.mp3", "layer2.mp2",
                        "stereo.aac", "mono22k.aac", "alac.caf", "flac.caf", "opus.caf", "mp3.wav"]
    /// The streams the fuzzers start from (small ones, one of each kind).
    static let fuzzSeeds = ["vbr.mp3", "tags.mp3", "mono8k.mp3", "layer2.mp2", "mono22k.aac", "alacmono.caf", "opus.caf", "mp3.wav"]

    static let folder: TemporaryFolder? = try? TemporaryFolder(prefix: "sonora-filestream")
    static let available: Bool = {
        guard let folder else { return false }
        let tools = ["/usr/bin/ffmpeg", "/usr/bin/ffprobe", "/usr/bin/sox"]
        guard tools.allSatisfy({ FileManager.default.isExecutableFile(atPath: $0) }) else { return false }
        let sox = CLIRunner(executable: "/usr/bin/sox")
        let ffmpeg = CLIRunner(executable: "/usr/bin/ffmpeg")
        let source = folder.path("tone.wav")
        let short = folder.path("short.wav")
        do {
            guard try sox.run(["-n", "-r", "44100", "-c", "2", "-b", "16", source, "synth", "3", "sine", "440", "sine", "660", "tremolo", "3"]).status == 0,
                  try sox.run(["-n", "-r", "44100", "-c", "2", "-b", "16", short, "synth", "1", "sine", "300-900"]).status == 0
            else { return false }
            let encodings: [(String, [String])] = [
                ("cbr.mp3", ["-i", source, "-c:a", "libmp3lame", "-b:a", "128k"]),
                ("vbr.mp3", ["-i", source, "-c:a", "libmp3lame", "-q:a", "4"]),
                ("tags.mp3", ["-i", short, "-c:a", "libmp3lame", "-q:a", "6", "-metadata", "title=Sonora", "-write_id3v1", "1"]),
                ("mono22k.mp3", ["-i", source, "-ar", "22050", "-ac", "1", "-c:a", "libmp3lame", "-b:a", "32k"]),
                ("mono8k.mp3", ["-i", short, "-ar", "8000", "-ac", "1", "-c:a", "libmp3lame", "-b:a", "16k"]),
                ("layer2.mp2", ["-i", short, "-c:a", "mp2", "-b:a", "192k"]),
                ("stereo.aac", ["-i", source, "-c:a", "aac", "-b:a", "128k", "-f", "adts"]),
                ("mono22k.aac", ["-i", short, "-ar", "22050", "-ac", "1", "-c:a", "aac", "-b:a", "48k", "-f", "adts"]),
                ("alac.caf", ["-i", source, "-c:a", "alac"]),
                ("flac.caf", ["-i", short, "-c:a", "flac"]),
                ("alacmono.caf", ["-i", short, "-t", "0.4", "-ac", "1", "-ar", "8000", "-c:a", "alac"]),
                ("opus.caf", ["-i", short, "-c:a", "libopus", "-b:a", "64k"]),
                ("mp3.wav", ["-i", short, "-c:a", "libmp3lame", "-b:a", "64k", "-f", "wav"]),
            ]
            for (name, arguments) in encodings {
                guard try ffmpeg.run(["-v", "error", "-y"] + arguments + [folder.path(name)]).status == 0 else { return false }
            }
            guard try sox.run([source, folder.path("sox.mp3")]).status == 0 else { return false }
        } catch {
            return false
        }
        return true
    }()

    static func bytes(_ name: String) throws -> [UInt8] {
        try #require(available, "ffmpeg, ffprobe and sox (with libsox-fmt-mp3) make the fixtures")
        return [UInt8](try Data(contentsOf: folder!.url(name)))
    }

    /// ffprobe's packets (position and size) of a fixture.
    static func probedPackets(_ name: String) throws -> [ProbedPacket] {
        let outcome = try CLIRunner(executable: "/usr/bin/ffprobe").run(
            ["-v", "error", "-show_entries", "packet=pos,size", "-of", "csv=p=0", folder!.path(name)])
        try #require(outcome.status == 0, "ffprobe: \(outcome.stderr)")
        return outcome.stdout.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard fields.count >= 2, let size = fields[0], let position = fields[1] else { return nil }
            return ProbedPacket(position: position, size: size)
        }
    }

    /// The samples ffmpeg skips at the start (its "Skip Samples" side data on the first packet).
    static func probedSkipSamples(_ name: String) throws -> Int? {
        let outcome = try CLIRunner(executable: "/usr/bin/ffprobe").run(
            ["-v", "error", "-read_intervals", "%+#1", "-show_packets", "-of", "flat", folder!.path(name)])
        for line in outcome.stdout.split(separator: "\n") where line.contains("skip_samples=") {
            return Int(line.split(separator: "=").last!.trimmingCharacters(in: .whitespaces))
        }
        return nil
    }
}
