import ArgumentParser
import Dispatch
import Foundation
import SonoraCore
import SonoraDSP
import SonoraFile
import SonoraToolbox

#if canImport(Glibc)
import Glibc
#endif

struct PlayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Play audio files through an output audio queue (afplay's job).",
        discussion: """
            The files play in order through an AudioQueue — the reference documents'
            three-buffer pattern: packets read from the file, decoded on the queue's thread
            (PCM, IMA4, AAC, MP3, ALAC, FLAC, Opus) — on the device. Files of one format
            share one queue, so they follow each other without a gap; a change of format
            starts a new queue. What plays is exactly each file's frames: the priming and
            remainder of AAC, MP3 and Opus are trimmed by the queue.

            --start-at S begins S seconds into the first file (to the frame). --loop repeats
            the file(s) until SIGINT, gapless. SIGINT stops at once and still prints the
            result (with "interrupted": true), exit status 0. When stderr is a terminal (or
            with --progress) a line on stderr shows the time played, the total and the peak
            level, four times a second.

            When `sonora run` serves sessions (its config has a `session` section) and no
            --device is given, the files play through it (`sonora`, at SONORA_SERVER or the
            default socket) with the session active in --category (and --role) for the
            command's length: the appliance's policy may refuse it (exit 1, naming who holds
            the device), interrupt it (the queue pauses, and plays on when the interruption
            ends) or duck it. --direct plays on the device itself.

            --json prints one object: device, interrupted, passes, frames, seconds,
            underruns, sessionInterruptions, sessionDucks, peak (linear) and peakDBFS — the highest the queue's level meter read
            at its refreshes, every 20 ms — and files: each file's frames and seconds
            played. Exits non-zero, naming the file or device and the reason, when one
            cannot be played.

            Examples:
              sonora play take1.wav
              sonora play --device sonoraloop --volume -6 --start-at 12.5 song.m4a
              sonora play --device null --loop intro.caf loop.caf
              sonora play --rate 1.5 lecture.m4a
              sonora play --device null --json a.caf b.flac
              sonora play --role media radio.flac          # through the appliance, as its media
            """
    )

    @Argument(help: "The audio files, played in order.")
    var files: [String]

    @Option(name: .customLong("device"), help: "The device: sonora[:SOCKET] (the appliance), null, an ALSA PCM (default, hw:0, sonoraloop …), inprocess:FRAMES. Default: the appliance when one runs, else null.")
    var givenDevice: String?

    @Flag(help: "Play on the device directly, not through a running appliance; the session is this program's own.")
    var direct = false

    @Option(help: "The session category through the appliance: playback, ambient, soloAmbient, playAndRecord.")
    var category = "playback"

    @Option(help: "The appliance policy's role (default: the policy's role for the category).")
    var role: String?

    var device: String { SessionUse.device(given: givenDevice, direct: direct, otherwise: "null") }

    // Unconditional: the value is negative, and `--volume -6` must not read -6 as an option.
    @Option(parsing: .unconditional, help: "Volume in dB, -120 … 0.")
    var volume: Double = 0

    @Option(name: .customLong("start-at"), help: "Seconds into the first file to begin at.")
    var startAt: Double = 0

    @Flag(help: "Repeat the file(s) until SIGINT, without a gap.")
    var loop = false

    @Option(help: "Play rate, 0.5 … 2 (varispeed, as afplay -r: the pitch follows the speed).")
    var rate: Double = 1

    @Flag(help: "Show the progress line on stderr even when it is not a terminal.")
    var progress = false

    @Flag(help: "Print JSON.")
    var json = false

    func validate() throws {
        guard !files.isEmpty else { throw ValidationError("give at least one file to play") }
        guard volume >= -120 && volume <= 0 else { throw ValidationError("--volume \(volume) dB is outside -120 … 0") }
        guard rate >= 0.5 && rate <= 2 else { throw ValidationError("--rate \(rate) is outside 0.5 … 2") }
        guard startAt.isFinite && startAt >= 0 else { throw ValidationError("--start-at \(startAt) must be 0 or more seconds") }
        guard let category = AudioSessionCategory(rawValue: category), category.usesOutput else {
            throw ValidationError("--category \(category): play takes playback, ambient, soloAmbient or playAndRecord")
        }
        if direct, let givenDevice, givenDevice.hasPrefix("sonora") {
            throw ValidationError("--direct plays on a device itself; \(givenDevice) is the appliance")
        }
    }

    func run() throws {
        var opened: [AudioFile] = []
        defer { for file in opened { try? file.close() } }
        for path in files {
            do throws(AudioError) {
                opened.append(try AudioFile.open(path))
            } catch {
                throw CLIError("\(path): \(error)")
            }
        }
        let first = opened[0]
        let startFrame = Int((startAt * first.dataFormat.sampleRate).rounded())
        if startFrame > 0 && startFrame >= first.frameCount {
            throw CLIError("\(first.path): --start-at \(startAt) s is at or beyond its end (\(String(format: "%.3f", first.duration)) s)")
        }
        let device = device
        let session = try SessionUse(device: device, category: AudioSessionCategory(rawValue: category)!, role: role, direct: direct)
        defer { session.end() }
        let interruption = Interruption()
        let player = FilePlayback(
            device: device, volume: Float(Decibels.toLinear(volume)), rate: Float(rate), interruption: interruption,
            progress: progress || isatty(STDERR_FILENO) == 1 ? PlayProgress(files: opened, startFrame: startFrame, loops: loop) : nil)
        let segments = Self.segments(of: opened)
        var result = try Self.play(segments, of: opened, with: player, startFrame: startFrame, loop: loop, device: device)
        result.sessionInterruptions = session.log.interruptions
        result.sessionDucks = session.log.ducks
        player.progress?.finish()
        if json {
            try printJSON(result)
        } else {
            for file in result.files {
                print("\(file.file): \(file.format), \(file.frames) frames (\(String(format: "%.3f", file.seconds)) s)")
            }
            print("on \(device): \(String(format: "%.3f", result.seconds)) s, \(result.underruns) underruns, peak \(String(format: "%.1f", result.peakDBFS)) dBFS\(result.interrupted ? ", interrupted" : "")")
        }
    }

    /// Each run of files in one format through one queue; with --loop the runs repeat.
    static func play(_ segments: [[Int]], of opened: [AudioFile], with player: FilePlayback, startFrame: Int, loop: Bool, device: String) throws -> PlayResult {
        var result = PlayResult(device: device, files: opened.map { PlayResult.File(file: $0.path, format: "\($0.dataFormat)", frames: 0, seconds: 0) })
        repeat {
            for (number, segment) in segments.enumerated() {
                let start = result.passes == 0 && number == 0 ? startFrame : 0
                let outcome = Result { () throws(AudioError) -> PlayResult in
                    var partial = result
                    try player.play(segment.map { opened[$0] }, indices: segment, startFrame: start, loopsAlone: loop && segments.count == 1, into: &partial)
                    return partial
                }
                switch outcome {
                case .success(let partial): result = partial
                case .failure(let error): throw CLIError("\(opened[segment[0]].path): \(error)")
                }
                if player.interruption.happened { break }
            }
            result.passes += 1
        } while loop && segments.count > 1 && !player.interruption.happened
        result.interrupted = player.interruption.happened
        return result
    }

    /// Consecutive files that can share a queue (same format and cookie), as indices.
    static func segments(of files: [AudioFile]) -> [[Int]] {
        var segments: [[Int]] = []
        for (index, file) in files.enumerated() {
            if let last = segments.last?.last, AudioQueueFileSource.canShare(files[last], file) {
                segments[segments.count - 1].append(index)
            } else {
                segments.append([index])
            }
        }
        return segments
    }
}

/// What `sonora play --json` prints.
struct PlayResult: Encodable {
    struct File: Encodable {
        var file: String
        var format: String
        var frames: Int
        var seconds: Double
    }

    var device: String
    var files: [File]
    var interrupted = false
    /// Passes over the file list begun (more than 1 only with --loop).
    var passes = 0
    var frames = 0
    var seconds: Double = 0
    /// Seconds the device played them in: `seconds` ÷ the rate (and trailing silence none).
    var deviceSeconds: Double = 0
    var underruns = 0
    /// Interruptions and ducks the appliance's policy gave the session.
    var sessionInterruptions = 0
    var sessionDucks = 0
    var peak: Float = 0
    var peakDBFS: Double { Double(Decibels.fromLinear(peak)) }

    enum CodingKeys: String, CodingKey { case device, files, interrupted, passes, frames, seconds, deviceSeconds, underruns, sessionInterruptions, sessionDucks, peak, peakDBFS }

    init(device: String, files: [File]) {
        self.device = device
        self.files = files
    }

    func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(device, forKey: .device)
        try container.encode(files, forKey: .files)
        try container.encode(interrupted, forKey: .interrupted)
        try container.encode(passes, forKey: .passes)
        try container.encode(frames, forKey: .frames)
        try container.encode(seconds, forKey: .seconds)
        try container.encode(deviceSeconds, forKey: .deviceSeconds)
        try container.encode(underruns, forKey: .underruns)
        try container.encode(sessionInterruptions, forKey: .sessionInterruptions)
        try container.encode(sessionDucks, forKey: .sessionDucks)
        try container.encode(peak, forKey: .peak)
        try container.encode(peakDBFS, forKey: .peakDBFS)
    }
}

/// SIGINT (and SIGTERM): noted, so the queue stops at once and the result is still printed.
final class Interruption: @unchecked Sendable {
    private let lock = NSLock()
    private var flag = false
    private let sources: [DispatchSourceSignal]

    init() {
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        sources = [SIGINT, SIGTERM].map { DispatchSource.makeSignalSource(signal: $0, queue: .global()) }
        for source in sources {
            source.setEventHandler { [unowned self] in self.lock.withLock { self.flag = true } }
            source.resume()
        }
    }

    deinit { sources.forEach { $0.cancel() } }

    var happened: Bool { lock.withLock { flag } }
}
