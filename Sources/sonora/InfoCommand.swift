import ArgumentParser
import Foundation
import SonoraCore
import SonoraFile

struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Print an audio file's properties (type, data format, frames, duration, info strings).",
        discussion: """
            Like afinfo: the container type (Core Audio's code), the data format as an
            afconvert-style string, frame count, duration, and the info strings the
            container keeps. Exits non-zero, naming the file and the reason, when the file
            cannot be read.

            Examples:
              sonora info take1.wav
              sonora info --json take1.flac
            """
    )

    @Argument(help: "The audio file.")
    var file: String

    @Flag(help: "Print JSON.")
    var json = false

    struct Report: Codable {
        var file: String
        var type: String
        var format: String
        var sampleRate: Double
        var channels: Int
        var frames: Int
        var seconds: Double
        var info: [String: String]
        var packetSize: Int?
        var packets: Int?
        var audioDataBytes: Int?
        var channelLayout: [String]?
        var markers: [Marker]
        var loops: [Loop]

        struct Marker: Codable {
            var id: Int
            var frame: Int
            var name: String
        }

        struct Loop: Codable {
            var mode: String
            var start: Int
            var end: Int
            var count: Int
        }
    }

    func run() throws {
        let audio: AudioFile
        do {
            audio = try AudioFile.open(file)
        } catch {
            throw CLIError("\(error)")
        }
        defer { try? audio.close() }
        let report = Report(
            file: file, type: audio.fileType.rawValue.characters ?? audio.fileType.description, format: audio.dataFormat.description,
            sampleRate: audio.dataFormat.sampleRate, channels: Int(audio.dataFormat.channelsPerFrame),
            frames: audio.frameCount, seconds: audio.estimatedDuration, info: audio.info,
            packetSize: audio.maximumPacketSize, packets: audio.packetCount, audioDataBytes: audio.audioDataByteCount,
            channelLayout: audio.channelLayout?.map { "\($0)" },
            markers: audio.markers.map { Report.Marker(id: $0.id, frame: $0.frame, name: $0.name) },
            loops: audio.loops.map { Report.Loop(mode: "\($0.mode)", start: $0.start, end: $0.end, count: $0.count) })
        if json { return try printJSON(report) }
        print("File:     \(report.file)")
        print("Type:     \(report.type)")
        print("Format:   \(report.format)")
        print("Frames:   \(report.frames)")
        print(String(format: "Duration: %.6f s", report.seconds))
        if let size = report.packetSize, let packets = report.packets {
            print("Packets:  \(packets) of \(size) bytes")
        }
        if let layout = report.channelLayout { print("Channels: \(layout.joined(separator: " "))") }
        for marker in report.markers { print("Marker \(marker.id): frame \(marker.frame) \(marker.name)") }
        for loop in report.loops { print("Loop: \(loop.mode) \(loop.start)…\(loop.end)\(loop.count > 0 ? " ×\(loop.count)" : "")") }
        for (key, value) in report.info.sorted(by: { $0.key < $1.key }) { print("\(key): \(value)") }
    }
}
