import ArgumentParser
import Dispatch
import Foundation
import SonoraCore
import SonoraDSP
import SonoraFile
import SonoraToolbox
import SonoraUnits

struct PlayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Play audio files through an output audio queue (afplay's job).",
        discussion: """
            Each file, one after another, goes through an AudioQueue — the reference
            documents' three-buffer pattern: packets read from the file, decoded on the
            queue's thread (PCM, IMA4, AAC, MP3, ALAC, FLAC, Opus) — played by the I/O unit
            on the device. The result per file: frames played, seconds, underruns. Exits
            non-zero, naming the file or device and the reason, when one cannot be played.

            Examples:
              sonora play take1.wav
              sonora play --device sonoraloop --volume -6 song.m4a
              sonora play --device null --json a.caf b.flac
            """
    )

    @Argument(help: "The audio files, played in order.")
    var files: [String]

    @Option(help: "The device: null, an ALSA PCM (default, hw:0, sonoraloop …), inprocess:FRAMES.")
    var device = "null"

    // Unconditional: the value is negative, and `--volume -6` must not read -6 as an option.
    @Option(parsing: .unconditional, help: "Volume in dB, -120 … 0.")
    var volume: Double = 0

    @Flag(help: "Print JSON.")
    var json = false

    struct Report: Codable {
        var file: String
        var format: String
        var device: String
        var frames: Int
        var seconds: Double
        var underruns: Int
    }

    func validate() throws {
        guard !files.isEmpty else { throw ValidationError("give at least one file to play") }
        guard volume >= -120 && volume <= 0 else { throw ValidationError("--volume \(volume) dB is outside -120 … 0") }
    }

    func run() throws {
        var reports: [Report] = []
        for file in files {
            do {
                reports.append(try play(file))
            } catch let error as AudioError {
                throw CLIError("\(file): \(error)")
            }
        }
        if json {
            try printJSON(reports)
        } else {
            for report in reports {
                print("\(report.file): \(report.format), \(report.frames) frames (\(String(format: "%.3f", report.seconds)) s) on \(report.device), \(report.underruns) underruns")
            }
        }
    }

    private func play(_ path: String) throws(AudioError) -> Report {
        let file = try AudioFile.open(path)
        defer { try? file.close() }
        let format = file.dataFormat
        let reader = PacketReader(file: file)
        let queue = try AudioQueue(format: format) { queue, buffer in reader.fill(queue, buffer) }
        var disposed = false
        defer { if !disposed { try? queue.dispose(immediate: true) } }
        if let cookie = file.magicCookie, !format.isLinearPCM, format.formatID != .appleIMA4 { try queue.setMagicCookie(cookie) }
        let io = IOUnit()
        try io.setDevice(named: device)
        try queue.setOutputUnit(io)
        try queue.setParameter(.volume, Float(Decibels.toLinear(volume)))
        let finished = DispatchSemaphore(value: 0)
        try queue.addPropertyListener(.isRunning) { queue, _ in if !queue.isRunning { finished.signal() } }
        let timeline = try queue.createTimeline()
        let capacity = reader.packetsPerBuffer * max(file.maximumPacketSize ?? 4096, 1)
        let descriptions = format.bytesPerPacket == 0 ? reader.packetsPerBuffer : 0
        for _ in 0..<3 { reader.fill(queue, try queue.allocateBuffer(byteCapacity: capacity, packetDescriptionCapacity: descriptions)) }
        try queue.prime()
        try queue.start()
        finished.wait()
        let frames = Int(timeline.currentTime().sampleTime)
        let underruns = queue.underruns
        try queue.dispose(immediate: true)
        disposed = true
        if let failure = reader.failure { throw failure }
        return Report(file: path, format: "\(format)", device: device, frames: frames, seconds: Double(frames) / format.sampleRate, underruns: underruns)
    }
}

/// HandleOutputBuffer: the next packets of the file into the buffer, back into the queue;
/// at the end of the file (or a read error), stop after what is queued.
private final class PacketReader: @unchecked Sendable {
    let file: AudioFile
    let packetsPerBuffer: Int
    private var packet = 0
    private var done = false
    private(set) var failure: AudioError?

    init(file: AudioFile) {
        self.file = file
        // About 100 ms of audio per buffer.
        let framesPerPacket = max(Int(file.dataFormat.framesPerPacket), 1)
        packetsPerBuffer = max(1, Int(file.dataFormat.sampleRate / 10) / framesPerPacket)
    }

    func fill(_ queue: AudioQueue, _ buffer: AudioQueueBuffer) {
        guard !done else { return }
        do throws(AudioError) {
            let read = try file.readPacketData(from: packet, count: packetsPerBuffer, maximumBytes: buffer.byteCapacity)
            if read.packetCount > 0 {
                buffer.fill(with: read.bytes)
                try queue.enqueue(buffer, packetDescriptions: read.descriptions ?? [])
                packet += read.packetCount
                return
            }
        } catch {
            failure = error
        }
        done = true
        try? queue.stop(immediate: false)
    }
}
