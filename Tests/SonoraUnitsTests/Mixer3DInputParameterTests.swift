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

    /// `setInputParameters`: the changes made as one `setInputParameter` each would, in order
    /// (clamped, NaN to the default, others untouched), and heard on the render side.
    @Test func batchSetsTheMaskedValuesAsSingleCallsDo() throws {
        typealias P = Mixer3DUnit.Parameter
        final class Ones: RenderCallbackTarget {
            override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
                request.pointee.buffers.samples(0).update(repeating: 0.5, count: request.pointee.frameCount)
                return .noError
            }
        }
        let ids = [P.azimuth, P.elevation, P.distance, P.gain]
        let values: [Float] = [90, .nan, 7, 99]
        var outputs: [[[Float]]] = []
        var stored: [[Float]] = []
        for batched in [false, true] {
            let unit = try makeMixer3D(inputs: 2)
            let ones = Ones()
            try unit.setRenderCallback(RenderCallback(ones), input: 1)
            try unit.initialize()
            try unit.setInputParameter(P.gain, element: 1, to: -6)
            let resolved = try ids.map { id throws(AudioError) in try unit.resolveInputParameter(id) }
            // Azimuth, elevation and gain (not the distance), the azimuth twice: the last counts.
            let order = [0, 1, 0, 3]
            if batched {
                let changes = order.map { Mixer3DUnit.InputParameterChange(resolved[$0], element: 1, value: values[$0]) }
                try changes.withUnsafeBufferPointer { try unit.setInputParameters($0) }
            } else {
                for index in order { try unit.setInputParameter(resolved[index], element: 1, to: values[index]) }
            }
            stored.append(try ids.map { id throws(AudioError) in try unit.parameter(id, scope: .input, element: 1) })
            outputs.append(try renderMixer3D(unit, cycles: 2, frames: 256, channels: 2))
            #expect(try unit.parameter(P.azimuth, scope: .input, element: 0) == 0, "another element untouched")
        }
        #expect(stored[1] == [90, 0, 1, 20], "NaN to the default, the distance (not in the mask) left at its default, the gain clamped")
        #expect(stored[0] == stored[1])
        #expect(outputs[0] == outputs[1])
        #expect(abs(outputs[1][0][511]) < 1e-6 && outputs[1][1][511] > 0.1, "hard right")
    }

    /// An element out of range sends the batch the single way, which throws at it (the
    /// changes before it made).
    @Test func batchRefusesABadElement() throws {
        let unit = try makeMixer3D(inputs: 1)
        let azimuth = try unit.resolveInputParameter(Mixer3DUnit.Parameter.azimuth)
        let changes = [Mixer3DUnit.InputParameterChange(azimuth, element: 0, value: 10), .init(azimuth, element: 1, value: 20)]
        #expect(throws: AudioError.self) { try changes.withUnsafeBufferPointer { try unit.setInputParameters($0) } }
        #expect(try unit.parameter(Mixer3DUnit.Parameter.azimuth, scope: .input, element: 0) == 10)
    }
}
