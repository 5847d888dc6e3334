import Foundation
import SonoraCore
import SonoraFile
import SonoraLV2
import SonoraUnits
import Testing

/// Shared material of the LV2 suites: one world, a deterministic input, lv2apply runs.
enum Fixtures {
    static let world = LV2World.shared
    static let sampleRate = 48000.0

    /// 0.25 s of two sines and LCG noise at 48 kHz: deterministic, broadband, below full scale.
    static let input: [Float] = {
        var state: UInt32 = 12345
        return (0..<12000).map { frame in
            state = state &* 1_664_525 &+ 1_013_904_223
            let noise = Float(Int32(bitPattern: state)) / Float(Int32.max)
            let t = Float(frame) / 48000
            return 0.4 * sin(2 * .pi * 300 * t) + 0.2 * sin(2 * .pi * 2345 * t) + 0.1 * noise
        }
    }()

    static let directory: String = {
        let path = NSTemporaryDirectory() + "sonora-lv2-tests-\(getpid())"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    static func writeWAV(_ channels: [[Float]], to path: String) throws {
        let format = StreamFormat.linearPCM(sampleRate: sampleRate, channels: channels.count, sample: .float32)
        let file = try AudioFile.create(path, type: .wave, format: format, erase: true)
        let buffers = try OwnedAudioBufferList(channelCount: channels.count, frameCapacity: channels[0].count)
        for (index, channel) in channels.enumerated() {
            channel.withUnsafeBufferPointer { buffers.list.samples(index).update(from: $0.baseAddress!, count: channel.count) }
        }
        try file.writeFrames(from: buffers.list(frameCount: channels[0].count))
        try file.close()
    }

    static func readWAV(_ path: String) throws -> [[Float]] {
        let file = try AudioFile.open(path)
        defer { try? file.close() }
        let channels = Int(file.dataFormat.channelsPerFrame)
        let buffers = try OwnedAudioBufferList(channelCount: channels, frameCapacity: 4096)
        var result = [[Float]](repeating: [], count: channels)
        while true {
            let read = try file.readFrames(into: buffers.list)
            if read == 0 { break }
            for channel in 0..<channels {
                result[channel].append(contentsOf: UnsafeBufferPointer(start: buffers.list.samples(channel), count: read))
            }
        }
        return result
    }

    static let inputPath: String = {
        let path = directory + "/input.wav"
        try! writeWAV([input], to: path)
        return path
    }()

    /// Runs `lv2apply` on the mono input; returns its output channels (audio outputs in port index order).
    static func lv2apply(_ uri: String, controls: [String: Float]) throws -> [[Float]] {
        let output = directory + "/ref-\(UUID().uuidString).wav"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/lv2apply")
        var arguments = ["-i", inputPath, "-o", output]
        for (symbol, value) in controls.sorted(by: { $0.key < $1.key }) { arguments += ["-c", symbol, "\(value)"] }
        process.arguments = arguments + [uri]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw AudioError(.unspecified, "lv2apply \(uri) exited with \(process.terminationStatus)")
        }
        return try readWAV(output)
    }

    static func unit(_ uri: String, maximumFrames: Int = 4096) throws -> LV2Unit {
        try LV2Unit(
            uri: uri, world: world, options: .init(sampleRate: sampleRate, maximumFrames: maximumFrames, workerMode: .inline))
    }

    /// Sonora's render of the mono input (fed to every input channel), outputs in port index order.
    static func render(
        _ uri: String, controls: [String: Float], blockSize: Int, input: [Float] = Fixtures.input
    ) throws -> [[Float]] {
        let unit = try unit(uri, maximumFrames: max(blockSize, 1))
        for (symbol, value) in controls { try unit.setControl(symbol, to: value) }
        let outputs = try unit.renderOffline(
            inputs: unit.layout.inputs.map { _ in [input] }, frameCount: input.count, blockSize: blockSize)
        return unit.layout.channels(.output).sorted { $0.port < $1.port }.map { outputs[$0.element][$0.channel] }
    }

    /// Largest difference between two sets of channels (∞ when their shapes differ); NaN == NaN.
    static func maximumDifference(_ a: [[Float]], _ b: [[Float]], from start: Int = 0) -> Float {
        guard a.count == b.count else { return .infinity }
        var worst: Float = 0
        for (x, y) in zip(a, b) {
            guard x.count == y.count else { return .infinity }
            for index in start..<x.count where !(x[index] == y[index] || (x[index].isNaN && y[index].isNaN)) {
                worst = max(worst, abs(x[index] - y[index]).isNaN ? .infinity : abs(x[index] - y[index]))
            }
        }
        return worst
    }
}
