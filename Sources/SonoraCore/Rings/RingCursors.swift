import Synchronization

/// The two positions of a single-producer / single-consumer ring, each on its
/// own cache line together with its owner's cached copy of the other side's position.
///
/// Each side's line is the first of its own 128-byte pair: the adjacent-line prefetcher
/// pulls lines in pairs, so a side's private data must not sit on the other line of the
/// pair the other side reads. (The cached copies had a line of their own, 64 bytes after
/// the position: a consumer reading the write position pulled in the producer's copy
/// line with it, and the producer's next refresh of that copy had to take it back — a
/// cross-core transfer more per chunk, 15 % of the throughput at 32-frame chunks.)
///
/// Positions only grow (an `Int` does not wrap in 292,000 years at 1 MHz);
/// `position & (capacity - 1)` is the slot. The producer reads the consumer's
/// position (acquire) only when its cached copy says the ring looks full, and
/// vice versa, so in steady state each side touches the other's line about once
/// per lap instead of once per call. Stores are release, loads of the other side
/// acquire, loads of one's own position relaxed: nothing stronger is needed.
@usableFromInline
struct RingCursors: @unchecked Sendable, BitwiseCopyable {
    /// 128 bytes a side: the adjacent-line prefetcher on x86 pulls lines in pairs.
    @usableFromInline static let lineSize = 128

    @usableFromInline let base: UnsafeMutableRawPointer

    init() {
        base = .allocate(byteCount: 2 * Self.lineSize, alignment: Self.lineSize)
        base.initializeMemory(as: UInt8.self, repeating: 0, count: 2 * Self.lineSize)
        writePosition.initialize(to: Atomic(0))
        readPosition.initialize(to: Atomic(0))
        producerCachedRead.initialize(to: 0)
        consumerCachedWrite.initialize(to: 0)
    }

    func deallocate() {
        writePosition.deinitialize(count: 1)
        readPosition.deinitialize(count: 1)
        base.deallocate()
    }

    // Producer's line.
    @inlinable var writePosition: UnsafeMutablePointer<Atomic<Int>> {
        base.assumingMemoryBound(to: Atomic<Int>.self)
    }
    @inlinable var producerCachedRead: UnsafeMutablePointer<Int> {
        (base + 8).assumingMemoryBound(to: Int.self)
    }
    // Consumer's line.
    @inlinable var readPosition: UnsafeMutablePointer<Atomic<Int>> {
        (base + Self.lineSize).assumingMemoryBound(to: Atomic<Int>.self)
    }
    @inlinable var consumerCachedWrite: UnsafeMutablePointer<Int> {
        (base + Self.lineSize + 8).assumingMemoryBound(to: Int.self)
    }

    /// Producer side: the write position and the free slots, refreshing the
    /// cached read position only if fewer than `wanted` slots look free.
    @inlinable
    func producerView(wanted: Int, capacity: Int) -> (position: Int, free: Int) {
        let position = writePosition.pointee.load(ordering: .relaxed)
        var free = capacity &- (position &- producerCachedRead.pointee)
        if free < wanted {
            producerCachedRead.pointee = readPosition.pointee.load(ordering: .acquiring)
            free = capacity &- (position &- producerCachedRead.pointee)
        }
        return (position, free)
    }

    /// Consumer side: the read position and the filled slots, refreshing the
    /// cached write position only if fewer than `wanted` slots look filled.
    @inlinable
    func consumerView(wanted: Int) -> (position: Int, filled: Int) {
        let position = readPosition.pointee.load(ordering: .relaxed)
        var filled = consumerCachedWrite.pointee &- position
        if filled < wanted {
            consumerCachedWrite.pointee = writePosition.pointee.load(ordering: .acquiring)
            filled = consumerCachedWrite.pointee &- position
        }
        return (position, filled)
    }

    @inlinable func publishWrite(_ position: Int) { writePosition.pointee.store(position, ordering: .releasing) }
    @inlinable func publishRead(_ position: Int) { readPosition.pointee.store(position, ordering: .releasing) }

    /// Publishes `count` more written slots (the producer's own position needs no refresh).
    @inlinable func advanceWrite(by count: Int) {
        publishWrite(writePosition.pointee.load(ordering: .relaxed) + count)
    }

    /// Releases `count` more read slots.
    @inlinable func advanceRead(by count: Int) {
        publishRead(readPosition.pointee.load(ordering: .relaxed) + count)
    }

    /// Filled slots as seen from any thread (a snapshot; for monitoring only).
    func approximateCount() -> Int {
        let read = readPosition.pointee.load(ordering: .acquiring)
        return writePosition.pointee.load(ordering: .acquiring) - read
    }
}

/// Rounds a requested ring capacity up to a power of two within `1...limit`.
func ringCapacity(_ requested: Int, limit: Int, what: String) throws(AudioError) -> Int {
    guard requested > 0 else {
        throw AudioError(.parameterError, "\(what) capacity must be positive, not \(requested)")
    }
    guard requested <= limit else {
        throw AudioError(.parameterError, "\(what) capacity \(requested) exceeds the limit of \(limit)")
    }
    var capacity = 1
    while capacity < requested { capacity <<= 1 }
    return capacity
}

/// The error a ring throws when a side commits more than it was given (a cold path).
@usableFromInline @inline(never)
func overcommit(_ side: String, _ count: Int, available: Int) -> AudioError {
    AudioError(.parameterError, "cannot \(side) \(count) slots: \(available) available")
}
