import SonoraUnits

/// One participant as the session keeps it (weakly), with Table 7-2's behaviour for its kind.
/// Only the session's delivery queue calls `interruptionBegan` / `interruptionEnded`.
final class AudioSessionParticipantEntry: @unchecked Sendable {
    enum Kind {
        /// Pauses; resumes on "should resume" if the interruption paused it.
        case queue, inputQueue
        /// Its own `beginInterruption` / `endInterruption(shouldResume:)` (its delegate is told).
        case player, recorder
        /// Stops; the program starts it again (the I/O unit's rule in Table 7-2).
        case graph, unit
        /// Silent while interrupted: what plays stops (completions run), new plays are not heard.
        case systemSounds
        /// A registered `AudioSessionParticipant` (the OpenAL-style context).
        case custom
    }

    weak var object: AnyObject?
    let kind: Kind
    /// Whether this interruption paused it (so its end may resume it).
    private var pausedByInterruption = false

    init(_ object: AnyObject, kind: Kind) {
        self.object = object
        self.kind = kind
    }

    func interruptionBegan() {
        guard let object else { return }
        switch kind {
        case .queue:
            guard let queue = object as? AudioQueue, queue.isPlayingForSession else { return }
            pausedByInterruption = (try? queue.pause()) != nil
        case .inputQueue:
            guard let queue = object as? AudioInputQueue, queue.isRecordingForSession else { return }
            pausedByInterruption = (try? queue.pause()) != nil
        case .player: (object as? AudioPlayer)?.beginInterruption()
        case .recorder: (object as? AudioRecorder)?.beginInterruption()
        case .graph:
            guard let graph = object as? AudioGraph, graph.isRunning else { return }
            graph.stop()
        case .unit:
            guard let unit = object as? IOUnit, unit.isRunning else { return }
            unit.stop()
        case .systemSounds: (object as? SystemSoundPlayer)?.silenceForInterruption()
        case .custom: (object as? any AudioSessionParticipant)?.audioSessionInterruptionBegan()
        }
    }

    func interruptionEnded(shouldResume: Bool) {
        guard let object else { return }
        switch kind {
        case .queue, .inputQueue:
            defer { pausedByInterruption = false }
            guard pausedByInterruption, shouldResume else { return }
            if let queue = object as? AudioQueue { try? queue.start() }
            if let queue = object as? AudioInputQueue { try? queue.start() }
        case .player: (object as? AudioPlayer)?.endInterruption(shouldResume: shouldResume)
        case .recorder: (object as? AudioRecorder)?.endInterruption(shouldResume: shouldResume)
        case .graph, .unit, .systemSounds: break
        case .custom: (object as? any AudioSessionParticipant)?.audioSessionInterruptionEnded(shouldResume: shouldResume)
        }
    }
}
