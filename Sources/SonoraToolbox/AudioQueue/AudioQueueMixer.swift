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

    // Control side (under `lock`).
    private let lock = NSLock()
    private var owners: [QueueRenderTarget?]

    init(capacity: Int, sampleRate: Double) {
        self.capacity = capacity
        clock = AudioQueueDeviceClock(sampleRate: sampleRate)
        slots = .allocate(capacity: capacity)
        for index in 0..<capacity { (slots + index).initialize(to: Atomic<UInt>(0)) }
        owners = Array(repeating: nil, count: capacity)
        super.init()
    }

    deinit {
        slots.deinitialize(count: capacity)
        slots.deallocate()
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

    /// One slice on the I/O thread: every source's frames summed into the unit's buffers.
    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        slices.wrappingAdd(1, ordering: .sequentiallyConsistent)
        let mix = request.pointee.buffers
        mix.clear()
        let renderClock = clock.slice(request.pointee.timeStamp, frames: mix.frameCount)
        let count = used.load(ordering: .sequentiallyConsistent)
        for index in 0..<count {
            let bits = slots[index].load(ordering: .sequentiallyConsistent)
            guard bits != 0 else { continue }
            Unmanaged<QueueRenderTarget>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!)._withUnsafeGuaranteedRef {
                $0.mix(into: mix, clock: renderClock)
            }
        }
        slices.wrappingAdd(1, ordering: .sequentiallyConsistent)
        return .noError
    }
}
