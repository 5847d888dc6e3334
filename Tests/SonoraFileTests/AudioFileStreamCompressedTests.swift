import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import Testing

/// Core Audio's order of AudioFileStream properties; a parse announces a subsequence of it.
func coreAudioRank(_ property: AudioFileStream.Property) -> Int {
    switch property {
    case .fileFormat: 0
    case .dataFormat: 1
    case .formatList: 2
    case .magicCookieData: 3
    case .packetTableInfo: 4
    case .dataOffset: 5
    case .audioDataByteCount: 6
    case .audioDataPacketCount: 7
    case .bitRate: 8
    case .maximumPacketSize, .packetSizeUpperBound: 9
    case .readyToProducePackets: 10
    }
}

/// Real MP3, ADTS, CAF (ALAC, FLAC, Opus) and WAV-MP3 files from ffmpeg and sox, parsed by
/// AudioFileStream and compared with ffprobe's packets: the independent reference for where
/// each packet starts and how long it is.
@Suite("AudioFileStream compressed streams", .serialized)
struct AudioFileStreamCompressedTests {
    @Test(arguments: CompressedStreamFixtures.names)
    func packetsAreFFprobesPackets(name: String) throws {
        let bytes = try CompressedStreamFixtures.bytes(name)
        let parsed = parseCompressed(bytes)
        #expect(parsed.error == nil, "\(name): \(parsed.errorMessage ?? "")")
        #expect(parsed.badDescriptions == 0)
        let probed = try CompressedStreamFixtures.probedPackets(name)
        try #require(!probed.isEmpty)
        #expect(parsed.packets.count == probed.count, "\(name): \(parsed.packets.count) packets, ffprobe \(probed.count)")
        let isADTS = name.hasSuffix(".aac")
        for (index, (packet, reference)) in zip(parsed.packets, probed).enumerated() {
            // ffmpeg's ADTS packets keep their 7-byte header (these files have no CRC); Core Audio's do not.
            let start = reference.position + (isADTS ? 7 : 0)
            let expected = Array(bytes[start..<reference.position + reference.size])
            if packet != expected {
                Issue.record("\(name): packet \(index) differs (\(packet.count) bytes, ffprobe \(expected.count) at \(reference.position))")
                break
            }
        }
        // Properties: once each, in Core Audio's order, ending with ReadyToProducePackets.
        let ranks = parsed.properties.map(coreAudioRank)
        #expect(ranks == ranks.sorted() && Set(ranks).count == ranks.count, "\(name): \(parsed.properties)")
        #expect(parsed.properties.last == .readyToProducePackets)
        #expect(parsed.dataOffset == probed.first?.position, "\(name): the data offset is the first packet's")
    }

    @Test func formatsCookiesAndFileTypesAreTheContainers() throws {
        func properties(_ name: String) throws -> [AudioFileStream.Property] { parseCompressed(try CompressedStreamFixtures.bytes(name)).properties }
        let mp3 = try properties("cbr.mp3")
        #expect(mp3.first == .fileFormat(.mp3))
        #expect(mp3.contains(.dataFormat(.compressed(.mpegLayer3, sampleRate: 44100, channels: 2))))
        #expect(mp3.contains(.bitRate(128_000)))
        #expect(mp3.contains(.packetSizeUpperBound(1045)))  // 320 kbit/s at 44.1 kHz, padded
        var lowRate = StreamFormat.compressed(.mpegLayer3, sampleRate: 22050, channels: 1)
        lowRate.framesPerPacket = 576  // MPEG-2 layer III
        #expect(try properties("mono22k.mp3").contains(.dataFormat(lowRate)))
        var eightK = lowRate
        eightK.sampleRate = 8000  // MPEG-2.5
        #expect(try properties("mono8k.mp3").contains(.dataFormat(eightK)))
        var layer2 = StreamFormat.compressed(.mpegLayer3, sampleRate: 44100, channels: 2)
        layer2.formatID = AudioFormatID(rawValue: ".mp2")
        #expect(try properties("layer2.mp2").contains(.dataFormat(layer2)))

        // ADTS: AAC LC, 1024 frames a packet, the cookie an esds ES_Descriptor around the AudioSpecificConfig.
        let aacParse = parseCompressed(try CompressedStreamFixtures.bytes("stereo.aac"))
        let aac = aacParse.properties
        let aacFormat = StreamFormat.compressed(.mpeg4AAC, sampleRate: 44100, channels: 2)
        #expect(aacFormat.framesPerPacket == 1024)
        #expect(Array(aac.prefix(3)) == [.fileFormat(.adts), .dataFormat(aacFormat), .formatList([aacFormat])])
        let cookie = try #require(aacParse.magicCookie)
        // ES_Descriptor (3) → DecoderConfigDescriptor (4, MPEG-4 audio 0x40, audio stream 0x15) → DecoderSpecificInfo (5).
        #expect(cookie.first == 0x03 && cookie.contains(0x40))
        // AudioSpecificConfig: object type 2 (LC), rate index 4 (44.1 kHz), 2 channels → 0x12 0x10.
        #expect(cookie.suffix(5).prefix(2) == [0x12, 0x10] || cookie.windows(ofCount: 2).contains([0x12, 0x10]))

        let alacParse = parseCompressed(try CompressedStreamFixtures.bytes("alac.caf"))
        let alac = alacParse.properties
        #expect(alac.first == .fileFormat(.caf))
        let alacFormat = try #require(alacParse.dataFormat)
        #expect(alacFormat.formatID == .appleLossless && alacFormat.bytesPerPacket == 0 && alacFormat.framesPerPacket == 4096)
        let alacCookie = try #require(alacParse.magicCookie)
        #expect(alacCookie.count == 48 && String(decoding: alacCookie[4..<8], as: UTF8.self) == "frma")
        #expect(alac.contains(.audioDataPacketCount(33)))
        #expect(alac.contains(where: { if case .maximumPacketSize(let size) = $0 { size > 0 } else { false } }))

        let wav = try properties("mp3.wav")
        #expect(wav.first == .fileFormat(.wave))
        #expect(wav.contains(.bitRate(64_000)))
    }

    @Test(arguments: [("vbr.mp3", 44100 * 3), ("cbr.mp3", 44100 * 3), ("mono22k.mp3", 22050 * 3), ("tags.mp3", 44100)])
    func lamePrimingIsFFmpegsSkipAndValidFramesAreTheSource(name: String, sourceFrames: Int) throws {
        let parsed = parseCompressed(try CompressedStreamFixtures.bytes(name))
        let info = try #require(parsed.packetTableInfo, "\(name): no PacketTableInfo from the LAME header")
        let skip = try #require(try CompressedStreamFixtures.probedSkipSamples(name))
        #expect(Int(info.primingFrames) == skip, "\(name): priming \(info.primingFrames), ffmpeg skips \(skip)")
        // The encoder's delay and padding removed, what is left is exactly the source.
        #expect(info.validFrames == Int64(sourceFrames))
        let framesPerPacket = Int(parsed.dataFormat?.framesPerPacket ?? 0)
        #expect(info.totalFrames == Int64(parsed.packets.count * framesPerPacket))
        #expect(parsed.properties.contains(.audioDataPacketCount(parsed.packets.count)))
    }

    /// A Fraunhofer VBRI header (no encoder here writes one: it is written into sox's first frame)
    /// gives the packet count and byte count, and its frame is not audio.
    @Test func vbriHeaderFrameIsReadNotDelivered() throws {
        let bytes = try CompressedStreamFixtures.bytes("sox.mp3")
        let whole = parseCompressed(bytes)
        let first = whole.packets[0].count
        var vbri = bytes
        let fields: [UInt8] = Array("VBRI".utf8) + [0, 1, 0x04, 0x5F, 0, 75]
            + [0, 0, 0xBD, 0x63] + [0, 0, 0, UInt8(whole.packets.count - 1)] + [0, 0, 0, 1, 0, 2, 0, 1]
        vbri.replaceSubrange(36..<36 + fields.count, with: fields)
        let parsed = parseCompressed(vbri)
        #expect(parsed.packets == Array(whole.packets.dropFirst()))
        #expect(parsed.dataOffset == first)
        #expect(parsed.properties.contains(.audioDataPacketCount(whole.packets.count - 1)))
        #expect(parsed.properties.contains(.audioDataByteCount(0xBD63 - first)))
        #expect(parsed.packetTableInfo == nil, "VBRI carries no LAME delay and padding")
    }

    @Test func cafPacketTableGivesPrimingAndVariableFrames() throws {
        let parsed = parseCompressed(try CompressedStreamFixtures.bytes("opus.caf"))
        let info = try #require(parsed.packetTableInfo)
        // ffmpeg's CAF muxer writes the Opus table with no priming: valid is every frame of the packets.
        let framesPerPacket = try #require(parsed.dataFormat?.framesPerPacket)
        #expect(info.totalFrames == Int64(parsed.packets.count) * Int64(framesPerPacket), "\(info)")
        #expect(parsed.packetFrames.allSatisfy { $0 == 0 } == (parsed.dataFormat?.framesPerPacket != 0))
    }

    /// A CAF written as Core Audio writes AAC (desc, kuki, pakt before data), built from
    /// ffmpeg's ADTS frames — ffmpeg 5.1 cannot mux AAC into CAF.
    @Test func aacInCAFWithItsPacketTableBeforeTheData() throws {
        let adts = try CompressedStreamFixtures.bytes("stereo.aac")
        let stream = parseCompressed(adts)
        let cookie = try #require(stream.magicCookie)
        let caf = AppleStyleCAF.make(format: .compressed(.mpeg4AAC, sampleRate: 44100, channels: 2), formatFlags: 2,
                                     cookie: cookie, packets: stream.packets, priming: 2112, remainder: 100)
        let parsed = parseCompressed(caf)
        #expect(parsed.error == nil, "\(parsed.errorMessage ?? "")")
        #expect(parsed.packets == stream.packets)
        #expect(parsed.packetTableInfo == AudioFilePacketTableInfo(validFrames: Int64(stream.packets.count * 1024 - 2212), primingFrames: 2112, remainderFrames: 100))
        #expect(parsed.properties.contains(.magicCookieData(cookie)))
        let ranks = parsed.properties.map(coreAudioRank)
        #expect(ranks == ranks.sorted())
        // And the same, fed a byte at a time.
        #expect(parseCompressed(caf) { 1 } == parsed)
    }
}

/// Writes a CAF the way Apple's AudioFile does for compressed data: desc, kuki, pakt, data.
enum AppleStyleCAF {
    static func make(format: StreamFormat, formatFlags: UInt32, cookie: [UInt8], packets: [[UInt8]], priming: Int, remainder: Int, packetTableFirst: Bool = true) -> [UInt8] {
        func be(_ value: UInt64, _ width: Int) -> [UInt8] { (0..<width).map { UInt8(truncatingIfNeeded: value >> UInt64(8 * (width - 1 - $0))) } }
        func chunk(_ id: String, _ body: [UInt8]) -> [UInt8] { Array(id.utf8) + be(UInt64(body.count), 8) + body }
        let desc = be(format.sampleRate.bitPattern, 8) + be(UInt64(format.formatID.rawValue.rawValue), 4) + be(UInt64(formatFlags), 4)
            + be(0, 4) + be(UInt64(format.framesPerPacket), 4) + be(UInt64(format.channelsPerFrame), 4) + be(0, 4)
        var pakt = be(UInt64(packets.count), 8) + be(UInt64(packets.count * Int(format.framesPerPacket) - priming - remainder), 8)
            + be(UInt64(priming), 4) + be(UInt64(remainder), 4)
        for packet in packets {
            var size = packet.count
            var groups = [UInt8(size & 0x7F)]
            size >>= 7
            while size > 0 { groups.append(UInt8(size & 0x7F) | 0x80); size >>= 7 }
            pakt += groups.reversed()
        }
        let data = chunk("data", [0, 0, 0, 1] + packets.flatMap { $0 })
        let table = chunk("pakt", pakt)
        return Array("caff".utf8) + [0, 1, 0, 0] + chunk("desc", desc) + chunk("kuki", cookie)
            + (packetTableFirst ? table + data : data + table)
    }
}

extension Array where Element == UInt8 {
    func windows(ofCount count: Int) -> [[UInt8]] {
        guard self.count >= count else { return [] }
        return (0...(self.count - count)).map { Array(self[$0..<$0 + count]) }
    }
}
