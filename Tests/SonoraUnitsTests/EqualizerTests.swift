import Foundation
import SonoraCore
import SonoraDSP
import Testing
@testable import SonoraUnits

@Suite("Equalizers")
struct EqualizerTests {
    /// Steady-state gain in dB of `unit` for a sine at `frequency`, measured from rendered samples.
    static func measuredGainDB(_ unit: AudioUnit, frequency: Double) throws -> Double {
        let rate = 48000.0
        final class Sine: RenderCallbackTarget {
            var oscillator: SineOscillator
            init(_ frequency: Double, _ rate: Double) { oscillator = SineOscillator(frequency: frequency, sampleRate: rate) }
            override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
                let buffers = request.pointee.buffers
                oscillator.render(into: buffers.samples(0), count: request.pointee.frameCount, amplitude: 0.5)
                for channel in 1..<buffers.channelCount {
                    copySamples(from: buffers.samples(0), to: buffers.samples(channel), count: request.pointee.frameCount)
                }
                return .noError
            }
        }
        unit.uninitialize()
        try unit.setRenderCallback(Sine(frequency, rate), input: 0)
        try unit.initialize()
        unit.reset()
        var output: [Float] = []
        let total = Int(rate)  // one second; the last 0.25 s is measured
        var rendered = 0
        while rendered < total {
            output += try renderFrames(unit, frames: 512, sampleTime: Double(rendered))[1]
            rendered += 512
        }
        let tail = output.suffix(12000)
        let rms = sqrt(tail.map { Double($0) * Double($0) }.reduce(0, +) / Double(tail.count))
        return 20 * log10(rms / (0.5 / 2.squareRoot()))
    }

    @Test func graphicEQPresetsMatchTheirAnalyticResponse() throws {
        let eq = GraphicEQUnit()
        #expect(eq.factoryPresets.count == 22)
        #expect(eq.factoryPresets.map(\.name).contains("Spoken Word"))
        #expect(eq.presentPreset?.name == "Flat")
        let rock = eq.factoryPresets.first { $0.name == "Rock" }!
        try eq.setProperty(.presentPreset, scope: .global, element: 0, to: .presentPreset(rock))
        #expect(eq.presentPreset == rock)
        #expect(try eq.parameter(0) == 5 && eq.parameter(9) == 4.5)
        for frequency in [40.0, 125, 700, 3000, 11000] {
            let measured = try Self.measuredGainDB(eq, frequency: frequency)
            let analytic = try eq.magnitudeDB(atFrequency: frequency)
            #expect(abs(measured - analytic) < 0.1, "\(frequency) Hz: measured \(measured) dB, analytic \(analytic) dB")
        }
        // The Bass Booster preset lifts the lows and leaves the highs.
        try eq.setPresentPreset(eq.factoryPresets.first { $0.name == "Bass Booster" }!)
        #expect(try eq.magnitudeDB(atFrequency: 40) > 5)
        #expect(try abs(eq.magnitudeDB(atFrequency: 10000)) < 0.2)
        #expect(AudioError.Code.of { try eq.setPresentPreset(AudioUnitPreset(number: 40, name: "Nope")) } == .invalidPropertyValue)
    }

    @Test func parametricEQMatchesTheCookbookFormulas() throws {
        let eq = ParametricEQUnit(bands: 3)
        typealias P = ParametricEQUnit.Parameter
        try eq.setParameter(P.filterType + 0, to: Float(ParametricEQUnit.FilterType.peaking.rawValue))
        try eq.setParameter(P.frequency + 0, to: 1000)
        try eq.setParameter(P.gain + 0, to: 9)
        try eq.setParameter(P.q + 0, to: 2)
        try eq.setParameter(P.filterType + 1, to: Float(ParametricEQUnit.FilterType.highShelf.rawValue))
        try eq.setParameter(P.frequency + 1, to: 6000)
        try eq.setParameter(P.gain + 1, to: -6)
        try eq.setParameter(P.filterType + 2, to: Float(ParametricEQUnit.FilterType.highPass.rawValue))
        try eq.setParameter(P.frequency + 2, to: 80)
        for frequency in [50.0, 200, 1000, 2500, 9000] {
            let measured = try Self.measuredGainDB(eq, frequency: frequency)
            let expected = BiquadCoefficients.peaking(frequency: 1000, q: 2, gainDB: 9, sampleRate: 48000).magnitudeDB(atFrequency: frequency, sampleRate: 48000)
                + BiquadCoefficients.highShelf(frequency: 6000, q: 0.7071, gainDB: -6, sampleRate: 48000).magnitudeDB(atFrequency: frequency, sampleRate: 48000)
                + BiquadCoefficients.highPass(frequency: 80, q: 0.7071, sampleRate: 48000).magnitudeDB(atFrequency: frequency, sampleRate: 48000)
            #expect(abs(measured - expected) < 0.1, "\(frequency) Hz: measured \(measured), expected \(expected)")
            #expect(abs(try eq.magnitudeDB(atFrequency: frequency) - expected) < 1e-3)
        }
        // Bypassing the peak removes its 9 dB at 1 kHz.
        try eq.setParameter(P.bypassBand + 0, to: 1)
        let bypassed = try Self.measuredGainDB(eq, frequency: 1000)
        #expect(abs(bypassed - (try eq.magnitudeDB(atFrequency: 1000))) < 0.1)
        #expect(bypassed < 1)
    }
}
