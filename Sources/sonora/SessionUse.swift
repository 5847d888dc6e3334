import Foundation
import SonoraCore
import SonoraHAL
import SonoraToolbox

/// How `sonora play` and `sonora record` take part in the appliance's sessions: through the
/// appliance when one runs (unless --direct), with their session active for the command's
/// length, so its policy can refuse, interrupt (the queue pauses and resumes) or duck them.
struct SessionUse {
    /// What happened to the session while the command ran (printed with --json).
    final class Log: @unchecked Sendable {
        private let counts = ControlLock((interruptions: 0, ducks: 0))
        var interruptions: Int { counts.withLock { $0.interruptions } }
        var ducks: Int { counts.withLock { $0.ducks } }
        func interrupted() { counts.withLock { $0.interruptions += 1 } }
        func ducked() { counts.withLock { $0.ducks += 1 } }
    }

    let log = Log()
    private let token: AudioSessionListenerToken?
    private let active: Bool

    /// The device when none was given: the appliance's when one runs and not `direct`.
    static func device(given: String?, direct: Bool, otherwise: String) -> String {
        if let given { return given }
        return !direct && isApplianceRunning() ? "sonora" : otherwise
    }

    /// On an appliance device, activates the process's session through that appliance with
    /// `category` (and `role`); elsewhere leaves the session alone. `direct`: the session
    /// is the program's own, whatever runs.
    init(device: String, category: AudioSessionCategory, role: String?, direct: Bool) throws {
        let session = AudioSession.shared
        guard !direct, case .appliance(let socket)? = try? DeviceSpecifier(parsing: device) else {
            if direct && session.backend is ApplianceAudioSessionBackend { try session.setBackend(LocalAudioSessionBackend()) }
            token = nil
            active = false
            return
        }
        let path = socket ?? ApplianceSocket.clientPath()
        if (session.backend as? ApplianceAudioSessionBackend)?.connection.path != path {
            do { try session.setBackend(try ApplianceAudioSessionBackend(path: path)) } catch {
                throw CLIError("no appliance at \(path): \(error.message)")
            }
        }
        let log = log
        token = session.addListener { event in
            switch event {
            case .interruption(.began): log.interrupted()
            case .duck(let duck) where duck.isActive: log.ducked()
            default: break
            }
        }
        do {
            try session.setCategory(category)
            session.role = role
            try session.setActive(true)
        } catch {
            throw CLIError("the appliance refused the session (\(error.code)): \(error.message)")
        }
        active = true
    }

    /// Deactivates the session, telling the sessions it interrupted they may resume.
    func end() {
        if let token { AudioSession.shared.removeListener(token) }
        guard active else { return }
        try? AudioSession.shared.setActive(false, options: .notifyOthersOnDeactivation)
    }
}
