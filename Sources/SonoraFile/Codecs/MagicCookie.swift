import SonoraCore

/// Magic cookies (kAudioFilePropertyMagicCookieData, kAudioConverterDecompressionMagicCookie)
/// as Core Audio writes them into CAF `kuki` chunks, and the codec configuration
/// ("extradata") libavcodec takes and gives for the same formats:
///
/// | format | Core Audio cookie                                  | libavcodec extradata                 |
/// |--------|----------------------------------------------------|--------------------------------------|
/// | AAC    | MPEG-4 ES_Descriptor (esds body, tag 3)            | AudioSpecificConfig                  |
/// | ALAC   | ALACSpecificConfig (24 bytes; `frma`/`alac` atoms accepted) | `alac` atom (36 bytes)      |
/// | FLAC   | STREAMINFO (34 bytes; `fLaC` + block header accepted) | STREAMINFO                        |
/// | Opus   | OpusHead (as in Ogg)                               | OpusHead                             |
///
/// Every reader checks lengths against the bytes it has: a cookie from a file is untrusted.
enum MagicCookie {
    /// libavcodec's extradata for a decoder of `format`, from a Core Audio cookie.
    static func codecConfiguration(for format: AudioFormatID, cookie: [UInt8]) throws(AudioError) -> [UInt8] {
        switch format {
        case .mpeg4AAC: return try audioSpecificConfig(fromCookie: cookie)
        case .appleLossless:
            let config = try alacSpecificConfig(fromCookie: cookie)
            return bigEndian(36, 4) + Array("alac".utf8) + [0, 0, 0, 0] + config
        case .flac: return try streamInfo(fromCookie: cookie)
        case .opus:
            guard cookie.count >= 19, cookie.prefix(8) == Array("OpusHead".utf8)[...] else {
                throw AudioError(.invalidFileData, "Opus magic cookie: not an OpusHead (\(cookie.count) bytes)")
            }
            return cookie
        default:
            return cookie
        }
    }

    /// The Core Audio cookie for `format` from libavcodec's extradata (nil when the format has none).
    static func cookie(for format: AudioFormatID, codecConfiguration extradata: [UInt8], averageBitRate: Int = 0, maximumBitRate: Int = 0) -> [UInt8]? {
        switch format {
        case .mpeg4AAC:
            guard !extradata.isEmpty else { return nil }
            return esds(audioSpecificConfig: extradata, averageBitRate: averageBitRate, maximumBitRate: maximumBitRate)
        case .appleLossless: return try? alacSpecificConfig(fromCookie: extradata)
        case .flac: return try? streamInfo(fromCookie: extradata)
        case .opus: return extradata.isEmpty ? nil : extradata
        default: return extradata.isEmpty ? nil : extradata
        }
    }

    // MARK: AAC

    /// The AudioSpecificConfig inside an ES_Descriptor (tag 3 → 4 → 5), or the cookie itself
    /// when it is already an AudioSpecificConfig (its first 5 bits, the object type, are never 0).
    static func audioSpecificConfig(fromCookie cookie: [UInt8]) throws(AudioError) -> [UInt8] {
        guard let first = cookie.first else { throw AudioError(.invalidFileData, "AAC magic cookie is empty") }
        guard first == 0x03 else { return cookie }
        var reader = DescriptorReader(bytes: cookie)
        guard let es = try reader.descriptor(tag: 0x03) else { throw AudioError(.invalidFileData, "AAC magic cookie: no ES_Descriptor") }
        var esReader = DescriptorReader(bytes: Array(es))
        // ES_ID (2), flags (1) and the optional fields the flags announce.
        try esReader.skip(2)
        let flags = try esReader.byte()
        if flags & 0x80 != 0 { try esReader.skip(2) }
        if flags & 0x40 != 0 { try esReader.skip(Int(try esReader.byte())) }
        if flags & 0x20 != 0 { try esReader.skip(2) }
        guard let decoderConfig = try esReader.descriptor(tag: 0x04) else {
            throw AudioError(.invalidFileData, "AAC magic cookie: no DecoderConfigDescriptor")
        }
        var configReader = DescriptorReader(bytes: Array(decoderConfig))
        try configReader.skip(13)  // object type, stream type, buffer size, max and average bit rate
        guard let specific = try configReader.descriptor(tag: 0x05), !specific.isEmpty else {
            throw AudioError(.invalidFileData, "AAC magic cookie: no DecoderSpecificInfo")
        }
        return Array(specific)
    }

    /// An ES_Descriptor (the body of an `esds` box, as Core Audio's AAC cookie) around an AudioSpecificConfig.
    static func esds(audioSpecificConfig config: [UInt8], averageBitRate: Int, maximumBitRate: Int) -> [UInt8] {
        let specific = descriptor(0x05, config)
        let decoderConfig = descriptor(0x04, [0x40, 0x15, 0, 0, 0] + bigEndian(maximumBitRate, 4) + bigEndian(averageBitRate, 4) + specific)
        let slConfig = descriptor(0x06, [0x02])
        return descriptor(0x03, [0, 0, 0] + decoderConfig + slConfig)
    }

    private static func descriptor(_ tag: UInt8, _ body: [UInt8]) -> [UInt8] {
        // The 4-byte length form, as Apple's encoders write it.
        let length = body.count
        return [tag, UInt8(0x80 | (length >> 21 & 0x7F)), UInt8(0x80 | (length >> 14 & 0x7F)), UInt8(0x80 | (length >> 7 & 0x7F)), UInt8(length & 0x7F)] + body
    }

    private struct DescriptorReader {
        let bytes: [UInt8]
        var at = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func byte() throws(AudioError) -> UInt8 {
            guard at < bytes.count else { throw AudioError(.invalidFileData, "AAC magic cookie cut short at byte \(at)") }
            defer { at += 1 }
            return bytes[at]
        }

        mutating func skip(_ count: Int) throws(AudioError) {
            guard count >= 0, count <= bytes.count - at else { throw AudioError(.invalidFileData, "AAC magic cookie cut short at byte \(at)") }
            at += count
        }

        /// The body of the next descriptor if it has `tag` (skipping others), nil at the end.
        mutating func descriptor(tag: UInt8) throws(AudioError) -> ArraySlice<UInt8>? {
            while at < bytes.count {
                let found = try byte()
                var length = 0
                for index in 0..<4 {
                    let part = try byte()
                    length = length << 7 | Int(part & 0x7F)
                    if part & 0x80 == 0 { break }
                    if index == 3 { throw AudioError(.invalidFileData, "AAC magic cookie: descriptor length longer than 4 bytes") }
                }
                guard length <= bytes.count - at else {
                    throw AudioError(.invalidFileData, "AAC magic cookie: descriptor of \(length) bytes with \(bytes.count - at) left")
                }
                defer { at += length }
                if found == tag { return bytes[at..<at + length] }
            }
            return nil
        }
    }

    // MARK: ALAC

    /// The 24-byte ALACSpecificConfig: the cookie itself, or found inside an `alac` atom
    /// (after its 4-byte version) as in the 48-byte `frma`/`alac` form and libavcodec's extradata.
    static func alacSpecificConfig(fromCookie cookie: [UInt8]) throws(AudioError) -> [UInt8] {
        if cookie.count == 24 { return cookie }
        let tag = Array("alac".utf8)
        var index = 4
        while index + 4 <= cookie.count {
            if Array(cookie[index..<index + 4]) == tag, index >= 4 {
                let size = Int(cookie[index - 4]) << 24 | Int(cookie[index - 3]) << 16 | Int(cookie[index - 2]) << 8 | Int(cookie[index - 1])
                let start = index + 8
                if size >= 36, size <= cookie.count - (index - 4), start + 24 <= cookie.count { return Array(cookie[start..<start + 24]) }
            }
            index += 1
        }
        throw AudioError(.invalidFileData, "Apple Lossless magic cookie: no ALACSpecificConfig in \(cookie.count) bytes")
    }

    // MARK: FLAC

    /// The 34-byte STREAMINFO: the cookie itself, or after `fLaC` and a metadata block header.
    static func streamInfo(fromCookie cookie: [UInt8]) throws(AudioError) -> [UInt8] {
        if cookie.count == 34 { return cookie }
        if cookie.count >= 42, cookie.prefix(4) == Array("fLaC".utf8)[...], cookie[4] & 0x7F == 0 {
            return Array(cookie[8..<42])
        }
        throw AudioError(.invalidFileData, "FLAC magic cookie: no STREAMINFO in \(cookie.count) bytes")
    }

    private static func bigEndian(_ value: Int, _ width: Int) -> [UInt8] {
        (0..<width).map { UInt8(truncatingIfNeeded: value >> (8 * (width - 1 - $0))) }
    }
}
