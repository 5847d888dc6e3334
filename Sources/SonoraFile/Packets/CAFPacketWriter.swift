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

    init(path: String, format: StreamFormat, cookie: [UInt8]?) throws(AudioError) {
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
        if let provisionalTableAt {
            do { try handle.truncate(atOffset: provisionalTableAt) } catch {
                throw AudioError(.unspecified, "\(path): cannot finish the CAF file: \(error.localizedDescription)")
            }
        }
        try writeTableAndSize(info: info)
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
