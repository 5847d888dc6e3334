import SonoraCore
import SonoraDSP
import SonoraTestSupport
import Testing
@testable import SonoraUnits

#if canImport(Glibc)
import Glibc
#endif

@Suite("3D mixer: spherical head")
struct Mixer3DHeadTests {
    /// Phase (radians) of `samples` against sin(ωn), n counted from `start`.
    func phase(_ samples: ArraySlice<Float>, omega: Double, start: Int) -> Double {
        var s = 0.0, c = 0.0
        for (offset, x) in samples.enumerated() {
            let n = Double(start + offset)
            s += Double(x) * sin(omega * n)
            c += Double(x) * cos(omega * n)
        }
        return atan2(c, s)
    }

    /// Phase (radians) of a first-order filter's response at ω.
    func filterPhase(_ coefficients: BiquadCoefficients, omega: Double) -> Double {
        let nr = coefficients.b0 + coefficients.b1 * cos(omega), ni = -coefficients.b1 * sin(omega)
        let dr = 1 + coefficients.a1 * cos(omega), di = -coefficients.a1 * sin(omega)
        return atan2(ni, nr) - atan2(di, dr)
    }

    /// The far ear hears a 375 Hz tone later by Woodworth's (a/c)(θ + sin θ)·fs samples, once the
    /// head-shadow filters' own phase is taken out.
    @Test(arguments: [0, 15, 30, 45, 60, 90, -20, -75, 150] as [Float])
    func interauralDelayIsWoodworths(azimuth: Float) throws {
        let unit = try makeMixer3D()
        let source = Mixer3DToneSource(frequency: 375)
        try unit.setRenderCallback(RenderCallback(source), input: 0)
        try unit.setProperty(.spatializationAlgorithm, scope: .input, element: 0, to: .spatializationAlgorithm(.sphericalHead))
        try unit.setParameter(Mixer3DUnit.Parameter.azimuth, scope: .input, element: 0, to: azimuth)
        try unit.initialize()
        let out = try renderMixer3D(unit, cycles: 16, frames: 512, channels: 2)
        let omega = 2 * Double.pi * 375 / 48000
        let window = 4096..<8192  // 32 whole cycles
        let left = phase(out[0][window], omega: omega, start: window.lowerBound)
        let right = phase(out[1][window], omega: omega, start: window.lowerBound)
        func shadow(_ ear: Double) -> BiquadCoefficients {
            let theta = SpatialPanning.incidence(azimuth: azimuth, elevation: 0, ear: ear)
            return SpatialPanning.headShadowCoefficients(alpha: SpatialPanning.headShadowAlpha(incidence: theta), sampleRate: 48000)
        }
        var difference = (left - filterPhase(shadow(-1), omega: omega)) - (right - filterPhase(shadow(1), omega: omega))
        while difference > .pi { difference -= 2 * .pi }
        while difference <= -.pi { difference += 2 * .pi }
        let measured = -difference / omega  // left delay − right delay, samples
        // Closed form, from the azimuth alone (folded to the lateral angle).
        var lateral = Double(azimuth) * .pi / 180
        if lateral > .pi / 2 { lateral = .pi - lateral }
        if lateral < -.pi / 2 { lateral = -.pi - lateral }
        let woodworth = 0.0875 / 343 * (abs(lateral) + sin(abs(lateral))) * 48000
        let expected = lateral >= 0 ? woodworth : -woodworth
        #expect(abs(measured - expected) < 0.02, "azimuth \(azimuth)°: \(measured) samples, Woodworth \(expected)")
    }

    /// Brown–Duda's shadow: unity at DC, α at high frequencies, +6 dB facing the ear, −20 dB at 150°.
    @Test func headShadowFollowsBrownDuda() {
        #expect(abs(SpatialPanning.headShadowAlpha(incidence: 0) - 2) < 1e-12)
        #expect(abs(SpatialPanning.headShadowAlpha(incidence: 150 * .pi / 180) - 0.1) < 1e-12)
        for alpha in [0.1, 0.5, 1, 2] {
            let filter = SpatialPanning.headShadowCoefficients(alpha: alpha, sampleRate: 48000)
            #expect(abs(filter.magnitude(atFrequency: 1, sampleRate: 48000) - 1) < 1e-4)
            // At ω₀ the analog response is |1 + jα/2| / |1 + j/2| (the transform is prewarped there).
            let f0 = 343 / 0.0875 / (2 * Double.pi)
            let analog = (1 + alpha * alpha / 4).squareRoot() / (1 + 0.25).squareRoot()
            #expect(abs(filter.magnitude(atFrequency: f0, sampleRate: 48000) - analog) < 1e-9)
        }
    }

    /// A source swept round the head changes smoothly: no sample step larger than the tone's own
    /// largest step (plus a little for the moving delay), in either ear, for both placements.
    @Test(arguments: [Mixer3DUnit.SpatializationAlgorithm.sphericalHead, .equalPowerPanning])
    func aMovingSourceIsSmooth(algorithm: Mixer3DUnit.SpatializationAlgorithm) throws {
        let unit = try makeMixer3D()
        let source = Mixer3DToneSource(frequency: 440)
        try unit.setRenderCallback(RenderCallback(source), input: 0)
        try unit.setProperty(.spatializationAlgorithm, scope: .input, element: 0, to: .spatializationAlgorithm(algorithm))
        try unit.initialize()
        var out: [[Float]] = [[], []]
        // Once round in 2 s, in 256-frame blocks.
        let cycles = 375
        for cycle in 0..<cycles {
            var azimuth = Float(cycle) * 360 / Float(cycles)
            if azimuth > 180 { azimuth -= 360 }
            try unit.setParameter(Mixer3DUnit.Parameter.azimuth, scope: .input, element: 0, to: azimuth)
            let block = try renderFrames(unit, frames: 256, sampleTime: Double(cycle * 256))
            out[0] += block[0]
            out[1] += block[1]
        }
        let toneStep = 0.5 * 2 * Float.pi * 440 / 48000
        for channel in 0..<2 {
            var largest: Float = 0
            for n in 1..<out[channel].count { largest = max(largest, abs(out[channel][n] - out[channel][n - 1])) }
            // The shadow filter lifts highs by up to 6 dB facing the ear: allow the tone's step × 1.3.
            #expect(largest < toneStep * 1.3, "\(algorithm) channel \(channel): step \(largest), tone's \(toneStep)")
        }
    }

    /// Back to the spherical head after another placement: the far ear starts from silence (an
    /// empty delay line), not from samples left in the line when the head was last used.
    @Test func returningToTheHeadStartsFromAnEmptyDelayLine() throws {
        let unit = try makeMixer3D()
        let source = Mixer3DToneSource(frequency: 440)
        try unit.setRenderCallback(RenderCallback(source), input: 0)
        try unit.setParameter(Mixer3DUnit.Parameter.azimuth, scope: .input, element: 0, to: 90)
        func use(_ algorithm: Mixer3DUnit.SpatializationAlgorithm) throws {
            try unit.setProperty(.spatializationAlgorithm, scope: .input, element: 0, to: .spatializationAlgorithm(algorithm))
        }
        try use(.sphericalHead)
        try unit.initialize()
        _ = try renderMixer3D(unit, cycles: 4, frames: 256, channels: 2)
        try use(.equalPowerPanning)
        _ = try renderMixer3D(unit, cycles: 3, frames: 256, channels: 2, startingAt: 4)
        try use(.sphericalHead)
        let back = try renderFrames(unit, frames: 256, sampleTime: 7 * 256)
        let delay = Int(SpatialPanning.interauralDelay(azimuth: 90, elevation: 0) * 48000)
        // The left (far) ear hears nothing for the interaural delay (plus the line's one sample).
        #expect(back[0][0..<delay].allSatisfy { $0 == 0 }, "\(back[0][0..<8])")
        #expect(back[0][(delay + 4)...].contains { abs($0) > 0.01 })
        #expect(abs(back[1][1]) > 0 || abs(back[1][2]) > 0)
    }
}
