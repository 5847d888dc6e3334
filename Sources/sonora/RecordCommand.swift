import ArgumentParser
import Dispatch
import Foundation
import SonoraCore
import SonoraDSP
import SonoraFile
import SonoraToolbox
import SonoraUnits

#if canImport(Glibc)
import Glibc
#endif

struct RecordCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Record from a device into a file through an input audio queue (SpeakHere's recorder).",
        discussion: """
            The I/O unit captures from the device; an input AudioQueue fills three buffers
            (encoding IMA4 or ALAC on the queue's thread) and each filled buffer's packets
            are written to the file as they arrive; on a terminal (or with --progress),
            the time and peak level show on stderr as it records, four times a second.
            Stops after --seconds, or on SIGINT or SIGTERM; either way the buffers in
            flight are written and the file is closed complete. -f and -d as afconvert takes them. Never replaces a file unless
            --overwrite is given.

            The file's header is brought up to date about once a second, so a killed
            recording leaves a hidden `.NAME.partial-PID` that reads as all but its last
            second; the next `sonora record` of NAME moves it to NAME-recovered-PID.EXT,
            and `sonora record --recover NAME` into NAME if that is free — never over
            another file. A full disk ends the recording with the reason and exit
            status 1; what fitted is kept, finished.

            Examples:
              sonora record take1.wav --seconds 5
              sonora record memo.caf -f caff -d ima4@16000 --device default
              sonora record --device null --seconds 1 --json lossless.caf -d alac@44100x2
              sonora record --recover memo.caf
              sonora record take2.wav --progress --json 2>levels.txt
            """
    )

    @Argument(help: "The file to write.")
    var output: String

    @Option(help: "Seconds to record; without it, until SIGINT/SIGTERM.")
    var seconds: Double?

    @Option(name: .customShort("f"), help: "File type (caff, WAVE, AIFF, AIFC, or an extension); default from OUTPUT's extension.")
    var fileType: String?

    @Option(name: .customShort("d"), help: "Data format, afconvert style (LEI16@48000x2, ima4@16000, alac@44100x2); default LEI16@48000x1.")
    var dataFormat = "LEI16@48000"

    @Option(name: .customLong("device"), help: "The device: sonora[:SOCKET] (the appliance), null, an ALSA PCM (default, hw:0, sonoraloop …). Default: the appliance when one runs, else null.")
    var givenDevice: String?

    @Flag(help: "Record from the device directly, not through a running appliance.")
    var direct = false

    @Option(help: "The appliance policy's role (default: the policy's role for category record).")
    var role: String?

    var device: String { SessionUse.device(given: givenDevice, direct: direct, otherwise: "null") }

    @Flag(help: "Replace OUTPUT if it exists.")
    var overwrite = false

    @Flag(help: "Print JSON.")
    var json = false

    @Flag(help: "Show the live level line (time, peak dBFS) on stderr even when it is not a terminal.")
    var progress = false

    @Flag(help: "Only recover the partial files killed recordings of OUTPUT left (one into OUTPUT if it does not exist, else to OUTPUT-recovered-PID.EXT); record nothing.")
    var recover = false

    struct Report: Codable {
        var file: String
        var format: String
        var device: String
        var frames: Int
        var seconds: Double
        var overruns: Int
        /// The highest sample level captured, dBFS (−120 for silence).
        var peak: Double
    }

    func validate() throws {
        if let seconds { guard seconds > 0 && seconds <= 86400 else { throw ValidationError("--seconds \(seconds) is outside (0, 86400]") } }
    }

    func run() throws {
        // A killed earlier recording of this name: what it captured is kept beside it, first.
        let stale = AudioFile.recoverStalePartials(of: output)
        for result in stale { FileHandle.standardError.write(Data("sonora: \(result)\n".utf8)) }
        if recover {
            // Asked for OUT itself: one recovered take goes there if the name is free (link
            // refuses an existing file: nothing is replaced).
            let recovered = stale.compactMap { if case .recovered(let path, _) = $0.outcome { path } else { nil } }
            // Nothing to recover is not a failure (a live recording's partial stays), but it is said.
            if stale.isEmpty { FileHandle.standardError.write(Data("sonora: \(output): no partial recording of a finished process to recover\n".utf8)) }
            if recovered.count == 1, link(recovered[0], output) == 0 {
                unlink(recovered[0])
                FileHandle.standardError.write(Data("sonora: \(recovered[0]) → \(output)\n".utf8))
            }
            return
        }
        try OutputFile.check(output, inputs: [], overwrite: overwrite)
        // Through the appliance: the session is active (category record) while recording.
        let device = device
        let session = try SessionUse(device: device, category: .record, role: role, direct: direct)
        defer { session.end() }
        let report: Report
        do {
            report = try record(on: device)
        } catch let error as AudioError {
            throw CLIError("\(output): \(error)")
        }
        if json {
            try printJSON(report)
        } else {
            print("\(report.file): \(report.format), \(report.frames) frames (\(String(format: "%.3f", report.seconds)) s) from \(report.device), peak \(String(format: "%.1f", report.peak)) dBFS, \(report.overruns) overruns")
        }
    }

    private func format() throws -> StreamFormat {
        let format = try StreamFormat(parsing: dataFormat)
        guard format.isLinearPCM || format.formatID == .appleIMA4 || format.formatID == .appleLossless else {
            throw CLIError("-d \(dataFormat): record takes linear PCM, ima4 or alac")
        }
        return format
    }

    private func type() throws -> AudioFileType {
        if let fileType {
            if let code = FourCharCode(characters: fileType.padding(toLength: 4, withPad: " ", startingAt: 0)),
               [AudioFileType.wave, .aiff, .aifc, .caf].contains(AudioFileType(rawValue: code)) {
                return AudioFileType(rawValue: code)
            }
            if let type = AudioFileType(pathExtension: fileType) { return type }
            throw CLIError("-f \(fileType): unknown file type (use caff, WAVE, AIFF, AIFC or an extension)")
        }
        guard let type = AudioFileType(pathExtension: (output as NSString).pathExtension) else {
            throw CLIError("\(output): cannot tell the file type from the extension; give -f")
        }
        return type
    }

    private func record(on device: String) throws -> Report {
        let format = try format()
        let type = try type()
        let wanted = seconds.map { Int(($0 * format.sampleRate).rounded()) }
        let sink = RecordingSink()
        let queue = try AudioInputQueue(format: format) { queue, buffer, _, descriptions in sink.recording?.write(queue, buffer, descriptions) }
        defer { try? queue.dispose() }
        // The file is made only once the format and device are known good (nothing left behind otherwise).
        let io = IOUnit()
        io.deviceConfiguration.inputChannels = Int(format.channelsPerFrame)
        io.deviceConfiguration.outputChannels = 0
        try io.setDevice(named: device)
        try queue.setInputUnit(io)
        let recording = try AudioQueueFileRecording(path: output, type: type, queue: queue, frameLimit: wanted, erase: overwrite)
        sink.recording = recording
        try recording.enqueueBuffers(on: queue)
        // The device went away: the queue delivered what it captured and stopped; end as --seconds does.
        try queue.addPropertyListener(.isRunning) { queue, _ in
            if !queue.isRunning && queue.stopReason != nil { recording.ended.signal() }
        }

        // SIGINT / SIGTERM end the recording as --seconds does: the file is closed complete.
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let signals = [SIGINT, SIGTERM].map { DispatchSource.makeSignalSource(signal: $0, queue: .global()) }
        for source in signals {
            source.setEventHandler { recording.ended.signal() }
            source.resume()
        }
        // The live level (time, peak dBFS) on stderr four times a second: on a terminal (not
        // with --json), or wherever stderr goes with --progress. Metering also gives the report's peak.
        let showsLevel = progress || (!json && isatty(STDERR_FILENO) == 1)
        try queue.setLevelMeteringEnabled(true)
        do { try queue.start() } catch {
            // Nothing was captured: no file is left behind (an empty one would look like a take).
            recording.abandon()
            throw error
        }
        while recording.ended.wait(timeout: .now() + 0.25) == .timedOut {
            guard showsLevel, let levels = try? queue.currentLevelMeter() else { continue }
            let peak = levels.map(\.peak).max() ?? 0
            let line = String(format: "\r%8.1f s  peak %6.1f dBFS ", Double(recording.frames) / format.sampleRate, Decibels.fromLinear(peak))
            FileHandle.standardError.write(Data(line.utf8))
        }
        if showsLevel { FileHandle.standardError.write(Data("\n".utf8)) }
        try queue.stop(immediate: false)
        signals.forEach { $0.cancel() }
        let overruns = queue.capturer.overruns
        let prime = queue.encoderPrimeInfo
        let stopReason = queue.stopReason
        let peak = Decibels.fromLinear(Double((try? queue.levelMeterPeakHold())?.max() ?? 0))
        try queue.dispose()
        let finished = Result { () throws(AudioError) -> Int in try recording.finish(primeInfo: prime) }
        let frames: Int
        switch finished {
        case .success(let kept): frames = kept
        case .failure(let error): throw CLIError("\(output): \(error.message)")
        }
        if let reason = stopReason {
            throw CLIError("\(output): recording stopped: \(reason.message); kept \(frames) frames (\(String(format: "%.3f", Double(frames) / format.sampleRate)) s), finished")
        }
        return Report(file: output, format: "\(format)", device: device, frames: frames,
                      seconds: Double(frames) / format.sampleRate, overruns: overruns, peak: (peak * 10).rounded() / 10)
    }
}

/// The queue's callback reaches the recording once it exists (the file is made after the queue).
private final class RecordingSink: @unchecked Sendable {
    var recording: AudioQueueFileRecording?
}
