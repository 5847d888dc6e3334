/// Tags that wrap or trail MPEG audio and ADTS streams and are not audio: ID3v2 (at the
/// start, sometimes between streams), ID3v1 (the last 128 bytes) and APE (at the end).
enum StreamTag {
    /// The total size of the ID3v2 tag starting `bytes` (10-byte header, its synchsafe
    /// size, and the footer when flagged), nil when the 10 bytes are not a valid ID3v2 header.
    static func id3v2Size(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= 10, bytes[0] == 0x49, bytes[1] == 0x44, bytes[2] == 0x33,
              bytes[3] != 0xFF, bytes[4] != 0xFF,
              bytes[6] & 0x80 == 0, bytes[7] & 0x80 == 0, bytes[8] & 0x80 == 0, bytes[9] & 0x80 == 0
        else { return nil }
        let size = Int(bytes[6]) << 21 | Int(bytes[7]) << 14 | Int(bytes[8]) << 7 | Int(bytes[9])
        return 10 + size + (bytes[5] & 0x10 != 0 ? 10 : 0)
    }

    /// Why the 10 bytes starting "ID3" are not an ID3v2 header (for the error message).
    static func id3v2Problem(_ bytes: UnsafeRawBufferPointer) -> String {
        if bytes[3] == 0xFF || bytes[4] == 0xFF { return "version \(bytes[3]).\(bytes[4]) is not a version" }
        let size = (6..<10).map { String(bytes[$0], radix: 16) }.joined(separator: " ")
        return "its size bytes (\(size), hex) are not synchsafe (each below 0x80)"
    }

    static func isID3v1(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= 3 && bytes[0] == 0x54 && bytes[1] == 0x41 && bytes[2] == 0x47
    }

    /// The bytes to skip at an APE tag header or footer ("APETAGEX", 32 bytes): the whole tag
    /// from its header, the footer alone from a footer (the items before it were already skipped
    /// as junk). Nil when this is not one, or when its size is implausible.
    static func apeSkip(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= 32, Array(bytes[0..<8]) == Array("APETAGEX".utf8) else { return nil }
        func le32(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24 }
        let size = le32(12)
        let isHeader = le32(20) & (1 << 29) != 0
        guard size >= 32, size <= 1 << 24 else { return nil }
        return isHeader ? 32 + size : 32
    }
}
