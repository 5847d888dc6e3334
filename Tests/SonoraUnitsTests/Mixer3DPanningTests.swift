import SonoraCore
import SonoraTestSupport
import Testing
@testable import SonoraUnits

#if canImport(Glibc)
import Glibc
#endif

@Suite("3D mixer: placement laws")
struct Mixer3DPanningTests {
    /// A constant 1 in, rendered at `azimuth`: each output channel's value is its gain.
    func renderedGains(
        azimuth: Float, elevation: Float = 0, outputChannels: Int = 2, algorithm: Mixer3DUnit.SpatializationAlgorithm? = nil,
        gainDB: Float = 0
    ) throws -> [Float] {
        let unit = try makeMixer3D(outputChannels: outputChannels)
        let source = Mixer3DToneSource(frequency: 0, amplitude: 1)
        try unit.setRenderCallback(RenderCallback(source), input: 0)
        if let algorithm { try unit.setProperty(.spatializationAlgorithm, scope: .input, element: 0, to: .spatializationAlgorithm(algorithm)) }
        try unit.setParameter(Mixer3DUnit.Parameter.azimuth, scope: .input, element: 0, to: azimuth)
        try unit.setParameter(Mixer3DUnit.Parameter.elevation, scope: .input, element: 0, to: elevation)
        try unit.setParameter(Mixer3DUnit.Parameter.gain, scope: .input, element: 0, to: gainDB)
        try unit.initialize()
        defer { unit.uninitialize() }
        let out = try renderMixer3D(unit, cycles: 2, frames: 256, channels: outputChannels)
        // Constant within the render (no ramp when nothing moved).
        for channel in out { #expect(channel.allSatisfy { $0 == channel[0] }) }
        return out.map { $0[300] }
    }

    /// The closed form: pan p = azimuth/90 (folded behind), θ = (p + 1)·π/4, gains (cos θ, sin θ).
    @Test(arguments: [-90, -60, -45, -30, 0, 10, 30, 45, 60, 90] as [Float])
    func equalPowerGainsFollowTheClosedForm(azimuth: Float) throws {
        let gains = try renderedGains(azimuth: azimuth)
        let theta = (Double(azimuth) / 90 + 1) * Double.pi / 4
        #expect(abs(Double(gains[0]) - cos(theta)) < 1e-6, "left at \(azimuth)°: \(gains[0]) vs \(cos(theta))")
        #expect(abs(Double(gains[1]) - sin(theta)) < 1e-6, "right at \(azimuth)°: \(gains[1]) vs \(sin(theta))")
        #expect(abs(Double(gains[0] * gains[0] + gains[1] * gains[1]) - 1) < 1e-6)
    }

    @Test func behindFoldsOntoFront() throws {
        let behind = try renderedGains(azimuth: 120)
        let front = try renderedGains(azimuth: 60)
        #expect(abs(behind[0] - front[0]) < 1e-6 && abs(behind[1] - front[1]) < 1e-6)
        let hardLeft = try renderedGains(azimuth: -90)
        #expect(hardLeft[1] == 0 && abs(hardLeft[0] - 1) < 1e-7)
    }

    /// Gain in dB is exact: 10^(dB/20), what the OpenAL layer relies on.
    @Test(arguments: [-60, -20, -6, -3.5, 0, 6, 20] as [Float])
    func gainInDecibelsIsExact(decibels: Float) throws {
        let gains = try renderedGains(azimuth: 0, gainDB: decibels)
        let expected = Float(0.5.squareRoot()) * powf(10, decibels / 20)
        #expect(abs(gains[0] - expected) <= expected * 2e-6, "\(decibels) dB: \(gains[0]) vs \(expected)")
    }

    @Test func minusOneHundredTwentyDecibelsIsSilence() throws {
        #expect(try renderedGains(azimuth: 0, gainDB: -120) == [0, 0])
    }

    @Test func stereoPassThroughKeepsChannels() throws {
        let unit = try makeMixer3D(inputChannels: 2)
        final class LeftRight: RenderCallbackTarget {
            override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
                let buffers = request.pointee.buffers
                buffers.samples(0).update(repeating: 0.25, count: request.pointee.frameCount)
                buffers.samples(1).update(repeating: -0.5, count: request.pointee.frameCount)
                return .noError
            }
        }
        let source = LeftRight()
        try unit.setRenderCallback(RenderCallback(source), input: 0)
        try unit.setProperty(.spatializationAlgorithm, scope: .input, element: 0, to: .spatializationAlgorithm(.stereoPassThrough))
        try unit.setParameter(Mixer3DUnit.Parameter.azimuth, scope: .input, element: 0, to: 70)
        try unit.initialize()
        let out = try renderMixer3D(unit, cycles: 1, frames: 128, channels: 2)
        #expect(out[0].allSatisfy { $0 == 0.25 } && out[1].allSatisfy { $0 == -0.5 })
    }

    // MARK: Vector-based panning

    /// At a speaker's azimuth only that speaker plays, at full gain.
    @Test func vectorBasedPanningAtSpeakersUsesOneSpeaker() throws {
        for (channels, layout) in [(4, SpatialPanning.quadSpeakers), (6, SpatialPanning.surround51Speakers)] {
            for (speaker, azimuth) in layout.enumerated() {
                guard let azimuth else { continue }
                let gains = try renderedGains(azimuth: azimuth, outputChannels: channels)
                for (channel, gain) in gains.enumerated() {
                    #expect(abs(gain - (channel == speaker ? 1 : 0)) < 1e-6, "\(channels) ch, speaker \(speaker) at \(azimuth)°: channel \(channel) = \(gain)")
                }
            }
        }
    }

    /// Between two speakers: g = p·L⁻¹ normalized to unit power (the tangent law, with the
    /// pair's bisector as reference): tan φ / tan φ₀ = (g₂ − g₁)/(g₂ + g₁).
    @Test(arguments: [(4, -45 as Float, 45 as Float, 20 as Float), (4, 45, 135, 100), (6, -30, 0, -10), (6, 30, 110, 70), (6, 110, -110, 180), (6, -110, -30, -80)])
    func vectorBasedPanningBetweenSpeakersFollowsThePairLaw(channels: Int, first: Float, second: Float, azimuth: Float) throws {
        let layout = SpatialPanning.speakers(channels: channels)!
        let i1 = layout.firstIndex { $0 == first }!, i2 = layout.firstIndex { $0 == second }!
        let gains = try renderedGains(azimuth: azimuth, outputChannels: channels)
        // Closed form: solve [sin a1 sin a2; cos a1 cos a2]·g = [sin φ; cos φ].
        func rad(_ d: Float) -> Double { Double(d) * .pi / 180 }
        let (s1, c1, s2, c2) = (sin(rad(first)), cos(rad(first)), sin(rad(second)), cos(rad(second)))
        let det = s1 * c2 - s2 * c1
        var g1 = (sin(rad(azimuth)) * c2 - cos(rad(azimuth)) * s2) / det
        var g2 = (cos(rad(azimuth)) * s1 - sin(rad(azimuth)) * c1) / det
        let norm = (g1 * g1 + g2 * g2).squareRoot()
        g1 /= norm
        g2 /= norm
        #expect(abs(Double(gains[i1]) - g1) < 1e-5, "\(channels) ch at \(azimuth)°: \(gains) vs \(g1), \(g2)")
        #expect(abs(Double(gains[i2]) - g2) < 1e-5, "\(channels) ch at \(azimuth)°: \(gains) vs \(g1), \(g2)")
        for (channel, gain) in gains.enumerated() where channel != i1 && channel != i2 { #expect(gain == 0) }
    }

    @Test func vectorBasedPanningKeepsPowerWithElevation() throws {
        let gains = try renderedGains(azimuth: 50, elevation: 40, outputChannels: 6)
        let power = gains.reduce(0) { $0 + Double($1) * Double($1) }
        #expect(abs(power - 1) < 1e-5)
        #expect(gains[3] == 0)  // LFE
    }
}
