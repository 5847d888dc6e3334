import CSonoraSystem
import SonoraCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The appliance's open client streams, in a fixed table of slots (atomic pointers, as
/// `AudioQueueMixer`'s sources): the control side attaches and detaches, the realtime
/// thread services them with `mixPlayback` and `deliverCapture` — without allocation,
/// locks, logging, Foundation or reference counting.
///
/// A detached stream is not freed at once: the realtime thread may be servicing it. It
/// is retired with the realtime cycle count and freed (unmapped, its eventfd closed) by
/// `collectRetired()` on the control side once that cycle is over. Both realtime calls
/// must come from one thread (the appliance's I/O thread).
public final class ApplianceStreamTable: @unchecked Sendable {
    public let capacity: Int
    private let slots: UnsafeMutablePointer<Atomic<UInt>>
    /// Odd while a realtime call runs: bumped on entry and on exit.
    private let cycle = Atomic<Int>(0)
    /// I/O cycles ended by `finishCycle` (realtime side only).
    @exclusivity(unchecked) private var ioCycle = 0
    private struct ControlState {
        var streams: [Int: ApplianceServerStream] = [:]
        var slotOf: [Int: Int] = [:]
        var retired: [(stream: ApplianceServerStream, cycle: Int)] = []
        /// The gain last set for a program, for its streams opened later (a program that opens
        /// a stream while interrupted or ducked starts at that gain); 1 is not kept.
        var gainOfPid: [Int32: Float] = [:]
        /// The routing group of each program's session, for its streams opened later.
        var groupOfPid: [Int32: Int] = [:]
    }
    private let control = ControlLock(ControlState())
    /// An eventfd the realtime side signals when a stream faults (its client forged a ring
    /// position), so the server's loop looks for faulted streams when one did instead of
    /// every turn; −1 if none could be made (the loop then looks on a timeout).
    let faultDescriptor: Int32

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        slots = .allocate(capacity: self.capacity)
        for index in 0..<self.capacity { (slots + index).initialize(to: Atomic(0)) }
        faultDescriptor = sonora_eventfd()
    }

    deinit {
        slots.deinitialize(count: capacity)
        slots.deallocate()
        if faultDescriptor >= 0 { close(faultDescriptor) }
    }

    // MARK: Realtime thread

    /// Sums every playback stream's next `frameCount` frames into `output` (mono stream →
    /// every output channel; otherwise channel i → i, extra channels dropped), each
    /// multiplied by its gain, ramped per sample toward its target; counts underruns;
    /// then wakes each client. The streams are added to what `output` holds (clear it
    /// first for the clients' mix alone). A stream whose client forged its position is
    /// faulted (silenced, counted) instead of read.
    ///
    /// `groups`: only streams whose routing group's bit (`1 << group`, groups above 63 as
    /// 63) is set — one `clients` node per role takes its role's streams. Callers keep the
    /// masks of one cycle disjoint, so a stream is read once.
    public func mixPlayback(into output: AudioBufferList, frameCount: Int, groups: UInt64 = .max) {
        let frames = min(frameCount, output.frameCount)
        let now = ioCycle
        cycle.wrappingAdd(1, ordering: .sequentiallyConsistent)
        for index in 0..<capacity {
            let address = slots[index].load(ordering: .sequentiallyConsistent)
            guard address != 0 else { continue }
            Unmanaged<ApplianceServerStream>.fromOpaque(UnsafeRawPointer(bitPattern: address)!)._withUnsafeGuaranteedRef { stream in
                guard stream.direction == .playback, Self.takes(groups, stream) else { return }
                stream.mix(into: output, frames: frames)
                stream.servicedCycle = now
            }
        }
        cycle.wrappingAdd(1, ordering: .sequentiallyConsistent)
    }

    @inline(__always)
    private static func takes(_ groups: UInt64, _ stream: ApplianceServerStream) -> Bool {
        groups == .max || groups & (1 << UInt64(min(max(stream.group.load(ordering: .relaxed), 0), 63))) != 0
    }

    /// Ends an I/O cycle (called once per cycle, after the graph rendered): streams no node
    /// took this cycle still keep time — a playback stream's frames are consumed unheard, a
    /// capture client is woken (it gets nothing) — so a program whose role has no route
    /// plays into nothing instead of stalling. Realtime-safe.
    public func finishCycle(frameCount: Int) {
        let now = ioCycle
        cycle.wrappingAdd(1, ordering: .sequentiallyConsistent)
        for index in 0..<capacity {
            let address = slots[index].load(ordering: .sequentiallyConsistent)
            guard address != 0 else { continue }
            Unmanaged<ApplianceServerStream>.fromOpaque(UnsafeRawPointer(bitPattern: address)!)._withUnsafeGuaranteedRef { stream in
                guard stream.servicedCycle != now else { return }
                if stream.direction == .playback { stream.mix(into: nil, frames: frameCount) } else { stream.wake() }
                stream.servicedCycle = now
            }
        }
        ioCycle = now &+ 1
        cycle.wrappingAdd(1, ordering: .sequentiallyConsistent)
    }

    /// Writes `input`'s `frameCount` frames into every capture stream (stream channel c ←
    /// input channel c, or channel 0 of a mono input; silence where the input has none);
    /// counts overruns; then wakes each client.
    public func deliverCapture(_ input: AudioBufferList, frameCount: Int, groups: UInt64 = .max) {
        let frames = min(frameCount, input.frameCount)
        let now = ioCycle
        cycle.wrappingAdd(1, ordering: .sequentiallyConsistent)
        for index in 0..<capacity {
            let address = slots[index].load(ordering: .sequentiallyConsistent)
            guard address != 0 else { continue }
            Unmanaged<ApplianceServerStream>.fromOpaque(UnsafeRawPointer(bitPattern: address)!)._withUnsafeGuaranteedRef { stream in
                guard stream.direction == .capture, Self.takes(groups, stream) else { return }
                stream.capture(input, frames: frames)
                stream.servicedCycle = now
            }
        }
        cycle.wrappingAdd(1, ordering: .sequentiallyConsistent)
    }

    // MARK: Control side

    /// Puts `stream` in a free slot; false when the table is full.
    func attach(_ stream: ApplianceServerStream) -> Bool {
        control.withLock { state in
            guard let free = (0..<capacity).first(where: { slots[$0].load(ordering: .relaxed) == 0 }) else { return false }
            state.streams[stream.id] = stream
            state.slotOf[stream.id] = free
            if let gain = state.gainOfPid[stream.pid] { stream.setGain(gain, rampFrames: 0) }
            stream.group.store(state.groupOfPid[stream.pid] ?? 0, ordering: .relaxed)
            slots[free].store(UInt(bitPattern: Unmanaged.passUnretained(stream).toOpaque()), ordering: .sequentiallyConsistent)
            return true
        }
    }

    /// Takes stream `id` out of its slot; it is freed by a later `collectRetired()`.
    func detach(_ id: Int) {
        control.withLock { state in
            guard let stream = state.streams.removeValue(forKey: id), let slot = state.slotOf.removeValue(forKey: id) else { return }
            slots[slot].store(0, ordering: .sequentiallyConsistent)
            state.retired.append((stream, cycle.load(ordering: .sequentiallyConsistent)))
        }
        collectRetired()
    }

    /// Frees the retired streams no realtime call can still be using: one retired while no
    /// call ran (an even count), or once the count moved on from the call that ran.
    /// Returns how many are still waiting (the server's loop looks again soon while any are).
    @discardableResult
    func collectRetired() -> Int {
        let (freed, waiting): ([ApplianceServerStream], Int) = control.withLock { state in
            let now = cycle.load(ordering: .sequentiallyConsistent)
            var freed: [ApplianceServerStream] = []
            state.retired.removeAll { entry in
                let safe = entry.cycle & 1 == 0 || now != entry.cycle
                if safe { freed.append(entry.stream) }
                return safe
            }
            return (freed, state.retired.count)
        }
        _ = freed  // released here, outside the lock
        return waiting
    }

    /// Streams waiting to be freed.
    var retiredCount: Int { control.withLock { $0.retired.count } }

    func stream(_ id: Int) -> ApplianceServerStream? { control.withLock { $0.streams[id] } }

    /// Open streams whose client forged a ring position.
    func faultedStreams() -> [ApplianceServerStream] {
        control.withLock { state in state.streams.values.filter { $0.faulted.load(ordering: .acquiring) } }
    }

    var count: Int { control.withLock { $0.streams.count } }

    /// Drops what is kept for program `pid` (it has gone; its pid may come back as another
    /// program's).
    public func forget(pid: Int32) {
        control.withLock { state in
            state.gainOfPid.removeValue(forKey: pid)
            state.groupOfPid.removeValue(forKey: pid)
        }
    }

    /// Puts every stream of `pid`, and those it opens later, in routing group `group`
    /// (0…63; 0: none) — its session's role, so the `clients` node for that role takes it.
    public func setGroup(pid: Int32, group: Int) {
        let group = min(max(group, 0), 63)
        control.withLock { state in
            state.groupOfPid[pid] = group
            for stream in state.streams.values where stream.pid == pid { stream.group.store(group, ordering: .relaxed) }
        }
    }

    /// The routing group program `pid`'s streams are in (tests, status).
    public func group(pid: Int32) -> Int { control.withLock { $0.groupOfPid[pid] ?? 0 } }

    /// Whether program `pid`'s next stream would start below full level (tests, status).
    public func keptGain(pid: Int32) -> Float? { control.withLock { $0.gainOfPid[pid] } }

    /// Ramps every stream of `pid` to `gain` (linear) over `rampFrames` frames (fade-out,
    /// duck, restore). Streams the program opens later start at this gain.
    public func setGain(pid: Int32, gain: Float, rampFrames: Int) {
        control.withLock { state in
            state.gainOfPid[pid] = gain == 1 ? nil : gain
            for stream in state.streams.values where stream.pid == pid { stream.setGain(gain, rampFrames: rampFrames) }
        }
    }

    /// The open streams by id: gain, peak since the previous snapshot, counters.
    public func snapshot() -> [ApplianceStreamInfo] {
        control.withLock { state in state.streams.values.map(\.info).sorted { $0.id < $1.id } }
    }
}
