import Foundation
import SonoraCore
import SonoraTestSupport
import Testing
@testable import SonoraUnits

/// A converter's rate may change while it runs (varispeed by sample rate, as ported
/// programs do): no uninitialize, and the new ratio takes effect at the next render.
@Suite("Converter rate change while initialized", .serialized)
struct ConverterRateChangeTests {
    /// Zero crossings upwards per second in `samples` at `rate`.
    func frequency(_ samples: ArraySlice<Float>, rate: Double) -> Double {
        var crossings = 0
        var previous = samples.first ?? 0
        for sample in samples.dropFirst() {
            if previous < 0 && sample >= 0 { crossings += 1 }
            previous = sample
        }
        return Double(crossings) * rate / Double(samples.count)
    }

    @Test func settingTheInputRateWhileRenderingChangesThePitch() throws {
        let tone = ToneGeneratorUnit()
        try tone.setSampleRate(48000, scope: .global, element: 0)
        try tone.setParameter(ToneGeneratorUnit.Parameter.frequency, to: 1000)
        let converter = ConverterUnit()
        try converter.setMaximumFramesPerSlice(512)
        try tone.setMaximumFramesPerSlice(512)
        try converter.connect(input: 0, from: tone, bus: 0)
        let output = GenericOutputUnit()
        try output.setMaximumFramesPerSlice(512)
        try output.connect(input: 0, from: converter, bus: 0)
        for unit in [tone, converter, output] as [AudioUnit] { try unit.initialize() }
        let before = try output.renderOffline(frameCount: 48000, sliceFrames: 480)
        #expect(abs(frequency(before[0][4800...], rate: 48000) - 1000) < 5)

        // The input now counts as 24 kHz: each input sample lasts twice as long, an octave down.
        try converter.setSampleRate(24000, scope: .input, element: 0)
        #expect(converter.isInitialized)
        let after = try output.renderOffline(frameCount: 48000, sliceFrames: 480, startSampleTime: 48000)
        #expect(abs(frequency(after[0][4800...], rate: 48000) - 500) < 5)

        // And back to equal rates (no resampler), through StreamFormat as well.
        try converter.setStreamFormat(.canonical(sampleRate: 48000, channels: 2), scope: .input, element: 0)
        let again = try output.renderOffline(frameCount: 48000, sliceFrames: 480, startSampleTime: 96000)
        #expect(abs(frequency(again[0][4800...], rate: 48000) - 1000) < 5)

        // Other format changes still need uninitialize.
        #expect(AudioError.Code.of {
            try converter.setStreamFormat(.canonical(sampleRate: 48000, channels: 1), scope: .input, element: 0)
        } == .initialized)
        #expect(AudioError.Code.of { try GainUnit().initializedAndRated() } == .initialized)
    }
}

@Suite("No allocation when a converter takes a new rate", .serialized, .enabled(if: AllocationCounter.isAvailable))
struct ConverterRateChangeAllocationTests {
    @Test func theRenderSideTakesTheNewResamplerWithoutHeapCalls() throws {
        let tone = ToneGeneratorUnit()
        let converter = ConverterUnit()
        for unit in [tone, converter] as [AudioUnit] { try unit.setMaximumFramesPerSlice(256) }
        try converter.setStreamFormat(.canonical(sampleRate: 44100, channels: 2), scope: .input, element: 0)
        try tone.setSampleRate(44100, scope: .global, element: 0)
        try converter.connect(input: 0, from: tone, bus: 0)
        try tone.initialize()
        try converter.initialize()
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 256)
        func cycle(_ index: Int) -> AudioError.Code {
            var flags = RenderActionFlags()
            return converter.render(
                flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(index * 256)), bus: 0, frameCount: 256, into: buffers.list)
        }
        for index in 0..<50 { #expect(cycle(index) == .noError) }
        var heapCalls = 0
        var failures = 0
        for index in 50..<1050 {
            if index % 100 == 0 {
                // 44.1, 32, 48 (no resampler), … kHz in turn.
                try converter.setSampleRate([44100, 32000, 48000][index / 100 % 3], scope: .input, element: 0)
            }
            AllocationCounter.begin()
            if cycle(index) != .noError { failures += 1 }
            heapCalls += AllocationCounter.end()
        }
        #expect(failures == 0)
        #expect(heapCalls == 0, "\(heapCalls) heap calls in 1,000 cycles with 10 rate changes")
    }
}

private extension GainUnit {
    /// Units other than the converter keep Core Audio's rule: no rate change while initialized.
    func initializedAndRated() throws {
        try initialize()
        try setSampleRate(44100, scope: .global, element: 0)
    }
}
