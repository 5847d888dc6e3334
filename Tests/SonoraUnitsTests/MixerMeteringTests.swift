import Foundation
import SonoraCore
import SonoraTestSupport
import Testing
@testable import SonoraUnits

/// Feeds each channel its own constant level.
final class ChannelLevelSource: RenderCallbackTarget {
    let levels: [Float]

    init(_ levels: [Float]) { self.levels = levels }

    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        let buffers = request.pointee.buffers
        for channel in 0..<buffers.channelCount {
            buffers.samples(channel).update(repeating: levels[channel % levels.count], count: request.pointee.frameCount)
        }
        return .noError
    }
}

@Suite("Mixer metering (MeteringMode, every channel)")
struct MixerMeteringTests {
    typealias Parameter = MultiChannelMixerUnit.Parameter
    static let channels = 8

    /// A mixer with two 8-channel inputs and an 8-channel output.
    func eightChannelMixer() throws -> (MultiChannelMixerUnit, [Float], [Float]) {
        let mixer = MultiChannelMixerUnit(inputs: 2)
        let format = StreamFormat.canonical(sampleRate: 48000, channels: Self.channels)
        for element in 0..<2 { try mixer.setStreamFormat(format, scope: .input, element: element) }
        try mixer.setStreamFormat(format, scope: .output, element: 0)
        let first = (0..<Self.channels).map { Float($0 + 1) / 10 }  // 0.1 … 0.8
        let second = (0..<Self.channels).map { Float(Self.channels - $0) / 40 }  // 0.2 … 0.025
        try mixer.setRenderCallback(ChannelLevelSource(first), input: 0)
        try mixer.setRenderCallback(ChannelLevelSource(second), input: 1)
        try mixer.setParameter(Parameter.volume, scope: .input, element: 1, to: 0.5)
        return (mixer, first, second)
    }

    func decibels(_ linear: Float) -> Float { 20 * log10(linear) }

    @Test func everyChannelOfAnEightChannelMixerIsMeteredAtItsOwnLevel() throws {
        let (mixer, first, second) = try eightChannelMixer()
        for element in 0..<2 { try mixer.setProperty(.meteringMode, scope: .input, element: element, to: .flag(true)) }
        try mixer.setProperty(.meteringMode, scope: .output, element: 0, to: .flag(true))
        try mixer.initialize()
        _ = try renderFrames(mixer, frames: 256, channels: Self.channels)
        for channel in 0..<Self.channels {
            let id = AudioUnitParameterID(channel)
            for (element, levels, volume) in [(0, first, Float(1)), (1, second, Float(0.5))] {
                let prePeak = try mixer.parameter(Parameter.prePeakHoldLevel + id, scope: .input, element: element)
                #expect(abs(prePeak - decibels(levels[channel])) < 0.01, "input \(element) channel \(channel) pre peak \(prePeak)")
                let postPeak = try mixer.parameter(Parameter.postPeakHoldLevel + id, scope: .input, element: element)
                #expect(abs(postPeak - decibels(levels[channel] * volume)) < 0.01, "input \(element) channel \(channel) post peak \(postPeak)")
                // One block of a constant: the average is its power weighted once by the 0.3 s smoothing.
                let weight = 1 - exp(-256.0 / (0.3 * 48000))
                let preAverage = try mixer.parameter(Parameter.preAveragePower + id, scope: .input, element: element)
                let expected = 10 * log10(Double(levels[channel] * levels[channel]) * weight)
                #expect(abs(Double(preAverage) - expected) < 0.01, "input \(element) channel \(channel) pre average \(preAverage)")
            }
            let outputPeak = try mixer.parameter(Parameter.postPeakHoldLevel + id, scope: .output, element: 0)
            #expect(abs(outputPeak - decibels(first[channel] + 0.5 * second[channel])) < 0.01, "output channel \(channel) peak \(outputPeak)")
        }
    }

    @Test func meteringIsOffByDefaultAndSwitchesPerElementWhileInitialized() throws {
        let (mixer, first, _) = try eightChannelMixer()
        #expect(try mixer.propertyInfo(.meteringMode, scope: .input, element: 1) == AudioUnitPropertyInfo(size: 4, isWritable: true))
        if case .flag(let on) = try mixer.property(.meteringMode, scope: .input, element: 0) { #expect(!on) } else { Issue.record("not a flag") }
        try mixer.initialize()
        _ = try renderFrames(mixer, frames: 256, channels: Self.channels)
        #expect(try mixer.parameter(Parameter.prePeakHoldLevel + 7, scope: .input, element: 0) == -120)
        // Switched on while initialized, for input 0 only.
        try mixer.setProperty(.meteringMode, scope: .input, element: 0, to: .flag(true))
        if case .flag(let on) = try mixer.property(.meteringMode, scope: .input, element: 0) { #expect(on) } else { Issue.record("not a flag") }
        _ = try renderFrames(mixer, frames: 256, sampleTime: 256, channels: Self.channels)
        #expect(abs(try mixer.parameter(Parameter.prePeakHoldLevel + 7, scope: .input, element: 0) - decibels(first[7])) < 0.01)
        #expect(try mixer.parameter(Parameter.prePeakHoldLevel + 7, scope: .input, element: 1) == -120)
        #expect(try mixer.parameter(Parameter.postPeakHoldLevel + 7, scope: .output, element: 0) == -120)
        // Off again: the meters fall to the floor rather than freezing.
        try mixer.setProperty(.meteringMode, scope: .input, element: 0, to: .flag(false))
        _ = try renderFrames(mixer, frames: 256, sampleTime: 512, channels: Self.channels)
        #expect(try mixer.parameter(Parameter.prePeakHoldLevel + 7, scope: .input, element: 0) == -120)
    }

    @Test func meteringModeAddressesAreChecked() throws {
        let mixer = MultiChannelMixerUnit(inputs: 2)
        #expect(AudioError.Code.of { _ = try mixer.property(.meteringMode, scope: .input, element: 2) } == .invalidElement)
        #expect(AudioError.Code.of { _ = try mixer.property(.meteringMode, scope: .global, element: 0) } == .invalidScope)
        #expect(AudioError.Code.of { try mixer.setProperty(.meteringMode, scope: .output, element: 0, to: .bypass(true)) } == .invalidPropertyValue)
        // Units without meters do not have the property.
        #expect(AudioError.Code.of { _ = try GainUnit().property(.meteringMode, scope: .input, element: 0) } == .invalidProperty)
    }

    @Test func meterParametersFollowTheChannelCount() throws {
        let (mixer, _, _) = try eightChannelMixer()
        let inputIDs = try mixer.parameterList(scope: .input)
        for channel in 0..<Self.channels {
            #expect(inputIDs.contains(Parameter.preAveragePower + AudioUnitParameterID(channel)))
            #expect(inputIDs.contains(Parameter.postPeakHoldLevel + AudioUnitParameterID(channel)))
        }
        #expect(!inputIDs.contains(Parameter.preAveragePower + 8))
        #expect(try mixer.parameterList(scope: .output).contains(Parameter.postPeakHoldLevel + 7))
        // Values set before a format change survive it.
        #expect(abs(try mixer.parameter(Parameter.volume, scope: .input, element: 1) - 0.5) < 1e-6)
    }
}

@Suite("No allocation while a metering mixer renders", .serialized, .enabled(if: AllocationCounter.isAvailable))
struct MixerMeteringAllocationTests {
    @Test func eightChannelMeteringMixerRendersWithoutHeapCalls() throws {
        let mixer = MultiChannelMixerUnit(inputs: 2)
        let format = StreamFormat.canonical(sampleRate: 48000, channels: 8)
        for element in 0..<2 { try mixer.setStreamFormat(format, scope: .input, element: element) }
        try mixer.setStreamFormat(format, scope: .output, element: 0)
        try mixer.setMaximumFramesPerSlice(128)
        try mixer.setRenderCallback(ChannelLevelSource([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]), input: 0)
        try mixer.setRenderCallback(ChannelLevelSource([0.05]), input: 1)
        for element in 0..<2 { try mixer.setProperty(.meteringMode, scope: .input, element: element, to: .flag(true)) }
        try mixer.setProperty(.meteringMode, scope: .output, element: 0, to: .flag(true))
        try mixer.initialize()
        let buffers = try OwnedAudioBufferList(channelCount: 8, frameCapacity: 128)
        func cycle(_ index: Int) -> AudioError.Code {
            var flags = RenderActionFlags()
            return mixer.render(
                flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(index * 128)), bus: 0, frameCount: 128,
                into: buffers.list)
        }
        for index in 0..<50 { #expect(cycle(index) == .noError) }
        var heapCalls = 0
        for index in 50..<2050 {
            if index % 100 == 0 {
                // Switching metering while rendering goes through no allocation on the render side.
                try mixer.setProperty(.meteringMode, scope: .input, element: 1, to: .flag(index % 200 == 0))
            }
            AllocationCounter.begin()
            _ = cycle(index)
            heapCalls += AllocationCounter.end()
        }
        #expect(heapCalls == 0, "\(heapCalls) heap calls in 2,000 metering render cycles")
        #expect(try mixer.parameter(MultiChannelMixerUnit.Parameter.prePeakHoldLevel + 7, scope: .input, element: 0) > -2.0)
    }
}
