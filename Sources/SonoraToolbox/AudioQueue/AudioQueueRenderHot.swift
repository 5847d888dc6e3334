import Foundation
import SonoraDSP
import Synchronization

/// An `AudioQueueRenderer`'s per-slice state, packed into one 256-byte record (four cache
/// lines, two adjacent pairs) that comes from a pool of records side by side.
///
/// Why: with 64 players on a device, a slice found each source's state spread over seven
/// lines of the renderer object (its stored properties, the atomics among them) and each
/// renderer on pages of its own; the mixer's loads of them before the slice were the largest
/// item of the I/O thread beside the frames (perf annotate, `sonora-bench sounds`). Here
/// everything `render` reads or writes in a slice — the position and device times, the
/// gains, the held event, the command and event counts, the published counters and the
/// flags the queue's thread sets — is one record, and the records of queues made one after
/// another lie side by side in a few pages (`RenderHotPool`), so a slice over all sources
/// touches four lines and no new page per source.
///
/// Layout: `State` (the render thread's own, plain values) from byte 0, then the atomics
/// at fixed offsets from byte 192 (an `Atomic` must live at a stable address: it is reached
/// only through pointers into the record).
enum RenderHot {
    /// The render thread's own values (no other thread reads them).
    struct State {
        // First line: read and written by every slice.
        var position = 0
        var deviceTime = 0
        var startDeviceTime = 0
        var endOfStream = Int.max
        var drainEnd = 0
        var commandsSeen = 0
        var eventsTaken = 0
        var state = AudioQueueRenderer.RunState.stopped
        var metering = false
        // Second and third: the gains (every slice while playing) and the held event.
        var volume = LinearRamp(value: 1)
        var leftGain = LinearRamp(value: 1)
        var rightGain = LinearRamp(value: 1)
        var heldEvent: StampedEvent?
    }

    static let recordBytes = 256
    static let atomicsOffset = 192

    /// A record from the pool, initialized.
    static func make() -> UnsafeMutableRawPointer {
        precondition(MemoryLayout<State>.size <= atomicsOffset, "RenderHot.State is \(MemoryLayout<State>.size) bytes")
        let record = RenderHotPool.shared.take()
        record.bindMemory(to: State.self, capacity: 1).initialize(to: State())
        for index in 0..<4 { intAtomic(record, index).initialize(to: Atomic(0)) }
        holdsInt16(record).initialize(to: Atomic(false))
        wakesFeeder(record).initialize(to: Atomic(false))
        return record
    }

    /// Gives a record back to the pool (its renderer is gone).
    static func free(_ record: UnsafeMutableRawPointer) {
        state(record).deinitialize(count: 1)
        for index in 0..<4 { intAtomic(record, index).deinitialize(count: 1) }
        holdsInt16(record).deinitialize(count: 1)
        wakesFeeder(record).deinitialize(count: 1)
        RenderHotPool.shared.give(record)
    }

    @inline(__always)
    static func state(_ record: UnsafeMutableRawPointer) -> UnsafeMutablePointer<State> {
        record.assumingMemoryBound(to: State.self)
    }

    @inline(__always)
    private static func intAtomic(_ record: UnsafeMutableRawPointer, _ index: Int) -> UnsafeMutablePointer<Atomic<Int>> {
        (record + atomicsOffset + 8 &* index).assumingMemoryBound(to: Atomic<Int>.self)
    }

    /// Commands pushed so far (the control side counts; the render side compares).
    @inline(__always) static func commandsSent(_ record: UnsafeMutableRawPointer) -> UnsafeMutablePointer<Atomic<Int>> { intAtomic(record, 0) }
    /// Events pushed so far (the queue's thread counts).
    @inline(__always) static func eventsSent(_ record: UnsafeMutableRawPointer) -> UnsafeMutablePointer<Atomic<Int>> { intAtomic(record, 1) }
    /// Stream frames read so far (published every slice).
    @inline(__always) static func playedFrames(_ record: UnsafeMutableRawPointer) -> UnsafeMutablePointer<Atomic<Int>> { intAtomic(record, 2) }
    /// The queue's sample time (published every slice).
    @inline(__always) static func timelineFrames(_ record: UnsafeMutableRawPointer) -> UnsafeMutablePointer<Atomic<Int>> { intAtomic(record, 3) }
    /// Whether the ring holds 16-bit frames (the producer sets it).
    @inline(__always) static func holdsInt16(_ record: UnsafeMutableRawPointer) -> UnsafeMutablePointer<Atomic<Bool>> {
        (record + atomicsOffset + 32).assumingMemoryBound(to: Atomic<Bool>.self)
    }
    /// Whether a refill wakes the output's feeder (the control side sets it).
    @inline(__always) static func wakesFeeder(_ record: UnsafeMutableRawPointer) -> UnsafeMutablePointer<Atomic<Bool>> {
        (record + atomicsOffset + 40).assumingMemoryBound(to: Atomic<Bool>.self)
    }
}

/// Where `RenderHot` records live: 256-byte slots carved in order from page-aligned 16 KiB
/// blocks, never returned to the system (a freed slot is reused, last freed first). Control
/// side only (renderers are made and freed there), under a lock.
final class RenderHotPool: @unchecked Sendable {
    static let shared = RenderHotPool()

    private static let blockBytes = 16_384
    private let lock = NSLock()
    private var freed: [UnsafeMutableRawPointer] = []
    private var next: UnsafeMutableRawPointer?
    private var end: UnsafeMutableRawPointer?

    func take() -> UnsafeMutableRawPointer {
        lock.lock()
        defer { lock.unlock() }
        if let slot = freed.popLast() { return slot }
        if let next, let end, next < end {
            self.next = next + RenderHot.recordBytes
            return next
        }
        let block = UnsafeMutableRawPointer.allocate(byteCount: Self.blockBytes, alignment: 4096)
        next = block + RenderHot.recordBytes
        end = block + Self.blockBytes
        return block
    }

    func give(_ slot: UnsafeMutableRawPointer) {
        lock.lock()
        freed.append(slot)
        lock.unlock()
    }
}
