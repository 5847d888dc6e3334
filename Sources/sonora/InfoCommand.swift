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
            container keeps; for compressed files also the packets (count, largest,
            upper bound), bit rate, the packet table (valid, priming and remainder
            frames), the magic cookie's size and where the audio data starts. Exits non-zero, naming the file and the reason, when the file
            cannot be read.

            Examples:
              sonora info take1.wav
              sonora info --json take1.flac
              sonora info song.m4a
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
        /// Largest packet in the file, and the most the format allows (VBR files).
        var maximumPacketSize: Int?
        var packetSizeUpperBound: Int?
        var dataOffset: Int?
        var bitRate: Int?
        /// kAudioFilePropertyPacketTableInfo: the frames encoders add before and after the audio.
        var validFrames: Int64?
        var primingFrames: Int?
        var remainderFrames: Int?
        var magicCookieBytes: Int?
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
        let table = audio.packetTableInfo
        let report = Report(
            file: file, type: audio.fileType.rawValue.characters ?? audio.fileType.description, format: audio.dataFormat.description,
            sampleRate: audio.dataFormat.sampleRate, channels: Int(audio.dataFormat.channelsPerFrame),
            frames: audio.frameCount, seconds: audio.estimatedDuration, info: audio.info,
            packetSize: audio.dataFormat.bytesPerPacket > 0 ? Int(audio.dataFormat.bytesPerPacket) : nil,
            packets: audio.packetCount, audioDataBytes: audio.audioDataByteCount,
            maximumPacketSize: audio.maximumPacketSize, packetSizeUpperBound: audio.packetSizeUpperBound,
            dataOffset: audio.dataOffset, bitRate: audio.bitRate,
            validFrames: table?.validFrames, primingFrames: table.map { Int($0.primingFrames) },
            remainderFrames: table.map { Int($0.remainderFrames) }, magicCookieBytes: audio.magicCookie?.count,
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
        } else if let packets = report.packets {
            let largest = report.maximumPacketSize.map { ", largest \($0) bytes" } ?? ""
            let bound = report.packetSizeUpperBound.map { " (bound \($0))" } ?? ""
            print("Packets:  \(packets), variable size\(largest)\(bound)")
        }
        if let bitRate = report.bitRate, !audio.dataFormat.isLinearPCM { print("Bit rate: \(bitRate) bit/s") }
        if let valid = report.validFrames {
            print("Packet table: \(valid) valid frames, \(report.primingFrames ?? 0) priming, \(report.remainderFrames ?? 0) remainder")
        }
        if let cookie = report.magicCookieBytes { print("Magic cookie: \(cookie) bytes") }
        if let offset = report.dataOffset { print("Data offset: \(offset)") }
        if let layout = report.channelLayout { print("Channels: \(layout.joined(separator: " "))") }
        for marker in report.markers { print("Marker \(marker.id): frame \(marker.frame) \(marker.name)") }
        for loop in report.loops { print("Loop: \(loop.mode) \(loop.start)…\(loop.end)\(loop.count > 0 ? " ×\(loop.count)" : "")") }
        for (key, value) in report.info.sorted(by: { $0.key < $1.key }) { print("\(key): \(value)") }
    }
}
