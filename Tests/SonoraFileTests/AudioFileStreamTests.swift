import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// Files written by sox, kept as the parser's corpus (and its fuzzing seeds).
let corpusDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Corpus")
let corpusFiles = ["wav16.wav", "wavfloat.wav", "ext24.wav", "aiff16.aiff", "aiff24.aiff", "aifc-sowt.aifc", "caf16.caf"]

/// Everything a parse reports, for comparing parses.
struct ParseRecord: Equatable {
    var properties: [AudioFileStream.Property] = []
    var packets: [UInt8] = []
    var calls = 0
    var error: AudioError.Code?
}

/// Parses `bytes` fed in the given piece sizes (cycled), recording everything.
func parse(_ bytes: [UInt8], pieces: [Int]) -> ParseRecord {
    var record = ParseRecord()
    var packetSize = 0
    var misaligned = false
    let stream = AudioFileStream(
        propertyListener: { property in
            record.properties.append(property)
            if case .dataFormat(let format) = property { packetSize = Int(format.bytesPerPacket) }
        },
        packetsHandler: { data, descriptions in
            record.packets += data
            record.calls += 1
            if descriptions != nil || packetSize == 0 || data.count % packetSize != 0 { misaligned = true }
        })
    var offset = 0
    var index = 0
    while offset < bytes.count {
        let size = max(1, pieces[index % pieces.count])
        let end = min(bytes.count, offset + size)
        do {
            try stream.parse(Array(bytes[offset..<end]))
        } catch {
            record.error = error.code
            break
        }
        offset = end
        index += 1
    }
    if misaligned { record.error = .invalidPacketOffset }
    return record
}

@Suite("AudioFileStream")
struct AudioFileStreamTests {
    @Test(arguments: corpusFiles)
    func parsesSoxFilesIntoTheirFormatAndData(name: String) throws {
        let bytes = [UInt8](try Data(contentsOf: corpusDirectory.appendingPathComponent(name)))
        let record = parse(bytes, pieces: [bytes.count])
        #expect(record.error == nil)
        guard record.properties.count == 6,
              case .dataFormat(let format) = record.properties[1],
              case .dataOffset(let offset) = record.properties[2],
              case .audioDataByteCount(let count?) = record.properties[3]
        else {
            Issue.record("\(name): properties \(record.properties)"); return
        }
        #expect(record.properties.last == .readyToProducePackets)
        // The packets are exactly the file's audio data.
        #expect(record.packets == Array(bytes[offset..<offset + count]))
        // And the format says what AudioFile (libsndfile) says it is.
        let file = try AudioFile.open(corpusDirectory.appendingPathComponent(name).path)
        #expect(format == file.dataFormat, "\(name): stream \(format), file \(file.dataFormat)")
        #expect(count / Int(format.bytesPerFrame) == file.frameCount)
        if case .fileFormat(let type) = record.properties[0] {
            #expect(type == file.fileType || (type == .aifc && file.fileType == .aiff))
        }
    }

    @Test(arguments: corpusFiles)
    func everySplitGivesTheSamePropertiesAndPackets(name: String) throws {
        let bytes = [UInt8](try Data(contentsOf: corpusDirectory.appendingPathComponent(name)))
        let whole = parse(bytes, pieces: [bytes.count])
        #expect(parse(bytes, pieces: [1]) == ParseRecord(properties: whole.properties, packets: whole.packets, calls: parse(bytes, pieces: [1]).calls))
        var generator = SeededGenerator(seed: 42)
        for _ in 0..<200 {
            let pieces = (0..<8).map { _ in Int.random(in: 1...97, using: &generator) }
            let split = parse(bytes, pieces: pieces)
            #expect(split.error == nil)
            #expect(split.properties == whole.properties)
            #expect(split.packets == whole.packets)
        }
    }

    @Test func malformedStreamsGiveErrorsNotCrashes() throws {
        let wav = [UInt8](try Data(contentsOf: corpusDirectory.appendingPathComponent("wav16.wav")))
        #expect(parse(Array("OggS not a wav file".utf8), pieces: [4]).error == .unsupportedFileType)
        // A data chunk before the fmt chunk.
        var swapped = Array(wav[0..<12]) + Array("data".utf8) + [4, 0, 0, 0, 1, 2, 3, 4]
        swapped += Array(wav[12...])
        #expect(parse(swapped, pieces: [5]).error == .invalidFileData)
        // A chunk before the data claiming gigabytes.
        var huge = wav
        huge[16] = 0xFF; huge[17] = 0xFF; huge[18] = 0xFF; huge[19] = 0x7F
        #expect(parse(huge, pieces: [3]).error == .invalidChunk)
        // A fmt chunk whose block align contradicts its format.
        var lying = wav
        lying[32] = 7
        #expect(parse(lying, pieces: [64]).error == .invalidChunk)
        // A truncated header is simply incomplete: no properties beyond what was seen, no error.
        let truncated = parse(Array(wav[0..<30]), pieces: [7])
        #expect(truncated.error == nil && !truncated.properties.contains(.readyToProducePackets))
        // Once failed, the stream keeps saying so.
        let stream = AudioFileStream(propertyListener: { _ in }, packetsHandler: { _, _ in })
        #expect(throws: AudioError.self) { try stream.parse(Array("junkjunkjunkjunk".utf8)) }
        #expect(throws: AudioError.self) { try stream.parse(wav) }
    }

    /// Thousands of mutations and truncations of the corpus, fed in random pieces:
    /// every one either parses or fails with an AudioError — none crashes, none
    /// reads past its input (the test binary runs with bounds checks on).
    @Test func mutatedAndTruncatedStreamsNeverCrash() throws {
        // Seeded, so a failure reproduces; SONORA_FUZZ_SEED and SONORA_FUZZ_ROUNDS explore further.
        let environment = ProcessInfo.processInfo.environment
        var generator = SeededGenerator(seed: environment["SONORA_FUZZ_SEED"].flatMap(UInt64.init) ?? 0x5EED)
        let rounds = environment["SONORA_FUZZ_ROUNDS"].flatMap(Int.init) ?? 400
        var outcomes = (parsed: 0, failed: 0)
        for name in corpusFiles {
            let bytes = [UInt8](try Data(contentsOf: corpusDirectory.appendingPathComponent(name)))
            for _ in 0..<rounds {
                var mutated = bytes
                for _ in 0..<Int.random(in: 1...6, using: &generator) {
                    let position = Int.random(in: 0..<min(mutated.count, 96), using: &generator)
                    mutated[position] = UInt8.random(in: 0...255, using: &generator)
                }
                if Bool.random(using: &generator) {
                    mutated = Array(mutated.prefix(Int.random(in: 0...mutated.count, using: &generator)))
                }
                let record = parse(mutated, pieces: [Int.random(in: 1...64, using: &generator), Int.random(in: 1...9, using: &generator)])
                if record.error == nil { outcomes.parsed += 1 } else { outcomes.failed += 1 }
                #expect(record.error != .invalidPacketOffset, "\(name): a packet call was not whole packets")
            }
        }
        #expect(outcomes.parsed > 0 && outcomes.failed > 0)
    }
}
