import ArgumentParser
import Foundation
import SonoraCore
import SonoraHAL

struct LatencyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latency",
        abstract: "Measure the round-trip latency of a capture/playback pair (like jack_iodelay).",
        discussion: """
            Plays a maximum-length sequence on every playback channel and finds it in the
            first capture channel by cross-correlation: the round trip in frames (to a
            fraction of a sample) and milliseconds, beside the theoretical periods × period
            and what ALSA reports (snd_pcm_delay). Says when the signal comes back inverted
            and when there is no signal at all (exit status 1). For a real card, connect
            an output to an input with a cable.

            `--device sonoraloop` (or `sonoraloop:NAME`) uses Sonora's own timer-paced
            ALSA loopback plugin, which needs no set-up and returns exactly periods ×
            period. `--device inprocess:FRAMES` uses the in-process loopback device.
            (The old `--device loopback` is refused: it named the plugin here and the
            in-process device elsewhere.)
            `--device jackloop` goes through a running JACK server (libasound2-plugins'
            jack PCM), its capture client's inputs connected to its playback client's
            outputs; with jackd's dummy backend this needs no sound card either.
            `--device jack:self` runs Sonora as a JACK client with its outputs connected
            to its own inputs (JACK delays that feedback by one period; the server's rate
            and period are used, --period and --rate are only asked for);
            `jack:CLIENT` measures through another client's ports (`jack:system` through
            the sound card, given a cable), `jack:…@SERVER` on a named server.

            --find-minimum tries period sizes from 16 to 1024 with 2 and 3 periods and
            reports the smallest buffer that ran --seconds without an xrun.

            Examples:
              sonora latency --device sonoraloop --period 128 --periods 2
              sonora latency --capture hw:1 --playback hw:1 --rate 48000 --period 64 --json
              sonora latency --device sonoraloop --find-minimum --seconds 3
              sonora latency --device sonoraloop --period 64 --wake-up timer --headroom-us 200
              sonora latency --device jack:self --json
            """
    )

    @Option(help: "Device for both directions (`sonoraloop[:NAME]`, `inprocess[:FRAMES]`, `jackloop`, `jack:self`, `sonora[:SOCKET]`, `null`, an ALSA PCM …).")
    var device: String?
    @Option(help: "Capture PCM.")
    var capture: String?
    @Option(help: "Playback PCM.")
    var playback: String?
    @Option(help: "Sample rate.")
    var rate = 48000
    @Option(help: "Frames per period.")
    var period = 256
    @Option(help: "Periods in the buffer.")
    var periods = 2
    @Option(help: "Channels in each direction.")
    var channels = 2
    @Option(help: "Device sample format (S16_LE, S32_LE, FLOAT_LE …); default: the best offered.")
    var format: String?
    @Option(help: "Seconds to run (each measurement, or each step of --find-minimum).")
    var seconds = 1.0
    @Option(help: "Longest round trip to look for, in frames.")
    var maxLatency = 24000
    @Option(help: "How the ALSA I/O thread wakes: poll (the device's interrupt) or timer (predicted from the device's pointer).")
    var wakeUp = "poll"
    @Option(help: "With --wake-up timer: microseconds before the predicted period the thread wakes (0…20000).")
    var headroomUs = AudioDeviceConfiguration.WakeUp.defaultHeadroomMicroseconds
    @Flag(help: "Search the smallest period × periods that runs without xruns.")
    var findMinimum = false
    @Flag(help: "Print JSON.")
    var json = false

    func validate() throws {
        guard device != nil || (capture != nil && playback != nil) else {
            throw ValidationError("give --device, or both --capture and --playback")
        }
        guard seconds > 0 && seconds <= 3600 else { throw ValidationError("--seconds must be in (0, 3600]") }
        guard wakeUp == "poll" || wakeUp == "timer" else { throw ValidationError("--wake-up must be poll or timer, not '\(wakeUp)'") }
        guard AudioDeviceConfiguration.WakeUp.headroomRange.contains(headroomUs) else {
            throw ValidationError("--headroom-us must be in 0…20000, not \(headroomUs)")
        }
        if let format, DeviceSampleFormat(name: format) == nil {
            throw ValidationError("unknown format '\(format)'; use one of \(DeviceSampleFormat.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        do {
            _ = try parsedSpecifier()
        } catch {
            throw ValidationError(error.message)
        }
    }

    private func parsedSpecifier() throws(AudioError) -> DeviceSpecifier {
        if let device { return try DeviceSpecifier(parsing: device) }
        return try DeviceSpecifier(capture: capture, playback: playback)
    }

    private var specifier: DeviceSpecifier { (try? parsedSpecifier()) ?? .null }

    private func configuration(period: Int, periods: Int) -> AudioDeviceConfiguration {
        var configuration = AudioDeviceConfiguration(
            sampleRate: rate, periodFrames: period, periods: periods, inputChannels: channels, outputChannels: channels,
            sampleFormat: format.flatMap(DeviceSampleFormat.init(name:)), requiresExactPeriod: true, locksMemory: true)
        if wakeUp == "timer" { configuration.wakeUp = .timer(headroomMicroseconds: headroomUs) }
        return configuration
    }

    func run() throws {
        if findMinimum { return try runFindMinimum() }
        let device: any AudioDevice
        do {
            device = try AudioDevices.open(specifier, configuration: configuration(period: period, periods: periods))
        } catch {
            throw CLIError("\(error)")
        }
        // A JACK server sets its own rate: measure at the device's.
        let measurement = RoundTripMeasurement(sampleRate: device.format.sampleRate, seconds: seconds, maximumLatency: maxLatency)
        let result: RoundTripMeasurement.Result
        do {
            result = try measurement.run(on: device)
        } catch {
            throw CLIError("\(error)")
        }
        if json {
            try printJSON(result)
        } else {
            print("Device:       \(device.driver) \(device.format.capture?.pcmName ?? "") → \(device.format.playback?.pcmName ?? "")")
            print("Format:       \(result.sampleRate) Hz, period \(result.periodFrames) × \(result.periods)")
            if let frames = result.measuredFrames, let ms = result.measuredMilliseconds {
                print(String(format: "Measured:     %.3f frames  %.3f ms%@", frames, ms, result.isInverted ? "  (polarity inverted)" : ""))
            } else {
                print("Measured:     no signal")
            }
            print(String(format: "Theoretical:  %d frames  %.3f ms (periods × period)", result.theoreticalFrames, Double(result.theoreticalFrames) * 1000 / Double(result.sampleRate)))
            if let reported = result.reportedFrames { print("ALSA reports: \(reported) frames (capture + playback snd_pcm_delay)") }
            if let frames = result.measuredFrames {
                let extra = frames - Double(result.theoreticalFrames)
                print(String(format: "Beyond the buffer: %.3f frames (converters, plugins, hardware)", extra))
            }
            print("Xruns:        \(result.xruns) in \(result.cycles) cycles")
        }
        if result.noSignal {
            throw CLIError("no signal: the capture did not hear the playback within \(maxLatency) frames (is the loop connected?)")
        }
    }

    struct Step: Codable {
        var periodFrames: Int
        var periods: Int
        var bufferFrames: Int
        var xruns: Int?
        var error: String?
    }

    struct MinimumReport: Codable {
        var steps: [Step]
        var minimum: Step?
    }

    private func runFindMinimum() throws {
        var steps: [Step] = []
        var minimum: Step?
        let candidates = [16, 32, 64, 128, 256, 512, 1024].flatMap { p in [2, 3].map { (p, $0) } }
            .sorted { ($0.0 * $0.1, $0.1) < ($1.0 * $1.1, $1.1) }
        for (period, periods) in candidates {
            do {
                let device = try AudioDevices.open(specifier, configuration: configuration(period: period, periods: periods))
                let measurement = RoundTripMeasurement(sampleRate: rate, seconds: seconds, maximumLatency: maxLatency)
                let result = try measurement.run(on: device)
                let step = Step(periodFrames: period, periods: periods, bufferFrames: period * periods, xruns: result.xruns)
                steps.append(step)
                if !json { print("period \(period) × \(periods) (\(period * periods) frames): \(result.xruns) xruns") }
                if result.xruns == 0 && !result.noSignal {
                    minimum = step
                    break
                }
            } catch {
                let step = Step(periodFrames: period, periods: periods, bufferFrames: period * periods, error: "\(error)")
                steps.append(step)
                if !json { print("period \(period) × \(periods): \(error)") }
            }
        }
        if json {
            try printJSON(MinimumReport(steps: steps, minimum: minimum))
        } else if let minimum {
            print(String(format: "Minimum without xruns: period %d × %d = %d frames (%.2f ms)", minimum.periodFrames, minimum.periods, minimum.bufferFrames, Double(minimum.bufferFrames) * 1000 / Double(rate)))
        }
        if minimum == nil { throw CLIError("no period size ran \(seconds) s without xruns") }
    }
}
