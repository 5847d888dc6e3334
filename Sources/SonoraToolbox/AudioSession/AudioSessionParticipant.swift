/// Something the session interrupts that is none of Sonora's own services: the OpenAL-style
/// context of the positional API (suspended on `began`; the program must make it current
/// again after `ended`), or a program's own engine. Register it with
/// `AudioSession.register(_:)`; the session holds it weakly. Called on the session's serial
/// queue, before the session's listeners.
public protocol AudioSessionParticipant: AnyObject, Sendable {
    func audioSessionInterruptionBegan()
    func audioSessionInterruptionEnded(shouldResume: Bool)
}
