import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// A recording's CAF with its packet table reserved in front of the data
/// (`AudioFile.create(packetTableReserve:)`): after `updateHeader()` the file on disk stays
/// valid while more packets are appended (what a killed recording leaves), and a table that
/// outgrows its room is moved behind the data when the file is finished.
@Suite("CAF packet table reserved before the data", .serialized)
struct ReservedPacketTableTests {
    /// ALAC packets ffmpeg made (the fixture of PacketFileTests), and their source file.
    static func source() throws -> (AudioFile, (bytes: [UInt8], descriptions: [AudioStreamPacketDescription]?)) {
        let input = try AudioFile.open(PacketFileTests.fixtures.path("alac.caf"))
        return (input, try input.readPackets(from: 0, count: input.packetCount!))
    }

    static func rebased(_ descriptions: ArraySlice<AudioStreamPacketDescription>, by offset: Int) -> [AudioStreamPacketDescription] {
        descriptions.map { AudioStreamPacketDescription(startOffset: $0.startOffset - Int64(offset), variableFramesInPacket: $0.variableFramesInPacket, dataByteSize: $0.dataByteSize) }
    }

    @Test("packets appended after an update leave the file as it was at the update; closing finishes it in place")
    func appendsKeepTheUpdatedFileValid() throws {
        let scratch = try TemporaryFolder()
        let (input, packets) = try Self.source()
        let descriptions = try #require(packets.descriptions)
        let half = descriptions.count / 2
        let cut = Int(descriptions[half].startOffset)
        let path = scratch.path("recording.caf")
        let output = try AudioFile.create(path, type: .caf, format: input.dataFormat, magicCookie: input.magicCookie, packetTableReserve: 4096)
        try output.writePackets(Array(packets.bytes[..<cut]), descriptions: Array(descriptions[..<half]))
        try output.updateHeader()
        // More packets, no update: as a recording killed between two updates leaves it.
        try output.writePackets(Array(packets.bytes[cut...]), descriptions: Self.rebased(descriptions[half...], by: cut))
        let partial = try AudioFile.open(AudioFile.partialPath(for: path))
        #expect(partial.packetCount == half)
        #expect(try partial.readPackets(from: 0, count: half).bytes[...] == packets.bytes[..<cut])
        #expect(partial.frameCount == half * Int(input.dataFormat.framesPerPacket))
        try partial.close()

        try output.setPacketTableInfo(try #require(input.packetTableInfo))
        try output.close()
        let finished = try AudioFile.open(path)
        #expect(finished.packetCount == descriptions.count && finished.packetTableInfo == input.packetTableInfo)
        #expect(try finished.readPackets(from: 0, count: descriptions.count).bytes == packets.bytes)
        #expect(try PacketFileTests.probedPackets(path).count == descriptions.count)
        let decode = try PacketFileTests.ffmpeg.run(["-v", "error", "-i", path, "-f", "null", "-"])
        #expect(decode.status == 0 && decode.stderr.isEmpty, "\(decode.stderr)")
    }

    @Test("a table that outgrows its room: updates cover the packets that fit; the finished file has them all")
    func outgrownTableMovesBehindTheData() throws {
        let scratch = try TemporaryFolder()
        let (input, packets) = try Self.source()
        let descriptions = try #require(packets.descriptions)
        let path = scratch.path("long.caf")
        // Room for a few entries only (2 bytes each for these packets).
        let output = try AudioFile.create(path, type: .caf, format: input.dataFormat, magicCookie: input.magicCookie, packetTableReserve: 8)
        try output.writePackets(packets.bytes, descriptions: descriptions)
        try output.updateHeader()
        let partial = try AudioFile.open(AudioFile.partialPath(for: path))
        let covered = try #require(partial.packetCount)
        #expect(covered > 0 && covered < descriptions.count)
        try partial.close()
        try output.close()
        let finished = try AudioFile.open(path)
        #expect(finished.packetCount == descriptions.count)
        #expect(try finished.readPackets(from: 0, count: descriptions.count).bytes == packets.bytes)
        #expect(try PacketFileTests.probedPackets(path).count == descriptions.count)
    }
}
