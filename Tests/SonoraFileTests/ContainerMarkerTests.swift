import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// Big-endian bytes for hand-built files (the "other tool" here: no tool on this
/// machine writes AIFF or CAF markers, so the tests write the bytes the specs describe).
func be16(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
func be32(_ value: Int) -> [UInt8] { be16(value >> 16) + be16(value) }
func be64(_ value: UInt64) -> [UInt8] { be32(Int(value >> 32)) + be32(Int(value & 0xFFFF_FFFF)) }
func iffChunk(_ id: String, _ body: [UInt8]) -> [UInt8] { Array(id.utf8) + be32(body.count) + body + (body.count % 2 == 1 ? [0] : []) }
func cafChunk(_ id: String, _ body: [UInt8]) -> [UInt8] { Array(id.utf8) + be64(UInt64(body.count)) + body }

/// A 16-bit mono 44.1 kHz AIFF with `frames` samples (a ramp) and `extra` chunks before SSND.
func handMadeAIFF(frames: Int, extra: [UInt8], after: [UInt8] = []) -> [UInt8] {
    let rate44100: [UInt8] = [0x40, 0x0E, 0xAC, 0x44, 0, 0, 0, 0, 0, 0]
    let comm = iffChunk("COMM", be16(1) + be32(frames) + be16(16) + rate44100)
    let samples = (0..<frames).flatMap { be16($0 * 7) }
    let ssnd = iffChunk("SSND", be32(0) + be32(0) + samples)
    let body = Array("AIFF".utf8) + comm + extra + ssnd + after
    return Array("FORM".utf8) + be32(body.count) + body
}

/// A MARK chunk body: (id, position, name) each.
func markBody(_ markers: [(Int, Int, String)]) -> [UInt8] {
    var body = be16(markers.count)
    for (id, position, name) in markers {
        body += be16(id) + be32(position) + [UInt8(name.utf8.count)] + Array(name.utf8)
        if name.utf8.count % 2 == 0 { body.append(0) }
    }
    return body
}

/// An INST chunk body: sustain loop (mode, begin id, end id) and release loop.
func instBody(sustain: (Int, Int, Int), release: (Int, Int, Int) = (0, 0, 0)) -> [UInt8] {
    [60, 0, 0, 127, 1, 127] + be16(0) + be16(sustain.0) + be16(sustain.1) + be16(sustain.2)
        + be16(release.0) + be16(release.1) + be16(release.2)
}

/// A 16-bit big-endian mono CAF with `frames` samples and `after` chunks following the data chunk.
func handMadeCAF(frames: Int, after: [UInt8]) -> [UInt8] {
    let desc = cafChunk("desc", be64(44100.0.bitPattern) + Array("lpcm".utf8) + be32(0) + be32(2) + be32(1) + be32(1) + be32(16))
    let data = cafChunk("data", be32(0) + (0..<frames).flatMap { be16($0 * 7) })
    return Array("caff".utf8) + [0, 1, 0, 0] + desc + data + after
}

/// A CAF marker: type, frame, id, no SMPTE time, all channels.
func cafMarker(type: String?, frame: Double, id: Int) -> [UInt8] {
    (type.map { Array($0.utf8) } ?? be32(0)) + be64(frame.bitPattern) + be32(id) + [0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0] + be32(0)
}

@Suite("AIFF and CAF markers and loops", .serialized)
final class ContainerMarkerTests {
    /// Removed with its contents when the suite's instance goes away (after each test).
    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder(prefix: "sonora-marks")
    }

    func path(_ name: String) -> String { folder.path(name) }

    func write(_ bytes: [UInt8], _ name: String) throws -> String {
        let file = path(name)
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        return file
    }

    static let markers = [AudioFileMarker(id: 1, frame: 100, name: "verse"), AudioFileMarker(id: 7, frame: 900, name: "chorus ♪")]

    @Test(arguments: [
        ("aiff", AudioFileType.aiff, StreamFormat.linearPCM(sampleRate: 44100, channels: 1, sample: .int16, bigEndian: true), 1000),
        // 3-byte mono samples and an odd frame count: SSND ends on an odd byte, so the chunks need a pad byte first.
        ("odd.aiff", .aiff, .linearPCM(sampleRate: 44100, channels: 1, sample: .int24, bigEndian: true), 1001),
        ("aifc", .aifc, .linearPCM(sampleRate: 48000, channels: 2, sample: .float32, bigEndian: true), 1000),
        ("caf", .caf, .linearPCM(sampleRate: 44100, channels: 2, sample: .int16), 1000),
        ("ima4.caf", .caf, .appleIMA4(sampleRate: 44100, channels: 1), 1000),
        ("ima4.aifc", .aifc, .appleIMA4(sampleRate: 44100, channels: 1), 1024),
    ])
    func markersAndLoopsSurviveAWriteAndRead(case: (name: String, type: AudioFileType, format: StreamFormat, frames: Int)) throws {
        #expect(`case`.format.validationProblems.isEmpty)
        let target = path("marked.\(`case`.name)")
        let file = try AudioFile.create(target, type: `case`.type, format: `case`.format)
        let loops = [AudioFileLoop(mode: .forward, start: 10, end: 500), AudioFileLoop(mode: .alternating, start: 600, end: 990)]
        try file.setMarkers(Self.markers)
        let channels = Int(`case`.format.channelsPerFrame)
        let buffers = try OwnedAudioBufferList(channelCount: channels, frameCapacity: `case`.frames)
        for channel in 0..<channels { for frame in 0..<`case`.frames { buffers.list[channel][frame] = 0.25 * sin(Float(frame) * 2 * .pi / 200) } }
        try file.writeFrames(from: buffers.list)
        try file.setLoops(loops)  // after the audio: the chunks are added on close
        try file.close()

        let reread = try AudioFile.open(target)
        #expect(reread.markers == Self.markers)
        #expect(reread.loops == loops)
        #expect(reread.frameCount == `case`.frames)
        let back = try OwnedAudioBufferList(channelCount: channels, frameCapacity: `case`.frames)
        #expect(try reread.readFrames(into: back.list) == `case`.frames)
        let squaredError = (0..<`case`.frames).map { pow(back.list[0][$0] - buffers.list[0][$0], 2) }.reduce(0, +)
        let rmsError = (squaredError / Float(`case`.frames)).squareRoot()
        #expect(rmsError < (`case`.format.formatID == .appleIMA4 ? 0.01 : 1e-4), "the audio survived the appended chunks")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: target)))
        if `case`.type != .caf {
            // The FORM size covers exactly the file, and every chunk starts on an even offset.
            let formSize = bytes[4..<8].reduce(0) { $0 << 8 | Int($1) }
            #expect(formSize + 8 == bytes.count && bytes.count % 2 == 0)
        }
        try reread.close()
        // sox checks the container sizes (FORM size, chunk walk) and counts the same frames
        // (sox reads neither IMA4 nor the AIFC 'in24' libsndfile writes for 24-bit AIFF).
        // The stream parser reads the same audio bytes past the appended chunks.
        #expect(parse(bytes, pieces: [7, 1, 300]).error == nil)
        if let sox = soxPath, `case`.format.formatID != .appleIMA4, `case`.format.bitsPerChannel != 24 {
            let outcome = try CLIRunner(executable: sox).run(["--i", "-s", target])
            let output = outcome.stdout + outcome.stderr
            #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) == "\(`case`.frames)", "sox: \(output)")
        }
    }

    @Test func aiffMarkersAndLoopsFromAnotherWriterAreRead() throws {
        let extra = iffChunk("MARK", markBody([(1, 3, "start"), (2, 10, "beg"), (3, 40, "end"), (4, 50, "odd")]))
            + iffChunk("INST", instBody(sustain: (1, 2, 3), release: (2, 4, 2)))
        let file = try AudioFile.open(try write(handMadeAIFF(frames: 64, extra: extra), "other.aiff"))
        #expect(file.frameCount == 64)
        // Markers used by loops are reported as the loops; the release loop runs 50→10, so AIFF ignores it.
        #expect(file.loops == [AudioFileLoop(mode: .forward, start: 10, end: 40)])
        #expect(file.markers == [AudioFileMarker(id: 1, frame: 3, name: "start"), AudioFileMarker(id: 4, frame: 50, name: "odd")])
    }

    @Test func cafMarkersRegionsAndNamesFromAnotherWriterAreRead() throws {
        var mark = be32(0) + be32(2)
        mark += cafMarker(type: nil, frame: 5, id: 3) + cafMarker(type: nil, frame: 20, id: 9)
        var regn = be32(0) + be32(2)
        regn += be32(1) + be32(1 | 4) + be32(2) + cafMarker(type: "rbeg", frame: 8, id: 0) + cafMarker(type: "rend", frame: 30, id: 0)
        regn += be32(2) + be32(2) + be32(2) + cafMarker(type: "rbeg", frame: 1, id: 0) + cafMarker(type: "rend", frame: 2, id: 0)  // not looping
        let strings = Array("three\0nine\0".utf8)
        let strg = be32(2) + be32(3) + be64(0) + be32(9) + be64(6) + strings
        let file = try AudioFile.open(try write(handMadeCAF(frames: 64, after: cafChunk("mark", mark) + cafChunk("regn", regn) + cafChunk("strg", strg)), "other.caf"))
        #expect(file.frameCount == 64)
        #expect(file.markers == [AudioFileMarker(id: 3, frame: 5, name: "three"), AudioFileMarker(id: 9, frame: 20, name: "nine")])
        #expect(file.loops == [AudioFileLoop(mode: .backward, start: 8, end: 30)])
    }

    @Test(arguments: [
        ("count beyond the chunk", iffChunk("MARK", be16(5) + Array(markBody([(1, 3, "a")]).dropFirst(2))), "truncated"),
        ("name beyond the chunk", iffChunk("MARK", be16(1) + be16(1) + be32(3) + [200, 65, 65]), "truncated"),
        ("loop to a missing marker", iffChunk("MARK", markBody([(1, 3, "a")])) + iffChunk("INST", instBody(sustain: (1, 1, 6))), "6"),
        ("unknown play mode", iffChunk("MARK", markBody([(1, 3, "a"), (2, 9, "b")])) + iffChunk("INST", instBody(sustain: (9, 1, 2))), "play mode 9"),
        ("short INST", iffChunk("INST", [60, 0, 0]), "truncated"),
    ])
    func lyingAIFFMarkerChunksAreErrorsNamingTheFile(case: (name: String, extra: [UInt8], problem: String)) throws {
        let file = try write(handMadeAIFF(frames: 16, extra: `case`.extra), "lying.aiff")
        let error = #expect(throws: AudioError.self) { try AudioFile.open(file) }
        #expect(error?.message.contains(file) == true, "\(String(describing: error))")
        // libsndfile parses MARK too and rejects some lies first ('dta?'); the rest are Sonora's to name.
        if error?.code != .invalidFileData {
            #expect(error?.code == .invalidChunk && error?.message.contains(`case`.problem) == true, "\(String(describing: error))")
        }
    }

    @Test func markerChunksCutOffByTheEndOfTheFileAreErrors() throws {
        // A MARK chunk after SSND claiming more bytes than the file has (a file cut short).
        var bytes = handMadeAIFF(frames: 16, extra: [], after: Array("MARK".utf8) + be32(400) + be16(3))
        let aiff = try write(bytes, "cut.aiff")
        let error = #expect(throws: AudioError.self) { try AudioFile.open(aiff) }
        #expect(error?.message.contains(aiff) == true && error?.message.contains("ends first") == true, "\(String(describing: error))")
        // CAF: a string table pointing past its chunk, and a marker at a NaN frame.
        let strg = cafChunk("strg", be32(1) + be32(1) + be64(99) + Array("x\0".utf8))
        let caf = try write(handMadeCAF(frames: 8, after: strg), "strg.caf")
        #expect(throws: AudioError.self) { try AudioFile.open(caf) }
        bytes = handMadeCAF(frames: 8, after: cafChunk("mark", be32(0) + be32(1) + cafMarker(type: nil, frame: .nan, id: 1)))
        let nan = try write(bytes, "nan.caf")
        let nanError = #expect(throws: AudioError.self) { try AudioFile.open(nan) }
        #expect(nanError?.code == .invalidChunk && nanError?.message.contains(nan) == true)
    }

    @Test func whatAIFFAndCAFCannotHoldIsRefusedAndNothingIsLeftBehind() throws {
        let target = path("refused.aiff")
        let file = try AudioFile.create(target, type: .aiff, format: .linearPCM(sampleRate: 8000, channels: 1, sample: .int16, bigEndian: true))
        #expect(throws: AudioError.self) { try file.setMarkers([AudioFileMarker(id: 0, frame: 1)]) }
        #expect(throws: AudioError.self) { try file.setMarkers([AudioFileMarker(id: 40000, frame: 1)]) }
        #expect(throws: AudioError.self) { try file.setLoops([AudioFileLoop(mode: .backward, start: 1, end: 2)]) }
        #expect(throws: AudioError.self) { try file.setLoops([AudioFileLoop(start: 1, end: 2, count: 3)]) }
        #expect(throws: AudioError.self) { try file.setLoops(Array(repeating: AudioFileLoop(start: 1, end: 2), count: 3)) }
        try file.close()
        let caf = try AudioFile.create(path("refused.caf"), type: .caf, format: .linearPCM(sampleRate: 8000, channels: 1, sample: .int16))
        #expect(throws: AudioError.self) { try caf.setMarkers([AudioFileMarker(id: 1, frame: 1), AudioFileMarker(id: 1, frame: 2)]) }
        #expect(throws: AudioError.self) { try caf.setLoops([AudioFileLoop(mode: .none, start: 1, end: 2)]) }
        try caf.close()
        // An opened file is not being created: its markers are read-only.
        let reopened = try AudioFile.open(target)
        #expect(throws: AudioError.self) { try reopened.setMarkers(Self.markers) }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains("partial") }
        #expect(leftovers.isEmpty)
    }

    @Test func theStreamParserSkipsMarkerChunksBeforeAndAfterTheAudio() throws {
        let extra = iffChunk("MARK", markBody([(1, 3, "start"), (2, 10, "b"), (3, 40, "e")])) + iffChunk("INST", instBody(sustain: (1, 2, 3)))
        let trailing = iffChunk("MARK", markBody([(5, 1, "late")]))
        let expected = (0..<64).flatMap { be16($0 * 7) }
        for bytes in [handMadeAIFF(frames: 64, extra: extra), handMadeAIFF(frames: 64, extra: [], after: trailing + extra)] {
            for pieces in [[bytes.count], [1], [3, 7, 1]] {
                let record = parse(bytes, pieces: pieces)
                #expect(record.error == nil && record.packets == expected)
            }
        }
        let caf = handMadeCAF(frames: 64, after: cafChunk("mark", be32(0) + be32(1) + cafMarker(type: nil, frame: 5, id: 3)))
        for pieces in [[caf.count], [1], [5, 2]] {
            let record = parse(caf, pieces: pieces)
            #expect(record.error == nil && record.packets == expected)
        }
        // And a file Sonora wrote with markers appended after its audio.
        let target = path("stream.aiff")
        let file = try AudioFile.create(target, type: .aiff, format: .linearPCM(sampleRate: 8000, channels: 1, sample: .int16, bigEndian: true))
        let buffers = try OwnedAudioBufferList(channelCount: 1, frameCapacity: 33)
        try file.writeFrames(from: buffers.list)
        try file.setMarkers(Self.markers)
        try file.close()
        let record = parse([UInt8](try Data(contentsOf: URL(fileURLWithPath: target))), pieces: [1])
        #expect(record.error == nil && record.packets == [UInt8](repeating: 0, count: 66))
    }

    @Test func mutatedMarkerChunksGiveErrorsNamingTheFileNeverCrashes() throws {
        let aiffMarks = iffChunk("MARK", markBody([(1, 3, "start"), (2, 10, "beg"), (3, 40, "end")])) + iffChunk("INST", instBody(sustain: (1, 2, 3)))
        let aiff = handMadeAIFF(frames: 64, extra: [], after: aiffMarks)
        let mark = be32(0) + be32(1) + cafMarker(type: nil, frame: 5, id: 3)
        let regn = be32(0) + be32(1) + be32(1) + be32(3) + be32(2) + cafMarker(type: "rbeg", frame: 8, id: 0) + cafMarker(type: "rend", frame: 30, id: 0)
        let strg = be32(1) + be32(3) + be64(0) + Array("three\0".utf8)
        let caf = handMadeCAF(frames: 64, after: cafChunk("mark", mark) + cafChunk("regn", regn) + cafChunk("strg", strg))
        var generator = SeededGenerator(seed: 0x3A7C)
        var outcomes = (opened: 0, refused: 0)
        for (name, bytes, markersStart) in [("fuzz.aiff", aiff, aiff.count - aiffMarks.count), ("fuzz.caf", caf, 8 + 44 + 12 + 4 + 128)] {
            let target = path(name)
            for round in 0..<600 {
                var mutated = bytes
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    let position = Int.random(in: markersStart..<mutated.count, using: &generator)
                    mutated[position] = round % 3 == 0 ? [0, 0xFF, 0x7F, 0x80].randomElement(using: &generator)! : UInt8.random(in: 0...255, using: &generator)
                }
                if round % 4 == 0 { mutated = Array(mutated.prefix(Int.random(in: markersStart...mutated.count, using: &generator))) }
                try Data(mutated).write(to: URL(fileURLWithPath: target))
                do {
                    let file = try AudioFile.open(target)
                    _ = (file.markers, file.loops)
                    outcomes.opened += 1
                } catch {
                    outcomes.refused += 1
                    #expect(error.message.contains(target), "\(error)")
                }
            }
        }
        #expect(outcomes.opened > 0 && outcomes.refused > 0, "\(outcomes)")
    }
}
