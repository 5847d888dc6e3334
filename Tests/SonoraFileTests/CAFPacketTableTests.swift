import Foundation
import SonoraCore
@testable import SonoraFile
import SonoraTestSupport
import Testing

private let ffmpegTool = ["/usr/bin/ffmpeg", "/usr/local/bin/ffmpeg"].first { FileManager.default.isExecutableFile(atPath: $0) }
private let ffprobeTool = ["/usr/bin/ffprobe", "/usr/local/bin/ffprobe"].first { FileManager.default.isExecutableFile(atPath: $0) }

/// The body of the first CAF chunk of type `id` (a test's own walker, independent of Sonora's).
private func cafChunkBody(_ id: String, in bytes: [UInt8]) -> [UInt8]? {
    var at = 8
    while at + 12 <= bytes.count {
        let size = bytes[at + 4..<at + 12].reduce(0) { $0 << 8 | Int($1) }
        if Array(bytes[at..<at + 4]) == Array(id.utf8) { return Array(bytes[at + 12..<min(bytes.count, at + 12 + size)]) }
        at += 12 + size
    }
    return nil
}

@Suite("CAF packet table (pakt)")
struct CAFPacketTableTests {
    let alac = StreamFormat.compressed(.appleLossless, sampleRate: 44100, channels: 2)

    @Test(.enabled(if: ffmpegTool != nil && ffprobeTool != nil, "ffmpeg is not installed"))
    func readsFFmpegsTableAsFFprobeSeesItAndWritesTheSameBytes() throws {
        try withTemporaryFolder { folder in
            let path = folder.path("sine.caf")
            try run(ffmpegTool!, ["-v", "error", "-f", "lavfi", "-i", "sine=f=440:d=1:r=44100", "-ac", "2", "-c:a", "alac", path])
            let body = try #require(cafChunkBody("pakt", in: [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))))
            var format = alac
            format.framesPerPacket = 4096
            let table = try CAFPacketTable.decode(body, format: format)
            let probe = Process()
            probe.executableURL = URL(fileURLWithPath: ffprobeTool!)
            probe.arguments = ["-v", "error", "-select_streams", "a", "-show_entries", "packet=size", "-of", "csv=p=0", path]
            let pipe = Pipe()
            probe.standardOutput = pipe
            try probe.run()
            let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            probe.waitUntilExit()
            let sizes = text.split(separator: "\n").compactMap { Int($0) }
            #expect(sizes.count == 11)
            #expect(table.packetSizes == sizes)
            #expect(table.packetFrames.allSatisfy { $0 == 4096 })
            #expect(table.encoded(format: format) == body)
        }
    }

    @Test func variableFramesAndSizesRoundTrip() throws {
        var format = StreamFormat.compressed(.opus, sampleRate: 48000, channels: 1)
        format.framesPerPacket = 0
        let table = CAFPacketTable(
            info: AudioFilePacketTableInfo(validFrames: 5000, primingFrames: 312, remainderFrames: 88),
            packetSizes: [3, 127, 128, 16383, 16384, 2_000_000], packetFrames: [960, 480, 960, 2880, 120, 0])
        let bytes = table.encoded(format: format)
        #expect(try CAFPacketTable.decode(bytes, format: format) == table)
    }

    @Test func hostileTablesAreErrorsNotCrashes() throws {
        var format = alac
        format.framesPerPacket = 4096
        // Too short for the header.
        #expect(throws: AudioError.self) { try CAFPacketTable.decode([0, 1, 2], format: format) }
        // 2^62 packets announced with 1 byte of entries: refused before any allocation.
        var huge: [UInt8] = [0x40, 0, 0, 0, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 16) + [5]
        #expect(throws: AudioError.self) { try CAFPacketTable.decode(huge, format: format) }
        // A constant-size format (no entries to bound it) announcing 2^40 packets.
        var ima = StreamFormat.appleIMA4(sampleRate: 48000, channels: 1)
        ima.framesPerPacket = 64
        let constant: [UInt8] = [0, 0, 0x01, 0, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 16)
        #expect(throws: AudioError.self) { try CAFPacketTable.decode(constant, format: ima) }
        // Negative priming.
        huge = [0, 0, 0, 0, 0, 0, 0, 1] + [UInt8](repeating: 0, count: 8) + [0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 5]
        #expect(throws: AudioError.self) { try CAFPacketTable.decode(huge, format: format) }
        // An entry that never ends (all continuation bits).
        let endless: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 1] + [UInt8](repeating: 0, count: 16) + [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
        #expect(throws: AudioError.self) { try CAFPacketTable.decode(endless, format: format) }
        // A valid count near Int64.max (adding the priming would overflow).
        let overflow: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xF0] + [0, 0, 0x10, 0, 0, 0, 0x10, 0] + [5]
        #expect(throws: AudioError.self) { try CAFPacketTable.decode(overflow, format: format) }
        // More valid frames than the packets hold.
        let tooMany: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x20, 0] + [0, 0, 0, 0, 0, 0, 0, 0] + [5]
        do {
            _ = try CAFPacketTable.decode(tooMany, format: format)
            Issue.record("8192 valid frames in one 4096-frame packet was accepted")
        } catch {
            #expect(error.code == .invalidChunk)
            #expect(error.message.contains("exceed"))
        }
    }
}
