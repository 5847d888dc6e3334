import Foundation
import SonoraCore
import SonoraUnits
import Synchronization

/// The hidden mixer in front of a device's I/O unit (its input 0 render callback): sums the
/// slice of every queue attached to the device.
///
/// Sources join and leave through a preallocated table of atomic pointers, so the I/O
/// thread never locks, allocates or touches a reference count: the control side owns each
/// source (`owners`), publishes it in a free slot, and on removal clears the slot, waits for
/// the slice in progress (the `slices` counter is odd while the I/O thread is inside one)
/// and only then lets the source go, on the control side.
final class AudioQueueMixer: RenderCallbackTarget, @unchecked Sendable {
    let capacity: Int
    let clock: AudioQueueDeviceClock
    private let slots: UnsafeMutablePointer<Atomic<UInt>>
    /// How many slots the I/O thread scans (the highest ever used + 1).
    private let used = Atomic<Int>(0)
    /// Incremented as a slice begins and as it ends: odd while the I/O thread renders.
    private let slices = Atomic<Int>(0)
    /// What the prefetch loaded (never read: it keeps the loads).
    private let touched = Atomic<Int>(0)
    /// The prefetch's renderer of each slot in the slice (I/O thread only).
    private let renderers: UnsafeMutablePointer<UnsafeRawPointer?>
    /// Per slot, `lineWords` words: the addresses of the lines its source's slice reads before
    /// the frames (`AudioQueueRenderer.prefetchAddresses`: the renderer, its packed state, its
    /// ring, the ring's consumer cursors and channel table). Written by the control side
    /// before the slot is published and whenever the source's renderer changes (before the
    /// old one may go: `rendererChanged`), so the prefetch loads all those lines of all the
    /// sources at once, where it went one level of pointers after another (target → renderer
    /// → state → ring → cursors → table: each level a round of misses).
    private let lines: UnsafeMutablePointer<Atomic<UInt>>
    private static let lineWords = 8
    /// Where a source whose ring holds 16-bit frames converts them before its gains and the
    /// sum (`AudioQueueRenderer.add`): one for all sources, used by one at a time on the I/O
    /// thread, so it stays in the cache (stereo: 16-bit rings are for one or two channels).
    private let int16Scratch: OwnedAudioBufferList
    /// Its view, taken once (no call on the owner, no reference count, in a slice).
    private let int16ScratchList: AudioBufferList

    // Control side (under `lock`).
    private let lock = NSLock()
    private var owners: [QueueRenderTarget?]

    init(capacity: Int, sampleRate: Double) {
        self.capacity = capacity
        clock = AudioQueueDeviceClock(sampleRate: sampleRate)
        slots = .allocate(capacity: capacity)
        for index in 0..<capacity { (slots + index).initialize(to: Atomic<UInt>(0)) }
        renderers = .allocate(capacity: capacity)
        renderers.initialize(repeating: nil, count: capacity)
        lines = .allocate(capacity: capacity * Self.lineWords)
        for index in 0..<capacity * Self.lineWords { (lines + index).initialize(to: Atomic<UInt>(0)) }
        owners = Array(repeating: nil, count: capacity)
        int16Scratch = try! OwnedAudioBufferList(channelCount: 2, frameCapacity: 1024)
        int16ScratchList = int16Scratch.list
        super.init()
    }

    deinit {
        slots.deinitialize(count: capacity)
        slots.deallocate()
        renderers.deallocate()
        lines.deinitialize(count: capacity * Self.lineWords)
        lines.deallocate()
    }

    /// Sources in the mix.
    var sourceCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return owners.lazy.filter { $0 != nil }.count
    }

    /// Publishes `source` to the I/O thread; false when every slot is taken.
    func add(_ source: QueueRenderTarget) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard let index = owners.firstIndex(where: { $0 == nil }) else { return false }
        owners[index] = source
        source.mixer = self
        setLines(index, source.renderer)
        if used.load(ordering: .relaxed) <= index { used.store(index + 1, ordering: .sequentiallyConsistent) }
        slots[index].store(UInt(bitPattern: Unmanaged.passUnretained(source).toOpaque()), ordering: .sequentiallyConsistent)
        return true
    }

    /// Takes `source` out of the mix; when this returns the I/O thread no longer uses it.
    func remove(_ source: QueueRenderTarget) {
        lock.lock()
        guard let index = owners.firstIndex(where: { $0 === source }) else { lock.unlock(); return }
        slots[index].store(0, ordering: .sequentiallyConsistent)
        lock.unlock()
        waitForSliceInProgress()
        lock.lock()
        owners[index] = nil
        lock.unlock()
        source.mixer = nil
    }

    /// `source`'s renderer was replaced (control side, before the old one may go).
    func rendererChanged(_ source: QueueRenderTarget) {
        lock.lock()
        defer { lock.unlock() }
        guard let index = owners.firstIndex(where: { $0 === source }) else { return }
        setLines(index, source.renderer)
    }

    private func setLines(_ index: Int, _ renderer: AudioQueueRenderer) {
        let addresses = renderer.prefetchAddresses
        for word in 0..<Self.lineWords {
            lines[index * Self.lineWords + word].store(word < addresses.count ? addresses[word] : 0, ordering: .sequentiallyConsistent)
        }
    }

    /// The sources now in the mix (control side).
    var sources: [QueueRenderTarget] {
        lock.lock()
        defer { lock.unlock() }
        return owners.compactMap { $0 }
    }

    /// Returns once the slice the I/O thread may be rendering now has ended (control side;
    /// immediately when none is in progress).
    func waitForSliceInProgress() {
        let seen = slices.load(ordering: .sequentiallyConsistent)
        guard seen & 1 == 1 else { return }
        while slices.load(ordering: .sequentiallyConsistent) == seen { sched_yield() }
    }

    /// Before a slice: the lines every source's render will read, loaded ahead so that their
    /// misses overlap. With many sources they have left the cache since the last slice (perf,
    /// 64 players: the I/O thread spent most of its time waiting for them, one source after
    /// another). First every line before the frames, all at once — their addresses come from
    /// `lines`, so no load waits for another's; then the frames, whose place the cursors (now
    /// in the cache) give. Realtime-safe: loads only, into the preallocated `renderers`.
    private func prefetch(_ count: Int, frames: Int) {
        guard count > 1 else { return }
        var sink = 0
        for index in 0..<count {
            let bits = slots[index].load(ordering: .sequentiallyConsistent)
            guard bits != 0 else {
                renderers[index] = nil
                continue
            }
            let renderer = Unmanaged<QueueRenderTarget>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!)._withUnsafeGuaranteedRef { $0.currentRenderer }
            renderers[index] = renderer
            // Lines written for another renderer are not loaded: a renderer replaced on one
            // thread while another adds its source can leave the slot the old one's addresses,
            // and the old one may be gone (its memory unmapped). Its renderer's own lines are
            // valid while it is the current one (`rendererChanged`).
            let entry = lines + index &* Self.lineWords
            guard entry[0].load(ordering: .relaxed) == UInt(bitPattern: renderer) else { continue }
            sink &+= Self.touchLines(entry)
        }
        var samples: UInt32 = 0
        for index in 0..<count {
            guard let renderer = renderers[index] else { continue }
            samples ^= Unmanaged<AudioQueueRenderer>.fromOpaque(renderer)._withUnsafeGuaranteedRef { $0.touchFrames(frames) }
        }
        // Kept, so the loads are not optimized away.
        touched.store(sink &+ Int(samples), ordering: .relaxed)
    }

    /// One load in each line of one slot's table entry (see `lines`): the renderer's first
    /// fields, the packed state's four lines (`RenderHot`), the ring object's fields, the
    /// consumer cursors' line (its position and its copy of the producer's) and the channel
    /// table. Plain loads of what only this thread
    /// writes or nobody does; atomic (relaxed) loads where other threads store.
    @inline(__always)
    private static func touchLines(_ entry: UnsafeMutablePointer<Atomic<UInt>>) -> Int {
        let renderer = entry[0].load(ordering: .relaxed)
        guard renderer != 0 else { return 0 }
        let hot = UnsafeMutableRawPointer(bitPattern: entry[1].load(ordering: .relaxed))!
        let ring = UnsafeRawPointer(bitPattern: entry[2].load(ordering: .relaxed))!
        let cursors = UnsafeMutableRawPointer(bitPattern: entry[3].load(ordering: .relaxed))!
        let channels = UnsafeRawPointer(bitPattern: entry[4].load(ordering: .relaxed))!
        var sink = UnsafeRawPointer(bitPattern: renderer)!.load(fromByteOffset: 16, as: Int.self)
        sink &+= UnsafeRawPointer(bitPattern: renderer)!.load(fromByteOffset: 56, as: Int.self)
        sink &+= UnsafeRawPointer(hot).load(fromByteOffset: 0, as: Int.self)
        sink &+= UnsafeRawPointer(hot).load(fromByteOffset: 64, as: Int.self)
        sink &+= UnsafeRawPointer(hot).load(fromByteOffset: 128, as: Int.self)
        sink &+= RenderHot.playedFrames(hot).pointee.load(ordering: .relaxed)
        sink &+= ring.load(fromByteOffset: 16, as: Int.self)
        sink &+= cursors.assumingMemoryBound(to: Atomic<Int>.self).pointee.load(ordering: .relaxed)
        sink &+= channels.load(as: Int.self)
        return sink
    }

    /// One slice on the I/O thread: every source's frames summed into the unit's buffers.
    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        slices.wrappingAdd(1, ordering: .sequentiallyConsistent)
        let mix = request.pointee.buffers
        mix.clear()
        let renderClock = clock.slice(request.pointee.timeStamp, frames: mix.frameCount)
        let count = used.load(ordering: .sequentiallyConsistent)
        let scratch = int16ScratchList
        prefetch(count, frames: mix.frameCount)
        for index in 0..<count {
            let bits = slots[index].load(ordering: .sequentiallyConsistent)
            guard bits != 0 else { continue }
            Unmanaged<QueueRenderTarget>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!)._withUnsafeGuaranteedRef {
                $0.mix(into: mix, clock: renderClock, scratch: scratch)
            }
        }
        slices.wrappingAdd(1, ordering: .sequentiallyConsistent)
        return .noError
    }
}
