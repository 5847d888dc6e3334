import SonoraCore
import SonoraTestSupport
import Testing
@testable import SonoraUnits

#if canImport(Glibc)
import Glibc
#endif

@Suite("3D mixer: metering, doppler, distance filter, reverb")
struct Mixer3DMeteringTests {
    @Test func metersFollowMeteringMode() throws {
        let unit = try makeMixer3D(inputs: 2)
        let source = Mixer3DToneSource(frequency: 0, amplitude: 0.5)
        try unit.setRenderCallback(RenderCallback(source), input: 1)
        try unit.setParameter(Mixer3DUnit.Parameter.gain, scope: .input, element: 1, to: -6)
        try unit.setParameter(Mixer3DUnit.Parameter.azimuth, scope: .input, element: 1, to: -90)
        #expect(try unit.parameterList(scope: .output).contains(Mixer3DUnit.Parameter.postAveragePower + 1))
        try unit.initialize()
        _ = try renderMixer3D(unit, cycles: 10, frames: 512, channels: 2)
        // Off by default: nothing measured.
        #expect(try unit.parameter(Mixer3DUnit.Parameter.preAveragePower, scope: .input, element: 1) == -120)
        try unit.setProperty(.meteringMode, scope: .input, element: 1, to: .flag(true))
        try unit.setProperty(.meteringMode, scope: .output, element: 0, to: .flag(true))
        _ = try renderMixer3D(unit, cycles: 200, frames: 512, channels: 2, startingAt: 10)
        let pre = try unit.parameter(Mixer3DUnit.Parameter.preAveragePower, scope: .input, element: 1)
        let post = try unit.parameter(Mixer3DUnit.Parameter.postAveragePower, scope: .input, element: 1)
        let left = try unit.parameter(Mixer3DUnit.Parameter.postAveragePower, scope: .output, element: 0)
        let right = try unit.parameter(Mixer3DUnit.Parameter.postPeakHoldLevel + 1, scope: .output, element: 0)
        #expect(abs(pre - -6.02) < 0.1, "pre \(pre)")
        #expect(abs(post - -12.04) < 0.1, "post \(post)")
        #expect(abs(left - -12.04) < 0.1, "left \(left)")
        #expect(right == -120)
        #expect(try unit.parameter(Mixer3DUnit.Parameter.preAveragePower, scope: .input, element: 0) == -120)
        #expect(AudioError.Code.of { try unit.setProperty(.meteringMode, scope: .global, element: 0, to: .flag(true)) } == .invalidScope)
        #expect(AudioError.Code.of { try unit.setProperty(.meteringMode, scope: .input, element: 2, to: .flag(true)) } == .invalidElement)
    }

    /// With the doppler flag, a source receding at 34.3 m/s plays 10 % low: c / (c + v).
    @Test func dopplerFollowsTheDistancesRateOfChange() throws {
        let unit = try makeMixer3D()
        let source = Mixer3DToneSource(frequency: 1000)
        try unit.setRenderCallback(RenderCallback(source), input: 0)
        try unit.setProperty(.renderingFlags, scope: .input, element: 0, to: .renderingFlags([.dopplerShift]))
        try unit.initialize()
        var left: [Float] = []
        for cycle in 0..<60 {
            let distance = 5 + 34.3 * Float(cycle * 512) / 48000
            try unit.setParameter(Mixer3DUnit.Parameter.distance, scope: .input, element: 0, to: distance)
            left += try renderFrames(unit, frames: 512, sampleTime: Double(cycle * 512))[0]
        }
        let measured = SignalMeasurement.frequency(of: Array(left[(30 * 512)...]), sampleRate: 48000)
        #expect(abs(measured / (1000 * 343 / (343 + 34.3)) - 1) < 2e-3, "\(measured) Hz")
    }

    /// The distance filter takes highs away with distance; lows stay.
    @Test func distanceFilterDarkensFarSources() throws {
        func level(_ frequency: Double, distance: Float) throws -> Double {
            let unit = try makeMixer3D()
            let source = Mixer3DToneSource(frequency: frequency)
            try unit.setRenderCallback(RenderCallback(source), input: 0)
            try unit.setProperty(.renderingFlags, scope: .input, element: 0, to: .renderingFlags([.distanceFilter]))
            try unit.setParameter(Mixer3DUnit.Parameter.distance, scope: .input, element: 0, to: distance)
            try unit.initialize()
            let out = try renderMixer3D(unit, cycles: 42, frames: 512, channels: 2)
            return SignalMeasurement.amplitude(of: out[0][2048..<21248], frequency: frequency, sampleRate: 48000)
        }
        let nearHigh = try level(5000, distance: 1), farHigh = try level(5000, distance: 201)
        let nearLow = try level(187.5, distance: 1), farLow = try level(187.5, distance: 201)
        // 200 m beyond the reference: 0.05 dB/m at 5 kHz.
        #expect(abs(SignalMeasurement.amplitudeDecibels(farHigh / nearHigh) - -10) < 0.05)
        #expect(abs(SignalMeasurement.amplitudeDecibels(farLow / nearLow)) < 0.1)
    }

    /// A reverb send leaves a tail after the source stops; none without a send.
    @Test func reverbBlendSendsToTheReverb() throws {
        func tail(blend: Float) throws -> Double {
            let unit = try makeMixer3D()
            final class Burst: RenderCallbackTarget {
                var served = 0
                override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
                    let out = request.pointee.buffers.samples(0)
                    for frame in 0..<request.pointee.frameCount { out[frame] = served + frame < 4800 ? (frame % 7 == 0 ? 0.5 : -0.1) : 0 }
                    served += request.pointee.frameCount
                    return .noError
                }
            }
            let burst = Burst()
            try unit.setRenderCallback(RenderCallback(burst), input: 0)
            try unit.setParameter(Mixer3DUnit.Parameter.reverbBlend, scope: .input, element: 0, to: blend)
            try unit.initialize()
            let out = try renderMixer3D(unit, cycles: 40, frames: 512, channels: 2)
            return SignalMeasurement.rms(out[0][9600..<19200]) + SignalMeasurement.rms(out[1][9600..<19200])
        }
        #expect(try tail(blend: 0) == 0)
        #expect(try tail(blend: 50) > 1e-3)
    }
}
