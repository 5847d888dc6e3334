import Foundation
import SonoraCore

/// Apple IMA4 in a CAF or AIFC file, read and written by Sonora's own code
/// (libsndfile has no IMA4 in CAF; in AIFC it miscounts stereo, see IMA4File+AIFC).
/// CAF gets `desc`, `pakt` (packet and valid-frame counts, so the frame count
/// survives the last packet's padding) and `data`; AIFC has no such count, so its
/// frame count is whole packets, as Apple's own AIFC files.
final class IMA4File {
    enum Container { case caf, aifc }

    let format: StreamFormat
    let container: Container
    let handle: FileHandle
    private let dataStart: UInt64
    private(set) var frameCount: Int
    private let writing: Bool
    private let channels: Int
    private let packetBytes: Int

    // Reading: the decoded packet frames are served from, and the read position.
    private var decoded: OwnedAudioBufferList
    private var decodedPacket = -1
    /// Packets read ahead from the file, so a read costs one system call per many packets.
    private var cache: [UInt8] = []
    private var cacheFirstPacket = 0
    private static let packetsPerRead = 256
    private var position = 0
    private(set) var packetCount: Int

    // Writing: up to 63 frames waiting for a whole packet, the encoders' state, and the
    // packet bytes of one write (kept between writes, so writing allocates nothing).
    private let pending: OwnedAudioBufferList
    private var pendingFrames = 0
    private var states: [IMAADPCMChannel]
    private var encoded: [UInt8] = []
    private var paktAt: UInt64 = 0
    private var dataSizeAt: UInt64 = 0

    init(format: StreamFormat, container: Container = .caf, handle: FileHandle, dataStart: UInt64, frameCount: Int, packetCount: Int, writing: Bool) throws(AudioError) {
        self.format = format
        self.container = container
        self.handle = handle
        self.dataStart = dataStart
        self.frameCount = frameCount
        self.packetCount = packetCount
        self.writing = writing
        channels = Int(format.channelsPerFrame)
        packetBytes = Int(format.bytesPerPacket)
        decoded = try OwnedAudioBufferList(channelCount: channels, frameCapacity: 64)
        pending = try OwnedAudioBufferList(channelCount: channels, frameCapacity: 64)
        states = Array(repeating: IMAADPCMChannel(), count: channels)
    }

    // MARK: Reading

    /// Opens `path` if it is a CAF or AIFC file holding IMA4; nil if it is something else.
    static func open(_ path: String) throws(AudioError) -> IMA4File? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        guard let head = try? handle.read(upToCount: 12), head.count >= 8 else {
            try? handle.close()
            return nil
        }
        if head.prefix(4) == Data("FORM".utf8) && head.count == 12 && head.suffix(4) == Data("AIFC".utf8) {
            return try openAIFC(path, handle: handle)
        }
        guard head.prefix(4) == Data("caff".utf8) else {
            try? handle.close()
            return nil
        }
        var format: StreamFormat?
        var validFrames: Int?
        var offset: UInt64 = 8
        while true {
            guard (try? handle.seek(toOffset: offset)) != nil, let chunk = try? handle.read(upToCount: 12), chunk.count == 12 else { break }
            let id = String(decoding: chunk.prefix(4), as: UTF8.self)
            let size = chunk.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let body = offset + 12
            switch id {
            case "desc":
                guard let desc = try? handle.read(upToCount: 32), desc.count == 32 else { break }
                let bytes = [UInt8](desc)
                func u32(_ at: Int) -> UInt32 { bytes[at..<at + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
                let rate = Double(bitPattern: bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
                guard u32(8) == AudioFormatID.appleIMA4.rawValue.rawValue else {
                    try? handle.close()
                    return nil
                }
                format = .appleIMA4(sampleRate: rate, channels: Int(u32(24)))
                guard format!.validationProblems.isEmpty, u32(16) == 34 * u32(24), u32(20) == 64 else {
                    try? handle.close()
                    throw AudioError(.invalidFileData, "\(path): IMA4 description is inconsistent")
                }
            case "pakt":
                if let pakt = try? handle.read(upToCount: 24), pakt.count == 24 {
                    let frames = [UInt8](pakt)[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                    validFrames = frames > UInt64(Int.max) ? nil : Int(frames)
                }
            case "data":
                guard let format else {
                    try? handle.close()
                    throw AudioError(.invalidFileData, "\(path): CAF data before its desc chunk")
                }
                let end = (try? handle.seekToEnd()) ?? body
                let available = end > body + 4 ? end - body - 4 : 0
                let dataBytes = size == UInt64.max ? available : min(available, size >= 4 ? size - 4 : 0)
                let packets = Int(dataBytes) / Int(format.bytesPerPacket)
                return try IMA4File(
                    format: format, handle: handle, dataStart: body + 4, frameCount: min(validFrames ?? packets * 64, packets * 64),
                    packetCount: packets, writing: false)
            default:
                break
            }
            guard size != UInt64.max, size < UInt64.max - body else { break }
            offset = body + size
        }
        try? handle.close()
        throw AudioError(.invalidFileData, "\(path): a CAF file with no readable IMA4 data")
    }

    func seek(toFrame frame: Int) {
        position = min(max(frame, 0), frameCount)
    }

    /// Reads up to `destination.frameCount` frames from the current position.
    func read(into destination: AudioBufferList) throws(AudioError) -> Int {
        var done = 0
        while done < destination.frameCount && position < frameCount {
            let packet = position / 64
            if packet != decodedPacket {
                let cached = cache.count / packetBytes
                if packet < cacheFirstPacket || packet >= cacheFirstPacket + cached {
                    let count = min(Self.packetsPerRead, packetCount - packet)
                    cache = try readPackets(from: packet, count: count)
                    cacheFirstPacket = packet
                }
                let start = (packet - cacheFirstPacket) * packetBytes
                var failure: AudioError?
                cache[start..<start + packetBytes].withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Void in
                    do throws(AudioError) { try AppleIMA4.decode(packet: raw, channels: channels, into: decoded.list) } catch { failure = error }
                }
                if let failure { throw failure }
                decodedPacket = packet
            }
            let within = position % 64
            let count = min(64 - within, destination.frameCount - done, frameCount - position)
            for channel in 0..<channels {
                copySamples(from: decoded.list.samples(channel) + within, to: destination.samples(channel) + done, count: count)
            }
            done += count
            position += count
        }
        return done
    }

    /// `count` packets as stored, from packet `start`.
    func readPackets(from start: Int, count: Int) throws(AudioError) -> [UInt8] {
        let available = max(0, min(count, packetCount - start))
        guard available > 0 else { return [] }
        guard (try? handle.seek(toOffset: dataStart + UInt64(start * packetBytes))) != nil,
              let bytes = try? handle.read(upToCount: available * packetBytes), bytes.count == available * packetBytes
        else { throw AudioError(.endOfFile, "IMA4 packets \(start)… are missing") }
        return [UInt8](bytes)
    }

    // MARK: Writing

    static func create(_ path: String, format: StreamFormat, container: Container = .caf) throws(AudioError) -> IMA4File {
        guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path) else {
            throw AudioError(.filePermission, "\(path): cannot create")
        }
        if container == .aifc { return try createAIFC(path, format: format, handle: handle) }
        var header = Data("caff".utf8) + [0, 1, 0, 0]
        func append64(_ value: UInt64) { header += withUnsafeBytes(of: value.bigEndian) { Data($0) } }
        func append32(_ value: UInt32) { header += withUnsafeBytes(of: value.bigEndian) { Data($0) } }
        header += Data("desc".utf8); append64(32)
        append64(format.sampleRate.bitPattern); append32(AudioFormatID.appleIMA4.rawValue.rawValue); append32(0)
        append32(format.bytesPerPacket); append32(64); append32(format.channelsPerFrame); append32(0)
        let paktAt = UInt64(header.count + 12)
        header += Data("pakt".utf8); append64(24); append64(0); append64(0); append32(0); append32(0)
        let dataSizeAt = UInt64(header.count + 4)
        header += Data("data".utf8); append64(4); append32(0)  // edit count
        do { try handle.write(contentsOf: header) } catch {
            throw AudioError(.filePermission, "\(path): \(error.localizedDescription)")
        }
        let file = try IMA4File(format: format, handle: handle, dataStart: UInt64(header.count), frameCount: 0, packetCount: 0, writing: true)
        file.paktAt = paktAt
        file.dataSizeAt = dataSizeAt
        return file
    }

    /// Encodes whole packets straight from `source` (no copy); only a tail of fewer than
    /// 64 frames waits in `pending` for the next write.
    func write(from source: AudioBufferList) throws(AudioError) {
        frameCount += source.frameCount
        var offset = 0
        var packets = 0
        let firstFromPending = pendingFrames > 0 && pendingFrames + source.frameCount >= 64
        let total = source.frameCount + pendingFrames
        let packetsNeeded = total / 64
        if encoded.count < packetsNeeded * packetBytes { encoded = [UInt8](repeating: 0, count: packetsNeeded * packetBytes) }
        var states = self.states  // one copy for the whole batch, not one per packet
        var failure: AudioError?
        encoded.withUnsafeMutableBytes { raw in
            func encode(_ list: AudioBufferList) -> Bool {
                do throws(AudioError) {
                    try AppleIMA4.encode(list, states: &states, into: UnsafeMutableRawBufferPointer(rebasing: raw[packets * packetBytes..<(packets + 1) * packetBytes]))
                } catch {
                    failure = error
                    return false
                }
                packets += 1
                return true
            }
            if firstFromPending {
                let take = 64 - pendingFrames
                pending.list.frames(from: pendingFrames, count: take).copy(from: source.frames(from: 0, count: take))
                guard encode(pending.list(frameCount: 64)) else { return }
                pendingFrames = 0
                offset = take
            }
            while pendingFrames == 0 && source.frameCount - offset >= 64 {
                guard encode(source.frames(from: offset, count: 64)) else { return }
                offset += 64
            }
        }
        self.states = states
        if let failure { throw failure }
        let rest = source.frameCount - offset
        if rest > 0 {
            pending.list.frames(from: pendingFrames, count: rest).copy(from: source.frames(from: offset, count: rest))
            pendingFrames += rest
        }
        try flush(packets: packets)
    }

    /// Appends packets encoded elsewhere (an input queue's): whole 34-byte-per-channel packets of
    /// 64 frames each, only on a packet boundary (no frames of `write(from:)` waiting).
    func writeEncoded(_ bytes: [UInt8]) throws(AudioError) {
        guard pendingFrames == 0 else {
            throw AudioError(.operationNotSupported, "IMA4: \(pendingFrames) frames written as frames wait for a packet; packets cannot follow them")
        }
        guard bytes.count % packetBytes == 0 else {
            throw AudioError(.invalidPacketOffset, "IMA4: \(bytes.count) bytes are not whole packets of \(packetBytes)")
        }
        let packets = bytes.count / packetBytes
        if encoded.count < bytes.count { encoded = [UInt8](repeating: 0, count: bytes.count) }
        encoded.withUnsafeMutableBytes { raw in bytes.withUnsafeBytes { raw.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
        try flush(packets: packets)
        frameCount += packets * 64
    }

    private func flush(packets: Int) throws(AudioError) {
        guard packets > 0 else { return }
        let byteCount = packets * packetBytes
        // A short write (the disk filled mid-way) is retried for the rest, which says why (ENOSPC).
        var done = 0
        while done < byteCount {
            let written = encoded.withUnsafeBytes { Glibc.write(handle.fileDescriptor, $0.baseAddress! + done, byteCount - done) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                throw AudioError(.unspecified, "cannot write IMA4 packets: \(written == 0 ? "no room" : String(cString: strerror(errno)))")
            }
            done += written
        }
        packetCount += packets
    }

    /// Writes the last (padded) packet and fills in the sizes. If that packet cannot be
    /// written (a full disk), the sizes still count the packets that were, and the error follows.
    func finish() throws(AudioError) {
        defer { try? handle.close() }  // on failure too: AudioFile removes the partial file
        if writing && container == .aifc {
            try writePackets(final: true)
            try finishAIFC()
        } else if writing {
            var lastPacketError: AudioError?
            do { try writePackets(final: true) } catch {
                lastPacketError = error
                frameCount = min(frameCount, packetCount * 64)
            }
            try writeCAFSizes(frames: frameCount)
            if let lastPacketError { throw lastPacketError }
        }
    }

    /// Packets written as packets carry 64 frames each; the last one's padding is not audio.
    func setValidFrames(_ frames: Int) {
        frameCount = frames
    }

    /// Makes the CAF on disk, as it stands, a file of the whole packets written so far
    /// (frames waiting for a packet are left out); later packets follow the counted data
    /// until the next update or `finish`.
    func updateHeader() throws(AudioError) {
        guard writing && container == .caf else { return }
        try writeCAFSizes(frames: min(frameCount, packetCount * 64))
    }

    /// The data chunk's size and the pakt's counts for `frames` in the packets written.
    private func writeCAFSizes(frames: Int) throws(AudioError) {
        func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }
        let pakt = bigEndian(UInt64(packetCount)) + bigEndian(UInt64(frames)) + bigEndian(UInt32(0)) + bigEndian(UInt32(packetCount * 64 - frames))
        for (bytes, offset) in [(bigEndian(UInt64(4 + packetCount * packetBytes)), dataSizeAt), (pakt, paktAt)] {
            let written = bytes.withUnsafeBytes { pwrite(handle.fileDescriptor, $0.baseAddress, $0.count, off_t(offset)) }
            guard written == bytes.count else {
                throw AudioError(.unspecified, "cannot write the IMA4 CAF file's sizes: \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Pads the waiting tail with silence to a last packet.
    private func writePackets(final: Bool) throws(AudioError) {
        guard final, pendingFrames > 0 else { return }
        pending.list.frames(from: pendingFrames, count: 64 - pendingFrames).clear()
        if encoded.count < packetBytes { encoded = [UInt8](repeating: 0, count: packetBytes) }
        var states = self.states
        var failure: AudioError?
        encoded.withUnsafeMutableBytes { raw in
            do throws(AudioError) {
                try AppleIMA4.encode(pending.list(frameCount: 64), states: &states, into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<packetBytes]))
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        self.states = states
        pendingFrames = 0
        try flush(packets: 1)
    }
}
