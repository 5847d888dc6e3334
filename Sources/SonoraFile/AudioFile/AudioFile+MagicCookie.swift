import Foundation
import SonoraCore

extension AudioFile {
    /// The codec configuration a decoder needs (kAudioFilePropertyMagicCookieData), in
    /// Core Audio's form: a CAF file's `kuki` chunk (Apple Lossless, AAC …), an M4A's esds
    /// or ALAC config, a FLAC file's STREAMINFO block, Opus' OpusHead. Nil when the format
    /// has none (PCM, IMA4).
    public var magicCookie: [UInt8]? {
        if isBeingCreated { return createdCookie }
        if let index = loadedPacketIndex, index.cookie != nil { return index.cookie }
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let head = try? handle.read(upToCount: 8), head.count == 8 else { return nil }
        if head.prefix(4) == Data("caff".utf8) { return cafChunk("kuki", in: handle) }
        if head.prefix(4) == Data("fLaC".utf8) {
            // The first metadata block must be STREAMINFO (type 0, 34 bytes).
            let bytes = [UInt8](head)
            guard bytes[4] & 0x7F == 0 else { return nil }
            let size = Int(bytes[5]) << 16 | Int(bytes[6]) << 8 | Int(bytes[7])
            guard size == 34, let body = try? handle.read(upToCount: size), body.count == size else { return nil }
            return [UInt8](body)
        }
        return nil
    }

    /// The body of the first CAF chunk of type `id`, if it is present and of sane size.
    private func cafChunk(_ id: String, in handle: FileHandle) -> [UInt8]? {
        var offset: UInt64 = 8
        while true {
            guard (try? handle.seek(toOffset: offset)) != nil, let header = try? handle.read(upToCount: 12), header.count == 12 else {
                return nil
            }
            let size = header.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            if header.prefix(4) == Data(id.utf8) {
                guard size <= 1 << 20, let body = try? handle.read(upToCount: Int(size)), body.count == Int(size) else { return nil }
                return [UInt8](body)
            }
            guard size != UInt64.max, size < UInt64.max - offset - 12 else { return nil }
            offset += 12 + size
        }
    }
}
