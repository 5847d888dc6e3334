import SonoraUnits

/// Participants: what the session pauses, stops or silences on an interruption.
extension AudioSession {
    /// A graph the program runs: stopped when an interruption begins (started again by the program).
    public func register(_ graph: AudioGraph) { register(graph, kind: .graph) }

    /// An I/O unit the program runs itself: stopped when an interruption begins.
    public func register(_ unit: IOUnit) { register(unit, kind: .unit) }

    /// Another participant (the OpenAL-style context): told when an interruption begins and ends.
    public func register(_ participant: any AudioSessionParticipant) { register(participant, kind: .custom) }

    /// No longer governed by this session (a queue or player moved to another, a graph retired).
    public func unregister(_ participant: AnyObject) {
        lock.withLock { participants.removeAll { $0.object == nil || $0.object === participant } }
    }

    /// Participants registered now (those still alive).
    public var participantCount: Int {
        lock.withLock {
            participants.removeAll { $0.object == nil }
            return participants.count
        }
    }

    func register(_ object: AnyObject, kind: AudioSessionParticipantEntry.Kind) {
        lock.withLock {
            participants.removeAll { $0.object == nil }
            guard !participants.contains(where: { $0.object === object }) else { return }
            participants.append(AudioSessionParticipantEntry(object, kind: kind))
        }
    }

    /// Live participants in the order they registered.
    func liveParticipants() -> [AudioSessionParticipantEntry] {
        lock.withLock {
            participants.removeAll { $0.object == nil }
            return participants
        }
    }
}
