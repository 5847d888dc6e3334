import Foundation
import SonoraCore
import SonoraTestSupport
import Testing
@testable import SonoraUnits

/// The built-in reverb (EFX's reverb parameters): its measured decay time is the parameter,
/// the HF ratio shortens the high band's decay, reflections arrive after the reflections
/// delay, a reset silences it, and rendering allocates nothing.
@Suite("Reverb unit: EFX reverb, measured")
struct ReverbUnitTests {
    typealias P = ReverbUnit.Parameter

    /// The impulse response, `seconds` long, in 512-frame renders.
    static func impulseResponse(_ parameters: [(AudioUnitParameterID, Float)], seconds: Double = 4, input: [Float]? = nil) throws -> [[Float]] {
        let unit = ReverbUnit()
        try unit.setMaximumFramesPerSlice(512)
        for (id, value) in parameters { try unit.setParameter(id, to: value) }
        let frames = Int(seconds * 48_000)
        let signal = input ?? [1] + [Float](repeating: 0, count: frames - 1)
        let source = SignalSource(signal)
        try unit.setRenderCallback(RenderCallback(source), input: 0)
        try unit.initialize()
        defer {
            unit.uninitialize()
            withExtendedLifetime(source) {}
        }
        var result: [[Float]] = [[], []]
        var done = 0
        while done < frames {
            let block = try renderFrames(unit, frames: 512, sampleTime: Double(done), channels: 2)
            result[0] += block[0]
            result[1] += block[1]
            done += 512
        }
        return result
    }

    @Test(arguments: [Float(0.5), 1.0, 2.0, 4.0])
    func decayTimeIsTheParameter(seconds: Float) throws {
        let response = try Self.impulseResponse([(P.decayTime, seconds), (P.decayHFRatio, 1)], seconds: Double(seconds) * 1.5 + 0.5)
        let measured = try #require(DecayMeasurement.decayTime(response, sampleRate: 48_000, range: 20))
        #expect(abs(measured / Double(seconds) - 1) < 0.05, "T20 \(measured) s for \(seconds) s")
    }

    /// With an HF ratio of 0.4 the band above 5 kHz decays in well under the broadband time.
    @Test func hfRatioShortensTheHighBand() throws {
        let response = try Self.impulseResponse([(P.decayTime, 2), (P.decayHFRatio, 0.4)], seconds: 3.5)
        let broadband = try #require(DecayMeasurement.decayTime(response, sampleRate: 48_000))
        // Crude high band: first differences (a +6 dB/octave tilt that favours the highs).
        let highs = response.map { channel in zip(channel.dropFirst(), channel).map { $0 - $1 } }
        let high = try #require(DecayMeasurement.decayTime(highs, sampleRate: 48_000))
        #expect(high < 0.75 * broadband, "high band \(high) s, broadband \(broadband) s")
        // The broadband curve falls faster too (the highs go first): between the two.
        #expect(broadband > high && broadband < 2.1, "broadband \(broadband) s")
    }

    @Test func nothingComesOutBeforeTheReflectionsDelay() throws {
        let response = try Self.impulseResponse([(P.reflectionsDelay, 0.05), (P.lateReverbDelay, 0.02)], seconds: 0.5)
        let first = response.map { channel in channel.firstIndex { abs($0) > 1e-9 } ?? .max }.min()!
        #expect(first == 2_400, "first output at frame \(first)")
    }

    /// Late energy follows decay time (a fixed onset level): twice the decay, about twice the
    /// energy: +3 dB give or take what the network's finite line lengths add (3.7 dB measured).
    @Test func lateEnergyGrowsWithDecayTime() throws {
        let short = DecayMeasurement.energy(try Self.impulseResponse([(P.decayTime, 1), (P.decayHFRatio, 1), (P.reflectionsGain, 0)], seconds: 3))
        let long = DecayMeasurement.energy(try Self.impulseResponse([(P.decayTime, 2), (P.decayHFRatio, 1), (P.reflectionsGain, 0)], seconds: 5))
        let gain = 10 * log10(long / short)
        #expect(gain > 2 && gain < 4.5, "\(gain) dB")
    }
}

@Suite("Reverb unit: no heap call while rendering", .serialized, .enabled(if: AllocationCounter.isAvailable))
struct ReverbUnitAllocationTests {
    @Test func rendersAndChangesParametersWithoutHeapCalls() throws {
        let unit = ReverbUnit()
        try unit.setMaximumFramesPerSlice(256)
        let source = SignalSource((0..<48_000).map { Float(sin(Double($0) * 0.05)) * 0.3 })
        try unit.setRenderCallback(RenderCallback(source), input: 0)
        try unit.initialize()
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 256)
        var heapCalls = 0
        for index in 0..<400 {
            try unit.setParameter(ReverbUnit.Parameter.decayTime, to: 0.5 + Float(index % 30) / 10)
            try unit.setParameter(ReverbUnit.Parameter.density, to: Float(index % 10) / 10)
            var flags = RenderActionFlags()
            if index >= 50 { AllocationCounter.begin() }
            let status = unit.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(index * 256)), bus: 0, frameCount: 256, into: buffers.list)
            if index >= 50 { heapCalls += AllocationCounter.end() }
            #expect(status == .noError)
        }
        #expect(heapCalls == 0)
        withExtendedLifetime(source) {}
    }
}

/// Plays `samples` once (then silence) into whatever channels are asked for.
final class SignalSource: RenderCallbackTarget {
    let samples: [Float]
    var position = 0
    init(_ samples: [Float]) { self.samples = samples }

    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        let buffers = request.pointee.buffers
        let frames = request.pointee.frameCount
        for channel in 0..<buffers.channelCount {
            let out = buffers.samples(channel)
            for frame in 0..<frames {
                let index = position + frame
                out[frame] = index < samples.count ? samples[index] : 0
            }
        }
        position += frames
        return .noError
    }
}
