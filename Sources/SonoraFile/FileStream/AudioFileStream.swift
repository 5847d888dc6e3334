import SonoraCore

/// Core Audio's AudioFileStream: parses a WAV, AIFF/AIFC or CAF file from bytes
/// fed in any pieces (as from a network), reporting properties as they become
/// known and handing out audio data as whole packets.
///
/// Any split of the input gives the same properties and the same packet bytes.
/// Malformed, truncated or oversized headers give an `AudioError` naming the
/// problem; the parser never reads beyond what it was given.
public final class AudioFileStream {
    /// What the parser has learned, in the order Core Audio reports it.
    public enum Property: Equatable, Sendable {
        case fileFormat(AudioFileType)
        case dataFormat(StreamFormat)
        case dataOffset(Int)
        /// Nil when the container does not say (a CAF written while streaming).
        case audioDataByteCount(Int?)
        case bitRate(Int)
        case readyToProducePackets
    }

    /// Where a packet lies in the bytes handed to the packets handler: SonoraCore's
    /// `AudioStreamPacketDescription` (this name kept for callers that used it).
    public typealias PacketDescription = AudioStreamPacketDescription

    public typealias PropertyListener = (Property) -> Void
    /// Receives whole packets; descriptions are nil for constant-size packets.
    public typealias PacketsHandler = (UnsafeRawBufferPointer, [PacketDescription]?) -> Void

    private let propertyListener: PropertyListener
    private let packetsHandler: PacketsHandler
    private var header: [UInt8] = []
    private var container: Container?
    private var format: StreamFormat?
    /// Bytes of audio data still to come (nil: until the end of the stream).
    private var dataRemaining: Int?
    private var carry: [UInt8] = []
    private var packetBytes = 0
    private var inData = false
    private var failed: AudioError?
    /// Where the next unread chunk header starts in `header` (format chunks are read once).
    private var nextChunk = 0

    /// Header bytes the parser will hold while looking for the audio data.
    public static let maximumHeaderBytes = 1 << 20

    enum Container { case wave, aiff(compressed: Bool), caf }

    /// `AudioFileStreamOpen`.
    public init(propertyListener: @escaping PropertyListener, packetsHandler: @escaping PacketsHandler) {
        self.propertyListener = propertyListener
        self.packetsHandler = packetsHandler
    }

    /// `AudioFileStreamParseBytes`. After a discontinuity (a seek in the source),
    /// a partial packet held from before is dropped.
    public func parse(_ bytes: UnsafeRawBufferPointer, discontinuity: Bool = false) throws(AudioError) {
        if let failed { throw failed }
        do {
            try parseBytes(bytes, discontinuity: discontinuity)
        } catch {
            failed = error
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

    private func parseBytes(_ bytes: UnsafeRawBufferPointer, discontinuity: Bool) throws(AudioError) {
        if inData {
            if discontinuity { carry.removeAll() }
            deliver(bytes)
            return
        }
        header.append(contentsOf: bytes)
        guard header.count <= Self.maximumHeaderBytes else {
            throw AudioError(.invalidFileData, "no audio data within the first \(Self.maximumHeaderBytes) bytes")
        }
        guard let dataStart = try parseHeader() else { return }
        inData = true
        let rest = Array(header[dataStart...])
        header = []
        rest.withUnsafeBytes { deliver($0) }
    }

    /// Hands out whole packets, keeping a partial one for the next call.
    private func deliver(_ bytes: UnsafeRawBufferPointer) {
        var input = bytes
        if let remaining = dataRemaining {
            input = UnsafeRawBufferPointer(rebasing: input.prefix(remaining))
            dataRemaining = remaining - input.count
        }
        guard !input.isEmpty, packetBytes > 0 else { return }
        var combined = carry
        combined.append(contentsOf: input)
        let whole = combined.count / packetBytes * packetBytes
        if whole > 0 {
            combined.withUnsafeBytes { packetsHandler(UnsafeRawBufferPointer(rebasing: $0.prefix(whole)), nil) }
        }
        carry = Array(combined[whole...])
    }

    // MARK: Headers

    /// Returns the offset of the audio data in `header` once the header is complete, or nil to wait for more.
    private func parseHeader() throws(AudioError) -> Int? {
        guard header.count >= 12 else { return nil }
        if container == nil {
            switch (tag(0), tag(8)) {
            case ("RIFF", "WAVE"): container = .wave
            case ("FORM", "AIFF"): container = .aiff(compressed: false)
            case ("FORM", "AIFC"): container = .aiff(compressed: true)
            case ("caff", _):
                guard be16(4) == 1 else { throw AudioError(.unsupportedFileType, "CAF version \(be16(4)) (Sonora reads version 1)") }
                container = .caf
            default:
                throw AudioError(.unsupportedFileType, "not a WAV, AIFF/AIFC or CAF stream (starts with '\(printable(0..<4))')")
            }
            switch container! {
            case .wave: propertyListener(.fileFormat(.wave))
            case .aiff(let compressed): propertyListener(.fileFormat(compressed ? .aifc : .aiff))
            case .caf: propertyListener(.fileFormat(.caf))
            }
        }
        switch container! {
        case .wave: return try walkChunks(from: max(nextChunk, 12), sizeBytes: 4, littleEndian: true)
        case .aiff: return try walkChunks(from: max(nextChunk, 12), sizeBytes: 4, littleEndian: false)
        case .caf: return try walkChunks(from: max(nextChunk, 8), sizeBytes: 8, littleEndian: false)
        }
    }

    /// Walks the chunks seen so far; handles format chunks, finds the data chunk.
    private func walkChunks(from start: Int, sizeBytes: Int, littleEndian: Bool) throws(AudioError) -> Int? {
        var offset = start
        while true {
            let headerSize = 4 + sizeBytes
            guard header.count >= offset + headerSize else { return nil }
            let id = tag(offset)
            let size: Int
            if sizeBytes == 8 {
                let raw = be64(offset + 4)
                size = raw == UInt64.max ? -1 : (raw > UInt64(Int.max) ? Int.max : Int(raw))
            } else {
                size = littleEndian ? Int(le32(offset + 4)) : Int(be32(offset + 4))
            }
            let body = offset + headerSize
            if isDataChunk(id) {
                return try startData(id: id, body: body, size: size)
            }
            guard size >= 0, size <= Self.maximumHeaderBytes else {
                throw AudioError(.invalidChunk, "chunk '\(printable(offset..<offset + 4))' claims \(size) bytes before any audio data")
            }
            guard header.count >= body + size else { return nil }
            try readFormatChunk(id: id, body: body, size: size)
            // RIFF and IFF pad chunks to an even size; CAF does not.
            offset = body + size + (sizeBytes == 4 && size % 2 == 1 ? 1 : 0)
            nextChunk = offset
        }
    }

    private func isDataChunk(_ id: String) -> Bool {
        switch container! {
        case .wave: id == "data"
        case .aiff: id == "SSND"
        case .caf: id == "data"
        }
    }

    private func startData(id: String, body: Int, size: Int) throws(AudioError) -> Int? {
        guard let format else {
            throw AudioError(.invalidFileData, "audio data ('\(id)') comes before the format chunk")
        }
        var dataStart = body
        var byteCount: Int? = size
        switch container! {
        case .aiff:
            guard header.count >= body + 8 else { return nil }
            let skip = Int(be32(body))
            guard skip <= Self.maximumHeaderBytes else { throw AudioError(.invalidChunk, "SSND offset \(skip) is implausible") }
            dataStart = body + 8 + skip
            byteCount = size - 8 - skip
            guard header.count >= dataStart else { return nil }
        case .caf:
            dataStart = body + 4  // edit count
            guard header.count >= dataStart else { return nil }
            byteCount = size < 0 ? nil : size - 4
        case .wave:
            break
        }
        if let count = byteCount, count < 0 {
            throw AudioError(.invalidChunk, "the '\(id)' chunk is too small for its own header")
        }
        packetBytes = Int(format.bytesPerPacket)
        guard packetBytes > 0 else {
            throw AudioError(.unsupportedDataFormat, "\(format) has packets of varying size; Sonora's stream parser takes constant-size packets")
        }
        dataRemaining = byteCount
        propertyListener(.dataOffset(dataStart))
        propertyListener(.audioDataByteCount(byteCount))
        let bitRate = format.framesPerPacket > 0
            ? Double(format.bytesPerPacket) * 8 * format.sampleRate / Double(format.framesPerPacket) : .nan
        if bitRate.isFinite && bitRate < 1e15 {
            propertyListener(.bitRate(Int(bitRate)))
        }
        propertyListener(.readyToProducePackets)
        return dataStart
    }

    private func readFormatChunk(id: String, body: Int, size: Int) throws(AudioError) {
        switch (container!, id) {
        case (.wave, "fmt "): try readWAVFormat(body: body, size: size)
        case (.aiff(let compressed), "COMM"): try readAIFFCommon(body: body, size: size, compressed: compressed)
        case (.caf, "desc"): try readCAFDescription(body: body, size: size)
        default: return
        }
        if let format {
            let problems = format.validationProblems
            guard problems.isEmpty else {
                throw AudioError(.unsupportedDataFormat, "the stream's format is inconsistent: " + problems.joined(separator: "; "))
            }
            propertyListener(.dataFormat(format))
        }
    }

    private func readWAVFormat(body: Int, size: Int) throws(AudioError) {
        guard size >= 16 else { throw AudioError(.invalidChunk, "WAV fmt chunk of \(size) bytes (at least 16)") }
        var tagValue = le16(body)
        let channels = Int(le16(body + 2))
        let rate = Double(le32(body + 4))
        let blockAlign = Int(le16(body + 12))
        let bits = Int(le16(body + 14))
        if tagValue == 0xFFFE {
            guard size >= 40 else { throw AudioError(.invalidChunk, "WAVE_FORMAT_EXTENSIBLE fmt chunk of \(size) bytes (at least 40)") }
            tagValue = le16(body + 24)  // the sub-format GUID starts with the format tag
        }
        guard channels > 0, channels <= 1024, rate > 0 else {
            throw AudioError(.invalidChunk, "WAV fmt chunk: \(channels) channels at \(rate) Hz")
        }
        switch (tagValue, bits) {
        case (1, 8): format = .linearPCM(sampleRate: rate, channels: channels, sample: .uint8)
        case (1, 16): format = .linearPCM(sampleRate: rate, channels: channels, sample: .int16)
        case (1, 24): format = .linearPCM(sampleRate: rate, channels: channels, sample: .int24)
        case (1, 32): format = .linearPCM(sampleRate: rate, channels: channels, sample: .int32)
        case (3, 32): format = .linearPCM(sampleRate: rate, channels: channels, sample: .float32)
        case (3, 64): format = .linearPCM(sampleRate: rate, channels: channels, sample: .float64)
        default:
            throw AudioError(.unsupportedDataFormat, "WAV format tag \(tagValue) with \(bits) bits")
        }
        guard Int(format!.bytesPerFrame) == blockAlign else {
            throw AudioError(.invalidChunk, "WAV block align \(blockAlign) does not match \(format!)")
        }
    }

    private func readAIFFCommon(body: Int, size: Int, compressed: Bool) throws(AudioError) {
        guard size >= (compressed ? 22 : 18) else { throw AudioError(.invalidChunk, "AIFF COMM chunk of \(size) bytes") }
        let channels = Int(be16(body))
        let bits = Int(be16(body + 6))
        let rate = extended80(body + 8)
        guard channels > 0, channels <= 1024, rate > 0, rate.isFinite, rate < 10_000_000 else {
            throw AudioError(.invalidChunk, "AIFF COMM chunk: \(channels) channels at \(rate) Hz")
        }
        let compression = compressed ? tag(body + 18) : "NONE"
        switch (compression, bits) {
        case ("NONE", 8), ("twos", 8):
            var pcm = StreamFormat.linearPCM(sampleRate: rate, channels: channels, sample: .uint8)
            pcm.formatFlags.insert(.isSignedInteger)
            format = pcm
        case ("NONE", 16), ("twos", 16): format = .linearPCM(sampleRate: rate, channels: channels, sample: .int16, bigEndian: true)
        case ("NONE", 24), ("in24", 24): format = .linearPCM(sampleRate: rate, channels: channels, sample: .int24, bigEndian: true)
        case ("NONE", 32), ("in32", 32): format = .linearPCM(sampleRate: rate, channels: channels, sample: .int32, bigEndian: true)
        case ("sowt", 16): format = .linearPCM(sampleRate: rate, channels: channels, sample: .int16)
        case ("fl32", _), ("FL32", _): format = .linearPCM(sampleRate: rate, channels: channels, sample: .float32, bigEndian: true)
        case ("fl64", _), ("FL64", _): format = .linearPCM(sampleRate: rate, channels: channels, sample: .float64, bigEndian: true)
        case ("ima4", _): format = .appleIMA4(sampleRate: rate, channels: channels)
        default: throw AudioError(.unsupportedDataFormat, "AIFC compression '\(compression)' with \(bits) bits")
        }
    }

    private func readCAFDescription(body: Int, size: Int) throws(AudioError) {
        guard size >= 32 else { throw AudioError(.invalidChunk, "CAF desc chunk of \(size) bytes (32)") }
        let rate = Double(bitPattern: be64(body))
        let formatID = AudioFormatID(rawValue: FourCharCode(rawValue: be32(body + 8)))
        let flags = be32(body + 12)
        var description = StreamFormat(
            sampleRate: rate, formatID: formatID, formatFlags: [], bytesPerPacket: be32(body + 16),
            framesPerPacket: be32(body + 20), bytesPerFrame: 0, channelsPerFrame: be32(body + 24),
            bitsPerChannel: be32(body + 28))
        guard rate > 0, rate.isFinite, description.channelsPerFrame > 0, description.channelsPerFrame <= 1024 else {
            throw AudioError(.invalidChunk, "CAF desc: \(description.channelsPerFrame) channels at \(rate) Hz")
        }
        if formatID == .linearPCM {
            // CAF flags: bit 0 float, bit 1 little-endian; packed and signed are implied.
            var pcmFlags: AudioFormatFlags = [.isPacked]
            pcmFlags.insert(flags & 1 != 0 ? .isFloat : .isSignedInteger)
            if flags & 2 == 0 { pcmFlags.insert(.isBigEndian) }
            description.formatFlags = pcmFlags
            description.bytesPerFrame = description.bytesPerPacket
        }
        format = description
    }

    // MARK: Bytes (bounds are checked by the callers against `header.count`)

    private func tag(_ at: Int) -> String { printable(at..<at + 4) }
    private func printable(_ range: Range<Int>) -> String {
        String(decoding: header[range].map { $0 >= 0x20 && $0 < 0x7F ? $0 : 0x3F }, as: UTF8.self)
    }
    private func le16(_ at: Int) -> UInt32 { UInt32(header[at]) | UInt32(header[at + 1]) << 8 }
    private func le32(_ at: Int) -> UInt32 { le16(at) | le16(at + 2) << 16 }
    private func be16(_ at: Int) -> UInt32 { UInt32(header[at]) << 8 | UInt32(header[at + 1]) }
    private func be32(_ at: Int) -> UInt32 { be16(at) << 16 | be16(at + 2) }
    private func be64(_ at: Int) -> UInt64 { UInt64(be32(at)) << 32 | UInt64(be32(at + 4)) }

    /// An 80-bit IEEE extended float (AIFF's sample rate).
    private func extended80(_ at: Int) -> Double {
        let exponent = Int(be16(at) & 0x7FFF)
        let mantissa = be64(at + 2)
        guard exponent != 0 || mantissa != 0 else { return 0 }
        let sign: Double = header[at] & 0x80 != 0 ? -1 : 1
        return sign * Double(mantissa) * pow2(exponent - 16383 - 63)
    }

    private func pow2(_ power: Int) -> Double {
        guard power > -1074 else { return 0 }
        guard power < 1024 else { return .infinity }
        return Double(sign: .plus, exponent: power, significand: 1)
    }
}
