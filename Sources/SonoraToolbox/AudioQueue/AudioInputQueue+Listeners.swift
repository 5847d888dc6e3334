import SonoraCore

/// Property listeners of an input queue (AudioQueueAddPropertyListener), by the output
/// queue's property names: IsRunning (start, stop, a deferred stop once its buffers are
/// back, dispose) and EnableLevelMetering. They run on the queue's thread.
extension AudioInputQueue {
    /// Calls `listener` on the queue's thread whenever `property` changes; returns a token
    /// for `removePropertyListener`.
    @discardableResult
    public func addPropertyListener(_ property: AudioQueue.Property, _ listener: @escaping (AudioInputQueue, AudioQueue.Property) -> Void) throws(AudioError) -> Int {
        try withLock { () throws(AudioError) -> Int in
            try requireOpen("addPropertyListener")
            return listeners.add(property, listener)
        }
    }

    /// Removes a listener (AudioQueueRemovePropertyListener).
    public func removePropertyListener(_ property: AudioQueue.Property, token: Int) throws(AudioError) {
        try withLock { () throws(AudioError) in
            guard listeners.remove(property, token: token) else {
                throw error(.queueInvalidParameter, "removePropertyListener", "no listener \(token) on \(property)")
            }
        }
    }

    /// Announces a change from a program thread: the listeners run on the queue's thread.
    func notify(_ property: AudioQueue.Property) {
        var tag = property.rawValue
        notifyLock.lock()
        defer { notifyLock.unlock() }
        _ = worker.submit(tag: property.rawValue, &tag, count: 4)
    }

    /// Runs the listeners of `property` (on the calling thread).
    func fire(_ property: AudioQueue.Property?) {
        guard let property else { return }
        let bodies = (try? withLock { listeners.bodies(for: property) }) ?? []
        for body in bodies { body(self, property) }
    }
}
