import Dispatch
import Foundation
import SonoraCore

/// A system sound's number (SystemSoundID).
public typealias SystemSoundID = UInt32

/// What an alert does besides its sound: the appliance's equivalent of the phone's vibration.
public enum SystemSoundAlertAction: Sendable {
    /// Runs the command (arguments; the first is the program), not waited for.
    case command([String])
    /// Raises the GPIO line of that name for `seconds` (libgpiod's `gpiofind` and `gpioset`).
    case gpioLine(String, seconds: Double)
    /// Calls the closure (the appliance sends its control-socket event from here).
    case handler(@Sendable (SystemSoundID) -> Void)
}

/// System Sound Services: sound IDs for short files, played at once
/// (AudioServicesCreateSystemSoundID, AudioServicesPlaySystemSound, AudioServicesPlayAlertSound,
/// AudioServicesAddSystemSoundCompletion, AudioServicesDisposeSystemSoundID).
public enum SystemSoundServices {
    /// kSystemSoundID_Vibrate: played (as a sound or an alert), the alert action alone.
    public static let vibrate: SystemSoundID = 0x0000_0FFF

    private static let registry = Registry()

    /// Where sounds play: the device named `device` (default until set), with `maximumVoices` at once.
    public static func setDevice(_ device: String, maximumVoices: Int = 8) {
        registry.setPlayer(SystemSoundPlayer(device: device, maximumVoices: maximumVoices))
    }

    /// Where sounds play: a mixer output the program made.
    public static func setOutput(_ output: AudioQueueOutput, maximumVoices: Int = 8) {
        registry.setPlayer(SystemSoundPlayer(output: output, maximumVoices: maximumVoices))
    }

    /// What an alert does besides its sound (nil: nothing).
    public static var alertAction: SystemSoundAlertAction? {
        get { registry.withLock { registry.alertAction } }
        set { registry.withLock { registry.alertAction = newValue } }
    }

    /// Alert actions (commands, GPIO pulses) started and not yet finished.
    public static var alertActionsRunning: Int { registry.withLock { registry.actionsRunning } }

    /// Why the last alert action failed, if it did.
    public static var lastAlertActionError: AudioError? { registry.withLock { registry.alertError } }

    /// Decodes the file into memory and gives it a number (AudioServicesCreateSystemSoundID).
    public static func createSystemSoundID(_ url: URL) throws(AudioError) -> SystemSoundID {
        let sound = try SystemSound(contentsOf: url)
        return registry.withLock {
            let id = registry.nextID
            registry.nextID += 1
            registry.sounds[id] = sound
            return id
        }
    }

    /// Forgets the sound (AudioServicesDisposeSystemSoundID); a play under way finishes.
    public static func disposeSystemSoundID(_ id: SystemSoundID) throws(AudioError) {
        try registry.withLock { () throws(AudioError) in
            guard registry.sounds.removeValue(forKey: id) != nil else { throw unknown(id, "disposeSystemSoundID") }
            registry.completions[id] = nil
        }
    }

    /// Plays the sound now (AudioServicesPlaySystemSound); `vibrate` runs the alert action.
    public static func playSystemSound(_ id: SystemSoundID) throws(AudioError) {
        try play(id, alert: false, call: "playSystemSound")
    }

    /// Plays the sound and runs the alert action (AudioServicesPlayAlertSound).
    public static func playAlertSound(_ id: SystemSoundID) throws(AudioError) {
        try play(id, alert: true, call: "playAlertSound")
    }

    /// Calls `completion` each time the sound finishes playing (AudioServicesAddSystemSoundCompletion),
    /// on `queue`, or on the voice's thread when nil; one completion per sound, as in Core Audio.
    public static func addSystemSoundCompletion(_ id: SystemSoundID, queue: DispatchQueue? = nil, _ completion: @escaping @Sendable (SystemSoundID) -> Void) throws(AudioError) {
        try registry.withLock { () throws(AudioError) in
            guard registry.sounds[id] != nil else { throw unknown(id, "addSystemSoundCompletion") }
            registry.completions[id] = (queue, completion)
        }
    }

    /// AudioServicesRemoveSystemSoundCompletion.
    public static func removeSystemSoundCompletion(_ id: SystemSoundID) {
        registry.withLock { registry.completions[id] = nil }
    }

    private static func unknown(_ id: SystemSoundID, _ call: String) -> AudioError {
        AudioError(.systemSoundUnspecified, "SystemSoundServices.\(call): no system sound \(id) (created and not disposed of)")
    }

    private static func play(_ id: SystemSoundID, alert: Bool, call: String) throws(AudioError) {
        if id == vibrate {
            runAlertAction(id)
            return
        }
        let (sound, player, completion) = try registry.withLock { () throws(AudioError) in
            guard let sound = registry.sounds[id] else { throw unknown(id, call) }
            return (sound, registry.player(), registry.completions[id])
        }
        if alert { runAlertAction(id) }
        try player.play(sound) {
            guard let (queue, body) = completion else { return }
            if let queue { queue.async { body(id) } } else { body(id) }
        }
    }

    private static func runAlertAction(_ id: SystemSoundID) {
        guard let action = alertAction else { return }
        switch action {
        case .handler(let body):
            body(id)
        case .command(let arguments):
            registry.withLock { registry.actionsRunning += 1 }
            DispatchQueue.global().async { record(AlertCommand.run(arguments)) }
        case .gpioLine(let name, let seconds):
            registry.withLock { registry.actionsRunning += 1 }
            DispatchQueue.global().async { record(AlertCommand.pulse(line: name, seconds: seconds)) }
        }
    }

    private static func record(_ error: AudioError?) {
        registry.withLock {
            registry.alertError = error
            registry.actionsRunning -= 1
        }
    }

    /// The process-wide state: sounds, completions, the player, the alert action.
    private final class Registry: @unchecked Sendable {
        private let lock = NSLock()
        var sounds: [SystemSoundID: SystemSound] = [:]
        var completions: [SystemSoundID: (DispatchQueue?, @Sendable (SystemSoundID) -> Void)] = [:]
        // Core Audio's own sound IDs begin above kSystemSoundID_Vibrate's 4095.
        var nextID: SystemSoundID = 4097
        var alertAction: SystemSoundAlertAction?
        var alertError: AudioError?
        var actionsRunning = 0
        private var current: SystemSoundPlayer?

        func withLock<Result>(_ body: () throws(AudioError) -> Result) throws(AudioError) -> Result {
            lock.lock()
            defer { lock.unlock() }
            return try body()
        }

        func withLock<Result>(_ body: () -> Result) -> Result {
            lock.lock()
            defer { lock.unlock() }
            return body()
        }

        /// The player (call with the lock held); the default device until one is set.
        func player() -> SystemSoundPlayer {
            if let current { return current }
            let made = SystemSoundPlayer(device: "default")
            current = made
            return made
        }

        func setPlayer(_ player: SystemSoundPlayer) { withLock { current = player } }
    }
}

/// Runs an alert action's program.
enum AlertCommand {
    /// Runs `arguments` and waits for it; the reason when it could not run or failed.
    static func run(_ arguments: [String]) -> AudioError? {
        guard let program = arguments.first else { return AudioError(.systemSoundUnspecified, "alert command: empty") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program.contains("/") ? program : "/usr/bin/env")
        process.arguments = program.contains("/") ? Array(arguments.dropFirst()) : arguments
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        do {
            try process.run()
        } catch {
            return AudioError(.systemSoundUnspecified, "alert command \(arguments.joined(separator: " ")): \(error.localizedDescription)")
        }
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            return AudioError(.systemSoundUnspecified, "alert command \(arguments.joined(separator: " ")) exited \(process.terminationStatus): \(message.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return nil
    }

    /// Finds the line (`gpiofind NAME` → "gpiochipN OFFSET") and holds it high for `seconds`.
    static func pulse(line: String, seconds: Double) -> AudioError? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["gpiofind", line]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch {
            return AudioError(.systemSoundUnspecified, "alert GPIO line \(line): gpiofind: \(error.localizedDescription)")
        }
        let found = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: " ")
        process.waitUntilExit()
        guard process.terminationStatus == 0, found.count == 2 else {
            return AudioError(.systemSoundUnspecified, "alert GPIO line \(line): no such line (gpiofind exited \(process.terminationStatus))")
        }
        let chip = String(found[0]), offset = found[1].trimmingCharacters(in: .whitespacesAndNewlines)
        let microseconds = Int((max(seconds, 0) * 1e6).rounded())
        return run(["gpioset", "--mode=time", "--usec=\(microseconds)", chip, "\(offset)=1"])
    }
}
