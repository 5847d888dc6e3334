import ArgumentParser
import Dispatch
import Foundation
import SonoraCore
import SonoraToolbox

/// `sonora sound`: System Sound Services from a shell script (a door bell, a confirmation beep).
struct SoundCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sound",
        abstract: "Play a short sound now, as a system sound (AudioServicesPlaySystemSound).",
        discussion: """
            The file is decoded into memory first, so it starts in the device's next period.
            System sounds follow the reference documents' rules: a CAF, AIFF or WAV file in
            linear PCM or IMA4, shorter than 30 seconds — anything else is refused with the
            reason (exit status 1). The command returns once the sound has played.

            --alert plays it as an alert sound (AudioServicesPlayAlertSound): the alert
            action runs too — --alert-command CMD (run through the shell) or --alert-gpio
            LINE (raised for --alert-seconds, via libgpiod's gpiofind/gpioset). --vibrate
            runs the alert action alone (kSystemSoundID_Vibrate), without a file.

            --json prints: file, device, frames, seconds, alert.

            Examples:
              sonora sound --device null chime.wav
              sonora sound --device hw:0 --alert --alert-command 'logger door bell' bell.caf
              sonora sound --vibrate --alert-gpio door-led
            """
    )

    @Argument(help: "The sound file (CAF, AIFF or WAV; PCM or IMA4; under 30 s).")
    var file: String?

    @Option(help: "The device: null, an ALSA PCM (default, hw:0, sonoraloop …).")
    var device = "default"

    @Flag(help: "Play as an alert sound: run the alert action too.")
    var alert = false

    @Flag(help: "Run the alert action alone (kSystemSoundID_Vibrate); no file.")
    var vibrate = false

    @Option(name: .customLong("alert-command"), help: "The alert action: a shell command.")
    var alertCommand: String?

    @Option(name: .customLong("alert-gpio"), help: "The alert action: raise this GPIO line (by name).")
    var alertGPIO: String?

    // Unconditional: a negative value must reach validate(), not read as an option.
    @Option(name: .customLong("alert-seconds"), parsing: .unconditional, help: "How long the GPIO line stays raised.")
    var alertSeconds: Double = 0.2

    @Flag(help: "Print JSON.")
    var json = false

    func validate() throws {
        if vibrate {
            guard file == nil else { throw ValidationError("--vibrate plays no file; drop \(file!)") }
            guard alertCommand != nil || alertGPIO != nil else { throw ValidationError("--vibrate needs an alert action: --alert-command or --alert-gpio") }
        } else if file == nil {
            throw ValidationError("give a sound file (or --vibrate)")
        }
        guard alertCommand == nil || alertGPIO == nil else { throw ValidationError("give --alert-command or --alert-gpio, not both") }
        guard alertSeconds.isFinite && alertSeconds > 0 && alertSeconds <= 60 else { throw ValidationError("--alert-seconds \(alertSeconds) is outside 0 … 60") }
    }

    struct Result: Encodable {
        var file: String?
        var device: String
        var frames: Int
        var seconds: Double
        var alert: Bool
    }

    func run() throws {
        let finished = DispatchSemaphore(value: 0)
        if let alertCommand {
            SystemSoundServices.alertAction = .command(["/bin/sh", "-c", alertCommand])
        } else if let alertGPIO {
            SystemSoundServices.alertAction = .gpioLine(alertGPIO, seconds: alertSeconds)
        }
        var result = Result(file: file, device: device, frames: 0, seconds: 0, alert: alert || vibrate)
        if vibrate {
            try SystemSoundServices.playSystemSound(SystemSoundServices.vibrate)
        } else if let file {
            SystemSoundServices.setDevice(device)
            let id: SystemSoundID
            let sound: SystemSound
            do throws(AudioError) {
                sound = try SystemSound(contentsOf: URL(fileURLWithPath: file))
                id = try SystemSoundServices.createSystemSoundID(URL(fileURLWithPath: file))
                try SystemSoundServices.addSystemSoundCompletion(id) { _ in finished.signal() }
                if alert { try SystemSoundServices.playAlertSound(id) } else { try SystemSoundServices.playSystemSound(id) }
            } catch {
                throw CLIError("\(error)")
            }
            // Bounded: the sound's length and a second for the device to open and drain.
            guard finished.wait(timeout: .now() + sound.duration + 5) == .success else {
                throw CLIError("\(file): the sound did not finish on \(device)")
            }
            result.frames = sound.frameCount
            result.seconds = sound.duration
        }
        if alert || vibrate { try waitForAlertAction() }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(result), as: UTF8.self))
        }
    }

    /// The alert action runs on its own; a command-line process waits for it, and fails with its reason.
    private func waitForAlertAction() throws {
        guard alertCommand != nil || alertGPIO != nil else { return }
        // The action records its outcome when done: poll briefly for a failure.
        let deadline = Date().addingTimeInterval(alertSeconds + 5)
        while Date() < deadline {
            if let error = SystemSoundServices.lastAlertActionError { throw CLIError("alert action: \(error.message)") }
            if SystemSoundServices.alertActionsRunning == 0 { return }
            usleep(10_000)
        }
        throw CLIError("alert action did not finish")
    }
}
