/// The first frame of a VBR (or LAME CBR) MP3 that describes the stream instead of holding
/// audio: Xing / Info (LAME, ffmpeg) or VBRI (Fraunhofer). It gives the frame count
/// (so the duration), the byte count, a seek table, and in LAME's extension the encoder
/// delay and padding. Core Audio and ffmpeg do not decode this frame as audio; neither does Sonora.
struct MPEGAudioInfoTag: Equatable {
    enum Kind: Equatable { case xing, info, vbri }

    let kind: Kind
    /// Audio frames in the stream (this one not included); nil when absent or 0.
    var frames: Int?
    /// Bytes of the stream from this frame on; nil when absent or 0.
    var bytes: Int?
    /// Xing's table of contents: for each percent of the duration, the byte position × 256 ÷ `bytes`.
    var tableOfContents: [UInt8]?
    /// LAME's (or ffmpeg's Lavf/Lavc) encoder delay and padding, in samples.
    var encoderDelay: Int?
    var encoderPadding: Int?

    /// The decoder delay of the MPEG layer III synthesis filter bank (528 + 1 samples), which
    /// ffmpeg (mp3dec.c: `start_skip_samples = start_pad + 528 + 1`) and Core Audio add to
    /// LAME's encoder delay.
    static let decoderDelay = 529

    init?(frame: UnsafeRawBufferPointer, header: MPEGAudioFrameHeader) {
        guard header.layer == 3 else { return nil }
        func be32(_ at: Int) -> Int { Int(frame[at]) << 24 | Int(frame[at + 1]) << 16 | Int(frame[at + 2]) << 8 | Int(frame[at + 3]) }
        func tag(_ at: Int) -> String? {
            guard at + 4 <= frame.count else { return nil }
            return String(decoding: frame[at..<at + 4], as: UTF8.self)
        }
        let at = header.xingTagOffset
        if let name = tag(at), name == "Xing" || name == "Info", at + 8 <= frame.count {
            kind = name == "Xing" ? .xing : .info
            let flags = be32(at + 4)
            var field = at + 8
            if flags & 1 != 0 {
                guard field + 4 <= frame.count else { return }
                frames = be32(field) > 0 ? be32(field) : nil
                field += 4
            }
            if flags & 2 != 0 {
                guard field + 4 <= frame.count else { return }
                bytes = be32(field) > 0 ? be32(field) : nil
                field += 4
            }
            if flags & 4 != 0 {
                guard field + 100 <= frame.count else { return }
                tableOfContents = Array(frame[field..<field + 100])
                field += 100
            }
            if flags & 8 != 0 { field += 4 }
            // LAME's extension: a 9-byte encoder version, then 12 bytes of fields, then delay and padding (12 bits each).
            if field + 24 <= frame.count, let encoder = tag(field), ["LAME", "Lavf", "Lavc"].contains(encoder) {
                let packed = Int(frame[field + 21]) << 16 | Int(frame[field + 22]) << 8 | Int(frame[field + 23])
                encoderDelay = packed >> 12
                encoderPadding = packed & 0xFFF
            }
        } else if tag(36) == "VBRI", 36 + 18 <= frame.count {
            // Version (2), delay (2), quality (2), bytes (4), frames (4).
            kind = .vbri
            bytes = be32(36 + 10) > 0 ? be32(36 + 10) : nil
            frames = be32(36 + 14) > 0 ? be32(36 + 14) : nil
        } else {
            return nil
        }
    }

    /// Priming and remainder as Core Audio and ffmpeg count them: priming is the encoder
    /// delay plus the decoder's 529; the padding counts that same 529, so the remainder is padding − 529
    /// (ffmpeg: `first_discard_sample = frames × spf − end_pad + 529`), never below 0.
    func packetTableInfo(samplesPerFrame: Int) -> AudioFilePacketTableInfo? {
        guard let frames, let encoderDelay, let encoderPadding else { return nil }
        let total = Int64(frames) * Int64(samplesPerFrame)
        let priming = encoderDelay + Self.decoderDelay
        let remainder = max(0, encoderPadding - Self.decoderDelay)
        let valid = total - Int64(priming) - Int64(remainder)
        guard valid >= 0 else { return nil }
        return AudioFilePacketTableInfo(validFrames: valid, primingFrames: Int32(priming), remainderFrames: Int32(remainder))
    }

    /// Xing's estimate of where `packet` of `frames` starts, in bytes from this frame.
    func estimatedOffset(ofPacket packet: Int) -> Int? {
        guard let frames, let bytes, let toc = tableOfContents else { return nil }
        let percent = min(max(Double(packet) / Double(frames) * 100, 0), 99.999)
        let index = Int(percent)
        let lower = Double(toc[index])
        let upper = index < 99 ? Double(toc[index + 1]) : 256
        let scaled = lower + (upper - lower) * (percent - Double(index))
        return Int(scaled / 256 * Double(bytes))
    }
}
