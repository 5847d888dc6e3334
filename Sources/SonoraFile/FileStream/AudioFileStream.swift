import SonoraCore

/// Core Audio's AudioFileStream: parses a stream of bytes fed in any pieces (as from a
/// network) — WAV, AIFF/AIFC or CAF (linear PCM, IMA4, and in CAF any compressed format
/// with its magic cookie and packet table; MP3 in WAV), MP3 (MPEG-1/2/2.5 layers I–III,
/// ID3 and APE tags skipped, Xing/Info/VBRI/LAME headers read) and AAC in ADTS — reporting
/// properties as they become known and handing out audio data as whole packets.
///
/// Any split of the input gives the same properties, the same packet bytes and the same
/// descriptions. Malformed, truncated or oversized headers give an `AudioError` naming the
/// problem; the parser never reads beyond what it was given and holds a bounded amount.
public final class AudioFileStream {
    /// What the parser has learned, in the order Core Audio reports it: FileFormat, DataFormat,
    /// FormatList, MagicCookieData, PacketTableInfo, DataOffset, AudioDataByteCount,
    /// AudioDataPacketCount, BitRate, MaximumPacketSize or PacketSizeUpperBound,
    /// ReadyToProducePackets. Each is announced at most once.
    public enum Property: Equatable, Sendable {
        case fileFormat(AudioFileType)
        case dataFormat(StreamFormat)
        /// The formats the stream can be decoded as (`kAudioFileStreamProperty_FormatList`; AAC).
        case formatList([StreamFormat])
        /// The codec's configuration (`kAudioFileStreamProperty_MagicCookieData`): for AAC an
        /// ES_Descriptor (the body of an `esds` box), else the CAF `kuki` chunk as written.
        case magicCookieData([UInt8])
        /// Priming and remainder frames (CAF `pakt`, MP3 LAME header).
        case packetTableInfo(AudioFilePacketTableInfo)
        /// Where the first packet starts in the stream.
        case dataOffset(Int)
        /// Nil when the container does not say (a CAF written while streaming).
        case audioDataByteCount(Int?)
        case audioDataPacketCount(Int)
        case bitRate(Int)
        /// The largest packet in the stream, when the container's packet table says.
        case maximumPacketSize(Int)
        /// The largest packet the format allows, when the packets are not listed up front.
        case packetSizeUpperBound(Int)
        case readyToProducePackets

        /// Which property this is (each is announced once).
        var kind: Int {
            switch self {
            case .fileFormat: 0
            case .dataFormat: 1
            case .formatList: 2
            case .magicCookieData: 3
            case .packetTableInfo: 4
            case .dataOffset: 5
            case .audioDataByteCount: 6
            case .audioDataPacketCount: 7
            case .bitRate: 8
            case .maximumPacketSize: 9
            case .packetSizeUpperBound: 10
            case .readyToProducePackets: 11
            }
        }
    }

    /// Where a packet lies in the bytes handed to the packets handler: SonoraCore's
    /// `AudioStreamPacketDescription` (this name kept for callers that used it).
    public typealias PacketDescription = AudioStreamPacketDescription

    public typealias PropertyListener = (Property) -> Void
    /// Receives whole packets; descriptions are nil for constant-size packets, and present
    /// (offsets into this buffer) for variable-size ones (MP3, AAC, CAF with a packet table).
    public typealias PacketsHandler = (UnsafeRawBufferPointer, [PacketDescription]?) -> Void

    let propertyListener: PropertyListener
    let packetsHandler: PacketsHandler
    /// The container the caller expects (`AudioFileStreamOpen`'s hint): with `.mp3` or `.adts`
    /// junk before the first frame is skipped instead of being an error.
    let fileTypeHint: AudioFileType?

    enum Stage { case detecting, chunks, constantPackets, packetTable, mpeg, adts }
    var stage = Stage.detecting
    private var failed: AudioError?
    private var announced: Set<Int> = []

    /// Bytes held while reading headers (from stream offset `headerBase`).
    var header: [UInt8] = []
    var headerBase = 0
    /// Stream offset of the next byte to arrive; nil after a discontinuity to an unknown place.
    var streamPosition: Int? = 0
    var container: Container?
    var format: StreamFormat?
    /// Bytes of audio data still to come (nil: until the end of the stream).
    var dataRemaining: Int?
    /// Stream offset where the packets start and where the audio data ends (when known).
    var dataStart: Int?
    var dataEnd: Int?
    var carry: [UInt8] = []
    var packetBytes = 0
    /// Where the next unread chunk header starts in `header` (format chunks are read once).
    var nextChunk = 0
    /// Bytes of a leading ID3v2 tag still to skip, and whether one was seen (then MP3 or ADTS follows).
    var leadingSkip = 0
    var sawID3 = false

    // Compressed data in chunked containers.
    var cookie: [UInt8]?
    var packetTable: CAFPacketTable?
    /// Byte offset of each packet from the data start (packets + 1 entries).
    var packetStarts: [Int] = []
    var nextTablePacket = 0
    /// A CAF data chunk of variable-size packets seen before its packet table (offset in `header`, size).
    var deferredData: (body: Int, size: Int)?
    /// A WAV's MP3 bit rate (its fmt chunk's average bytes a second × 8).
    var wavMP3BitRate: Int?
    /// Bytes held in `header` before the audio data (raised while a CAF's data waits for its `pakt`).
    var headerLimit = AudioFileStream.maximumHeaderBytes

    // Framed streams (MP3, ADTS).
    var mpeg: FrameSynchronizer<MPEGAudioFrameHeader>?
    var adts: FrameSynchronizer<ADTSFrameHeader>?
    /// False until the first frame (the MP3 info-tag candidate) has been seen.
    var sawFirstFrame = false
    /// Properties come from the first frame (a bare MP3/ADTS stream), not from a container's chunks.
    var announcesFromFirstFrame = false
    var infoTag: MPEGAudioInfoTag?
    var infoTagOffset: Int?
    var framesPerPacket = 0

    // Packets.
    var batch = PacketBatch()
    /// Index of the next packet handed out; nil after a seek that could only be estimated.
    var packetIndex: Int? = 0
    /// Stream offsets of the framed packets seen so far, for exact seeks back (bounded).
    var packetOffsets: [Int] = []
    var framedPacketCount = 0
    var framedByteCount = 0
    var pendingSeek: (byteOffset: Int, packet: Int, isEstimated: Bool)?

    /// Header bytes the parser will hold while looking for the audio data.
    public static let maximumHeaderBytes = 1 << 20
    /// Audio data a CAF may put before its packet table that the parser will hold until it comes.
    public static let maximumDeferredDataBytes = 64 << 20
    /// Packet offsets remembered for exact seeks in MP3 and ADTS streams.
    static let maximumRememberedPackets = 1 << 20

    enum Container { case wave, aiff(compressed: Bool), caf }

    /// `AudioFileStreamOpen`.
    public init(fileTypeHint: AudioFileType? = nil, propertyListener: @escaping PropertyListener, packetsHandler: @escaping PacketsHandler) {
        self.fileTypeHint = fileTypeHint
        self.propertyListener = propertyListener
        self.packetsHandler = packetsHandler
    }

    /// `AudioFileStreamParseBytes`. After a discontinuity (a seek in the source) a partial
    /// packet held from before is dropped; after `seek(toPacket:)`, pass the bytes from the
    /// offset it returned with `discontinuity: true`.
    public func parse(_ bytes: UnsafeRawBufferPointer, discontinuity: Bool = false) throws(AudioError) {
        if let failed { throw failed }
        do {
            try parseBytes(bytes, discontinuity: discontinuity)
            flushPackets()
        } catch {
            flushPackets()
            // A discontinuity the parser cannot place loses only these bytes; other errors end the stream.
            if error.code != .discontinuityCantRecover { failed = error }
            throw error
        }
    }

    /// Convenience for arrays and Data.
    public func parse(_ bytes: [UInt8], discontinuity: Bool = false) throws(AudioError) {
        var failure: AudioError?
        bytes.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Void in
            do throws(AudioError) { try parse(raw, discontinuity: discontinuity) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    func announce(_ property: Property) {
        guard announced.insert(property.kind).inserted else { return }
        propertyListener(property)
    }

    var isReady: Bool { announced.contains(Property.readyToProducePackets.kind) }

    private func parseBytes(_ bytes: UnsafeRawBufferPointer, discontinuity: Bool) throws(AudioError) {
        if discontinuity { try discontinue() }
        let arrival = streamPosition
        if let at = streamPosition { streamPosition = at + bytes.count }
        try feed(bytes, at: arrival)
    }

    /// Hands `bytes` (starting at stream offset `at`) to the current stage.
    func feed(_ bytes: UnsafeRawBufferPointer, at: Int?) throws(AudioError) {
        switch stage {
        case .detecting, .chunks:
            var input = bytes
            var inputAt = at
            if leadingSkip > 0 && header.isEmpty {
                let skipped = min(leadingSkip, input.count)
                leadingSkip -= skipped
                input = UnsafeRawBufferPointer(rebasing: input[skipped...])
                inputAt = inputAt.map { $0 + skipped }
            }
            if header.isEmpty { headerBase = inputAt ?? 0 }
            header.append(contentsOf: input)
            guard header.count <= headerLimit else {
                throw AudioError(.invalidFileData, "no audio data within the first \(headerLimit) bytes")
            }
            if stage == .detecting {
                guard try detect() else { return }
                if stage != .chunks {
                    // A bare MP3/ADTS stream: what was held goes to the frame synchroniser.
                    let held = header
                    header = []
                    try withBytes(held) { (raw) throws(AudioError) in try feedFrames(raw) }
                    return
                }
            }
            guard let dataStart = try parseHeader() else { return }
            let rest = Array(header[dataStart...])
            let restAt = headerBase + dataStart
            header = []
            nextChunk = 0
            try withBytes(rest) { (raw) throws(AudioError) in try feed(raw, at: restAt) }
        case .constantPackets:
            deliver(bytes)
        case .packetTable:
            deliverTablePackets(bytes)
        case .mpeg, .adts:
            try feedFrames(limitedToData(bytes))
        }
    }

    /// The part of `bytes` that is audio data, counting it off (what follows the data chunk is not).
    func limitedToData(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        guard let remaining = dataRemaining else { return bytes }
        let input = UnsafeRawBufferPointer(rebasing: bytes.prefix(remaining))
        dataRemaining = remaining - input.count
        return input
    }

    /// Hands out whole packets, keeping a partial one for the next call.
    private func deliver(_ bytes: UnsafeRawBufferPointer) {
        let input = limitedToData(bytes)
        guard !input.isEmpty, packetBytes > 0 else { return }
        var combined = carry
        combined.append(contentsOf: input)
        let whole = combined.count / packetBytes * packetBytes
        if whole > 0 {
            combined.withUnsafeBytes { packetsHandler(UnsafeRawBufferPointer(rebasing: $0.prefix(whole)), nil) }
            if let index = packetIndex { packetIndex = index + whole / packetBytes }
        }
        carry = Array(combined[whole...])
    }

    /// Hands the gathered variable-size packets to the handler, with their descriptions.
    func flushPackets() {
        guard !batch.descriptions.isEmpty else { return }
        let descriptions = batch.descriptions
        batch.bytes.withUnsafeBytes { packetsHandler($0, descriptions) }
        batch = PacketBatch()
    }

    /// Recognises the container from the first bytes, skipping leading ID3v2 tags. True once decided.
    private func detect() throws(AudioError) -> Bool {
        while true {
            if leadingSkip > 0 {
                let skipped = min(leadingSkip, header.count)
                header.removeFirst(skipped)
                headerBase += skipped
                leadingSkip -= skipped
                if leadingSkip > 0 { return false }
            }
            guard header.count >= 4 else { return false }
            if header[0] == 0x49 && header[1] == 0x44 && header[2] == 0x33 {
                guard header.count >= 10 else { return false }
                let size = header.withUnsafeBytes { StreamTag.id3v2Size(UnsafeRawBufferPointer(rebasing: $0[0..<10])) }
                guard let size else {
                    let problem = header.withUnsafeBytes { StreamTag.id3v2Problem(UnsafeRawBufferPointer(rebasing: $0[0..<10])) }
                    throw AudioError(.invalidFileData, "ID3v2 tag at byte \(headerBase): \(problem)")
                }
                sawID3 = true
                leadingSkip = size
                continue
            }
            let magic = String(decoding: header[0..<4], as: UTF8.self)
            if ["RIFF", "FORM", "caff"].contains(magic) {
                stage = .chunks
                return true
            }
            if header[0] == 0xFF && header[1] & 0xF6 == 0xF0 {
                try startFramed(adts: true)
                return true
            }
            if header[0] == 0xFF && header[1] & 0xE0 == 0xE0 {
                try startFramed(adts: false)
                return true
            }
            if fileTypeHint == .mp3 || fileTypeHint == .adts || sawID3 {
                try startFramed(adts: fileTypeHint == .adts)
                return true
            }
            throw AudioError(.unsupportedFileType, "not a WAV, AIFF/AIFC, CAF, MP3 or ADTS stream (starts with '\(printable(0..<4))')")
        }
    }
}

/// Runs `body` on the bytes of `array`, passing its typed error through.
func withBytes(_ array: [UInt8], _ body: (UnsafeRawBufferPointer) throws(AudioError) -> Void) throws(AudioError) {
    var failure: AudioError?
    array.withUnsafeBytes { raw in
        do throws(AudioError) { try body(raw) } catch { failure = error }
    }
    if let failure { throw failure }
}

/// Variable-size packets gathered during one parse call, handed out together.
struct PacketBatch {
    var bytes: [UInt8] = []
    var descriptions: [AudioStreamPacketDescription] = []

    mutating func add(_ packet: UnsafeRawBufferPointer, frames: Int = 0) {
        descriptions.append(AudioStreamPacketDescription(
            startOffset: Int64(bytes.count), variableFramesInPacket: UInt32(clamping: frames), dataByteSize: UInt32(packet.count)))
        bytes.append(contentsOf: packet)
    }
}
