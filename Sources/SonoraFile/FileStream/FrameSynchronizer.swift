import SonoraCore

/// A frame header a byte stream is synchronised on (MPEG audio, ADTS).
protocol SyncFrameHeader {
    /// Bytes needed to read a header.
    static var headerBytes: Int { get }
    /// Nil when the bytes are not a valid header.
    init?(_ bytes: UnsafeRawBufferPointer)
    /// The whole frame, header included.
    var frameLength: Int { get }
    /// Where the packet starts in the frame (header bytes not handed out).
    var payloadOffset: Int { get }
    /// The header bits every frame of one stream has in common.
    var streamKey: UInt32 { get }
}

/// Finds frames in bytes arriving in any pieces, as Core Audio and ffmpeg do: a header
/// is believed only when the next frame's header follows where its length says and agrees
/// with it (so a false sync in junk or in a tag is skipped); once in sync, each following
/// frame needs only its own header. ID3v2, ID3v1 and APE tags between or after frames are
/// skipped without being buffered. Every decision waits until the bytes it needs are here,
/// so any split of the input finds the same frames.
struct FrameSynchronizer<Header: SyncFrameHeader> {
    private(set) var buffer: [UInt8] = []
    private var start = 0
    /// Stream offset of `buffer[start]`; nil after a discontinuity to an unknown place.
    private(set) var position: Int?
    private var skip = 0
    private var synced = false
    /// The stream's header bits, from its first frame: later frames must agree.
    private(set) var key: UInt32?
    /// Junk read since the last frame; before the first frame it is bounded.
    private var junk = 0
    let junkLimitBeforeFirstFrame: Int

    init(position: Int?, junkLimitBeforeFirstFrame: Int) {
        self.position = position
        self.junkLimitBeforeFirstFrame = junkLimitBeforeFirstFrame
    }

    /// Bytes held for a decision (bounded by one frame and a header, or one piece of input).
    var bufferedCount: Int { buffer.count - start }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        var input = bytes
        if skip > 0 && bufferedCount == 0 {
            let skipped = min(skip, input.count)
            skip -= skipped
            advance(skipped)
            input = UnsafeRawBufferPointer(rebasing: input[skipped...])
        }
        if start > 0 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: input)
    }

    /// Drops what is held; the next bytes come from `position` (nil: unknown). `atFrame`: they
    /// start with a frame known to be one (an exact seek), so it needs no second header.
    mutating func reset(at position: Int?, atFrame: Bool = false) {
        buffer = []
        start = 0
        skip = 0
        synced = atFrame
        junk = 0
        self.position = position
    }

    /// The next whole frame (its header, stream offset, and bytes in `buffer`), or nil until more bytes come.
    /// The range stays valid until the next `append`.
    mutating func nextFrame() throws(AudioError) -> (header: Header, offset: Int?, range: Range<Int>)? {
        while true {
            if skip > 0 {
                let skipped = min(skip, bufferedCount)
                skip -= skipped
                consume(skipped)
                if skip > 0 { return nil }
            }
            let available = bufferedCount
            guard available > 0 else { return nil }
            switch buffer[start] {
            case 0xFF:
                guard available >= Header.headerBytes else { return nil }
                if let header = header(at: start), key == nil || header.streamKey == key {
                    let length = header.frameLength
                    if synced {
                        guard available >= length else { return nil }
                        return accept(header, length)
                    }
                    guard available >= length + Header.headerBytes else { return nil }
                    if let next = self.header(at: start + length), next.streamKey == header.streamKey {
                        synced = true
                        key = header.streamKey
                        return accept(header, length)
                    }
                }
            case 0x49:  // "ID3"
                guard let isTag = prefix("ID3", available) else { return nil }
                if isTag {
                    guard available >= 10 else { return nil }
                    if let size = buffer.withUnsafeBytes({ StreamTag.id3v2Size(UnsafeRawBufferPointer(rebasing: $0[start..<start + 10])) }) {
                        synced = false
                        skip = size
                        continue
                    }
                }
            case 0x54 where key != nil:  // "TAG", ID3v1 after the frames
                guard let isTag = prefix("TAG", available) else { return nil }
                if isTag {
                    synced = false
                    skip = 128
                    continue
                }
            case 0x41:  // "APETAGEX"
                guard let isTag = prefix("APETAGEX", available) else { return nil }
                if isTag {
                    guard available >= 32 else { return nil }
                    if let size = buffer.withUnsafeBytes({ StreamTag.apeSkip(UnsafeRawBufferPointer(rebasing: $0[start..<start + 32])) }) {
                        synced = false
                        skip = size
                        continue
                    }
                }
            default:
                break
            }
            // Junk: skip to the next byte that could start a frame or a tag.
            synced = false
            var next = start + 1
            while next < buffer.count, !Self.mayStartSomething(buffer[next]) { next += 1 }
            let skipped = next - start
            junk += skipped
            consume(skipped)
            if key == nil && junk > junkLimitBeforeFirstFrame {
                throw AudioError(.invalidFileData, "no frame sync in \(junk) bytes of the stream")
            }
        }
    }

    private static func mayStartSomething(_ byte: UInt8) -> Bool { byte == 0xFF || byte == 0x49 || byte == 0x54 || byte == 0x41 }

    /// Whether the held bytes start with `text`; nil when too few are here to tell.
    private func prefix(_ text: StaticString, _ available: Int) -> Bool? {
        let count = text.utf8CodeUnitCount
        let known = min(count, available)
        let pointer = text.utf8Start
        for index in 0..<known where buffer[start + index] != pointer[index] { return false }
        return known == count ? true : nil
    }

    private func header(at index: Int) -> Header? {
        buffer.withUnsafeBytes { Header(UnsafeRawBufferPointer(rebasing: $0[index..<index + Header.headerBytes])) }
    }

    private mutating func accept(_ header: Header, _ length: Int) -> (header: Header, offset: Int?, range: Range<Int>) {
        let offset = position
        let range = start..<start + length
        consume(length)
        junk = 0
        return (header, offset, range)
    }

    private mutating func consume(_ count: Int) {
        start += count
        advance(count)
    }

    private mutating func advance(_ count: Int) {
        if let at = position { position = at + count }
    }
}
