import Foundation
import SonoraCore
import SonoraLV2
import SonoraTestSupport
import SonoraUnits
import Testing

/// BypassEffect: through lv2:enabled where the plugin has it, else a host crossfade
/// that delays the dry signal by the plugin's latency.
@Suite struct BypassTests {
    static let ones = [Float](repeating: 1, count: 8192)

    @Test func hostCrossfadeReachesTheDrySignal() throws {
        let unit = try Fixtures.unit("http://lv2plug.in/plugins/eg-amp", maximumFrames: 512)
        try unit.setControl("gain", to: -20)
        let output = try unit.renderOffline(inputs: [[Self.ones]], blockSize: 512) { block, _ throws(AudioError) in
            if block == 4 { try unit.setBypass(true) }
            if block == 10 { try unit.setBypass(false) }
        }[0][0]
        #expect(abs(output[2047] - 0.1) < 1e-6)  // before: the plugin
        #expect(output[2048] > 0.1 && output[2048] < 0.12)  // the fade starts at once
        let fade = output[2048..<(2048 + 256)]
        #expect(zip(fade, fade.dropFirst()).allSatisfy { $0 <= $1 }, "crossfade is not monotonic")
        #expect(output[2048 + 256] == 1)  // bypassed: the input
        #expect(output[5119] == 1)
        #expect(abs(output[5120 + 300] - 0.1) < 1e-6)  // and back
    }

    @Test func dryPathIsDelayedByThePluginLatency() throws {
        let unit = try Fixtures.unit("http://gareus.org/oss/lv2/nodelay", maximumFrames: 256)
        try unit.setControl("delay", to: 100)
        let input = Fixtures.input
        let output = try unit.renderOffline(inputs: [[input]], blockSize: 256) { block, _ throws(AudioError) in
            if block == 8 { try unit.setBypass(true) }
        }[0][0]
        // Wet and dry are both the input 100 frames late, so the crossfade is inaudible.
        let start = 8 * 256
        for frame in (start - 200)..<(start + 2000) {
            #expect(abs(output[frame] - input[frame - 100]) < 1e-6, "frame \(frame)")
        }
    }

    @Test func enabledPortIsUsedWhenThePluginHasOne() throws {
        let unit = try Fixtures.unit("http://gareus.org/oss/lv2/fil4#stereo", maximumFrames: 512)
        try unit.setControl("gain", to: -18)
        let stereo = [Fixtures.input, Fixtures.input]
        try unit.setBypass(true)
        let output = try unit.renderOffline(inputs: [stereo], blockSize: 512)[0]
        // x42-eq fades to its input itself; after its fade the output is the input.
        #expect(SignalMeasurement.maximumDifference([Array(output[0][8000...])], [Array(Fixtures.input[8000...])]) < 1e-4)
        #expect(try unit.control("enable") == 1, "the parameter keeps the user's value")
    }
}
