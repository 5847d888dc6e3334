/// Variable-length records (`tag`, bytes) over a single-producer single-consumer
/// `ByteRing`: a record is published whole, so the reader never sees half of one.
/// Realtime-safe on both ends (no allocation, no locks). The LV2 host's worker, log and
/// patch queues, and `Worker`'s job queue, are records over this ring.
public final class RecordRing: @unchecked Sendable {
    private let ring: ByteRing
    /// Bytes each record takes beyond its payload (tag and length).
    public static let headerSize = 8

    public init(capacity: Int) throws(AudioError) {
        ring = try ByteRing(capacity: capacity)
    }

    /// Appends a record; false (and nothing written) if it does not fit.
    public func push(tag: UInt32, _ bytes: UnsafeRawPointer?, count: Int) -> Bool {
        let total = Self.headerSize + count
        let region = ring.writeRegion(maxBytes: total)
        guard region.count == total else { return false }
        var header: (UInt32, UInt32) = (tag, UInt32(count))
        withUnsafeBytes(of: &header) { head in
            Self.scatter(head.baseAddress!, count: Self.headerSize, into: region, at: 0)
        }
        if let bytes, count > 0 { Self.scatter(bytes, count: count, into: region, at: Self.headerSize) }
        try? ring.commitWrite(total)
        return true
    }

    /// Takes the next record into `buffer` (at most `capacity` bytes; a longer record is
    /// dropped and reported with its full length so the caller can tell).
    public func pop(into buffer: UnsafeMutableRawPointer, capacity: Int) -> (tag: UInt32, count: Int)? {
        let available = ring.readRegion()
        guard available.count >= Self.headerSize else { return nil }
        var header: (UInt32, UInt32) = (0, 0)
        withUnsafeMutableBytes(of: &header) { head in
            Self.gather(from: available, at: 0, count: Self.headerSize, into: head.baseAddress!)
        }
        let count = Int(header.1)
        guard available.count >= Self.headerSize + count else { return nil }
        if count <= capacity { Self.gather(from: available, at: Self.headerSize, count: count, into: buffer) }
        try? ring.commitRead(Self.headerSize + count)
        return (header.0, count)
    }

    public var isEmpty: Bool { ring.readableBytes == 0 }

    private static func scatter(_ source: UnsafeRawPointer, count: Int, into region: ByteRingRegion, at offset: Int) {
        let firstPart = max(0, min(count, region.first.count - offset))
        if firstPart > 0 {
            (region.first.baseAddress! + offset).copyMemory(from: source, byteCount: firstPart)
        }
        if firstPart < count {
            let start = max(0, offset - region.first.count)
            (region.second.baseAddress! + start).copyMemory(from: source + firstPart, byteCount: count - firstPart)
        }
    }

    private static func gather(from region: ByteRingRegion, at offset: Int, count: Int, into destination: UnsafeMutableRawPointer) {
        let firstPart = max(0, min(count, region.first.count - offset))
        if firstPart > 0 {
            destination.copyMemory(from: region.first.baseAddress! + offset, byteCount: firstPart)
        }
        if firstPart < count {
            let start = max(0, offset - region.first.count)
            destination.advanced(by: firstPart).copyMemory(
                from: region.second.baseAddress! + start, byteCount: count - firstPart)
        }
    }
}
