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
        owners = Array(repeating: nil, count: capacity)
        int16Scratch = try! OwnedAudioBufferList(channelCount: 2, frameCapacity: 1024)
        int16ScratchList = int16Scratch.list
        super.init()
    }

    deinit {
        slots.deinitialize(count: capacity)
        slots.deallocate()
        renderers.deallocate()
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

    /// Before a slice: the lines every source's render will read, loaded one level of
    /// pointers at a time across all the sources (the target's renderer, its state, its
    /// ring's cursors, the frames it will read). With many sources their lines have left the
    /// cache since the last slice (perf, 64 players: the I/O thread spent most of its time
    /// waiting for them, one source after another, each miss behind the previous one's); in
    /// these short passes the misses of many sources are in flight at once. Realtime-safe:
    /// loads only, into the preallocated `renderers`.
    private func prefetch(_ count: Int, frames: Int) {
        guard count > 1 else { return }
        for index in 0..<count {
            let bits = slots[index].load(ordering: .sequentiallyConsistent)
            renderers[index] = bits == 0 ? nil
                : Unmanaged<QueueRenderTarget>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!)._withUnsafeGuaranteedRef { $0.currentRenderer }
        }
        var sink = 0
        for index in 0..<count {
            guard let renderer = renderers[index] else { continue }
            sink &+= Unmanaged<AudioQueueRenderer>.fromOpaque(renderer)._withUnsafeGuaranteedRef { $0.touchState() }
        }
        for index in 0..<count {
            guard let renderer = renderers[index] else { continue }
            sink &+= Unmanaged<AudioQueueRenderer>.fromOpaque(renderer)._withUnsafeGuaranteedRef { $0.touchCursors() }
        }
        var samples: UInt32 = 0
        for index in 0..<count {
            guard let renderer = renderers[index] else { continue }
            samples ^= Unmanaged<AudioQueueRenderer>.fromOpaque(renderer)._withUnsafeGuaranteedRef { $0.touchFrames(frames) }
        }
        // Kept, so the loads are not optimized away.
        touched.store(sink &+ Int(samples), ordering: .relaxed)
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
