import Synchronization

/// Failure injection at the ALSA chokepoint (swift-system's habit): a test arms an
/// operation to fail with an errno after a number of calls, and the I/O thread sees the
/// failure exactly as if alsa-lib had returned it. Checking costs one relaxed load.
public final class PCMFaults: @unchecked Sendable {
    public enum Operation: Sendable, CaseIterable {
        /// `snd_pcm_avail_update` (where xruns, suspends and vanished devices show first).
        case availUpdate
        /// `snd_pcm_open`, on re-open after an interruption.
        case open
    }

    private final class Slot: @unchecked Sendable {
        let remainingCalls = Atomic<Int>(-1)
        let errno = Atomic<Int32>(0)
        let times = Atomic<Int>(0)
    }

    private let armed = Atomic<Bool>(false)
    private let availUpdate = Slot()
    private let open = Slot()

    public init() {}

    private func slot(_ operation: Operation) -> Slot {
        switch operation {
        case .availUpdate: availUpdate
        case .open: open
        }
    }

    /// Makes the call of `operation` after the next `calls` ones fail with `-errno`, and
    /// `times − 1` calls after it as well.
    public func inject(_ operation: Operation, errno: Int32, afterCalls calls: Int, times: Int = 1) {
        let slot = slot(operation)
        slot.errno.store(errno, ordering: .relaxed)
        slot.times.store(times, ordering: .relaxed)
        slot.remainingCalls.store(calls, ordering: .relaxed)
        armed.store(true, ordering: .releasing)
    }

    /// The negative errno to return instead of calling ALSA, or 0.
    @inline(__always)
    func failure(_ operation: Operation) -> Int32 {
        guard armed.load(ordering: .acquiring) else { return 0 }
        let slot = operation == .availUpdate ? availUpdate : open
        let remaining = slot.remainingCalls.load(ordering: .relaxed)
        if remaining < 0 { return 0 }
        if remaining > 0 {
            slot.remainingCalls.store(remaining - 1, ordering: .relaxed)
            return 0
        }
        let left = slot.times.load(ordering: .relaxed) - 1
        slot.times.store(left, ordering: .relaxed)
        if left <= 0 { slot.remainingCalls.store(-1, ordering: .relaxed) }
        return -slot.errno.load(ordering: .relaxed)
    }
}
