import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// Mutated, truncated, spliced MP3, ADTS, CAF and WAV-MP3 streams fed in random pieces, with
/// seeks in between: every one parses or fails with an AudioError; no crash (the test binary
/// has bounds checks on), no packet outside its buffer, no hang, memory bounded.
/// A short seeded run is part of every test run; `SONORA_FUZZ_ITERATIONS=10000000` (with
/// `SONORA_FUZZ_SEED`) runs long and reports executions and peak memory on stderr.
@Suite("AudioFileStream compressed fuzzing", .serialized)
struct AudioFileStreamCompressedFuzzTests {
    static func seeds() throws -> [[UInt8]] {
        var seeds: [[UInt8]] = []
        for name in CompressedStreamFixtures.fuzzSeeds {
            let bytes = try CompressedStreamFixtures.bytes(name)
            // ffmpeg's CAFs keep their table after the data: whole. Others: a head of the stream is enough.
            seeds.append(name.hasSuffix(".caf") ? bytes : Array(bytes.prefix(12_000)))
        }
        let adts = parseCompressed(try CompressedStreamFixtures.bytes("mono22k.aac"))
        let cookie = adts.magicCookie ?? []
        seeds.append(AppleStyleCAF.make(format: .compressed(.mpeg4AAC, sampleRate: 22050, channels: 1), formatFlags: 2,
                                        cookie: cookie, packets: Array(adts.packets.prefix(24)), priming: 2112, remainder: 10))
        return seeds
    }

    static func mutate(_ seed: [UInt8], _ generator: inout SeededGenerator) -> [UInt8] {
        var bytes = seed
        for _ in 0..<Int.random(in: 1...4, using: &generator) {
            guard !bytes.isEmpty else { break }
            switch Int.random(in: 0..<7, using: &generator) {
            case 0, 1:  // bytes near the start (headers, tags, tables)
                for _ in 0..<Int.random(in: 1...6, using: &generator) {
                    bytes[Int.random(in: 0..<min(bytes.count, 600), using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                }
            case 2:  // anywhere
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] ^= UInt8(1) << UInt8.random(in: 0...7, using: &generator)
            case 3:  // truncation
                bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &generator)))
            case 4:  // a range deleted
                let start = Int.random(in: 0..<bytes.count, using: &generator)
                bytes.removeSubrange(start..<min(bytes.count, start + Int.random(in: 1...600, using: &generator)))
            case 5:  // a range duplicated elsewhere
                let start = Int.random(in: 0..<bytes.count, using: &generator)
                let piece = bytes[start..<min(bytes.count, start + Int.random(in: 1...900, using: &generator))]
                bytes.insert(contentsOf: piece, at: Int.random(in: 0...bytes.count, using: &generator))
            default:  // sync-looking junk or a big number where a size is
                let junk: [UInt8] = [[0xFF, 0xFB, 0x90, 0x64], [0xFF, 0xF1, 0x50, 0x80, 0x00, 0x1F, 0xFC], Array("ID3".utf8) + [4, 0, 0, 0x7F, 0x7F, 0x7F, 0x7F],
                                     [0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], Array("APETAGEX".utf8)].randomElement(using: &generator)!
                let at = Int.random(in: 0...bytes.count, using: &generator)
                if Bool.random(using: &generator) || at + junk.count > bytes.count {
                    bytes.insert(contentsOf: junk, at: at)
                } else {
                    bytes.replaceSubrange(at..<at + junk.count, with: junk)
                }
            }
        }
        return bytes
    }

    /// One execution: parse in random pieces, sometimes seeking. Returns whether it parsed without error.
    @discardableResult
    static func execute(_ bytes: [UInt8], _ generator: inout SeededGenerator) -> Bool {
        let recorder = CompressedParseRecorder(hint: Int.random(in: 0..<8, using: &generator) == 0 ? .mp3 : nil)
        var offset = 0
        var fed = 0
        var seeks = 0
        while offset < bytes.count {
            let size = Int.random(in: 0..<4, using: &generator) == 0 ? 1 : Int.random(in: 1...4096, using: &generator)
            let end = min(bytes.count, offset + size)
            fed += end - offset
            var discontinuity = false
            if seeks < 3, Int.random(in: 0..<24, using: &generator) == 0 {
                seeks += 1
                if let target = try? recorder.stream.seek(toPacket: Int.random(in: 0...400, using: &generator)),
                   target.byteOffset + (recorder.record.dataOffset ?? 0) < bytes.count {
                    offset = max(0, target.byteOffset + (recorder.record.dataOffset ?? 0))
                    discontinuity = true
                }
            }
            let stop = min(bytes.count, max(end, offset + 1))
            if !recorder.feed(bytes[offset..<stop], discontinuity: discontinuity), recorder.record.error != .discontinuityCantRecover { break }
            offset = stop
        }
        let record = recorder.record
        #expect(record.badDescriptions == 0, "a packets call with a description outside its buffer")
        #expect(record.packets.reduce(0) { $0 + $1.count } <= fed + bytes.count * seeks)
        return record.error == nil
    }

    @Test func shortSeededRun() throws {
        let seeds = try Self.seeds()
        var generator = SeededGenerator(seed: 0xC0DEC)
        var outcomes = (parsed: 0, failed: 0)
        for _ in 0..<3000 {
            let mutated = Self.mutate(seeds.randomElement(using: &generator)!, &generator)
            if Self.execute(mutated, &generator) { outcomes.parsed += 1 } else { outcomes.failed += 1 }
        }
        #expect(outcomes.parsed > 0 && outcomes.failed > 0, "\(outcomes)")
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["SONORA_FUZZ_ITERATIONS"] != nil))
    func longRun() throws {
        let environment = ProcessInfo.processInfo.environment
        let iterations = Int(environment["SONORA_FUZZ_ITERATIONS"] ?? "") ?? 10_000_000
        var generator = SeededGenerator(seed: environment["SONORA_FUZZ_SEED"].flatMap(UInt64.init) ?? 0xF022)
        let seeds = try Self.seeds()
        var settled: Int?
        for iteration in 1...iterations {
            Self.execute(Self.mutate(seeds.randomElement(using: &generator)!, &generator), &generator)
            if iteration % 100_000 == 0 || iteration == iterations {
                let memory = Self.memoryKilobytes()
                if iteration == 100_000 { settled = memory.resident }
                FileHandle.standardError.write(Data("AudioFileStream fuzz: \(iteration) executions, RSS \(memory.resident) kB, peak \(memory.peak) kB\n".utf8))
            }
        }
        // Bounded: after the first 100 000 executions the resident set does not keep growing.
        if let settled { #expect(Self.memoryKilobytes().resident < settled + 65_536) }
    }

    static func memoryKilobytes() -> (resident: Int, peak: Int) {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        func field(_ name: String) -> Int {
            for line in status.split(separator: "\n") where line.hasPrefix(name) {
                return Int(line.dropFirst(name.count).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") ?? 0
            }
            return 0
        }
        return (field("VmRSS:"), field("VmHWM:"))
    }
}
