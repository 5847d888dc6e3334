import SonoraCore

/// A CAF file's packet table chunk (`pakt`, CAF specification "Packet Table Chunk"):
/// a 24-byte header (packets, valid frames, priming, remainder; big-endian) and then, per
/// packet, its byte size when the format's `bytesPerPacket` is 0 and its frame count when
/// `framesPerPacket` is 0, each as a variable-length integer (7 bits a byte, high bit set
/// on all but the last byte).
struct CAFPacketTable: Hashable, Sendable {
    var info: AudioFilePacketTableInfo
    /// Byte size of each packet (all equal to the format's size when it is constant).
    var packetSizes: [Int]
    /// Frames of each packet (all equal to the format's count when it is constant).
    var packetFrames: [Int]

    var packetCount: Int { packetSizes.count }

    /// Reads a `pakt` body for packets of `format`. Every size, count and the total are
    /// checked, so a hostile table gives an error instead of a crash or a huge allocation.
    static func decode(_ body: [UInt8], format: StreamFormat) throws(AudioError) -> CAFPacketTable {
        guard body.count >= 24 else { throw AudioError(.invalidChunk, "pakt chunk of \(body.count) bytes (at least 24)") }
        func integer(_ at: Int, _ width: Int) -> UInt64 { body[at..<at + width].reduce(0) { $0 << 8 | UInt64($1) } }
        let packets = Int64(bitPattern: integer(0, 8))
        let valid = Int64(bitPattern: integer(8, 8))
        let priming = Int32(bitPattern: UInt32(integer(16, 4)))
        let remainder = Int32(bitPattern: UInt32(integer(20, 4)))
        guard packets >= 0, valid >= -1, priming >= 0, remainder >= 0 else {
            throw AudioError(.invalidChunk, "pakt: negative count (packets \(packets), valid \(valid), priming \(priming), remainder \(remainder))")
        }
        let variableBytes = format.bytesPerPacket == 0
        let variableFrames = format.framesPerPacket == 0
        let entriesPerPacket = (variableBytes ? 1 : 0) + (variableFrames ? 1 : 0)
        // Each entry takes at least one byte: more packets than bytes cannot be right.
        guard entriesPerPacket == 0 || packets <= Int64(body.count - 24) / Int64(entriesPerPacket) else {
            throw AudioError(.invalidChunk, "pakt: \(packets) packets but only \(body.count - 24) bytes of entries")
        }
        // Constant-size packets have no entries to bound their count: a damaged count must not
        // build billions of them (2^24 packets of IMA4 are 97 hours at 48 kHz).
        guard entriesPerPacket > 0 || packets <= 1 << 24 else {
            throw AudioError(.invalidChunk, "pakt: \(packets) packets of constant size (at most \(1 << 24))")
        }
        var sizes: [Int] = []
        var frames: [Int] = []
        sizes.reserveCapacity(Int(packets))
        frames.reserveCapacity(Int(packets))
        var at = 24
        func varint() throws(AudioError) -> Int {
            var value = 0
            for _ in 0..<5 {
                guard at < body.count else { throw AudioError(.invalidChunk, "pakt: entry cut short at byte \(at)") }
                let byte = body[at]
                at += 1
                value = value << 7 | Int(byte & 0x7F)
                if byte & 0x80 == 0 { return value }
            }
            throw AudioError(.invalidChunk, "pakt: entry longer than 5 bytes at byte \(at)")
        }
        for _ in 0..<Int(packets) {
            sizes.append(variableBytes ? try varint() : Int(format.bytesPerPacket))
            frames.append(variableFrames ? try varint() : Int(format.framesPerPacket))
        }
        let total = frames.reduce(Int64(0)) { $0 + Int64($1) }
        // Checked before anything is added: a hostile valid count near Int64.max must not overflow.
        guard valid <= total else {
            throw AudioError(.invalidChunk, "pakt: \(valid) valid frames exceed the packets' \(total)")
        }
        let info = AudioFilePacketTableInfo(
            validFrames: valid == -1 ? total - Int64(priming) - Int64(remainder) : valid,
            primingFrames: priming, remainderFrames: remainder)
        guard info.validFrames >= 0, info.totalFrames <= total else {
            throw AudioError(.invalidChunk, "pakt: \(info.validFrames) valid + \(priming) priming + \(remainder) remainder frames exceed the packets' \(total)")
        }
        return CAFPacketTable(info: info, packetSizes: sizes, packetFrames: frames)
    }

    /// The `pakt` body for packets of `format` (sizes and frame counts only where they vary).
    func encoded(format: StreamFormat) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24 + packetCount * 2)
        func append(_ value: UInt64, _ width: Int) {
            for shift in stride(from: (width - 1) * 8, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }
        append(UInt64(packetCount), 8)
        append(UInt64(bitPattern: info.validFrames), 8)
        append(UInt64(UInt32(bitPattern: info.primingFrames)), 4)
        append(UInt64(UInt32(bitPattern: info.remainderFrames)), 4)
        for index in 0..<packetCount {
            Self.appendEntry(size: packetSizes[index], frames: packetFrames[index], format: format, to: &bytes)
        }
        return bytes
    }

    /// Appends one packet's entry: its size where packets vary in size, its frames where they vary in length.
    static func appendEntry(size: Int, frames: Int, format: StreamFormat, to bytes: inout [UInt8]) {
        func varint(_ value: Int) {
            var groups: [UInt8] = [UInt8(value & 0x7F)]
            var rest = value >> 7
            while rest > 0 {
                groups.append(UInt8(rest & 0x7F) | 0x80)
                rest >>= 7
            }
            bytes.append(contentsOf: groups.reversed())
        }
        if format.bytesPerPacket == 0 { varint(size) }
        if format.framesPerPacket == 0 { varint(frames) }
    }
}
