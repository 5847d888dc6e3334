import Foundation
import SonoraCore

/// Buffers: allocate, free, enqueue (AudioQueueAllocateBuffer…, AudioQueueEnqueueBuffer…).
extension AudioQueue {
    /// A new buffer of `byteCapacity` bytes (AudioQueueAllocateBufferWithPacketDescriptions);
    /// `packetDescriptionCapacity` > 0 for formats with variable-size packets.
    public func allocateBuffer(byteCapacity: Int, packetDescriptionCapacity: Int = 0) throws(AudioError) -> AudioQueueBuffer {
        try withLock { () throws(AudioError) -> AudioQueueBuffer in
            try requireOpen("allocateBuffer")
            guard byteCapacity > 0, byteCapacity <= 1 << 26, packetDescriptionCapacity >= 0, packetDescriptionCapacity <= 1 << 20 else {
                throw error(.queueInvalidParameter, "allocateBuffer", "capacity \(byteCapacity) bytes / \(packetDescriptionCapacity) descriptions is outside 1…64 MiB / 0…1M")
            }
            let buffer = AudioQueueBuffer(owner: ObjectIdentifier(self), byteCapacity: byteCapacity, packetDescriptionCapacity: packetDescriptionCapacity)
            buffers[ObjectIdentifier(buffer)] = buffer
            return buffer
        }
    }

    /// Frees a buffer the queue does not hold (AudioQueueFreeBuffer).
    public func freeBuffer(_ buffer: AudioQueueBuffer) throws(AudioError) {
        try withLock { () throws(AudioError) in
            try requireOpen("freeBuffer")
            try requireMine(buffer, "freeBuffer")
            guard buffer.state != .enqueued else {
                throw error(.queueBufferInQueue, "freeBuffer", "the buffer is enqueued; stop or reset the queue first")
            }
            buffer.state = .freed
            buffers[ObjectIdentifier(buffer)] = nil
        }
    }

    func requireMine(_ buffer: AudioQueueBuffer, _ call: String) throws(AudioError) {
        guard buffer.owner == ObjectIdentifier(self), buffer.state != .freed, buffers[ObjectIdentifier(buffer)] != nil else {
            throw error(.queueInvalidBuffer, call, buffer.state == .freed ? "the buffer was freed" : "the buffer belongs to another queue")
        }
    }

    /// Enqueues a filled buffer (AudioQueueEnqueueBuffer / …WithParameters): `packetDescriptions`
    /// for variable-size packets; frames to trim from the decoded start and end; a start time in
    /// the queue's sample time (silence until then); parameter events that apply from its first frame.
    public func enqueue(
        _ buffer: AudioQueueBuffer, packetDescriptions: [AudioStreamPacketDescription] = [],
        trimFramesAtStart: Int = 0, trimFramesAtEnd: Int = 0, startTime: Int? = nil,
        parameterEvents: [AudioQueueParameterEvent] = []
    ) throws(AudioError) {
        let call = "enqueue"
        let fromCallback = try withLock { () throws(AudioError) -> Bool in
            try requireOpen(call)
            try requireMine(buffer, call)
            if resetting { throw error(.queueEnqueueDuringReset, call, "buffers cannot be enqueued while the queue stops or resets") }
            guard buffer.state != .enqueued else { throw error(.queueBufferEnqueuedTwice, call, "the buffer is already in the queue") }
            guard buffer.byteSize > 0 else { throw error(.queueBufferEmpty, call, "the buffer holds no bytes (set byteSize)") }
            guard buffer.byteSize <= buffer.byteCapacity else {
                throw error(.queueInvalidBuffer, call, "byteSize \(buffer.byteSize) exceeds the capacity \(buffer.byteCapacity)")
            }
            guard trimFramesAtStart >= 0, trimFramesAtEnd >= 0 else {
                throw error(.queueInvalidParameter, call, "trim frames \(trimFramesAtStart)/\(trimFramesAtEnd) must not be negative")
            }
            if let startTime, startTime < 0 { throw error(.queueInvalidParameter, call, "start time \(startTime) is negative") }
            try checkPackets(buffer, packetDescriptions, call)
            if format.isLinearPCM, trimFramesAtStart + trimFramesAtEnd > buffer.byteSize / Int(format.bytesPerFrame) {
                throw error(.queueInvalidParameter, call, "trimming \(trimFramesAtStart) + \(trimFramesAtEnd) frames from a \(buffer.byteSize / Int(format.bytesPerFrame))-frame buffer")
            }
            for event in parameterEvents { try check(event.parameter, event.value, call) }
            buffer.state = .enqueued
            // Linear PCM is read in place on the queue's thread (the buffer is the queue's until
            // it comes back): a copy here was one more pass over every byte played.
            queued.append(QueuedBuffer(
                buffer: buffer, bytes: readsInPlace ? [] : buffer.bytes, byteCount: buffer.byteSize, descriptions: packetDescriptions,
                trimAtStart: trimFramesAtStart, trimAtEnd: trimFramesAtEnd, startTime: startTime, events: parameterEvents))
            return callbackThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false
        }
        // From the callback, the pass that called it takes the buffer when the callback returns:
        // waking the queue's own thread then would cost a context switch per buffer when the
        // pass runs on the output's feeder thread (QueueFeeder).
        if !fromCallback { worker.wake() }
    }

    private func checkPackets(_ buffer: AudioQueueBuffer, _ descriptions: [AudioStreamPacketDescription], _ call: String) throws(AudioError) {
        if format.bytesPerPacket > 0 {
            guard buffer.byteSize % Int(format.bytesPerPacket) == 0 else {
                throw error(.queueInvalidBuffer, call, "\(buffer.byteSize) bytes is not a whole number of \(format.bytesPerPacket)-byte packets")
            }
            return
        }
        guard !descriptions.isEmpty else {
            throw error(.queueInvalidBuffer, call, "\(format.formatID) has variable-size packets: give their descriptions")
        }
        guard descriptions.count <= buffer.packetDescriptionCapacity else {
            throw error(.queueInvalidBuffer, call, "\(descriptions.count) packet descriptions exceed the buffer's capacity of \(buffer.packetDescriptionCapacity)")
        }
        for (index, description) in descriptions.enumerated()
        where description.startOffset < 0 || Int(description.startOffset) + Int(description.dataByteSize) > buffer.byteSize {
            throw error(.queueInvalidBuffer, call, "packet \(index) (\(description.startOffset)+\(description.dataByteSize)) lies outside the buffer's \(buffer.byteSize) bytes")
        }
    }
}
