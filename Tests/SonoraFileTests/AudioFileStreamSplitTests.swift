import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// Any split of a compressed stream gives the whole-file parse: the same properties, the
/// same packet bytes and the same per-packet descriptions — tags, Xing frames and CAF
/// packet tables split anywhere included.
@Suite("AudioFileStream compressed splits", .serialized)
struct AudioFileStreamSplitTests {
    @Test(arguments: CompressedStreamFixtures.names)
    func randomPiecesGiveTheWholeFileParse(name: String) throws {
        let bytes = try CompressedStreamFixtures.bytes(name)
        let whole = parseCompressed(bytes)
        #expect(whole.error == nil && !whole.packets.isEmpty)
        var generator = SeededGenerator(seed: 0xF11E_5EED &+ UInt64(name.utf8.reduce(0) { $0 &* 31 &+ Int($1) } & 0xFFFF))
        for round in 0..<12 {
            // Mostly small pieces, some up to 4096; one round of single bytes.
            let split = parseCompressed(bytes) {
                round == 0 ? 1 : (Bool.random(using: &generator) ? Int.random(in: 1...16, using: &generator) : Int.random(in: 1...4096, using: &generator))
            }
            #expect(split == whole, "\(name), round \(round): \(split.packets.count) packets vs \(whole.packets.count), \(split.properties.count) properties vs \(whole.properties.count)")
            if split != whole { break }
        }
    }

    /// ID3v1 and APE tags after the frames, a large ID3v2 before them with false syncs in it,
    /// and junk holding valid-looking headers between frames: none of it is a packet.
    @Test func tagsAndJunkAreNotPackets() throws {
        let bytes = try CompressedStreamFixtures.bytes("vbr.mp3")
        let clean = parseCompressed(bytes)
        let offset = try #require(clean.dataOffset)
        var generator = SeededGenerator(seed: 7)

        // A 300 kB ID3v2.3 tag full of 0xFF 0xFB frame-sync-looking bytes, in front of the stream's own tag.
        let tagBody = (0..<300_000).map { index in index % 417 == 0 ? UInt8(0xFF) : (index % 417 == 1 ? 0xFB : UInt8.random(in: 0...255, using: &generator)) }
        let size = tagBody.count
        let id3: [UInt8] = Array("ID3".utf8) + [3, 0, 0, UInt8(size >> 21 & 0x7F), UInt8(size >> 14 & 0x7F), UInt8(size >> 7 & 0x7F), UInt8(size & 0x7F)] + tagBody
        // An APE tag (header, one item, footer) and an ID3v1 tag after the frames.
        func ape(isHeader: Bool, size: Int) -> [UInt8] {
            Array("APETAGEX".utf8) + le32(2000) + le32(size) + le32(1) + le32(isHeader ? 0xA000_0000 : 0x8000_0000) + [UInt8](repeating: 0, count: 8)
        }
        let item = le32(6) + le32(0) + Array("Title".utf8) + [0] + Array("Sonora".utf8)
        let apeTag = ape(isHeader: true, size: item.count + 32) + item + ape(isHeader: false, size: item.count + 32)
        let id3v1 = Array("TAG".utf8) + [UInt8](repeating: 0xFF, count: 125)
        let tagged = id3 + bytes + apeTag + id3v1
        let parsed = parseCompressed(tagged)
        #expect(parsed.error == nil)
        #expect(parsed.packets == clean.packets)
        #expect(parsed.dataOffset == offset + id3.count)
        var pieces = SeededGenerator(seed: 8)
        #expect(parseCompressed(tagged) { Int.random(in: 1...700, using: &pieces) } == parsed)

        // Junk with a header that is valid but whose "next frame" disagrees, spliced between two frames.
        let lengths = clean.packets.map(\.count)
        let cut = offset + lengths[0..<10].reduce(0, +)
        // (Junk right where the next frame should start and holding an agreeing header is trusted, as
        // ffmpeg's parser trusts it once in sync; here the junk breaks the sync first.)
        let falseSync: [UInt8] = [0, 0, 0, 0x12, 0xFF, 0xFB, 0x90, 0x64] + [UInt8](repeating: 0x55, count: 40) + [0xFF, 0xF3, 0x40]
        let spliced = Array(bytes[..<cut]) + falseSync + Array(bytes[cut...])
        let resynced = parseCompressed(spliced)
        #expect(resynced.packets == clean.packets)
    }

    /// A stream joined mid-frame (a radio stream): with the MP3 hint the junk before the first
    /// sync is skipped and the packets are the rest of the stream's; without a hint it is not a stream.
    @Test func joinedMidFrameWithAHint() throws {
        let bytes = try CompressedStreamFixtures.bytes("sox.mp3")
        let whole = parseCompressed(bytes)
        let joined = Array(bytes[5000...])
        let parsed = parseCompressed(joined, hint: .mp3) { 333 }
        #expect(parsed.error == nil && parsed.properties.first == .fileFormat(.mp3))
        #expect(!parsed.packets.isEmpty && Array(whole.packets.suffix(parsed.packets.count)) == parsed.packets)
        #expect(whole.packets.count - parsed.packets.count <= 5000 / 417 + 1)
        if joined.first != 0xFF {
            #expect(parseCompressed(joined).error == .unsupportedFileType)
        }
        // ADTS behind an ID3v2 tag is still ADTS.
        let adts = try CompressedStreamFixtures.bytes("mono22k.aac")
        let id3: [UInt8] = Array("ID3".utf8) + [4, 0, 0, 0, 0, 1, 0] + [UInt8](repeating: 0x41, count: 128)
        let tagged = parseCompressed(id3 + adts) { 50 }
        #expect(tagged.properties.first == .fileFormat(.adts))
        #expect(tagged.packets == parseCompressed(adts).packets)
    }

    /// ADTS frames with a CRC have 9-byte headers; the packet is what follows.
    @Test func adtsWithCRCDropsNineHeaderBytes() throws {
        let bytes = try CompressedStreamFixtures.bytes("mono22k.aac")
        let clean = parseCompressed(bytes)
        // Rewrite each frame with protection_absent = 0 and a 2-byte CRC field (its value is not checked by parsers).
        var rebuilt: [UInt8] = []
        var at = 0
        while at + 7 <= bytes.count {
            let length = Int(bytes[at + 3] & 3) << 11 | Int(bytes[at + 4]) << 3 | Int(bytes[at + 5] >> 5)
            var header = Array(bytes[at..<at + 7])
            header[1] &= 0xFE
            let newLength = length + 2
            header[3] = header[3] & 0xFC | UInt8(newLength >> 11)
            header[4] = UInt8(newLength >> 3 & 0xFF)
            header[5] = header[5] & 0x1F | UInt8(newLength & 7) << 5
            rebuilt += header + [0xAB, 0xCD] + bytes[at + 7..<at + length]
            at += length
        }
        let parsed = parseCompressed(rebuilt)
        #expect(parsed.error == nil)
        #expect(parsed.packets == clean.packets)
    }
}

func le32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
