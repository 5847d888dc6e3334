import Foundation
import SonoraCore

/// Where a file's packets are, found once when it is opened: each packet's bytes (a
/// range of the file, or of memory for containers whose packets are not contiguous byte
/// ranges — Ogg pages split and join them), its frames, the priming/remainder and the
/// cookie. Serves `AudioFile`'s packet reads (AudioFileReadPackets, ReadPacketData,
/// ReadBytes) for every compressed container.
///
/// The audio data, as `readBytes` and `audioDataByteCount` count it, is the packets one
/// after another: for CAF and MP3 that is the file's own data range; for ADTS it leaves
/// out the frame headers (the packets are raw AAC, as Core Audio gives them).
final class PacketIndex {
    let format: StreamFormat
    /// Where each packet starts: a file offset, or an offset into `memory`.
    private(set) var offsets: [Int64] = []
    private(set) var sizes: [Int32] = []
    /// Frames each packet decodes to (before priming and remainder are dropped).
    private(set) var frames: [Int32] = []
    /// Start of each packet in the audio data (packets back to back); one more entry than packets.
    private(set) var dataStarts: [Int64] = [0]
    var info: AudioFilePacketTableInfo?
    var cookie: [UInt8]?
    /// The file offset of the first packet (kAudioFilePropertyDataOffset).
    var dataOffset: Int64 = 0
    /// Packet bytes kept in memory (Ogg); nil when they are read from the file.
    private var memory: [UInt8]?
    private let descriptor: Int32
    private let path: String

    init(path: String, format: StreamFormat, inMemory: Bool) throws(AudioError) {
        self.path = path
        self.format = format
        descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw AudioError(.filePermission, "\(path): cannot open: \(String(cString: strerror(errno)))")
        }
        if inMemory { memory = [] }
    }

    deinit { Glibc.close(descriptor) }

    var packetCount: Int { sizes.count }
    var byteCount: Int64 { dataStarts[dataStarts.count - 1] }
    var maximumPacketSize: Int { Int(sizes.max() ?? 0) }
    var totalFrames: Int64 { frames.reduce(Int64(0)) { $0 + Int64($1) } }

    /// Frames once priming and remainder are dropped.
    var validFrames: Int64 { info?.validFrames ?? totalFrames }

    /// Adds a packet found at `offset` in the file (or, for in-memory indexes, its bytes).
    func append(offset: Int64, size: Int, frames packetFrames: Int, bytes: UnsafeRawBufferPointer? = nil) {
        if memory != nil, let bytes {
            offsets.append(Int64(memory!.count))
            memory!.append(contentsOf: bytes)
        } else {
            offsets.append(offset)
        }
        sizes.append(Int32(size))
        frames.append(Int32(clamping: packetFrames))
        dataStarts.append(dataStarts[dataStarts.count - 1] + Int64(size))
    }

    /// Sets the frames of every packet (after the container's durations are known).
    func setFrames(_ value: Int32, at index: Int) { frames[index] = value }

    // MARK: Reading

    /// `count` packets from `start` (clipped to the file's end) and their descriptions
    /// (offsets from the start of the returned bytes).
    func read(from start: Int, count: Int) throws(AudioError) -> (bytes: [UInt8], descriptions: [AudioStreamPacketDescription]) {
        guard start >= 0, count >= 0, start <= packetCount else {
            throw AudioError(.invalidPacketOffset, "\(path): packet \(start) is outside 0…\(packetCount)")
        }
        let end = start + min(count, packetCount - start)
        var bytes = [UInt8](repeating: 0, count: Int(dataStarts[end] - dataStarts[start]))
        var descriptions: [AudioStreamPacketDescription] = []
        descriptions.reserveCapacity(end - start)
        let variableFrames = format.framesPerPacket == 0
        var packet = start
        while packet < end {
            // Packets back to back in the file are read with one call.
            var last = packet
            while last + 1 < end && offsets[last + 1] == offsets[last] + Int64(sizes[last]) { last += 1 }
            let at = Int(dataStarts[packet] - dataStarts[start])
            let length = Int(dataStarts[last + 1] - dataStarts[packet])
            try copy(from: offsets[packet], count: length, into: &bytes, at: at)
            packet = last + 1
        }
        for index in start..<end {
            descriptions.append(AudioStreamPacketDescription(
                startOffset: dataStarts[index] - dataStarts[start],
                variableFramesInPacket: variableFrames ? UInt32(frames[index]) : 0,
                dataByteSize: UInt32(sizes[index])))
        }
        return (bytes, descriptions)
    }

    /// As many whole packets from `start` as fit in `maximumBytes` (at most `count`).
    func packetsFitting(from start: Int, count: Int, maximumBytes: Int) -> Int {
        guard start >= 0, start < packetCount, count > 0 else { return 0 }
        let limit = dataStarts[start] + Int64(max(maximumBytes, 0))
        // The last packet boundary at or below the limit (binary search over the starts).
        var low = start, high = min(start + count, packetCount)
        while low < high {
            let middle = (low + high + 1) / 2
            if dataStarts[middle] <= limit { low = middle } else { high = middle - 1 }
        }
        return low - start
    }

    /// `count` bytes of the audio data from byte `start`, across packet boundaries.
    func readBytes(from start: Int64, count: Int) throws(AudioError) -> [UInt8] {
        guard start >= 0, start <= byteCount, count >= 0 else {
            throw AudioError(.invalidPacketOffset, "\(path): byte \(start) is outside the \(byteCount) bytes of audio data")
        }
        let wanted = Int(min(Int64(count), byteCount - start))
        var bytes = [UInt8](repeating: 0, count: wanted)
        guard wanted > 0 else { return bytes }
        // The packet holding `start`: the last whose start is at or before it.
        var low = 0, high = packetCount - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if dataStarts[middle] <= start { low = middle } else { high = middle - 1 }
        }
        var packet = low
        var done = 0
        while done < wanted {
            let within = start + Int64(done) - dataStarts[packet]
            let take = min(Int(Int64(sizes[packet]) - within), wanted - done)
            try copy(from: offsets[packet] + within, count: take, into: &bytes, at: done)
            done += take
            packet += 1
        }
        return bytes
    }

    private func copy(from offset: Int64, count: Int, into bytes: inout [UInt8], at position: Int) throws(AudioError) {
        guard count > 0 else { return }
        if let memory {
            bytes.withUnsafeMutableBufferPointer { target in
                memory.withUnsafeBufferPointer { source in
                    _ = memcpy(target.baseAddress! + position, source.baseAddress! + Int(offset), count)
                }
            }
            return
        }
        var done = 0
        while done < count {
            let read = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + position + done, count - done, off_t(offset) + off_t(done)) }
            if read < 0 && errno == EINTR { continue }
            guard read > 0 else {
                throw AudioError(.endOfFile, "\(path): packet data at byte \(offset + Int64(done)) is missing (the file ends or cannot be read)")
            }
            done += read
        }
    }
}
