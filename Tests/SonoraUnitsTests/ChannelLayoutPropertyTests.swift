import SonoraCore
import SonoraFile
import Testing
@testable import SonoraUnits

@Suite("AudioChannelLayout property")
struct ChannelLayoutPropertyTests {
    @Test func tagsCarryCoreAudioValuesAndChannelCounts() {
        #expect(AudioChannelLayout.Tag.mono.rawValue == 100 << 16 | 1)
        #expect(AudioChannelLayout.Tag.stereo.rawValue == 101 << 16 | 2)
        #expect(AudioChannelLayout.Tag.quadraphonic.rawValue == 108 << 16 | 4)
        #expect(AudioChannelLayout.Tag.mpeg_5_1_A.rawValue == 121 << 16 | 6)
        #expect(AudioChannelLayout.Tag.discreteInOrder(8).rawValue == 147 << 16 | 8)
        #expect(AudioChannelLayout(tag: .mpeg_5_1_A).channelCount == 6)
        #expect(AudioChannelLayout(bitmap: 0b1011).channelCount == 3)
        #expect(AudioChannelLayout(channelLabels: [.left, .right, .center]).channelCount == 3)
        #expect(AudioChannelLayout(channelLabels: [.left, .right, .center]).byteSize == 12 + 3 * 20)
    }

    @Test func setGetAndInfoPerScopeAndElement() throws {
        let mixer = MultiChannelMixerUnit(inputs: 2)
        try mixer.setStreamFormat(.canonical(sampleRate: 48000, channels: 6), scope: .input, element: 1)
        // Nothing set yet.
        #expect(AudioError.Code.of { _ = try mixer.property(.audioChannelLayout, scope: .input, element: 0) } == .propertyNotInUse)
        try mixer.setProperty(.audioChannelLayout, scope: .input, element: 0, to: .channelLayout(AudioChannelLayout(tag: .stereo)))
        let surround = AudioChannelLayout(channelLabels: [.left, .right, .center, .lfeScreen, .leftSurround, .rightSurround])
        try mixer.setProperty(.audioChannelLayout, scope: .input, element: 1, to: .channelLayout(surround))
        try mixer.setChannelLayout(AudioChannelLayout(tag: .stereo), scope: .output, element: 0)
        if case .channelLayout(let layout) = try mixer.property(.audioChannelLayout, scope: .input, element: 1) {
            #expect(layout == surround)
        } else {
            Issue.record("not a layout")
        }
        #expect(try mixer.channelLayout(scope: .input, element: 0).tag == .stereo)
        #expect(try mixer.propertyInfo(.audioChannelLayout, scope: .input, element: 1) == AudioUnitPropertyInfo(size: 12 + 6 * 20, isWritable: true))
        // Removing it.
        try mixer.setProperty(.audioChannelLayout, scope: .input, element: 0, to: .channelLayout(nil))
        #expect(AudioError.Code.of { _ = try mixer.channelLayout(scope: .input, element: 0) } == .propertyNotInUse)
        // A new channel count drops the layout set for the old one.
        try mixer.setStreamFormat(.canonical(sampleRate: 48000, channels: 4), scope: .input, element: 1)
        #expect(AudioError.Code.of { _ = try mixer.channelLayout(scope: .input, element: 1) } == .propertyNotInUse)
    }

    @Test func aLayoutThatDisagreesWithTheFormatIsRefused() throws {
        let converter = ConverterUnit()
        try converter.setStreamFormat(.canonical(sampleRate: 48000, channels: 6), scope: .output, element: 0)
        let error = #expect(throws: AudioError.self) {
            try converter.setProperty(.audioChannelLayout, scope: .output, element: 0, to: .channelLayout(AudioChannelLayout(tag: .quadraphonic)))
        }
        #expect(error?.code == .invalidPropertyValue)
        #expect(error?.message.contains("4 channels") == true && error?.message.contains("has 6") == true)
        try converter.setChannelLayout(AudioChannelLayout(tag: .mpeg_5_1_A), scope: .output, element: 0)
        #expect(AudioError.Code.of { try converter.setChannelLayout(AudioChannelLayout(channelLabels: [.left]), scope: .input, element: 0) } == .invalidPropertyValue)
    }

    @Test func addressesAndUnitsWithoutLayoutsAreChecked() throws {
        let gain = GainUnit()
        #expect(AudioError.Code.of { _ = try gain.property(.audioChannelLayout, scope: .global, element: 0) } == .invalidScope)
        #expect(AudioError.Code.of { _ = try gain.property(.audioChannelLayout, scope: .input, element: 1) } == .invalidElement)
        #expect(AudioError.Code.of { try GenericOutputUnit().setChannelLayout(AudioChannelLayout(tag: .stereo), scope: .input, element: 0) } == .noError)
        #expect(AudioError.Code.of { _ = try ToneGeneratorUnit().propertyInfo(.audioChannelLayout, scope: .output, element: 0) } == .invalidProperty)
        #expect(AudioError.Code.of {
            try gain.setProperty(.audioChannelLayout, scope: .input, element: 0, to: .flag(true))
        } == .invalidPropertyValue)
    }
}
