import Foundation
import SonoraCore

/// What a compressed file being created takes: whole packets with their descriptions,
/// then the packet table (priming, remainder) when it is finished.
protocol PacketWriter: AnyObject {
    var format: StreamFormat { get }
    /// Packets written so far.
    var packetCount: Int { get }
    /// Frames the written packets decode to (before priming and remainder are dropped).
    var totalFrames: Int64 { get }
    /// The largest packet written so far.
    var maximumPacketSize: Int { get }
    var byteCount: Int64 { get }
    func write(_ bytes: [UInt8], sizes: [Int], frames: [Int]) throws(AudioError)
    /// Completes the file (sizes, packet table, container trailer).
    func finish(info: AudioFilePacketTableInfo?) throws(AudioError)
    /// Makes the file on disk, as it stands, a valid file of the packets written so far
    /// (for recordings that must survive the process); false where the container cannot be.
    func writeValidSoFar(info: AudioFilePacketTableInfo?) throws(AudioError) -> Bool
}

/// Compressed packets into a CAF file, written by Sonora itself: `caff`, `desc`, `kuki`
/// (the cookie as given), `data` (the packets as they come, its size −1 — "to the end of
/// the file" — until closing), then on `finish` the data size and a `pakt` chunk after it
/// (the CAF specification allows it anywhere; ffmpeg and Core Audio read it there).
///
/// A recording asks for `tableReserve` bytes instead: a `pakt` chunk of that room goes
/// before the data, and `writeValidSoFar` fills it in place (entries first, then the
/// 24-byte header in one write), so the file stays valid while packets are appended —
/// a killed process leaves every packet up to the last update readable, and a full disk
/// needs no new room to finish the table. Packets past the room are in the file but not
/// in the provisional table; `finish` moves the table behind the data if it outgrew it.
final class CAFPacketWriter: PacketWriter {
    let format: StreamFormat
    private let handle: FileHandle
    private let path: String
    private let dataSizeAt: UInt64
    private(set) var packetCount = 0
    private(set) var totalFrames: Int64 = 0
    private(set) var byteCount: Int64 = 0
    private(set) var maximumPacketSize = 0
    private var sizes: [Int] = []
    private var frames: [Int] = []

    /// The reserved table: where its body starts, the room for entries, and what is in place.
    private struct ReservedTable {
        let bodyAt: UInt64
        let room: Int
        var packets = 0
        var entryBytes = 0
        var frames: Int64 = 0
    }
    private var reserved: ReservedTable?

    init(path: String, format: StreamFormat, cookie: [UInt8]?, tableReserve: Int = 0) throws(AudioError) {
        guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path) else {
            throw AudioError(.filePermission, "\(path): cannot create: \(String(cString: strerror(errno)))")
        }
        self.path = path
        self.format = format
        self.handle = handle
        var header = Data("caff".utf8) + [0, 1, 0, 0]
        func append64(_ value: UInt64) { header += withUnsafeBytes(of: value.bigEndian) { Data($0) } }
        func append32(_ value: UInt32) { header += withUnsafeBytes(of: value.bigEndian) { Data($0) } }
        header += Data("desc".utf8); append64(32)
        append64(format.sampleRate.bitPattern); append32(format.formatID.rawValue.rawValue); append32(format.formatFlags.rawValue)
        append32(format.bytesPerPacket); append32(format.framesPerPacket); append32(format.channelsPerFrame); append32(format.bitsPerChannel)
        if let cookie, !cookie.isEmpty {
            header += Data("kuki".utf8); append64(UInt64(cookie.count)); header += Data(cookie)
        }
        if tableReserve > 0 && (format.bytesPerPacket == 0 || format.framesPerPacket == 0) {
            // Zeros: a table of no packets, and room already on disk for the entries.
            header += Data("pakt".utf8); append64(UInt64(24 + tableReserve))
            reserved = ReservedTable(bodyAt: UInt64(header.count), room: tableReserve)
            header += Data(count: 24 + tableReserve)
        }
        header += Data("data".utf8)
        dataSizeAt = UInt64(header.count)
        append64(UInt64.max); append32(0)  // to the end of the file until closing; edit count
        do { try handle.write(contentsOf: header) } catch {
            try? handle.close()
            throw AudioError(.unspecified, "\(path): \(error.localizedDescription)")
        }
    }

    /// Where the data ends and a provisional pakt (from `writeValidSoFar`) begins, if one is there.
    private var provisionalTableAt: UInt64?

    func write(_ bytes: [UInt8], sizes: [Int], frames: [Int]) throws(AudioError) {
        if let provisionalTableAt {
            // The next packets go where the provisional table was; the data runs to the end again.
            do {
                try handle.truncate(atOffset: provisionalTableAt)
                try handle.seek(toOffset: dataSizeAt)
                try handle.write(contentsOf: withUnsafeBytes(of: UInt64.max.bigEndian) { Data($0) })
                try handle.seekToEnd()
            } catch {
                throw AudioError(.unspecified, "\(path): cannot reopen the data chunk: \(error.localizedDescription)")
            }
            self.provisionalTableAt = nil
        }
        do { try handle.write(contentsOf: bytes) } catch {
            throw AudioError(.unspecified, "\(path): cannot write \(bytes.count) bytes of packets: \(error.localizedDescription)")
        }
        self.sizes += sizes
        self.frames += frames
        packetCount += sizes.count
        byteCount += Int64(bytes.count)
        totalFrames += frames.reduce(Int64(0)) { $0 + Int64($1) }
        maximumPacketSize = max(maximumPacketSize, sizes.max() ?? 0)
    }

    func writeValidSoFar(info: AudioFilePacketTableInfo?) throws(AudioError) -> Bool {
        if let table = reserved {
            try updateReservedTable(table, info: info)
            return true
        }
        guard provisionalTableAt == nil else { return true }
        let end = dataSizeAt + 12 + UInt64(byteCount)
        // A table claiming more frames than written so far would make the file unreadable.
        let fitting = info.flatMap { $0.totalFrames <= totalFrames ? $0 : nil }
        try writeTableAndSize(info: fitting)
        provisionalTableAt = end
        return true
    }

    func finish(info: AudioFilePacketTableInfo?) throws(AudioError) {
        defer { try? handle.close() }
        // Whatever follows the packets goes: a provisional table, or the torn end of a failed write.
        do { try handle.truncate(atOffset: dataSizeAt + 12 + UInt64(byteCount)) } catch {
            throw AudioError(.unspecified, "\(path): cannot finish the CAF file: \(error.localizedDescription)")
        }
        if let table = reserved {
            let body = CAFPacketTable(
                info: info ?? AudioFilePacketTableInfo(validFrames: totalFrames, primingFrames: 0, remainderFrames: 0),
                packetSizes: sizes, packetFrames: frames
            ).encoded(format: format)
            if body.count <= 24 + table.room {
                try put(body, at: table.bodyAt)
                try put(bigEndian: UInt64(4 + byteCount), at: dataSizeAt)
                return
            }
            // Outgrown: the room becomes a free chunk, and the table goes behind the data.
            try put(Array("free".utf8), at: table.bodyAt - 12)
        }
        try writeTableAndSize(info: info)
    }

    /// Adds the entries of the packets written since the last update to the reserved table
    /// (as many as its room takes), then its header: a kill between the two leaves the old
    /// header, whose entries are a prefix of the new ones.
    private func updateReservedTable(_ old: ReservedTable, info: AudioFilePacketTableInfo?) throws(AudioError) {
        var table = old
        var entries: [UInt8] = []
        while table.packets < packetCount {
            var entry: [UInt8] = []
            CAFPacketTable.appendEntry(size: sizes[table.packets], frames: frames[table.packets], format: format, to: &entry)
            guard table.entryBytes + entries.count + entry.count <= table.room else { break }
            entries += entry
            table.frames += Int64(frames[table.packets])
            table.packets += 1
        }
        guard table.packets > old.packets else { return }
        try put(entries, at: table.bodyAt + 24 + UInt64(table.entryBytes))
        table.entryBytes += entries.count
        let priming = info.map { Int64($0.primingFrames) <= table.frames ? $0.primingFrames : 0 } ?? 0
        var header: [UInt8] = []
        for (value, width) in [(UInt64(table.packets), 8), (UInt64(table.frames - Int64(priming)), 8), (UInt64(UInt32(bitPattern: priming)), 4), (0, 4)] {
            for shift in stride(from: (width - 1) * 8, through: 0, by: -8) { header.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }
        try put(header, at: table.bodyAt)
        reserved = table
    }

    private func put(bigEndian value: UInt64, at offset: UInt64) throws(AudioError) {
        try put(withUnsafeBytes(of: value.bigEndian) { Array($0) }, at: offset)
    }

    /// Writes `bytes` at `offset` without moving the position packets are appended at.
    private func put(_ bytes: [UInt8], at offset: UInt64) throws(AudioError) {
        let written = bytes.withUnsafeBytes { pwrite(handle.fileDescriptor, $0.baseAddress, $0.count, off_t(offset)) }
        guard written == bytes.count else {
            throw AudioError(.unspecified, "\(path): cannot update the CAF header: \(String(cString: strerror(errno)))")
        }
    }

    /// Appends the pakt chunk after the data and sets the data chunk's size.
    private func writeTableAndSize(info: AudioFilePacketTableInfo?) throws(AudioError) {
        let needsTable = format.bytesPerPacket == 0 || format.framesPerPacket == 0 || info != nil
        let table = CAFPacketTable(
            info: info ?? AudioFilePacketTableInfo(validFrames: totalFrames, primingFrames: 0, remainderFrames: 0),
            packetSizes: sizes, packetFrames: frames)
        do {
            if needsTable {
                var chunk = Data("pakt".utf8)
                let body = table.encoded(format: format)
                chunk += withUnsafeBytes(of: UInt64(body.count).bigEndian) { Data($0) }
                chunk += Data(body)
                try handle.seekToEnd()
                try handle.write(contentsOf: chunk)
            }
            try handle.seek(toOffset: dataSizeAt)
            try handle.write(contentsOf: withUnsafeBytes(of: UInt64(4 + byteCount).bigEndian) { Data($0) })
        } catch {
            throw AudioError(.unspecified, "\(path): cannot finish the CAF file: \(error.localizedDescription)")
        }
    }
}
