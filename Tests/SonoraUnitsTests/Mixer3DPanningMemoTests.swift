import Foundation
import SonoraCore
import SonoraTestSupport
import Testing
@testable import SonoraUnits

/// An input reuses its last equal-power gains and its last linear gain while its direction
/// and gain dB stay the same: moving away and back, or changing the gain and back, lands on
/// the closed-form values again (the memo follows every change, including a return).
@Suite("3D mixer: equal-power and gain memo")
struct Mixer3DPanningMemoTests {
    typealias P = Mixer3DUnit.Parameter

    /// The last frame of a 512-frame slice after each (azimuth, elevation, gain dB) step, a
    /// constant 0.5 input (the slice ramps to the step's gains, so its last frame is at them).
    func steadyGains(_ steps: [(Float, Float, Float)], channels: Int = 1) throws -> [(Float, Float)] {
        let unit = try makeMixer3D(inputs: 1, inputChannels: channels)
        let source = Mixer3DToneSource(frequency: 0, amplitude: 0.5)
        defer { withExtendedLifetime(source) {} }
        try unit.setRenderCallback(RenderCallback(source), input: 0)
        try unit.setProperty(.renderingFlags, scope: .input, element: 0, to: .renderingFlags([]))
        try unit.initialize()
        var result: [(Float, Float)] = []
        for (index, (azimuth, elevation, gain)) in steps.enumerated() {
            try unit.setParameter(P.azimuth, scope: .input, element: 0, to: azimuth)
            try unit.setParameter(P.elevation, scope: .input, element: 0, to: elevation)
            try unit.setParameter(P.gain, scope: .input, element: 0, to: gain)
            let block = try renderFrames(unit, frames: 512, sampleTime: Double(index * 512), channels: 2)
            result.append((block[0][511], block[1][511]))
        }
        return result
    }

    @Test func returningToADirectionOrGainGivesItsClosedFormGains() throws {
        let steps: [(Float, Float, Float)] = [
            (30, 0, 0), (30, 0, 0), (-60, 10, 0), (30, 0, 0), (30, 0, -6), (30, 0, 0), (30, 0, -6), (30, 0, -6), (90, 0, -6),
        ]
        let measured = try steadyGains(steps)
        for ((azimuth, elevation, gain), (left, right)) in zip(steps, measured) {
            let (l, r) = SpatialPanning.equalPowerGains(azimuth: azimuth, elevation: elevation)
            let linear = powf(10, gain / 20)
            #expect(abs(left - 0.5 * l * linear) < 1e-6 && abs(right - 0.5 * r * linear) < 1e-6,
                    "azimuth \(azimuth), elevation \(elevation), \(gain) dB: \(left), \(right)")
        }
    }

    /// A stereo input's two channels sit at their own azimuths: each keeps its own memo.
    @Test func stereoChannelsKeepTheirOwnGains() throws {
        let steps: [(Float, Float, Float)] = [(0, 0, 0), (0, 0, 0), (40, 0, 0), (0, 0, 0)]
        let measured = try steadyGains(steps, channels: 2)
        for ((azimuth, elevation, _), (left, right)) in zip(steps, measured) {
            let first = SpatialPanning.equalPowerGains(azimuth: azimuth - 30, elevation: elevation)
            let second = SpatialPanning.equalPowerGains(azimuth: azimuth + 30, elevation: elevation)
            #expect(abs(left - 0.5 * (first.left + second.left)) < 1e-6 && abs(right - 0.5 * (first.right + second.right)) < 1e-6,
                    "azimuth \(azimuth): \(left), \(right)")
        }
    }
}
