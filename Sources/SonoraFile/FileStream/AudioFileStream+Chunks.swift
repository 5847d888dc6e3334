import SonoraCore

/// WAV, AIFF/AIFC and CAF: chunked containers whose header chunks come before the audio data.
extension AudioFileStream {
    /// Returns the offset of the audio data in `header` once the header is complete, or nil to wait for more.
    func parseHeader() throws(AudioError) -> Int? {
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
            case .wave: announce(.fileFormat(.wave))
            case .aiff(let compressed): announce(.fileFormat(compressed ? .aifc : .aiff))
            case .caf: announce(.fileFormat(.caf))
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
            if isDataChunk(id) && deferredData == nil {
                if needsPacketTable && packetTable == nil {
                    // CAF allows the packet table after the data (ffmpeg writes it there):
                    // hold the data until the table comes.
                    guard size >= 4 else {
                        throw AudioError(.invalidChunk, "CAF '\(id)' chunk of variable-size packets has \(size < 0 ? "no size" : "\(size) bytes") and no packet table before it")
                    }
                    guard size <= Self.maximumDeferredDataBytes else {
                        throw AudioError(.invalidChunk, "CAF audio data of \(size) bytes comes before its packet table (Sonora holds up to \(Self.maximumDeferredDataBytes))")
                    }
                    deferredData = (body, size)
                    headerLimit = body + size + Self.maximumHeaderBytes
                    offset = body + size
                    nextChunk = offset
                    continue
                }
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
            if let deferred = deferredData, packetTable != nil {
                return try startData(id: "data", body: deferred.body, size: deferred.size)
            }
        }
    }

    /// A CAF of variable-size packets (bytesPerPacket 0) needs its packet table to find them.
    private var needsPacketTable: Bool {
        if case .caf = container, let format, format.bytesPerPacket == 0 { return true }
        return false
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
        var start = body
        var byteCount: Int? = size
        switch container! {
        case .aiff:
            guard header.count >= body + 8 else { return nil }
            let skip = Int(be32(body))
            guard skip <= Self.maximumHeaderBytes else { throw AudioError(.invalidChunk, "SSND offset \(skip) is implausible") }
            start = body + 8 + skip
            byteCount = size - 8 - skip
            guard header.count >= start else { return nil }
        case .caf:
            start = body + 4  // edit count
            guard header.count >= start else { return nil }
            byteCount = size < 0 ? nil : size - 4
        case .wave:
            break
        }
        if let count = byteCount, count < 0 {
            throw AudioError(.invalidChunk, "the '\(id)' chunk is too small for its own header")
        }
        dataRemaining = byteCount
        dataStart = headerBase + start
        // A CAF may claim up to Int64.max bytes: an end past any offset is no end.
        dataEnd = byteCount.flatMap { count in
            let (end, overflow) = (headerBase + start).addingReportingOverflow(count)
            return overflow ? nil : end
        }
        packetBytes = Int(format.bytesPerPacket)
        if deferredData != nil {
            // The held data ends where the table came from; only the data itself is handed on.
            let end = start + (byteCount ?? 0)
            header.removeSubrange(end...)
        }
        if let table = packetTable {
            try startTablePackets(table, format: format, byteCount: byteCount)
        } else if format.formatID == .mpegLayer3 && packetBytes == 0 {
            announce(.dataOffset(headerBase + start))
            announce(.audioDataByteCount(byteCount))
            if let rate = wavMP3BitRate { announce(.bitRate(rate)) }
            announce(.packetSizeUpperBound(1441))  // MPEG-1 layer III at 320 kbit/s, 32 kHz, padded
            announce(.readyToProducePackets)
            stage = .mpeg
            makeSynchronizer(at: headerBase + start)
        } else {
            guard packetBytes > 0 else {
                throw AudioError(.unsupportedDataFormat, "\(format) has packets of varying size and the stream gives no packet table")
            }
            announce(.dataOffset(headerBase + start))
            announce(.audioDataByteCount(byteCount))
            let bitRate = format.framesPerPacket > 0
                ? Double(format.bytesPerPacket) * 8 * format.sampleRate / Double(format.framesPerPacket) : .nan
            if bitRate.isFinite && bitRate < 1e15 {
                announce(.bitRate(Int(bitRate)))
            }
            announce(.readyToProducePackets)
            stage = .constantPackets
        }
        return start
    }

    private func startTablePackets(_ table: CAFPacketTable, format: StreamFormat, byteCount: Int?) throws(AudioError) {
        var starts = [0]
        starts.reserveCapacity(table.packetCount + 1)
        for size in table.packetSizes { starts.append(starts.last! + size) }
        let tableBytes = starts.last!
        if let byteCount, tableBytes > byteCount {
            throw AudioError(.invalidChunk, "CAF pakt lists \(table.packetCount) packets of \(tableBytes) bytes but the data chunk holds \(byteCount)")
        }
        packetStarts = starts
        if format.formatID == .mpeg4AAC { announce(.formatList([format])) }
        if let cookie { announce(.magicCookieData(cookie)) }
        announce(.packetTableInfo(table.info))
        announce(.dataOffset(dataStart!))
        announce(.audioDataByteCount(byteCount))
        announce(.audioDataPacketCount(table.packetCount))
        let frames = table.packetFrames.reduce(0, +)
        if frames > 0 && tableBytes > 0 {
            let bitRate = Double(tableBytes) * 8 * format.sampleRate / Double(frames)
            if bitRate.isFinite && bitRate < 1e15 { announce(.bitRate(Int(bitRate))) }
        }
        announce(.maximumPacketSize(table.packetSizes.max() ?? 0))
        announce(.readyToProducePackets)
        stage = .packetTable
        nextTablePacket = 0
    }

    /// Hands out the packets the table lists, keeping a partial one for the next call.
    func deliverTablePackets(_ bytes: UnsafeRawBufferPointer) {
        let input = limitedToData(bytes)
        guard let table = packetTable, nextTablePacket < table.packetCount, packetIndex != nil else { return }
        carry.append(contentsOf: input)
        let variableFrames = format?.framesPerPacket == 0
        var at = 0
        carry.withUnsafeBytes { raw in
            while nextTablePacket < table.packetCount {
                let size = table.packetSizes[nextTablePacket]
                guard raw.count - at >= size else { break }
                // A 0-byte entry holds no packet (ffmpeg's CAF muxer lists one after FLAC's last): not handed out.
                if size > 0 {
                    batch.add(UnsafeRawBufferPointer(rebasing: raw[at..<at + size]), frames: variableFrames ? table.packetFrames[nextTablePacket] : 0)
                }
                at += size
                nextTablePacket += 1
            }
        }
        carry.removeFirst(at)
        packetIndex = nextTablePacket
        if nextTablePacket == table.packetCount { carry = [] }
    }

    private func readFormatChunk(id: String, body: Int, size: Int) throws(AudioError) {
        switch (container!, id) {
        case (.wave, "fmt "): try readWAVFormat(body: body, size: size)
        case (.aiff(let compressed), "COMM"): try readAIFFCommon(body: body, size: size, compressed: compressed)
        case (.caf, "desc"): try readCAFDescription(body: body, size: size)
        case (.caf, "kuki"):
            cookie = Array(header[body..<body + size])
            return
        case (.caf, "pakt"):
            guard let format else { throw AudioError(.invalidChunk, "CAF pakt chunk comes before the desc chunk") }
            // Packets of constant size and duration need no table (and a table of them lists no entries,
            // so its count is unchecked: decoding a damaged one would build billions of entries).
            guard format.bytesPerPacket == 0 || format.framesPerPacket == 0 else { return }
            // CAFPacketTable.decode adds valid + priming + remainder unchecked: a damaged valid-frame
            // count near Int64.max traps there, so it is checked first (no table holds 2⁶² frames).
            if size >= 16 {
                let valid = Int64(bitPattern: be64(body + 8))
                guard valid < 1 << 62 else {
                    throw AudioError(.invalidChunk, "pakt: \(valid) valid frames is beyond any stream")
                }
            }
            packetTable = try CAFPacketTable.decode(Array(header[body..<body + size]), format: format)
            return
        default: return
        }
        if let format {
            let problems = format.validationProblems
            guard problems.isEmpty else {
                throw AudioError(.unsupportedDataFormat, "the stream's format is inconsistent: " + problems.joined(separator: "; "))
            }
            announce(.dataFormat(format))
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
        case (0x55, _):
            // WAVE_FORMAT_MPEGLAYER3: the data chunk holds MP3 frames.
            var mp3 = StreamFormat.compressed(.mpegLayer3, sampleRate: rate, channels: channels)
            mp3.framesPerPacket = rate > 24000 ? 1152 : 576
            format = mp3
            wavMP3BitRate = Int(le32(body + 8)) * 8
            return
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
        } else {
            // Codec-specific flags (ALAC's bit depth, AAC's object type) are kept as CAF gives them.
            description.formatFlags = AudioFormatFlags(rawValue: flags)
        }
        format = description
    }

    // MARK: Bytes (bounds are checked by the callers against `header.count`)

    func tag(_ at: Int) -> String { printable(at..<at + 4) }
    func printable(_ range: Range<Int>) -> String {
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
