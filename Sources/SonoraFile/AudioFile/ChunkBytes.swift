import Foundation
import SonoraCore

/// Big-endian reads from one chunk's body that never go past its end: a chunk
/// whose counts promise more than it holds is an error naming the chunk, not a crash.
struct ChunkReader {
    let bytes: [UInt8]
    /// For messages: "path: the 'MARK' chunk".
    let context: String

    func require(_ range: Range<Int>) throws(AudioError) {
        guard range.lowerBound >= 0, range.upperBound <= bytes.count else {
            throw AudioError(.invalidChunk, "\(context) is truncated: it holds \(bytes.count) bytes, its contents need \(range.upperBound)")
        }
    }

    func u8(_ at: Int) throws(AudioError) -> UInt8 {
        try require(at..<at + 1)
        return bytes[at]
    }

    func u16(_ at: Int) throws(AudioError) -> UInt16 {
        try require(at..<at + 2)
        return UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1])
    }

    func u32(_ at: Int) throws(AudioError) -> UInt32 {
        try require(at..<at + 4)
        return bytes[at..<at + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    func u64(_ at: Int) throws(AudioError) -> UInt64 {
        try require(at..<at + 8)
        return bytes[at..<at + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }
}

/// Big-endian appends for chunk bodies.
struct ChunkWriter {
    var bytes: [UInt8] = []

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func u16(_ value: UInt16) { bytes += [UInt8(value >> 8), UInt8(value & 0xFF)] }
    mutating func u32(_ value: UInt32) { for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(value >> UInt32(shift) & 0xFF)) } }
    mutating func u64(_ value: UInt64) { for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(value >> UInt64(shift) & 0xFF)) } }
    mutating func tag(_ id: String) { bytes += Array(id.utf8.prefix(4)) }

    /// An IFF chunk (32-bit size) or CAF chunk (64-bit size) holding `body`; IFF bodies are padded to even.
    static func chunk(_ id: String, _ body: [UInt8], caf: Bool) -> [UInt8] {
        var writer = ChunkWriter()
        writer.tag(id)
        if caf { writer.u64(UInt64(body.count)) } else { writer.u32(UInt32(body.count)) }
        writer.bytes += body
        if !caf && body.count % 2 == 1 { writer.u8(0) }
        return writer.bytes
    }
}

/// The top-level chunks of an AIFF/AIFC or CAF file, found by reading only their headers.
struct ChunkDirectory {
    struct Entry {
        var id: String
        var bodyOffset: UInt64
        var size: UInt64
    }

    let path: String
    let entries: [Entry]
    let isCAF: Bool

    /// Bodies of the chunks Sonora reads itself are small; more than this is a lie, not a marker list.
    static let maximumBodyBytes: UInt64 = 16 << 20

    /// Walks `path` if it is AIFF/AIFC or CAF; nil for any other file. A chunk that runs
    /// past the end of the file ends the walk (libsndfile has already judged the audio).
    init?(path: String) {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let head = try? handle.read(upToCount: 12), head.count >= 8 else { return nil }
        let magic = String(decoding: head.prefix(4), as: UTF8.self)
        let fileEnd = (try? handle.seekToEnd()) ?? 0
        var offset: UInt64
        if magic == "caff" {
            isCAF = true
            offset = 8
        } else if magic == "FORM", head.count == 12 {
            isCAF = false
            offset = 12
        } else {
            return nil
        }
        self.path = path
        var entries: [Entry] = []
        let headerBytes = isCAF ? 12 : 8
        while offset + UInt64(headerBytes) <= fileEnd {
            guard (try? handle.seek(toOffset: offset)) != nil, let header = try? handle.read(upToCount: headerBytes),
                  header.count == headerBytes
            else { break }
            let bytes = [UInt8](header)
            let id = String(decoding: bytes.prefix(4).map { $0 >= 0x20 && $0 < 0x7F ? $0 : 0x3F }, as: UTF8.self)
            let size = bytes[4...].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let body = offset + UInt64(headerBytes)
            // CAF's data chunk may say -1: "to the end of the file".
            let effective = isCAF && size == UInt64.max ? fileEnd - body : size
            entries.append(Entry(id: id, bodyOffset: body, size: effective))
            guard effective <= fileEnd - body else { break }
            offset = body + effective + (!isCAF && effective % 2 == 1 ? 1 : 0)
        }
        self.entries = entries
    }

    func first(_ id: String) -> Entry? { entries.first { $0.id == id } }

    /// The body of `entry`, or an error naming the file and chunk when it is oversized or cut short.
    func body(of entry: Entry) throws(AudioError) -> ChunkReader {
        let context = "\(path): the '\(entry.id)' chunk"
        guard entry.size <= Self.maximumBodyBytes else {
            throw AudioError(.invalidChunk, "\(context) claims \(entry.size) bytes")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw AudioError(.filePermission, "\(path): cannot be read")
        }
        defer { try? handle.close() }
        guard (try? handle.seek(toOffset: entry.bodyOffset)) != nil,
              let data = try? handle.read(upToCount: Int(entry.size)), data.count == Int(entry.size)
        else {
            throw AudioError(.invalidChunk, "\(context) claims \(entry.size) bytes but the file ends first")
        }
        return ChunkReader(bytes: [UInt8](data), context: context)
    }
}
