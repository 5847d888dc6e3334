import Foundation
import SonoraCore
import SonoraHAL
@testable import SonoraToolbox

/// A session backend the test scripts: it grants or refuses activation as told, records what
/// it was asked, and sends the events the test gives it (as the appliance's adapter would).
final class ScriptedSessionBackend: AudioSessionBackend, @unchecked Sendable {
    let name = "scripted"
    private let lock = NSLock()
    private var sink: (@Sendable (AudioSessionBackendEvent) -> Void)?
    private var refusalValue: AudioError?
    private var requestsValue: [AudioSessionActivationRequest] = []
    private var deactivationsValue: [Bool] = []

    var refusal: AudioError? {
        get { lock.withLock { refusalValue } }
        set { lock.withLock { refusalValue = newValue } }
    }
    var requests: [AudioSessionActivationRequest] { lock.withLock { requestsValue } }
    var deactivations: [Bool] { lock.withLock { deactivationsValue } }

    func start(events: @escaping @Sendable (AudioSessionBackendEvent) -> Void) { lock.withLock { sink = events } }

    func activate(_ request: AudioSessionActivationRequest) throws(AudioError) {
        let refusal = lock.withLock { () -> AudioError? in
            requestsValue.append(request)
            return refusalValue
        }
        if let refusal { throw refusal }
    }

    func deactivate(notifyOthers: Bool) throws(AudioError) { lock.withLock { deactivationsValue.append(notifyOthers) } }

    /// Sends `event` from another thread, as a connection's reader thread would.
    func send(_ event: AudioSessionBackendEvent) {
        let sink = lock.withLock { self.sink }
        let done = DispatchSemaphore(value: 0)
        Thread {
            sink?(event)
            done.signal()
        }.start()
        done.wait()
    }
}

/// What a session's listeners heard, with the threads they ran on.
final class SessionEvents: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [String] = []
    private var threads: [pthread_t] = []
    private var policies: [Int32] = []

    func add(_ text: String) {
        var policy: Int32 = 0
        var parameters = sched_param()
        pthread_getschedparam(pthread_self(), &policy, &parameters)
        lock.withLock {
            seen.append(text)
            threads.append(pthread_self())
            policies.append(policy)
        }
    }

    /// Whether every listener ran on a normal-priority thread (never a SCHED_FIFO I/O thread).
    var allOffRealtime: Bool { lock.withLock { policies.allSatisfy { $0 != SCHED_FIFO } } }

    var all: [String] { lock.withLock { seen } }
    var listenerThreads: [pthread_t] { lock.withLock { threads } }

    static func describe(_ event: AudioSessionEvent) -> String {
        switch event {
        case .interruption(.began): "began"
        case .interruption(.ended(let resume)): "ended \(resume)"
        case .routeChange(let change): "route \(change.reason.rawValue) \(change.previousRoute.outputs.map(\.name)) → \(change.currentRoute.outputs.map(\.name))"
        case .duck(let duck): "duck \(duck.gainDB) \(duck.isActive)"
        }
    }
}

/// Builds the participants inside `body` for `session` (not the process's shared one).
func inSession<T>(_ session: AudioSession, _ body: () throws -> T) rethrows -> T {
    try AudioSession.$scoped.withValue(session) { try body() }
}
