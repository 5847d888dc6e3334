/// A lock-free single-producer / single-consumer ring of bytes with a power-of-two
/// capacity, for byte streams (file-stream parsing, device I/O in foreign formats,
/// logs from the realtime thread).
///
/// Like `SampleRing`, both sides work in place through regions of at most two
/// spans. A *mirrored* ring maps its memory twice back to back (memfd + two
/// mmaps), so every region is one contiguous span; its capacity is then a
/// multiple of the page size.
public final class ByteRing: @unchecked Sendable {
    /// Bytes the ring holds.
    public let capacity: Int
    /// True if regions are always one contiguous span.
    public let isMirrored: Bool
    @usableFromInline let mask: Int
    @usableFromInline let cursors: RingCursors
    @usableFromInline let storage: UnsafeMutableRawPointer
    private let mirror: MirroredMemory?

    /// A ring of at least `capacity` bytes (a power of two, at most 2³⁰; and at
    /// least one page when `mirrored`).
    public init(capacity: Int, mirrored: Bool = false) throws(AudioError) {
        var size = try ringCapacity(capacity, limit: 1 << 30, what: "byte ring")
        if mirrored {
            size = max(size, MirroredMemory.pageSize)
            let mirror = try MirroredMemory(size: size)
            self.mirror = mirror
            storage = mirror.base
        } else {
            mirror = nil
            storage = .allocate(byteCount: size, alignment: RingCursors.lineSize)
            storage.initializeMemory(as: UInt8.self, repeating: 0, count: size)
        }
        self.capacity = size
        isMirrored = mirrored
        mask = size - 1
        cursors = RingCursors()
    }

    deinit {
        if mirror == nil { storage.deallocate() }
        cursors.deallocate()
    }

    // MARK: Producer

    @inlinable
    public var writableBytes: Int { cursors.producerView(wanted: capacity, capacity: capacity).free }

    @inlinable
    public func writeRegion(maxBytes: Int = .max) -> ByteRingRegion {
        let (position, free) = cursors.producerView(wanted: maxBytes, capacity: capacity)
        return region(at: position, count: min(max(maxBytes, 0), free))
    }

    @inlinable
    public func commitWrite(_ bytes: Int) throws(AudioError) {
        let (position, free) = cursors.producerView(wanted: bytes, capacity: capacity)
        guard bytes >= 0 && bytes <= free else { throw overcommit("write", bytes, available: free) }
        cursors.publishWrite(position + bytes)
    }

    /// Copies as many bytes of `source` as fit; returns the number written.
    @inlinable
    public func write(_ source: UnsafeRawBufferPointer) -> Int {
        let region = writeRegion(maxBytes: source.count)
        guard let base = source.baseAddress, region.count > 0 else { return 0 }
        region.first.baseAddress!.copyMemory(from: base, byteCount: region.first.count)
        if region.second.count > 0 {
            region.second.baseAddress!.copyMemory(from: base + region.first.count, byteCount: region.second.count)
        }
        cursors.advanceWrite(by: region.count)
        return region.count
    }

    // MARK: Consumer

    @inlinable
    public var readableBytes: Int { cursors.consumerView(wanted: capacity).filled }

    @inlinable
    public func readRegion(maxBytes: Int = .max) -> ByteRingRegion {
        let (position, filled) = cursors.consumerView(wanted: maxBytes)
        return region(at: position, count: min(max(maxBytes, 0), filled))
    }

    @inlinable
    public func commitRead(_ bytes: Int) throws(AudioError) {
        let (position, filled) = cursors.consumerView(wanted: bytes)
        guard bytes >= 0 && bytes <= filled else { throw overcommit("read", bytes, available: filled) }
        cursors.publishRead(position + bytes)
    }

    /// Copies up to `destination.count` bytes out; returns the number read.
    @inlinable
    public func read(into destination: UnsafeMutableRawBufferPointer) -> Int {
        let region = readRegion(maxBytes: destination.count)
        guard let base = destination.baseAddress, region.count > 0 else { return 0 }
        base.copyMemory(from: region.first.baseAddress!, byteCount: region.first.count)
        if region.second.count > 0 {
            (base + region.first.count).copyMemory(from: region.second.baseAddress!, byteCount: region.second.count)
        }
        cursors.advanceRead(by: region.count)
        return region.count
    }

    public var approximateFillLevel: Int { cursors.approximateCount() }

    @inlinable
    func region(at position: Int, count: Int) -> ByteRingRegion {
        let start = position & mask
        let firstCount = isMirrored ? count : min(count, capacity - start)
        return ByteRingRegion(
            first: UnsafeMutableRawBufferPointer(start: storage + start, count: firstCount),
            second: UnsafeMutableRawBufferPointer(start: storage, count: count - firstCount))
    }
}

/// Bytes of a `ByteRing` handed to one side: `first`, then `second` (empty unless the region wraps).
@frozen
public struct ByteRingRegion: @unchecked Sendable, BitwiseCopyable {
    public let first: UnsafeMutableRawBufferPointer
    public let second: UnsafeMutableRawBufferPointer

    @inlinable
    init(first: UnsafeMutableRawBufferPointer, second: UnsafeMutableRawBufferPointer) {
        self.first = first
        self.second = second
    }

    @inlinable public var count: Int { first.count + second.count }
}
