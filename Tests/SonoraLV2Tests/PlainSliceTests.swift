import SonoraCore
@testable import SonoraLV2
import SonoraUnits
import Testing

/// The plain slice (`LV2RunState.isPlain`): decided when the run state is built, taken while no
/// control change is in flight and host bypass is off and not fading. It must render exactly
/// what the general slice renders, through control changes, ramps and bypass on and off.
@Suite struct PlainSliceTests {
    @Test func onlyPluginsWithoutAtomsWorkerOrControlOutputsArePlain() throws {
        let amp = try Fixtures.unit("http://lv2plug.in/plugins/eg-amp", maximumFrames: 256)
        try amp.initialize()
        #expect(amp.run?.pointee.isPlain == true)
        let eq = try Fixtures.unit("http://gareus.org/oss/lv2/fil4#stereo", maximumFrames: 256)
        try eq.initialize()
        #expect(eq.run?.pointee.isPlain == false)  // atom ports
    }

    @Test func thePlainSliceRendersWhatTheGeneralSliceRenders() throws {
        let input = Array((0..<40).map { _ in Fixtures.input[0..<256] }.joined())
        func render(plainAllowed: Bool) throws -> [Float] {
            let unit = try Fixtures.unit("http://lv2plug.in/plugins/eg-amp", maximumFrames: 256)
            let gain = try unit.parameterID(symbol: "gain")
            return try unit.renderOffline(inputs: [[input]], blockSize: 256) { block, _ throws(AudioError) in
                if block == 0 && !plainAllowed { unit.run!.pointee.isPlain = false }
                if block == 5 { try unit.setControl("gain", to: -6, bufferOffset: 100) }
                if block == 12 { try unit.rampParameter(gain, from: -6, to: 3, duration: 700, bufferOffset: 30) }
                if block == 20 { try unit.setBypass(true) }
                if block == 28 { try unit.setBypass(false) }
                if block == 33 { try unit.setControl("gain", to: -12) }
            }[0][0]
        }
        let plain = try render(plainAllowed: true)
        let general = try render(plainAllowed: false)
        #expect(plain.count == 40 * 256)
        #expect(plain == general)
        // And the changes happened: −6 dB after block 5's offset, bypassed (the input) in block 24.
        #expect(abs(plain[6 * 256] - input[6 * 256] * 0.501187) < 1e-5)
        #expect(plain[24 * 256 + 10] == input[24 * 256 + 10])
    }
}
