import SonoraCore
import Testing
@testable import SonoraUnits

/// `Mixer3DUnit.setInputParameter`: the cached fast path behaves as `setParameter` does.
@Suite("3D mixer: setInputParameter")
struct Mixer3DInputParameterTests {
    @Test func storesClampsAndRefusesAsSetParameterDoes() throws {
        let unit = try makeMixer3D(inputs: 3)
        typealias P = Mixer3DUnit.Parameter
        // First call (general path, fills the cache), then the cached path, on another element.
        try unit.setInputParameter(P.azimuth, element: 0, to: 45)
        try unit.setInputParameter(P.azimuth, element: 2, to: -30)
        #expect(try unit.parameter(P.azimuth, scope: .input, element: 0) == 45)
        #expect(try unit.parameter(P.azimuth, scope: .input, element: 2) == -30)
        #expect(try unit.parameter(P.azimuth, scope: .input, element: 1) == 0)
        // Clamped to the range; NaN gives the default, as the general path does.
        try unit.setInputParameter(P.gain, element: 1, to: 3)
        try unit.setInputParameter(P.gain, element: 1, to: 99)
        #expect(try unit.parameter(P.gain, scope: .input, element: 1) == 20)
        try unit.setInputParameter(P.gain, element: 1, to: .nan)
        #expect(try unit.parameter(P.gain, scope: .input, element: 1) == 0)
        // Bad element and unknown parameter throw, cached or not.
        #expect(throws: AudioError.self) { try unit.setInputParameter(P.azimuth, element: 3, to: 0) }
        #expect(throws: AudioError.self) { try unit.setInputParameter(P.globalReverbGain, element: 0, to: 0) }
    }

    /// While initialized the value reaches the render side: a hard-right source is heard right only.
    @Test func reachesTheRenderSide() throws {
        let unit = try makeMixer3D()
        final class Ones: RenderCallbackTarget {
            override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
                request.pointee.buffers.samples(0).update(repeating: 0.5, count: request.pointee.frameCount)
                return .noError
            }
        }
        let ones = Ones()
        try unit.setRenderCallback(RenderCallback(ones), input: 0)
        try unit.initialize()
        try unit.setInputParameter(Mixer3DUnit.Parameter.azimuth, element: 0, to: 0)
        try unit.setInputParameter(Mixer3DUnit.Parameter.azimuth, element: 0, to: 90)
        let out = try renderMixer3D(unit, cycles: 2, frames: 256, channels: 2)
        #expect(abs(out[0][511]) < 1e-6)
        #expect(out[1][511] > 0.1)
    }
}
