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
            frames: audio.frameCount, seconds: audio.estimatedDuration, info: audio.info)
        if json { return try printJSON(report) }
        print("File:     \(report.file)")
        print("Type:     \(report.type)")
        print("Format:   \(report.format)")
        print("Frames:   \(report.frames)")
        print(String(format: "Duration: %.6f s", report.seconds))
        for (key, value) in report.info.sorted(by: { $0.key < $1.key }) { print("\(key): \(value)") }
    }
}
