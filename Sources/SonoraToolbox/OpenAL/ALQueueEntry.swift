/// One buffer of a source's queue as the render side reads it (no references: raw pointers
/// into an `ALBufferStorage` a queue snapshot keeps alive).
struct ALQueueEntry: BitwiseCopyable {
    var samples: UnsafePointer<Float>
    var frames: Int
    var channels: Int
    /// Buffer frames per device frame at pitch 1 (the buffer's frequency ÷ the device's).
    var step: Double
}

/// A source's queue (or its one static buffer) for the render side: the entries in raw
/// memory and the storages they point into. Replaced whole when the queue changes; the old
/// one is retired until the render side has taken the command that replaced it.
final class ALQueueSnapshot: @unchecked Sendable {
    let entries: UnsafeMutablePointer<ALQueueEntry>
    let count: Int
    /// The sequence number of the first entry (each queued buffer gets the next number, so
    /// positions survive entries removed from the head).
    let firstSequence: Int
    private let storages: [ALBufferStorage]

    init(storages: [ALBufferStorage], firstSequence: Int, deviceFrequency: Int) {
        self.storages = storages
        self.firstSequence = firstSequence
        count = storages.count
        entries = .allocate(capacity: max(1, count))
        for (index, storage) in storages.enumerated() {
            (entries + index).initialize(to: ALQueueEntry(
                samples: UnsafePointer(storage.samples), frames: storage.frames, channels: storage.channels,
                step: Double(storage.frequency) / Double(deviceFrequency)))
        }
    }

    deinit { entries.deallocate() }
}
