import Foundation
import SonoraCore
import SonoraFile
import SonoraLV2
import SonoraTestSupport
import SonoraUnits
import Testing

/// Shared material of the LV2 suites: one world, a deterministic input, lv2apply runs.
enum Fixtures {
    static let world = LV2World.shared
    static let sampleRate = 48000.0

    /// 0.25 s of two sines and LCG noise at 48 kHz: deterministic, broadband, below full scale.
    static let input: [Float] = {
        let noise = TestSignal.whiteNoise(count: 12000, seed: 12345)
        return (0..<12000).map { frame in
            let t = Float(frame) / 48000
            return 0.4 * sin(2 * .pi * 300 * t) + 0.2 * sin(2 * .pi * 2345 * t) + 0.1 * noise[frame]
        }
    }()

    /// The suites' scratch folder, removed when the test process exits.
    static let folder = try! TemporaryFolder(prefix: "sonora-lv2-tests")
    static var directory: String { folder.path }

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
        var arguments = ["-i", inputPath, "-o", output]
        for (symbol, value) in controls.sorted(by: { $0.key < $1.key }) { arguments += ["-c", symbol, "\(value)"] }
        let outcome = try CLIRunner(executable: "/usr/bin/lv2apply").run(arguments + [uri])
        guard outcome.status == 0 else {
            throw AudioError(.unspecified, "lv2apply \(uri) exited with \(outcome.status): \(outcome.stderr.prefix(500))")
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
}
