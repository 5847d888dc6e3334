import Foundation
import SonoraCore
import SonoraLV2
import SonoraTestSupport
import Testing

/// Sonora's own plugin, written in Swift (Plugins/SonoraGain, bundle Plugins/sonora-gain.lv2):
/// hosted by Sonora and by lilv's lv2apply with the same output.
@Suite struct SwiftPluginTests {
    static let uri = "https://sonora.audio/plugins/gain"

    /// Stages the bundle (TTL from Plugins/, binary from this build) in a temp directory; nil if the binary is not built.
    static let bundleRoot: String? = {
        guard let binary = PackageRoot.builtProduct("libSonoraGainLV2.so") else { return nil }
        let root = Fixtures.directory + "/swift-plugin"
        let bundle = root + "/sonora-gain.lv2"
        try? FileManager.default.removeItem(atPath: root)
        try? FileManager.default.createDirectory(atPath: bundle, withIntermediateDirectories: true)
        for file in ["manifest.ttl", "gain.ttl"] {
            try? FileManager.default.copyItem(
                atPath: PackageRoot.path("Plugins/sonora-gain.lv2/\(file)"), toPath: bundle + "/\(file)")
        }
        try? FileManager.default.copyItem(atPath: binary, toPath: bundle + "/libSonoraGainLV2.so")
        return root
    }()

    static func lv2apply(controls: [String: Float]) throws -> [[Float]] {
        let output = Fixtures.directory + "/swift-plugin-\(UUID().uuidString).wav"
        defer { try? FileManager.default.removeItem(atPath: output) }
        var arguments = ["-i", Fixtures.inputPath, "-o", output]
        for (symbol, value) in controls.sorted(by: { $0.key < $1.key }) { arguments += ["-c", symbol, "\(value)"] }
        let outcome = try CLIRunner(executable: "/usr/bin/lv2apply").run(arguments + [uri], environment: ["LV2_PATH": bundleRoot!])
        try #require(outcome.status == 0, "\(outcome.stderr)")
        return try Fixtures.readWAV(output)
    }

    @Test(.enabled(if: bundleRoot != nil, "libSonoraGainLV2.so is built by swift build"))
    func lv2applyAndSonoraAgree() throws {
        let world = LV2World(path: Self.bundleRoot!)
        let controls: [String: Float] = ["gain": -6, "balance": 0.25]
        let reference = try Self.lv2apply(controls: controls)
        for blockSize in [1, 512] {
            let unit = try LV2Unit(uri: Self.uri, world: world, options: .init(maximumFrames: blockSize, workerMode: .inline))
            for (symbol, value) in controls { try unit.setControl(symbol, to: value) }
            let outputs = try unit.renderOffline(inputs: [[Fixtures.input]], blockSize: blockSize)
            #expect(outputs.count == 1 && outputs[0].count == 2)
            #expect(SignalMeasurement.maximumDifference(outputs[0], reference) == 0, "block size \(blockSize)")
            // Analytic: -6 dB on the right; the left turned down by the balance as well.
            let gain = Float(pow(10, -6.0 / 20))
            #expect(abs(outputs[0][1][1000] - Fixtures.input[1000] * gain) < 1e-6)
            #expect(abs(outputs[0][0][1000] - Fixtures.input[1000] * gain * 0.75) < 1e-6)
            let peak = try unit.control("peak")
            #expect(peak > 0 && peak <= 1)
        }
    }

    @Test(.enabled(if: bundleRoot != nil, "libSonoraGainLV2.so is built by swift build"))
    func describedAsAStereoUnit() throws {
        let unit = try LV2Unit(uri: Self.uri, world: LV2World(path: Self.bundleRoot!))
        #expect(unit.layout.inputs.map(\.ports) == [[2, 3]])
        #expect(unit.layout.outputs.map(\.ports) == [[4, 5]])
        #expect(try unit.parameterInfo(0).unit == .decibels)
        #expect(try unit.parameterInfo(6).flags.contains(.meterReadOnly))
    }
}
