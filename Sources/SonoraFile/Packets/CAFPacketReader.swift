import Foundation
import SonoraCore

/// Compressed packets in a CAF file (ALAC, AAC, FLAC, Opus, MP3 …), read by Sonora itself
/// from its `desc`, `kuki`, `pakt` and `data` chunks (CAF specification). Linear PCM and
/// IMA4 are not read here (libsndfile and IMA4File do).
enum CAFPacketReader {
    /// Largest magic cookie accepted: real ones are tens of bytes (an ALAC config is 24, an
    /// esds about 40); a huge `kuki` is a damaged or hostile file, not a cookie to allocate.
    static let maximumCookieSize = 1 << 16

    /// The packet index of a compressed CAF file; nil when `path` is not CAF or holds PCM/IMA4.
    static func open(_ path: String) throws(AudioError) -> PacketIndex? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let head = try? handle.read(upToCount: 8), head.count == 8, head.prefix(4) == Data("caff".utf8) else { return nil }
        let fileSize = (try? handle.seekToEnd()) ?? 0
        var format: StreamFormat?
        var cookie: [UInt8]?
        var paktBody: [UInt8]?
        var data: (start: UInt64, size: UInt64)?
        var offset: UInt64 = 8
        while offset + 12 <= fileSize {
            guard (try? handle.seek(toOffset: offset)) != nil, let chunk = try? handle.read(upToCount: 12), chunk.count == 12 else { break }
            let id = String(decoding: chunk.prefix(4), as: UTF8.self)
            let declared = chunk.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let body = offset + 12
            let left = fileSize - body
            // Only `data` may say -1 (to the end of the file); any other size past the end is damage.
            let size = id == "data" && declared == UInt64.max ? left : declared
            guard size <= left else {
                if id == "data" {
                    throw AudioError(.invalidFileData, "\(path): the CAF data chunk says \(declared) bytes but the file ends after \(left) (truncated?)")
                }
                throw AudioError(.invalidChunk, "\(path): CAF '\(id)' chunk at byte \(offset) says \(declared) bytes; only \(left) follow")
            }
            switch id {
            case "desc":
                guard size >= 32, let desc = try? handle.read(upToCount: 32), desc.count == 32 else {
                    throw AudioError(.invalidChunk, "\(path): CAF desc chunk of \(size) bytes (32 expected)")
                }
                let bytes = [UInt8](desc)
                func u32(_ at: Int) -> UInt32 { bytes[at..<at + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
                let formatID = AudioFormatID(rawValue: FourCharCode(rawValue: u32(8)))
                if formatID == .linearPCM || formatID == .appleIMA4 { return nil }
                let described = StreamFormat(
                    sampleRate: Double(bitPattern: bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }),
                    formatID: formatID, formatFlags: AudioFormatFlags(rawValue: u32(12)),
                    bytesPerPacket: u32(16), framesPerPacket: u32(20), bytesPerFrame: 0,
                    channelsPerFrame: u32(24), bitsPerChannel: u32(28))
                let problems = described.validationProblems
                guard problems.isEmpty else {
                    throw AudioError(.invalidFileData, "\(path): CAF desc: " + problems.joined(separator: "; "))
                }
                format = described
            case "kuki":
                guard size <= UInt64(maximumCookieSize) else {
                    throw AudioError(.invalidChunk, "\(path): CAF kuki chunk of \(size) bytes (a magic cookie is at most \(maximumCookieSize))")
                }
                guard let body = try? handle.read(upToCount: Int(size)), body.count == Int(size) else {
                    throw AudioError(.invalidChunk, "\(path): CAF kuki chunk cut short")
                }
                cookie = [UInt8](body)
            case "pakt":
                // Entries take 1–5 bytes each; a table past this is not an audio file's.
                guard size <= 1 << 30, let body = try? handle.read(upToCount: Int(size)), body.count == Int(size) else {
                    throw AudioError(.invalidChunk, "\(path): CAF pakt chunk of \(size) bytes cannot be read")
                }
                paktBody = [UInt8](body)
            case "data":
                guard size >= 4 else { throw AudioError(.invalidChunk, "\(path): CAF data chunk of \(size) bytes has no edit count") }
                data = (body + 4, size - 4)
            default:
                break
            }
            guard size < UInt64.max - body else { break }
            offset = body + size
        }
        guard let format else { throw AudioError(.invalidFileData, "\(path): a CAF file with no desc chunk") }
        guard let data else { throw AudioError(.invalidFileData, "\(path): a CAF file with no data chunk (truncated?)") }
        let index = try PacketIndex(path: path, format: format, inMemory: false)
        index.cookie = cookie
        index.dataOffset = Int64(data.start)
        if format.bytesPerPacket > 0 && format.framesPerPacket > 0 {
            // Constant packets need no table; a pakt only adds priming and remainder.
            let packets = Int(data.size / UInt64(format.bytesPerPacket))
            for packet in 0..<packets {
                index.append(offset: Int64(data.start) + Int64(packet) * Int64(format.bytesPerPacket), size: Int(format.bytesPerPacket), frames: Int(format.framesPerPacket))
            }
            if let paktBody { index.info = try table(paktBody, format: format, path: path).info }
            return index
        }
        guard let paktBody else {
            throw AudioError(.invalidFileData, "\(path): \(format.formatID) packets vary in size but the CAF file has no pakt chunk")
        }
        let table = try table(paktBody, format: format, path: path)
        var at = Int64(data.start)
        for packet in 0..<table.packetCount {
            let size = table.packetSizes[packet]
            guard size <= Int(Int32.max) else {
                throw AudioError(.invalidFileData, "\(path): pakt entry \(packet) says a packet of \(size) bytes")
            }
            guard UInt64(at) + UInt64(size) <= data.start + data.size else {
                throw AudioError(.invalidFileData, "\(path): the pakt chunk describes \(table.packetCount) packets; the data chunk's \(data.size) bytes end in packet \(packet)")
            }
            index.append(offset: at, size: size, frames: table.packetFrames[packet])
            at += Int64(size)
        }
        index.info = table.info
        return index
    }

    private static func table(_ body: [UInt8], format: StreamFormat, path: String) throws(AudioError) -> CAFPacketTable {
        do {
            return try CAFPacketTable.decode(body, format: format)
        } catch {
            throw AudioError(error.code, "\(path): \(error.message)")
        }
    }
}
