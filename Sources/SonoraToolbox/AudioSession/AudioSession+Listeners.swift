import Foundation
import SonoraCore

/// A listener as the session keeps it.
enum AudioSessionListenerEntry {
    case events(@Sendable (AudioSessionEvent) -> Void)
    case property(AudioSessionProperty, @Sendable (AudioSessionProperty) -> Void)
}

/// Listeners: closures (interruption, route change, duck, properties) and an async sequence.
/// Every one is called on the session's serial queue, in the order things happened, in the
/// order the listeners were added.
extension AudioSession {
    /// Calls `handler` with every interruption, route change and duck notice.
    @discardableResult
    public func addListener(_ handler: @escaping @Sendable (AudioSessionEvent) -> Void) -> AudioSessionListenerToken {
        add(.events(handler))
    }

    /// Calls `handler` with every interruption (AudioSessionInitialize's interruption listener).
    @discardableResult
    public func addInterruptionListener(_ handler: @escaping @Sendable (AudioSessionInterruption) -> Void) -> AudioSessionListenerToken {
        add(.events { event in
            if case .interruption(let interruption) = event { handler(interruption) }
        })
    }

    /// Calls `handler` with every route change (kAudioSessionProperty_AudioRouteChange's listener).
    @discardableResult
    public func addRouteChangeListener(_ handler: @escaping @Sendable (AudioSessionRouteChange) -> Void) -> AudioSessionListenerToken {
        add(.events { event in
            if case .routeChange(let change) = event { handler(change) }
        })
    }

    /// Calls `handler` when `property` changes (AudioSessionAddPropertyListener). Refused with
    /// 'pty?' for a property without a listener (`isListenable`).
    @discardableResult
    public func addPropertyListener(
        _ property: AudioSessionProperty, _ handler: @escaping @Sendable (AudioSessionProperty) -> Void
    ) throws(AudioError) -> AudioSessionListenerToken {
        guard property.isListenable else {
            throw AudioError(.unsupportedProperty, "AudioSession.addPropertyListener: \(property.rawValue) has no listener (it is the program's own value, or read when needed)")
        }
        return add(.property(property, handler))
    }

    /// Stops a listener (nothing if it was removed already).
    public func removeListener(_ token: AudioSessionListenerToken) {
        lock.withLock { listeners[token.id] = nil }
    }

    /// The session's events as an async sequence (one listener for as long as it is iterated).
    public var events: AsyncStream<AudioSessionEvent> {
        AsyncStream { continuation in
            let token = addListener { continuation.yield($0) }
            continuation.onTermination = { [weak self] _ in self?.removeListener(token) }
        }
    }

    private func add(_ entry: AudioSessionListenerEntry) -> AudioSessionListenerToken {
        lock.withLock {
            nextListener += 1
            listeners[nextListener] = entry
            return AudioSessionListenerToken(id: nextListener)
        }
    }

    /// Event listeners, in the order added (delivery queue).
    func notify(_ event: AudioSessionEvent) {
        let handlers = lock.withLock {
            listeners.sorted { $0.key < $1.key }.compactMap { entry -> (@Sendable (AudioSessionEvent) -> Void)? in
                if case .events(let handler) = entry.value { handler } else { nil }
            }
        }
        for handler in handlers { handler(event) }
    }

    /// Property listeners of `changed`, in the order added (delivery queue).
    func notify(changed: [AudioSessionProperty]) {
        guard !changed.isEmpty else { return }
        let handlers = lock.withLock {
            listeners.sorted { $0.key < $1.key }.compactMap { entry -> (AudioSessionProperty, @Sendable (AudioSessionProperty) -> Void)? in
                if case .property(let property, let handler) = entry.value { (property, handler) } else { nil }
            }
        }
        for property in changed {
            for (watched, handler) in handlers where watched == property { handler(property) }
        }
    }
}
