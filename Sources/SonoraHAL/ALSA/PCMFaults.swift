import Synchronization

/// Failure injection at the ALSA chokepoint (swift-system's habit): a test arms a call to
/// fail with an errno after a number of calls, and Sonora sees the failure exactly as if
/// alsa-lib had returned it. Unarmed, checking costs one relaxed load.
public final class PCMFaults: @unchecked Sendable {
    /// Every `snd_pcm_*` call Sonora makes that can fail, by what it does.
    public enum Operation: Int, Sendable, CaseIterable, CustomStringConvertible {
        /// `snd_pcm_open_lconf` (at open and on re-open after an interruption).
        case open
        /// `snd_pcm_hw_params_any` (reading the configuration space).
        case hardwareSpace
        /// `snd_pcm_hw_params` (installing the negotiated configuration).
        case hardwareParameters
        /// `snd_pcm_sw_params_current`.
        case softwareSpace
        /// `snd_pcm_sw_params`.
        case softwareParameters
        /// `snd_pcm_link` (duplex streams that start as one).
        case link
        /// `snd_pcm_prepare`.
        case prepare
        /// `snd_pcm_start`.
        case start
        /// `snd_pcm_drop`.
        case drop
        /// `snd_pcm_resume` (after a suspend).
        case resume
        /// `snd_pcm_poll_descriptors`.
        case pollDescriptors
        /// `snd_pcm_poll_descriptors_revents`.
        case pollRevents
        /// `snd_pcm_avail_update` (where xruns, suspends and vanished devices show first).
        case availUpdate
        /// `snd_pcm_mmap_begin`.
        case mmapBegin
        /// `snd_pcm_mmap_commit`.
        case mmapCommit
        /// `snd_pcm_readi` / `snd_pcm_readn`.
        case read
        /// `snd_pcm_writei` / `snd_pcm_writen`.
        case write
        /// `snd_pcm_delay`.
        case delay
        /// `snd_pcm_close`.
        case close

        /// The alsa-lib function, as error messages name it.
        public var description: String {
            switch self {
            case .open: "snd_pcm_open"
            case .hardwareSpace: "snd_pcm_hw_params_any"
            case .hardwareParameters: "snd_pcm_hw_params"
            case .softwareSpace: "snd_pcm_sw_params_current"
            case .softwareParameters: "snd_pcm_sw_params"
            case .link: "snd_pcm_link"
            case .prepare: "snd_pcm_prepare"
            case .start: "snd_pcm_start"
            case .drop: "snd_pcm_drop"
            case .resume: "snd_pcm_resume"
            case .pollDescriptors: "snd_pcm_poll_descriptors"
            case .pollRevents: "snd_pcm_poll_descriptors_revents"
            case .availUpdate: "snd_pcm_avail_update"
            case .mmapBegin: "snd_pcm_mmap_begin"
            case .mmapCommit: "snd_pcm_mmap_commit"
            case .read: "snd_pcm_read"
            case .write: "snd_pcm_write"
            case .delay: "snd_pcm_delay"
            case .close: "snd_pcm_close"
            }
        }
    }

    private final class Slot: @unchecked Sendable {
        let remainingCalls = Atomic<Int>(-1)
        let errno = Atomic<Int32>(0)
        let times = Atomic<Int>(0)
        let injected = Atomic<Int>(0)
    }

    private let armed = Atomic<Bool>(false)
    private let slots: [Slot] = Operation.allCases.map { _ in Slot() }

    public init() {}

    /// Makes the call of `operation` after the next `calls` ones fail with `-errno`, and
    /// `times − 1` calls after it as well (`times` ≤ 0 disarms the operation).
    public func inject(_ operation: Operation, errno: Int32, afterCalls calls: Int = 0, times: Int = 1) {
        let slot = slots[operation.rawValue]
        slot.errno.store(errno, ordering: .relaxed)
        slot.times.store(times, ordering: .relaxed)
        slot.remainingCalls.store(times > 0 ? calls : -1, ordering: .relaxed)
        armed.store(true, ordering: .releasing)
    }

    /// Disarms every operation.
    public func clear() {
        for slot in slots { slot.remainingCalls.store(-1, ordering: .relaxed) }
    }

    /// How many failures of `operation` were injected so far.
    public func injectedFailures(_ operation: Operation) -> Int {
        slots[operation.rawValue].injected.load(ordering: .relaxed)
    }

    /// The negative errno to return instead of calling ALSA, or 0.
    @inline(__always)
    func failure(_ operation: Operation) -> Int32 {
        guard armed.load(ordering: .acquiring) else { return 0 }
        return slots.withUnsafeBufferPointer { slots in
            let slot = slots[operation.rawValue]
            let remaining = slot.remainingCalls.load(ordering: .relaxed)
            if remaining < 0 { return 0 }
            if remaining > 0 {
                slot.remainingCalls.store(remaining - 1, ordering: .relaxed)
                return 0
            }
            let left = slot.times.load(ordering: .relaxed) - 1
            slot.times.store(left, ordering: .relaxed)
            if left <= 0 { slot.remainingCalls.store(-1, ordering: .relaxed) }
            slot.injected.wrappingAdd(1, ordering: .relaxed)
            return -slot.errno.load(ordering: .relaxed)
        }
    }
}
