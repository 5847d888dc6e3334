import CLV2Support
import Foundation
import SonoraCore
import SonoraLV2
import SonoraTestSupport
import SonoraUnits
import Testing

/// Plugins that need host features lv2apply does not give (urid:map, options with
/// maxBlockLength, atom ports): zam, dragonfly, lsp, calf and x42 — checked by
/// analytic properties and by rendering at two block sizes.
@Suite struct HostFeatureTests {
    static let stereo: [[Float]] = [Fixtures.input, Fixtures.input.map { $0 * 0.5 }]

    static func render(_ uri: String, blockSize: Int, controls: [String: Float] = [:]) throws -> (LV2Unit, [[Float]]) {
        let unit = try Fixtures.unit(uri, maximumFrames: blockSize)
        for (symbol, value) in controls { try unit.setControl(symbol, to: value) }
        let inputs = unit.layout.inputs.map { bus in Array(stereo.prefix(bus.ports.count)) + Array(repeating: stereo[0], count: max(0, bus.ports.count - 2)) }
        let outputs = try unit.renderOffline(inputs: inputs, frameCount: Fixtures.input.count, blockSize: blockSize)
        return (unit, outputs.flatMap { $0 })
    }

    static let featureNeeding = [
        "urn:zamaudio:ZaMaximX2", "urn:zamaudio:ZamCompX2", "urn:zamaudio:ZamEQ2", "urn:dragonfly:plate",
        "urn:dragonfly:room", "https://github.com/michaelwillis/dragonfly-reverb",
        "http://lsp-plug.in/plugins/lv2/comp_delay_stereo", "http://lsp-plug.in/plugins/lv2/art_delay_stereo",
        "http://calf.sourceforge.net/plugins/Compressor", "http://calf.sourceforge.net/plugins/Reverb",
        "http://gareus.org/oss/lv2/fil4#stereo", "http://gareus.org/oss/lv2/dpl#stereo",
    ]

    @Test(arguments: featureNeeding)
    func instantiatesAndRendersFiniteAudio(_ uri: String) throws {
        let (unit, outputs) = try Self.render(uri, blockSize: 512)
        #expect(!unit.plugin.requiredFeatures.isEmpty || unit.plugin.ports.contains { $0.kind == .atom })
        #expect(outputs.allSatisfy { $0.count == Fixtures.input.count })
        #expect(outputs.allSatisfy { $0.allSatisfy(\.isFinite) }, "non-finite output")
        #expect(outputs.contains { $0.contains { $0 != 0 } }, "silent output")
    }

    /// The feature-needing plugins at 64, 480 and 4096 frames per run(): equal to each other
    /// (after the first 4096 frames, where some smooth their controls per run()), except
    /// those listed with the reason measured.
    static let blockVariant: [String: String] = [
        "urn:dragonfly:room": "dragonfly room's output depends on the run() length (measured: up to 5e-3 apart)"
    ]

    @Test(arguments: featureNeeding)
    func blockSizeInvariance(_ uri: String) throws {
        let (_, reference) = try Self.render(uri, blockSize: 64)
        for blockSize in [480, 4096] {
            let (_, other) = try Self.render(uri, blockSize: blockSize)
            let difference = SignalMeasurement.maximumDifference(reference, other, from: 4096)
            if let reason = Self.blockVariant[uri] {
                #expect(difference.isFinite, "\(reason)")
            } else {
                #expect(difference == 0, "\(uri): block size \(blockSize) differs from 64 by \(difference)")
            }
        }
    }

    /// zam plugins return no instance without options:options carrying maxBlockLength.
    @Test func zamGetsMaximumBlockLengthThroughOptions() throws {
        let unit = try Fixtures.unit("urn:zamaudio:ZamCompX2", maximumFrames: 1024)
        #expect(unit.plugin.requiredFeatures.contains(LV2URI.options))
        #expect(unit.maximumFramesPerSlice == 1024)
    }

    /// x42's equaliser with every band off is the identity at any block size.
    @Test func x42EqualiserDisabledIsIdentity() throws {
        let (_, outputs) = try Self.render("http://gareus.org/oss/lv2/fil4#stereo", blockSize: 480, controls: ["enable": 0])
        #expect(SignalMeasurement.maximumDifference(outputs, Self.stereo, from: 4800) < 1e-6)
    }

    /// lsp's delay compensator delays by exactly the samples asked for, at any block
    /// size, and reports them through its "Delay samples" control output.
    @Test func lspDelayCompensatorDelaysBySamples() throws {
        let uri = "http://lsp-plug.in/plugins/lv2/comp_delay_stereo"
        let controls: [String: Float] = ["mode": 0, "ramp": 0, "samp": 37, "dry": 0, "wet": 1, "g_out": 1]
        for blockSize in [64, 4096] {
            let (unit, outputs) = try Self.render(uri, blockSize: blockSize, controls: controls)
            let delayed = Array(repeating: Float(0), count: 37) + Self.stereo[0].dropLast(37)
            #expect(SignalMeasurement.maximumDifference([Array(outputs[0][2000...])], [Array(delayed[2000...])]) < 1e-6, "block size \(blockSize)")
            #expect(try unit.control("d_s") == 37)
        }
    }

    /// Dragonfly's plate at 64 and 4096 frames per run: the same reverb (it smooths nothing per block).
    @Test func dragonflyBlockSizes() throws {
        let (_, small) = try Self.render("urn:dragonfly:plate", blockSize: 64)
        let (_, large) = try Self.render("urn:dragonfly:plate", blockSize: 4096)
        let difference = SignalMeasurement.maximumDifference(small, large)
        #expect(difference < 1e-3, "plate differs by \(difference) between block sizes")
    }

    /// With a worker thread (the realtime mode), a plugin with worker:interface renders the
    /// same as with inline work when it schedules none, and the thread stops with the unit.
    @Test func threadedWorkerModeRendersAndStops() throws {
        let uri = "urn:dragonfly:plate"
        let plugin = try Fixtures.world.plugin(uri)
        #expect(plugin.extensionData.contains(LV2URI.workerInterface))
        var threaded: [[Float]] = []
        do {
            let unit = try LV2Unit(uri: uri, world: Fixtures.world, options: .init(maximumFrames: 512, workerMode: .thread))
            threaded = try unit.renderOffline(inputs: [Self.stereo], blockSize: 512).flatMap { $0 }
        }
        let (_, inline) = try Self.render(uri, blockSize: 512)
        #expect(SignalMeasurement.maximumDifference(threaded, inline) == 0)
    }

    /// log:log: eg-sampler traces loading its default sample (state:loadDefaultState) — the
    /// messages reach the unit's log, with their level.
    @Test func pluginLogMessagesAreCollected() throws {
        let unit = try Fixtures.unit("http://lv2plug.in/plugins/eg-sampler")
        let loading = unit.recentLogMessages.first { $0.text.contains("click.wav") }
        #expect(loading?.level == .trace, "\(unit.recentLogMessages)")
    }

    /// Plugins set flush-to-zero on their caller's thread (lsp, x42, calf, zam do); the host
    /// puts the thread's floating-point mode back after every call into plugin code.
    @Test func pluginsLeaveTheCallersFloatingPointModeAlone() throws {
        let before = sonora_fp_state_save()
        for uri in Self.featureNeeding {
            _ = try Self.render(uri, blockSize: 256)
        }
        #expect(sonora_fp_state_save() == before)
    }

    /// The mode put back after every run() is the caller's own, not a default: a thread that
    /// rounds toward zero and flushes denormals still does after rendering plugins that set
    /// their own mode. (Exception flags, which any arithmetic raises, are not compared.)
    @Test func aCallersOwnFloatingPointModeSurvivesRendering() throws {
        let original = sonora_fp_state_save()
        defer { sonora_fp_state_restore(original) }
        #if arch(x86_64) || arch(i386)
        let control: UInt = ~0x3F  // MXCSR without its sticky exception flags
        let custom = original | 0x6000 | 0x8040  // round toward zero, flush-to-zero, denormals-are-zero
        #else
        let control: UInt = ~0
        let custom = original | (3 << 22) | (1 << 24)  // FPCR: round toward zero, flush-to-zero
        #endif
        sonora_fp_state_restore(custom)
        for uri in Self.featureNeeding {
            _ = try Self.render(uri, blockSize: 256)
        }
        let after = sonora_fp_state_save()
        sonora_fp_state_restore(original)
        #expect(after & control == custom & control, "mode \(String(after, radix: 16)), set \(String(custom, radix: 16))")
    }
}
