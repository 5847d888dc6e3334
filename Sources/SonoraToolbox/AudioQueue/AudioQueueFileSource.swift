import Foundation
import SonoraCore
import SonoraFile

/// The packets of one or more files in one format, fed to an output queue — the reference
/// documents' HandleOutputBuffer (read the next packets into the buffer that came back,
/// enqueue it; at the end, stop after what is queued), plus what afplay adds: a start
/// position, gapless repetition, and the file's priming and remainder trimmed, so what
/// plays is exactly each file's frames.
///
/// Priming and remainder (AAC, MP3, Opus; IMA4 padding): the first buffer of a file carries
/// the priming frames (plus the start position's offset into its packet and the decoder's
/// pre-roll) as `trimFramesAtStart`, the last one the remainder as `trimFramesAtEnd`.
/// Files follow each other in one queue, so the joins are gapless; they must share the
/// format and magic cookie (`canShare`).
///
/// Threads: `fill` runs on the queue's callback thread; `halt` and the accounting on any.
public final class AudioQueueFileSource: @unchecked Sendable {
    /// The files, in play order, opened by the caller (and closed by it, after the queue).
    public let files: [AudioFile]
    /// Their common format: the queue's.
    public let format: StreamFormat
    /// Packets per buffer (about 100 ms, and enough for the first buffer's trim).
    public let packetsPerBuffer: Int
    /// The byte capacity each buffer needs for `packetsPerBuffer` packets.
    public let bufferByteCapacity: Int
    /// Descriptions per buffer (0 for constant-size packets).
    public let packetDescriptionCapacity: Int

    private let lock = NSLock()
    /// Passes still to begin after the current one; −1: until `halt` (AVAudioPlayer's numberOfLoops).
    private var loopsLeft: Int
    private var fileIndex = 0
    private var packet = 0
    private var pendingTrimAtStart = 0
    private var done = false
    private var halted = false
    /// Where each repetition began, in frames enqueued since the first.
    private var passStarts: [Int] = []
    private var enqueuedTotal = 0
    private var enqueuedLog: [(file: Int, frames: Int)] = []
    private var failureValue: AudioError?
    private let packetCounts: [Int]
    private let trims: [(priming: Int, remainder: Int)]

    /// Frames a lossy decoder needs before its output is exact after a seek (80 ms, at least
    /// two packets): AAC and MP3 overlap frames (MP3's bit reservoir reaches back too), Opus asks for 80 ms.
    static func prerollPackets(_ format: StreamFormat) -> Int {
        switch format.formatID {
        case .mpeg4AAC, .mpeg4AAC_HE, .mpegLayer3, .opus:
            let packetFrames = max(Int(format.framesPerPacket), 1)
            return max(2, (Int(format.sampleRate * 0.08) + packetFrames - 1) / packetFrames)
        default: return 0
        }
    }

    /// Whether two files can play through one queue (same format and magic cookie).
    public static func canShare(_ first: AudioFile, _ second: AudioFile) -> Bool {
        first.dataFormat == second.dataFormat && first.magicCookie == second.magicCookie
    }

    /// A source over `files` (at least one; all `canShare` the first), the first starting
    /// `startFrame` frames in (of its valid frames); `loops`: after the last file, the first
    /// again from its beginning, until `halt`.
    public convenience init(files: [AudioFile], startFrame: Int = 0, loops: Bool = false) throws(AudioError) {
        try self.init(files: files, startFrame: startFrame, numberOfLoops: loops ? -1 : 0)
    }

    /// As `init(files:startFrame:loops:)`, repeating the list `numberOfLoops` more times
    /// after the first pass (−1: until `halt`), as AVAudioPlayer's numberOfLoops counts.
    public init(files: [AudioFile], startFrame: Int = 0, numberOfLoops: Int) throws(AudioError) {
        guard numberOfLoops >= -1 else { throw AudioError(.parameterError, "AudioQueueFileSource: numberOfLoops \(numberOfLoops) (−1 for ever, 0 or more)") }
        guard let first = files.first else { throw AudioError(.parameterError, "AudioQueueFileSource: no files") }
        for file in files.dropFirst() where !Self.canShare(first, file) {
            throw AudioError(.parameterError, "AudioQueueFileSource: \(file.path) (\(file.dataFormat)) does not share \(first.path)'s format and magic cookie (\(first.dataFormat))")
        }
        self.files = files
        loopsLeft = numberOfLoops
        format = first.dataFormat
        var counts: [Int] = []
        var trims: [(Int, Int)] = []
        for file in files {
            guard let count = file.packetCount, let size = file.maximumPacketSize, size > 0 else {
                throw AudioError(.operationNotSupported, "\(file.path): \(file.dataFormat) packets are not readable one by one")
            }
            counts.append(count)
            trims.append(try Self.trim(of: file, packets: count))
        }
        guard counts.contains(where: { $0 > 0 }) else {
            throw AudioError(.invalidPacketOffset, "\(first.path): no audio frames to play")
        }
        packetCounts = counts
        self.trims = trims
        let packetFrames = max(Int(format.framesPerPacket), 1)
        let maximumSize = files.compactMap(\.maximumPacketSize).max() ?? 1
        // The first buffer of a pass carries its whole start trim: priming, an offset into a
        // packet and the pre-roll, each under a packet or two; 100 ms otherwise.
        let trimPackets = (trims.map(\.0).max() ?? 0) / packetFrames + 2 + Self.prerollPackets(format)
        packetsPerBuffer = max(1, Int(format.sampleRate / 10) / packetFrames, trimPackets)
        bufferByteCapacity = packetsPerBuffer * maximumSize
        packetDescriptionCapacity = format.bytesPerPacket == 0 ? packetsPerBuffer : 0
        try seek(firstFileTo: startFrame)
    }

    /// Priming and remainder: the packet table's, else the packets' frames beyond the file's
    /// frames (IMA4's last packet padding).
    private static func trim(of file: AudioFile, packets: Int) throws(AudioError) -> (Int, Int) {
        if let info = file.packetTableInfo { return (Int(info.primingFrames), Int(info.remainderFrames)) }
        guard file.dataFormat.framesPerPacket > 0 else { return (0, 0) }
        return (0, max(0, packets * Int(file.dataFormat.framesPerPacket) - file.frameCount))
    }

    /// Positions the first file at `startFrame` of its valid frames: the packet holding it
    /// (less the pre-roll), and the frames before it to trim.
    private func seek(firstFileTo startFrame: Int) throws(AudioError) {
        let file = files[0]
        guard startFrame == 0 || (startFrame > 0 && startFrame < file.frameCount) else {
            throw AudioError(.invalidPacketOffset, "\(file.path): start frame \(startFrame) is outside its \(file.frameCount) frames")
        }
        let target = startFrame + trims[0].priming
        var (start, offset) = try locate(frame: target, in: file, packets: packetCounts[0])
        let preroll = min(start, Self.prerollPackets(format))
        if preroll > 0 {
            offset += try frames(ofPackets: start - preroll, count: preroll, in: file)
            start -= preroll
        }
        packet = start
        pendingTrimAtStart = offset
    }

    /// The packet holding stream frame `frame` and the frames before it in that packet.
    private func locate(frame: Int, in file: AudioFile, packets: Int) throws(AudioError) -> (packet: Int, offset: Int) {
        if format.framesPerPacket > 0 {
            let packetFrames = Int(format.framesPerPacket)
            return (frame / packetFrames, frame % packetFrames)
        }
        // Variable frames per packet: walk the descriptions.
        var packet = 0
        var before = 0
        while packet < packets {
            let read = try file.readPackets(from: packet, count: min(4096, packets - packet))
            for description in read.descriptions ?? [] {
                let count = Int(description.variableFramesInPacket)
                if before + count > frame { return (packet, frame - before) }
                before += count
                packet += 1
            }
        }
        return (packets, 0)
    }

    private func frames(ofPackets start: Int, count: Int, in file: AudioFile) throws(AudioError) -> Int {
        if format.framesPerPacket > 0 { return count * Int(format.framesPerPacket) }
        let read = try file.readPackets(from: start, count: count)
        return (read.descriptions ?? []).reduce(0) { $0 + Int($1.variableFramesInPacket) }
    }

    /// The first read or enqueue failure (the queue was then stopped after what it holds).
    public var failure: AudioError? { lock.withLock { failureValue } }

    /// Passes begun over the file list (1 without repetition), as far as enqueued.
    public var passesStarted: Int { lock.withLock { passStarts.count + 1 } }

    /// Passes begun within the first `playedFrames` frames enqueued (what has played of them).
    public func passes(within playedFrames: Int) -> Int {
        lock.withLock { 1 + passStarts.filter { $0 < playedFrames }.count }
    }

    /// Repetitions still to begin (−1: for ever); settable while playing, as AVAudioPlayer's numberOfLoops.
    public var numberOfLoops: Int {
        get { lock.withLock { loopsLeft } }
        set { lock.withLock { loopsLeft = max(newValue, -1) } }
    }

    /// Frames enqueued (since the first) at which each repetition began.
    public var passStartFrames: [Int] { lock.withLock { passStarts } }

    /// Stops feeding: buffers that come back stay with the program (before `stop(immediate: true)`).
    public func halt() { lock.withLock { halted = true } }

    /// Frames enqueued so far per file index, in play order (consecutive runs of one file
    /// merged): with the queue's played frames, says which file played what.
    public var enqueuedFrames: [(file: Int, frames: Int)] { lock.withLock { enqueuedLog } }

    /// HandleOutputBuffer: the next packets into `buffer`, enqueued; at the end (not looping)
    /// the queue stops after what is queued.
    public func fill(_ queue: AudioQueue, _ buffer: AudioQueueBuffer) {
        lock.lock()
        defer { lock.unlock() }
        guard !done, !halted else { return }
        // An empty file plays nothing (some file of the list has packets: checked at init).
        while !done && packetCounts[fileIndex] == 0 { advance() }
        if done {
            try? queue.stop(immediate: false)
            return
        }
        do throws(AudioError) {
            let file = files[fileIndex]
            let packets = packetCounts[fileIndex]
            let wanted = min(packetsPerBuffer, packets - packet)
            let packetCount: Int
            let descriptions: [AudioStreamPacketDescription]
            var decoded: Int
            if let direct = try file.readPacketData(from: packet, count: wanted, maximumBytes: buffer.byteCapacity, into: buffer.audioData) {
                // Linear PCM read raw: straight into the buffer (no array made, zeroed and copied).
                packetCount = direct.packetCount
                descriptions = []
                decoded = direct.byteCount / max(Int(format.bytesPerFrame), 1)
                buffer.byteSize = direct.byteCount
            } else {
                let read = try file.readPacketData(from: packet, count: wanted, maximumBytes: buffer.byteCapacity)
                packetCount = read.packetCount
                descriptions = read.descriptions ?? []
                decoded = format.framesPerPacket > 0 ? read.packetCount * Int(format.framesPerPacket)
                    : descriptions.reduce(0) { $0 + Int($1.variableFramesInPacket) }
                if format.isLinearPCM { decoded = read.bytes.count / max(Int(format.bytesPerFrame), 1) }
                buffer.fill(with: read.bytes)
            }
            guard packetCount > 0 else {
                throw AudioError(.invalidPacketOffset, "\(file.path): no packet read at packet \(packet) of \(packets)")
            }
            let last = packet + packetCount >= packets
            let trimStart = min(pendingTrimAtStart, decoded)
            let trimEnd = last ? min(trims[fileIndex].remainder, decoded - trimStart) : 0
            try queue.enqueue(buffer, packetDescriptions: descriptions, trimFramesAtStart: trimStart, trimFramesAtEnd: trimEnd)
            pendingTrimAtStart -= trimStart
            log(file: fileIndex, frames: decoded - trimStart - trimEnd)
            packet += packetCount
            if last { advance() }
        } catch {
            failureValue = error
            done = true
        }
        if done { try? queue.stop(immediate: false) }
    }

    /// To the next file (or back to the first when looping): from its first packet, its priming to trim.
    private func advance() {
        fileIndex += 1
        if fileIndex == files.count {
            guard loopsLeft != 0 else {
                done = true
                return
            }
            if loopsLeft > 0 { loopsLeft -= 1 }
            fileIndex = 0
            passStarts.append(enqueuedTotal)
        }
        packet = 0
        pendingTrimAtStart = trims[fileIndex].priming
    }

    private func log(file: Int, frames: Int) {
        enqueuedTotal += frames
        if let lastEntry = enqueuedLog.last, lastEntry.file == file {
            enqueuedLog[enqueuedLog.count - 1].frames += frames
        } else {
            enqueuedLog.append((file, frames))
        }
    }
}
