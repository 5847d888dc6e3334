import SonoraCore

/// A compressed file's packets decoded into canonical frames, as ExtAudioFile reads
/// them: priming frames dropped at the start and remainder frames at the end (the file's
/// packet table), so frame 0 is the first frame of the source audio and a round trip is
/// sample-aligned. Seeks decode from a few packets earlier (the codec's preroll) and
/// discard up to the frame asked for.
final class CompressedFrameReader {
    let file: AudioFile
    private let decoder: CodecDecoder
    private let channels: Int
    /// Frames each packet decodes to (from the packet table, or the format's constant).
    private let packetStartFrames: [Int64]
    private let totalDecodedFrames: Int64
    private let primingFrames: Int64
    /// Audio frames (priming and remainder excluded).
    let frameCount: Int

    /// Decoded frames, one array per channel, not yet handed out from `decodedOffset`.
    private var decoded: [[Float]] = []
    private var decodedOffset = 0
    private var decodedCount: Int { decoded.first?.count ?? 0 }
    /// Decoded-timeline frame of `decoded[decodedOffset]`.
    private var decodedFrame: Int64 = 0
    private var nextPacket = 0
    /// Decoded-timeline frames still to throw away (priming, preroll).
    private var discard: Int64 = 0
    /// Packets read from the file and not yet all decoded.
    private var batchBytes: [UInt8] = []
    private var batchDescriptions: [AudioStreamPacketDescription] = []
    private var batchStart = 0
    private static let packetsPerRead = 64

    /// Formats decoded here even when libsndfile could decode them as frames: lossy codecs,
    /// so every path decodes them as libavcodec does and drops the priming the file states.
    static let preferredFormats: Set<AudioFormatID> = [.mpeg4AAC, .mpeg4AAC_HE, .mpegLayer3, .opus]

    /// Whether ExtAudioFile reads `file` through a codec rather than as frames.
    static func decodes(_ file: AudioFile) -> Bool {
        if file.isPacketFile { return true }
        guard preferredFormats.contains(file.dataFormat.formatID), FFmpegCodecs.decodes(file.dataFormat.formatID) else { return false }
        return (try? file.packetIndexForReading()) != nil
    }

    init(file: AudioFile) throws(AudioError) {
        self.file = file
        let format = file.dataFormat
        decoder = try CodecDecoder(format: format, magicCookie: file.magicCookie)
        channels = Int(decoder.outputFormat.channelsPerFrame)
        guard let index = try file.packetIndexForReading() else {
            throw AudioError(.operationNotSupported, "\(file.path): \(format) has no packet index to decode from")
        }
        var starts: [Int64] = []
        starts.reserveCapacity(index.packetCount + 1)
        var at: Int64 = 0
        for count in index.frames {
            starts.append(at)
            at += Int64(count)
        }
        starts.append(at)
        packetStartFrames = starts
        totalDecodedFrames = at
        let table = index.info
        primingFrames = Int64(table?.primingFrames ?? 0)
        let valid = table.map { min($0.validFrames, at - Int64($0.primingFrames)) } ?? at
        frameCount = Int(max(0, valid))
        discard = primingFrames
    }

    /// The rate frames are decoded at (HE-AAC: twice the core rate the file may state).
    var outputFormat: StreamFormat { decoder.outputFormat }

    /// The next audio frame `readFrames` returns.
    private(set) var position = 0

    /// Reads up to `destination.frameCount` frames (file channels, canonical); 0 at the end.
    func readFrames(into destination: AudioBufferList) throws(AudioError) -> Int {
        let wanted = min(destination.frameCount, frameCount - position)
        var done = 0
        while done < wanted {
            let available = decodedCount - decodedOffset
            if available == 0 {
                guard try decodeNextPacket() else { break }
                continue
            }
            if discard > 0 {
                let skip = Int(min(Int64(available), discard))
                decodedOffset += skip
                decodedFrame += Int64(skip)
                discard -= Int64(skip)
                continue
            }
            let count = min(available, wanted - done)
            for channel in 0..<min(channels, destination.channelCount, decoded.count) {
                decoded[channel].withUnsafeBufferPointer { samples in
                    (destination.samples(channel) + done).update(from: samples.baseAddress! + decodedOffset, count: count)
                }
            }
            decodedOffset += count
            decodedFrame += Int64(count)
            done += count
        }
        position += done
        return done
    }

    /// Moves to audio frame `frame` (0 … frameCount).
    func seek(toFrame frame: Int) throws(AudioError) {
        guard frame >= 0, frame <= frameCount else {
            throw AudioError(.invalidPacketOffset, "\(file.path): frame \(frame) is outside 0…\(frameCount)")
        }
        let target = Int64(frame) + primingFrames
        // The packet holding the frame the codec's preroll starts from: MDCT codecs
        // overlap a packet with the one before, MP3 frames reach back into the bit reservoir.
        let from = max(0, target - Self.prerollFrames(decoder.format.formatID))
        var packet = packetStartFrames.partitioningIndex { $0 > from } - 1
        packet = max(0, min(packet, packetStartFrames.count - 2))
        decoder.reset()
        for channel in decoded.indices { decoded[channel].removeAll(keepingCapacity: true) }
        decodedOffset = 0
        nextPacket = packet
        drained = false
        decodedFrame = packetStartFrames.isEmpty ? 0 : packetStartFrames[packet]
        discard = target - decodedFrame
        position = frame
    }

    private var drained = false

    private func decodeNextPacket() throws(AudioError) -> Bool {
        guard nextPacket < packetStartFrames.count - 1 else {
            // Frames a decoder holds back until it knows the stream has ended.
            guard !drained else { return false }
            drained = true
            compactDecoded()
            return try decoder.drain(intoChannels: &decoded) > 0
        }
        drained = false
        // Packets are read from the file a batch at a time (one read for many packets).
        if nextPacket < batchStart || nextPacket >= batchStart + batchDescriptions.count {
            let (bytes, descriptions) = try file.readPackets(from: nextPacket, count: Self.packetsPerRead)
            batchBytes = bytes
            batchStart = nextPacket
            batchDescriptions = descriptions ?? []
            if descriptions == nil, let size = file.dataFormat.bytesPerPacket > 0 ? Int(file.dataFormat.bytesPerPacket) : nil {
                batchDescriptions = (0..<bytes.count / size).map { AudioStreamPacketDescription(startOffset: Int64($0 * size), dataByteSize: UInt32(size)) }
            }
            guard !batchDescriptions.isEmpty else { return false }
        }
        let description = batchDescriptions[nextPacket - batchStart]
        let start = Int(description.startOffset)
        let size = Int(description.dataByteSize)
        guard start >= 0, size >= 0, start + size <= batchBytes.count else {
            throw AudioError(.invalidFileData, "\(file.path): packet \(nextPacket) lies outside the bytes read")
        }
        compactDecoded()
        var failure: AudioError?
        batchBytes.withUnsafeBytes { raw in
            do throws(AudioError) {
                _ = try decoder.decode(UnsafeRawBufferPointer(rebasing: raw[start..<start + size]), intoChannels: &decoded)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        nextPacket += 1
        return true
    }

    private func compactDecoded() {
        if decodedOffset == decodedCount {
            for channel in decoded.indices { decoded[channel].removeAll(keepingCapacity: true) }
            decodedOffset = 0
        }
    }

    /// Decoded frames before a seek target the decoder must see to get it right.
    static func prerollFrames(_ format: AudioFormatID) -> Int64 {
        switch format {
        case .mpeg4AAC, .mpeg4AAC_HE: 2048
        case .mpegLayer3: 1152 * 4
        case .opus: 3840  // 80 ms, RFC 7845's recommended pre-roll
        default: 0  // ALAC, FLAC: packets decode on their own
        }
    }
}

extension Array where Element == Int64 {
    /// The first index whose element satisfies `belongs` (elements sorted so that it holds for a suffix).
    func partitioningIndex(where belongs: (Int64) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if belongs(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
