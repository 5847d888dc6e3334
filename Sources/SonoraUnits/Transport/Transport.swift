import SonoraCore
import Synchronization

/// A graph's transport: tempo, time signature, position (frames and beats) and play state —
/// the host side of Core Audio's host callbacks, and what LV2 plugins get as time:Position.
///
/// The control side asks for changes (`play()`, `stop()`, `locate(toBeat:)`, `setTempo(_:)`,
/// `setTimeSignature(_:)`), each at the next cycle boundary or at an exact graph sample time;
/// they travel through a lock-free queue. The realtime side (`AudioGraph.render`) begins a cycle —
/// takes the queued changes, applies the ones due in this cycle at their frames — renders, and
/// ends it, moving the position on and publishing it for `position` to read. No allocation,
/// lock or reference counting there.
public final class Transport: @unchecked Sendable {
    public let sampleRate: Double
    private let commands: MessageQueue<TransportCommand>
    private let cycle: UnsafeMutablePointer<TransportCycle>
    /// The position at the end of the last cycle and that cycle's end sample time, published
    /// under a sequence count (odd while being written).
    private let sequence = Atomic<Int>(0)
    private let published: UnsafeMutablePointer<Atomic<UInt64>>
    private static let publishedCount = 7

    /// A stopped (or playing) transport at beat 0.
    public init(sampleRate: Double, tempo: Double = 120, timeSignature: TimeSignature = .common, isPlaying: Bool = false)
        throws(AudioError)
    {
        guard sampleRate.isFinite && sampleRate > 0 else {
            throw AudioError(.invalidPropertyValue, "a transport needs a positive sample rate, not \(sampleRate)")
        }
        try Self.checkTempo(tempo)
        self.sampleRate = sampleRate
        commands = try MessageQueue(capacity: 256)
        cycle = .allocate(capacity: 1)
        let start = TransportPosition(isPlaying: isPlaying, tempo: tempo, timeSignature: timeSignature)
        cycle.initialize(
            to: TransportCycle(
                sampleRate: sampleRate, start: start, sampleTime: 0, frameCount: 0,
                changes: .allocate(capacity: TransportCycle.changeCapacity), changeCount: 0,
                pending: .allocate(capacity: TransportCycle.pendingCapacity), pendingCount: 0, playStateChanged: false,
                cycles: 0))
        published = .allocate(capacity: Self.publishedCount)
        for index in 0..<Self.publishedCount { (published + index).initialize(to: Atomic(0)) }
        publish(start, sampleTime: 0)
    }

    deinit {
        cycle.pointee.changes.deallocate()
        cycle.pointee.pending.deallocate()
        cycle.deallocate()
        published.deallocate()
    }

    /// What units read while a cycle renders (`AudioUnit.hostCallbacks`).
    public var hostCallbacks: HostCallbacks { HostCallbacks(cycle: UnsafePointer(cycle)) }

    // MARK: Control side

    static func checkTempo(_ tempo: Double) throws(AudioError) {
        guard tempo.isFinite && tempo >= 1 && tempo <= 999 else {
            throw AudioError(.invalidPropertyValue, "a tempo is 1…999 beats per minute, not \(tempo)")
        }
    }

    /// Starts rolling, at the next cycle boundary or at graph sample time `sampleTime`.
    public func play(at sampleTime: Int64? = nil) throws(AudioError) { try send(.play, at: sampleTime) }

    /// Stops (the position stays).
    public func stop(at sampleTime: Int64? = nil) throws(AudioError) { try send(.stop, at: sampleTime) }

    /// Moves to `beat` (≥ 0); the timeline frame becomes that beat's frame at the tempo then.
    public func locate(toBeat beat: Double, at sampleTime: Int64? = nil) throws(AudioError) {
        guard beat.isFinite && beat >= 0 && beat < 1e9 else {
            throw AudioError(.invalidPropertyValue, "a transport locates to a beat ≥ 0, not \(beat)")
        }
        try send(.locate(beat: beat), at: sampleTime)
    }

    /// Beats per minute, 1…999.
    public func setTempo(_ tempo: Double, at sampleTime: Int64? = nil) throws(AudioError) {
        try Self.checkTempo(tempo)
        try send(.tempo(tempo), at: sampleTime)
    }

    public func setTimeSignature(_ timeSignature: TimeSignature, at sampleTime: Int64? = nil) throws(AudioError) {
        try send(.timeSignature(timeSignature), at: sampleTime)
    }

    private func send(_ change: TransportChange, at sampleTime: Int64?) throws(AudioError) {
        if let sampleTime, sampleTime < 0 {
            throw AudioError(.invalidPropertyValue, "a transport change is due at a sample time ≥ 0, not \(sampleTime)")
        }
        guard commands.push(TransportCommand(change: change, sampleTime: sampleTime ?? -1)) else {
            throw AudioError(.cannotDoInCurrentContext, "the transport's queue is full (is the graph rendering?)")
        }
    }

    /// Where the transport stood at the end of the last rendered cycle (changes still queued not included).
    public var position: TransportPosition { snapshot().position }

    /// Graph sample time at the end of the last rendered cycle: schedule exact changes from here.
    public var sampleTime: Int64 { snapshot().sampleTime }

    private func snapshot() -> (position: TransportPosition, sampleTime: Int64) {
        while true {
            let before = sequence.load(ordering: .acquiring)
            if before & 1 == 1 { continue }
            func value(_ index: Int) -> UInt64 { published[index].load(ordering: .relaxed) }
            let position = TransportPosition(
                isPlaying: value(0) != 0, tempo: Double(bitPattern: value(1)),
                timeSignature: TimeSignature(uncheckedBeatsPerBar: Int32(value(2)), beatUnit: Int32(value(3))),
                frame: Int64(bitPattern: value(4)), beat: Double(bitPattern: value(5)))
            let sampleTime = Int64(bitPattern: value(6))
            atomicMemoryFence(ordering: .acquiring)
            if sequence.load(ordering: .relaxed) == before { return (position, sampleTime) }
        }
    }

    // MARK: Realtime side

    /// Starts a cycle of `frameCount` frames at graph sample time `sampleTime`: takes queued
    /// changes and applies those due in this cycle at their frames. Realtime-safe.
    public func beginCycle(sampleTime: Double, frameCount: Int) {
        let state = cycle
        state.pointee.sampleTime = sampleTime
        state.pointee.frameCount = frameCount
        state.pointee.changeCount = 0
        state.pointee.playStateChanged = state.pointee.cycles == 0
        state.pointee.cycles += 1
        while state.pointee.pendingCount < TransportCycle.pendingCapacity, let command = commands.pop() {
            insertPending(command)
        }
        let cycleStart = Int64(sampleTime)
        var current = state.pointee.start
        var currentOffset = 0
        var taken = 0
        while taken < state.pointee.pendingCount {
            let command = state.pointee.pending[taken]
            let offset = command.sampleTime < 0 ? 0 : max(0, Int(clamping: command.sampleTime - cycleStart))
            guard offset < frameCount else { break }
            let atNewOffset = state.pointee.changeCount == 0 || state.pointee.changes[state.pointee.changeCount - 1].frameOffset != offset
            guard !atNewOffset || state.pointee.changeCount < TransportCycle.changeCapacity else { break }  // the rest next cycle
            current = current.advanced(by: offset - currentOffset, sampleRate: sampleRate)
            currentOffset = offset
            let wasPlaying = current.isPlaying
            apply(command.change, to: &current)
            if current.isPlaying != wasPlaying { state.pointee.playStateChanged = true }
            if atNewOffset {
                state.pointee.changes[state.pointee.changeCount] = TransportPositionChange(frameOffset: offset, position: current)
                state.pointee.changeCount += 1
            } else {
                state.pointee.changes[state.pointee.changeCount - 1].position = current
            }
            if offset == 0 { state.pointee.start = current }
            taken += 1
        }
        if taken > 0 {
            let remaining = state.pointee.pendingCount - taken
            if remaining > 0 { state.pointee.pending.update(from: state.pointee.pending + taken, count: remaining) }
            state.pointee.pendingCount = remaining
        }
    }

    /// Ends the cycle: moves the position past its frames and publishes it. Realtime-safe.
    public func endCycle() {
        let state = cycle
        let end = state.pointee.position(atFrame: state.pointee.frameCount)
        state.pointee.start = end
        state.pointee.changeCount = 0
        publish(end, sampleTime: Int64(state.pointee.sampleTime) + Int64(state.pointee.frameCount))
    }

    /// Keeps `pending` ordered by sample time ("next boundary" first), first come first within a time.
    private func insertPending(_ command: TransportCommand) {
        let pending = cycle.pointee.pending
        var index = cycle.pointee.pendingCount
        while index > 0 && pending[index - 1].sampleTime > command.sampleTime {
            pending[index] = pending[index - 1]
            index -= 1
        }
        pending[index] = command
        cycle.pointee.pendingCount += 1
    }

    private func apply(_ change: TransportChange, to position: inout TransportPosition) {
        switch change {
        case .play: position.isPlaying = true
        case .stop: position.isPlaying = false
        case .locate(let beat):
            position.beat = beat
            position.frame = Int64((beat * 60 * sampleRate / position.tempo).rounded())
        case .tempo(let tempo): position.tempo = tempo
        case .timeSignature(let signature): position.timeSignature = signature
        }
    }

    private func publish(_ position: TransportPosition, sampleTime: Int64) {
        let count = sequence.load(ordering: .relaxed)
        sequence.store(count + 1, ordering: .relaxed)
        atomicMemoryFence(ordering: .releasing)
        published[0].store(position.isPlaying ? 1 : 0, ordering: .relaxed)
        published[1].store(position.tempo.bitPattern, ordering: .relaxed)
        published[2].store(UInt64(position.timeSignature.beatsPerBar), ordering: .relaxed)
        published[3].store(UInt64(position.timeSignature.beatUnit), ordering: .relaxed)
        published[4].store(UInt64(bitPattern: position.frame), ordering: .relaxed)
        published[5].store(position.beat.bitPattern, ordering: .relaxed)
        published[6].store(UInt64(bitPattern: sampleTime), ordering: .relaxed)
        sequence.store(count + 2, ordering: .releasing)
    }
}
