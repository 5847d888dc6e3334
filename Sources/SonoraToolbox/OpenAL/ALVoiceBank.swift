import SonoraCore
import SonoraUnits
import Synchronization

/// A context's voices (one per mixer input) and the queue of commands the API sends them.
///
/// Commands are pushed one by one but released in batches (`commit()`): the render side
/// takes only committed commands, so a group operation (play of several sources) lands in
/// one render cycle. Queue snapshots the commands replace are retired here until the
/// render side has applied the command after which nobody reads them.
final class ALVoiceBank: @unchecked Sendable {
    let count: Int
    let voices: UnsafeMutablePointer<ALVoice>
    /// The context's effect slots (render side), one per mixer auxiliary bus.
    let slots: UnsafeMutablePointer<ALSlotRenderState>
    static let slotCount = Mixer3DUnit.maximumAuxiliaryBuses
    private let cursors: UnsafeMutablePointer<Atomic<UInt64>>
    private let cursorGenerations: UnsafeMutablePointer<Atomic<Int>>
    private let endedGenerations: UnsafeMutablePointer<Atomic<Int>>
    private let segments: UnsafeMutablePointer<ALVoiceSegment>
    private let commands: MessageQueue<ALVoiceCommand>
    /// The same queue, reached without reference counting on the render side.
    private let commandsReference: Unmanaged<MessageQueue<ALVoiceCommand>>
    /// Commands released to the render side, and taken by it.
    private let committed = Atomic<Int>(0)
    private let applied = Atomic<Int>(0)
    // Control side.
    private var pushed = 0
    private var retired: [(afterCommand: Int, object: AnyObject)] = []
    // Render side.
    @exclusivity(unchecked) private var popped = 0

    init(count: Int) throws(AudioError) {
        self.count = count
        commands = try MessageQueue(capacity: 8192)
        commandsReference = Unmanaged.passUnretained(commands)
        cursors = .allocate(capacity: max(1, count))
        cursorGenerations = .allocate(capacity: max(1, count))
        endedGenerations = .allocate(capacity: max(1, count))
        voices = .allocate(capacity: max(1, count))
        slots = .allocate(capacity: Self.slotCount)
        slots.initialize(repeating: ALSlotRenderState(), count: Self.slotCount)
        segments = .allocate(capacity: max(1, count) * ALVoiceSegment.capacity)
        for index in 0..<count {
            (cursors + index).initialize(to: Atomic(0))
            (cursorGenerations + index).initialize(to: Atomic(-1))
            (endedGenerations + index).initialize(to: Atomic(-1))
            (voices + index).initialize(to: ALVoice(
                cursor: cursors + index, cursorGeneration: cursorGenerations + index, endedGeneration: endedGenerations + index,
                segments: segments + index * ALVoiceSegment.capacity))
        }
    }

    deinit {
        voices.deinitialize(count: count)
        voices.deallocate()
        slots.deallocate()
        segments.deallocate()
        cursors.deinitialize(count: count)
        cursors.deallocate()
        cursorGenerations.deinitialize(count: count)
        cursorGenerations.deallocate()
        endedGenerations.deinitialize(count: count)
        endedGenerations.deallocate()
    }

    // MARK: Control side (under the device's lock)

    /// Queues `command`; false if the queue is full (the render side has not run for a long
    /// while): the caller reports out of memory.
    func send(_ command: ALVoiceCommand) -> Bool {
        guard commands.push(command) else { return false }
        pushed += 1
        return true
    }

    /// Keeps `object` until the render side has applied every command sent so far.
    func retire(_ object: AnyObject) {
        retired.append((pushed, object))
    }

    /// Releases the commands sent so far to the render side, as one batch.
    func commit() {
        committed.store(pushed, ordering: .releasing)
        purge()
    }

    /// Frees retired objects the render side no longer reads.
    func purge() {
        guard !retired.isEmpty else { return }
        let done = applied.load(ordering: .acquiring)
        retired.removeAll { $0.afterCommand <= done }
    }

    /// Whether the render side has taken every committed command.
    var isIdle: Bool { applied.load(ordering: .acquiring) == committed.load(ordering: .acquiring) }

    /// The published position of voice `index` if it belongs to start `generation`.
    func cursor(_ index: Int, generation: Int) -> (sequence: UInt32, frame: Int)? {
        guard cursorGenerations[index].load(ordering: .acquiring) == generation else { return nil }
        let packed = cursors[index].load(ordering: .acquiring)
        guard cursorGenerations[index].load(ordering: .acquiring) == generation else { return nil }
        return (UInt32(truncatingIfNeeded: packed >> 32), Int(UInt32(truncatingIfNeeded: packed)))
    }

    /// Whether voice `index` played start `generation` to its end.
    func hasEnded(_ index: Int, generation: Int) -> Bool {
        endedGenerations[index].load(ordering: .acquiring) == generation
    }

    // MARK: Render side

    /// Applies the committed commands (realtime: no allocation, locks or reference counting).
    func applyCommands() {
        let target = committed.load(ordering: .acquiring)
        while popped < target, let command = commandsReference._withUnsafeGuaranteedRef({ $0.pop() }) {
            popped &+= 1
            let voice: Int
            switch command {
            case .effectSlot(let slot, let effect, let gain):
                slots[slot] = ALSlotRenderState(effect: effect, gain: gain)
                continue
            case .queue(let index, _, _, _), .start(let index, _, _, _, _), .run(let index, _), .halt(let index),
                 .looping(let index, _), .rateScale(let index, _):
                voice = index
            }
            voices[voice].apply(command)
        }
        applied.store(popped, ordering: .releasing)
    }
}
