import SonoraCore
import SonoraTestSupport
import Testing
@testable import SonoraUnits

#if canImport(Glibc)
import Glibc
#endif

@Suite("3D mixer: distance, gain clamps, occlusion and obstruction")
struct Mixer3DDistanceTests {
    /// The gain a centred constant-1 source gets at `distance` (left = right = gain·√½).
    func renderedGain(
        distance: Float, curve: Mixer3DUnit.AttenuationCurve = .inverse, flags: Mixer3DUnit.RenderingFlags = .defaults,
        parameters: Mixer3DUnit.DistanceParameters = .init(referenceDistance: 2, maximumDistance: 40, maximumAttenuation: 60),
        minimumDB: Float = -120, maximumDB: Float = 20, gainDB: Float = 0
    ) throws -> Double {
        let unit = try makeMixer3D()
        let source = Mixer3DToneSource(frequency: 0, amplitude: 1)
        try unit.setRenderCallback(RenderCallback(source), input: 0)
        try unit.setProperty(.attenuationCurve, scope: .input, element: 0, to: .attenuationCurve(curve))
        try unit.setProperty(.renderingFlags, scope: .input, element: 0, to: .renderingFlags(flags))
        try unit.setProperty(.distanceParameters, scope: .input, element: 0, to: .distanceParameters(parameters))
        try unit.setParameter(Mixer3DUnit.Parameter.distance, scope: .input, element: 0, to: distance)
        try unit.setParameter(Mixer3DUnit.Parameter.minimumGain, scope: .input, element: 0, to: minimumDB)
        try unit.setParameter(Mixer3DUnit.Parameter.maximumGain, scope: .input, element: 0, to: maximumDB)
        try unit.setParameter(Mixer3DUnit.Parameter.gain, scope: .input, element: 0, to: gainDB)
        try unit.initialize()
        let out = try renderFrames(unit, frames: 256)
        return Double(out[0][100]) / 0.5.squareRoot()
    }

    /// Each curve's closed form, r = 2 m, m = 40 m, distances clamped into r…m.
    @Test(arguments: [0.5, 2, 3, 8, 20, 40, 100] as [Float])
    func curvesFollowTheirClosedForms(distance: Float) throws {
        let r = 2.0, m = 40.0
        let d = min(max(Double(distance), r), m)
        let expected: [(Mixer3DUnit.AttenuationCurve, Double)] = [
            (.inverse, r / (r + (d - r))), (.exponential, pow(d / r, -1)), (.linear, 1 - (d - r) / (m - r)), (.power, (r / d).squareRoot()),
        ]
        for (curve, gain) in expected {
            let floor = pow(10, -60.0 / 20)
            let measured = try renderedGain(distance: distance, curve: curve)
            #expect(abs(measured - max(gain, floor)) < 2e-6, "\(curve) at \(distance) m: \(measured) vs \(gain)")
        }
    }

    @Test func maximumAttenuationFloorsTheCurve() throws {
        let parameters = Mixer3DUnit.DistanceParameters(referenceDistance: 1, maximumDistance: 1000, maximumAttenuation: 20)
        let gain = try renderedGain(distance: 500, parameters: parameters)
        #expect(abs(gain - 0.1) < 1e-6)
    }

    @Test func linearFlagSelectsTheLinearCurve() throws {
        let gain = try renderedGain(distance: 21, curve: .inverse, flags: [.distanceAttenuation, .linearDistanceAttenuation])
        #expect(abs(gain - 0.5) < 1e-6)
    }

    /// Without the flag (the OpenAL layer's way) distance changes nothing: gain is exactly the dB asked for.
    @Test func attenuationOffLeavesGainExact() throws {
        let gain = try renderedGain(distance: 30, flags: [], gainDB: -7.25)
        #expect(abs(gain - pow(10, -7.25 / 20)) < 1e-6)
    }

    @Test func minimumAndMaximumGainClamp() throws {
        // 20 m inverse from 2 m: −20 dB, held at −12 dB by the minimum.
        #expect(abs(try renderedGain(distance: 20, minimumDB: -12) - pow(10, -12.0 / 20)) < 1e-6)
        // +10 dB asked for, at most +3 dB.
        #expect(abs(try renderedGain(distance: 1, maximumDB: 3, gainDB: 10) - pow(10, 3.0 / 20)) < 1e-6)
    }

    /// Amplitude of tones at `frequencies` through an input with the given attenuations.
    func toneLevels(_ frequencies: [Double], obstruction: Float = 0, occlusion: Float = 0) throws -> [Double] {
        try frequencies.map { frequency in
            let unit = try makeMixer3D()
            let source = Mixer3DToneSource(frequency: frequency, amplitude: 0.5)
            try unit.setRenderCallback(RenderCallback(source), input: 0)
            try unit.setParameter(Mixer3DUnit.Parameter.obstructionAttenuation, scope: .input, element: 0, to: obstruction)
            try unit.setParameter(Mixer3DUnit.Parameter.occlusionAttenuation, scope: .input, element: 0, to: occlusion)
            try unit.initialize()
            let out = try renderMixer3D(unit, cycles: 42, frames: 512, channels: 2)
            return SignalMeasurement.amplitude(of: out[0][2048..<21248], frequency: frequency, sampleRate: 48000)
        }
    }

    /// Obstruction lowers highs more than lows, and by exactly its value at 5 kHz.
    @Test(arguments: [-6, -20, -40] as [Float])
    func obstructionLowersHighsMoreThanLows(decibels: Float) throws {
        let frequencies = [187.5, 1000, 5000, 9000]
        let open = try toneLevels(frequencies)
        let obstructed = try toneLevels(frequencies, obstruction: decibels)
        let drops = zip(obstructed, open).map { SignalMeasurement.amplitudeDecibels($0 / $1) }
        #expect(drops[0] > drops[1] && drops[1] > drops[2] && drops[2] > drops[3], "\(drops)")
        #expect(abs(drops[2] - Double(decibels)) < 0.05, "at 5 kHz: \(drops[2]) dB for \(decibels)")
        let occluded = try toneLevels([5000], occlusion: decibels)
        #expect(abs(SignalMeasurement.amplitudeDecibels(occluded[0] / open[2]) - Double(decibels)) < 0.05)
    }
}
