/// A lock-free single-producer / single-consumer queue of fixed-size messages:
/// commands from the control side to the realtime thread, events back.
///
/// `Message` is `BitwiseCopyable` so that pushing and popping copy bytes and never
/// touch a reference count; put object handles in as indices or unmanaged pointers.
public final class MessageQueue<Message: BitwiseCopyable>: @unchecked Sendable {
    /// Messages the queue holds (a power of two).
    public let capacity: Int
    @usableFromInline let mask: Int
    @usableFromInline let cursors: RingCursors
    @usableFromInline let slots: UnsafeMutablePointer<Message>

    /// A queue of at least `capacity` messages (rounded up to a power of two, at most 2²⁴).
    public init(capacity: Int) throws(AudioError) {
        self.capacity = try ringCapacity(capacity, limit: 1 << 24, what: "message queue")
        mask = self.capacity - 1
        slots = .allocate(capacity: self.capacity)
        cursors = RingCursors()
    }

    deinit {
        slots.deallocate()
        cursors.deallocate()
    }

    /// Enqueues `message`; false if the queue is full (the message is dropped).
    @inlinable
    @discardableResult
    public func push(_ message: Message) -> Bool {
        let (position, free) = cursors.producerView(wanted: 1, capacity: capacity)
        guard free > 0 else { return false }
        (slots + (position & mask)).initialize(to: message)
        cursors.publishWrite(position + 1)
        return true
    }

    /// Dequeues the oldest message, or nil if the queue is empty.
    @inlinable
    public func pop() -> Message? {
        let (position, filled) = cursors.consumerView(wanted: 1)
        guard filled > 0 else { return nil }
        let message = slots[position & mask]
        cursors.publishRead(position + 1)
        return message
    }

    /// Messages waiting, as seen from any thread (a snapshot).
    public var approximateCount: Int { cursors.approximateCount() }
}
