import Foundation
import SonoraCore

/// IMA4 in AIFC as Apple writes it: `FVER`, `COMM` with compression 'ima4' ("IMA 4:1"),
/// 16 bits per sample and numSampleFrames counting *packets* of 64 frames, then `SSND`.
///
/// Reading trusts the SSND size, not COMM's count: libsndfile 1.2 writes the packet
/// count divided by the channel count there (8 for 16 stereo packets).
extension IMA4File {
    static func openAIFC(_ path: String, handle: FileHandle) throws(AudioError) -> IMA4File? {
        var format: StreamFormat?
        var offset: UInt64 = 12
        let end = (try? handle.seekToEnd()) ?? 0
        func fail(_ problem: String) -> AudioError {
            try? handle.close()
            return AudioError(.invalidFileData, "\(path): \(problem)")
        }
        while offset + 8 <= end {
            guard (try? handle.seek(toOffset: offset)) != nil, let header = try? handle.read(upToCount: 8), header.count == 8 else { break }
            let id = String(decoding: header.prefix(4), as: UTF8.self)
            let size = UInt64(header.suffix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            let body = offset + 8
            switch id {
            case "COMM":
                guard size >= 22, let data = try? handle.read(upToCount: 22), data.count == 22 else { throw fail("a short AIFC COMM chunk") }
                let bytes = [UInt8](data)
                guard bytes[18..<22] == [0x69, 0x6D, 0x61, 0x34] else {  // 'ima4'; anything else is libsndfile's
                    try? handle.close()
                    return nil
                }
                let channels = Int(UInt16(bytes[0]) << 8 | UInt16(bytes[1]))
                let rate = ExtendedFloat.double(from: Array(bytes[8..<18]))
                let ima4 = StreamFormat.appleIMA4(sampleRate: rate, channels: channels)
                guard channels > 0, rate.isFinite, rate > 0, ima4.validationProblems.isEmpty else {
                    throw fail("an IMA4 COMM chunk with \(channels) channels at \(rate) Hz")
                }
                format = ima4
            case "SSND":
                guard let format else { throw fail("AIFC sound data before its COMM chunk") }
                guard size >= 8, let data = try? handle.read(upToCount: 8), data.count == 8 else { throw fail("a short SSND chunk") }
                let skip = UInt64(data.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
                let dataStart = body + 8 + skip
                guard size >= 8 + skip, dataStart <= end else { throw fail("an SSND offset of \(skip) bytes past its chunk") }
                // A size past the end of the file is a file cut short: keep the whole packets there are.
                let dataBytes = min(size - 8 - skip, end - dataStart)
                let packets = Int(dataBytes) / Int(format.bytesPerPacket)
                return try IMA4File(
                    format: format, container: .aifc, handle: handle, dataStart: dataStart, frameCount: packets * 64,
                    packetCount: packets, writing: false)
            default:
                break
            }
            offset = body + size + size % 2
        }
        throw fail(format == nil ? "an AIFC file with no COMM chunk" : "an AIFC file with no sound data")
    }

    /// Offsets of the fields `finishAIFC` fills in.
    private static let formSizeAt: UInt64 = 4
    private static let commFramesAt: UInt64 = 12 + 12 + 8 + 2
    private static let ssndSizeAt: UInt64 = 12 + 12 + 8 + 30 + 4

    static func createAIFC(_ path: String, format: StreamFormat, handle: FileHandle) throws(AudioError) -> IMA4File {
        var writer = ChunkWriter()
        writer.tag("FORM"); writer.u32(0); writer.tag("AIFC")
        writer.tag("FVER"); writer.u32(4); writer.u32(0xA280_5140)  // AIFC version 1
        writer.tag("COMM"); writer.u32(30)
        writer.u16(UInt16(format.channelsPerFrame)); writer.u32(0); writer.u16(16)
        writer.bytes += ExtendedFloat.bytes(from: format.sampleRate)
        writer.tag("ima4"); writer.u8(7); writer.bytes += Array("IMA 4:1".utf8)
        writer.tag("SSND"); writer.u32(8); writer.u32(0); writer.u32(0)
        do { try handle.write(contentsOf: Data(writer.bytes)) } catch {
            throw AudioError(.filePermission, "\(path): \(error.localizedDescription)")
        }
        return try IMA4File(format: format, container: .aifc, handle: handle, dataStart: UInt64(writer.bytes.count), frameCount: 0, packetCount: 0, writing: true)
    }

    /// Fills in the FORM, COMM and SSND sizes once every packet is written.
    func finishAIFC() throws(AudioError) {
        let dataBytes = UInt64(packetCount * Int(format.bytesPerPacket))
        let total = Self.ssndSizeAt + 4 + 8 + dataBytes
        guard total - 8 <= UInt64(UInt32.max), packetCount <= Int(UInt32.max) else {
            throw AudioError(.doesNotAllow64BitDataSize, "an AIFC file holds at most 4 GiB")
        }
        func be32(_ value: UInt64) -> Data { withUnsafeBytes(of: UInt32(value).bigEndian) { Data($0) } }
        do {
            try handle.seek(toOffset: Self.formSizeAt); try handle.write(contentsOf: be32(total - 8))
            try handle.seek(toOffset: Self.commFramesAt); try handle.write(contentsOf: be32(UInt64(packetCount)))
            try handle.seek(toOffset: Self.ssndSizeAt); try handle.write(contentsOf: be32(8 + dataBytes))
        } catch {
            throw AudioError(.unspecified, "cannot finish the IMA4 AIFC file: \(error.localizedDescription)")
        }
    }
}

/// AIFF's 80-bit IEEE extended sample rate.
enum ExtendedFloat {
    static func double(from bytes: [UInt8]) -> Double {
        guard bytes.count == 10 else { return .nan }
        let exponent = Int(UInt16(bytes[0] & 0x7F) << 8 | UInt16(bytes[1]))
        let mantissa = bytes[2..<10].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard exponent != 0 || mantissa != 0 else { return 0 }
        guard exponent != 0x7FFF else { return .nan }
        let sign: Double = bytes[0] & 0x80 != 0 ? -1 : 1
        let power = exponent - 16383 - 63
        guard power > -1100 else { return 0 }
        guard power < 1100 else { return .infinity }
        return sign * Double(mantissa) * Double(sign: .plus, exponent: power, significand: 1)
    }

    static func bytes(from value: Double) -> [UInt8] {
        guard value > 0, value.isFinite else { return [UInt8](repeating: 0, count: 10) }
        let exponent = UInt16(Int(value.exponent) + 16383)
        // The significand with its explicit leading 1 at bit 63.
        let mantissa = (UInt64(1) << 63) | (value.significandBitPattern << 11)
        var writer = ChunkWriter()
        writer.u16(exponent)
        writer.u64(mantissa)
        return writer.bytes
    }
}
