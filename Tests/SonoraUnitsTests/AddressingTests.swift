import SonoraCore
import Testing
@testable import SonoraUnits

@Suite("Property and parameter addressing")
struct AddressingTests {
    @Test func propertyAddressesGiveCoreAudioErrorCodes() throws {
        let gain = GainUnit()
        let code = AudioError.Code.of
        #expect(code { _ = try gain.property(.streamFormat, scope: .global, element: 0) } == .invalidScope)
        #expect(code { _ = try gain.property(.streamFormat, scope: .input, element: 1) } == .invalidElement)
        #expect(code { _ = try gain.property(.streamFormat, scope: .group, element: 0) } == .invalidScope)
        #expect(code { _ = try gain.property(AudioUnitPropertyID(rawValue: 9999), scope: .global, element: 0) } == .invalidProperty)
        #expect(code { _ = try gain.property(.latency, scope: .input, element: 0) } == .invalidScope)
        #expect(code { _ = try gain.property(.latency, scope: .global, element: 3) } == .invalidElement)
        #expect(code { _ = try gain.property(.setRenderCallback, scope: .output, element: 0) } == .invalidScope)
        #expect(code { try gain.setElementCount(3, scope: .input) } == .propertyNotWritable)
        #expect(code { try gain.setProperty(.latency, scope: .global, element: 0, to: .latency(1)) } == .propertyNotWritable)
        #expect(code { try gain.setProperty(.maximumFramesPerSlice, scope: .global, element: 0, to: .bypass(true)) } == .invalidPropertyValue)
        #expect(code { try gain.setMaximumFramesPerSlice(0) } == .invalidPropertyValue)
        #expect(code { try gain.setSampleRate(-1, scope: .global, element: 0) } == .invalidPropertyValue)
        let interleaved = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .int16)
        #expect(code { try gain.setStreamFormat(interleaved, scope: .input, element: 0) } == .formatNotSupported)
        #expect(code { _ = try gain.property(.parameterValueStrings, scope: .global, element: 0) } == .propertyNotInUse)
        #expect(code { _ = try gain.property(.parameterInfo, scope: .global, element: 77) } == .invalidParameter)
        #expect(code { try gain.setPresentPreset(AudioUnitPreset(number: 3, name: "x")) } == .invalidPropertyValue)
    }

    @Test func propertyInfoTellsSizeAndWritability() throws {
        let mixer = MultiChannelMixerUnit(inputs: 3)
        #expect(try mixer.propertyInfo(.streamFormat, scope: .input, element: 2) == AudioUnitPropertyInfo(size: 40, isWritable: true))
        #expect(try mixer.propertyInfo(.elementCount, scope: .input, element: 0).isWritable)
        #expect(try !mixer.propertyInfo(.elementCount, scope: .output, element: 0).isWritable)
        #expect(try !mixer.propertyInfo(.latency, scope: .global, element: 0).isWritable)
        #expect(try mixer.propertyInfo(.parameterList, scope: .input, element: 0).size == 4 * (try mixer.parameterList(scope: .input)).count)
        #expect(try mixer.propertyInfo(.setRenderCallback, scope: .input, element: 0).size == 16)
    }

    @Test func propertiesReadBackThroughGenericAndTypedAccess() throws {
        let mixer = MultiChannelMixerUnit(inputs: 2)
        try mixer.setSampleRate(44100, scope: .global, element: 0)
        guard case .streamFormat(let format) = try mixer.property(.streamFormat, scope: .input, element: 1) else {
            Issue.record("wrong case"); return
        }
        #expect(format == .canonical(sampleRate: 44100, channels: 2))
        guard case .sampleRate(let rate) = try mixer.property(.sampleRate, scope: .output, element: 0) else {
            Issue.record("wrong case"); return
        }
        #expect(rate == 44100)
        try mixer.setProperty(.elementCount, scope: .input, element: 0, to: .elementCount(5))
        guard case .elementCount(let count) = try mixer.property(.elementCount, scope: .input, element: 0) else {
            Issue.record("wrong case"); return
        }
        #expect(count == 5)
        guard case .parameterInfo(let info) = try mixer.property(.parameterInfo, scope: .input, element: Int(MultiChannelMixerUnit.Parameter.pan)) else {
            Issue.record("wrong case"); return
        }
        #expect(info.name == "Pan" && info.unit == .pan && info.minValue == -1 && info.maxValue == 1)
        let generator = ToneGeneratorUnit()
        guard case .parameterValueStrings(let names) = try generator.property(.parameterValueStrings, scope: .global, element: 0) else {
            Issue.record("wrong case"); return
        }
        #expect(names.first == "Sine" && names.count == 6)
    }

    @Test func reinitializingPropertiesAreRefusedWhileInitialized() throws {
        let mixer = MultiChannelMixerUnit(inputs: 2)
        try mixer.initialize()
        let code = AudioError.Code.of
        #expect(code { try mixer.setMaximumFramesPerSlice(512) } == .initialized)
        #expect(code { try mixer.setStreamFormat(.canonical(sampleRate: 48000, channels: 1), scope: .input, element: 0) } == .initialized)
        #expect(code { try mixer.setElementCount(8, scope: .input) } == .initialized)
        #expect(code { try mixer.setSampleRate(96000, scope: .global, element: 0) } == .initialized)
        // Parameters and callbacks may change while initialized.
        #expect(code { try mixer.setParameter(MultiChannelMixerUnit.Parameter.volume, scope: .input, element: 1, to: 0.5) } == .noError)
        mixer.uninitialize()
        #expect(code { try mixer.setMaximumFramesPerSlice(512) } == .noError)
    }

    @Test func parameterAddressesAndClamping() throws {
        let mixer = MultiChannelMixerUnit(inputs: 2)
        let code = AudioError.Code.of
        #expect(code { try mixer.setParameter(99, scope: .input, element: 0, to: 1) } == .invalidParameter)
        #expect(code { try mixer.setParameter(MultiChannelMixerUnit.Parameter.pan, scope: .global, element: 0, to: 0) } == .invalidScope)
        #expect(code { try mixer.setParameter(MultiChannelMixerUnit.Parameter.pan, scope: .input, element: 2, to: 0) } == .invalidElement)
        #expect(code { try mixer.setParameter(MultiChannelMixerUnit.Parameter.preAveragePower, scope: .input, element: 0, to: 0) } == .invalidParameter)
        #expect(code { _ = try mixer.parameter(MultiChannelMixerUnit.Parameter.pan, scope: .group) } == .invalidScope)

        let change = try mixer.setParameter(MultiChannelMixerUnit.Parameter.volume, scope: .input, element: 1, to: 3)
        #expect(change.wasClamped && change.applied == 1 && change.requested == 3)
        #expect(try mixer.parameter(MultiChannelMixerUnit.Parameter.volume, scope: .input, element: 1) == 1)
        let low = try mixer.setParameter(MultiChannelMixerUnit.Parameter.pan, scope: .input, element: 0, to: -4)
        #expect(low.applied == -1 && low.wasClamped)
        let exact = try mixer.setParameter(MultiChannelMixerUnit.Parameter.pan, scope: .input, element: 0, to: 0.25)
        #expect(!exact.wasClamped)
        #expect(try mixer.parameterList(scope: .output).contains(MultiChannelMixerUnit.Parameter.volume))

        // Growing the element count keeps existing values and adds defaults.
        try mixer.setElementCount(4, scope: .input)
        #expect(try mixer.parameter(MultiChannelMixerUnit.Parameter.pan, scope: .input, element: 0) == 0.25)
        #expect(try mixer.parameter(MultiChannelMixerUnit.Parameter.volume, scope: .input, element: 3) == 1)
    }

    @Test func listenersHearPropertyChanges() throws {
        let unit = MultiChannelMixerUnit(inputs: 1)
        var heard: [(AudioUnitPropertyID, AudioUnitScope, Int)] = []
        let token = unit.addPropertyListener(.streamFormat) { _, id, scope, element in heard.append((id, scope, element)) }
        unit.addPropertyListener(.elementCount) { _, id, scope, element in heard.append((id, scope, element)) }
        try unit.setStreamFormat(.canonical(sampleRate: 48000, channels: 1), scope: .input, element: 0)
        try unit.setElementCount(3, scope: .input)
        unit.removePropertyListener(token)
        try unit.setStreamFormat(.canonical(sampleRate: 48000, channels: 2), scope: .input, element: 2)
        #expect(heard.count == 2)
        #expect(heard.first?.0 == .streamFormat && heard.first?.1 == .input && heard.first?.2 == 0)
        #expect(heard.last?.0 == .elementCount)
    }

    @Test func classInfoSavesAndRestoresEveryParameter() throws {
        let source = MultiChannelMixerUnit(inputs: 3)
        try source.setParameter(MultiChannelMixerUnit.Parameter.volume, scope: .input, element: 2, to: 0.25)
        try source.setParameter(MultiChannelMixerUnit.Parameter.pan, scope: .input, element: 1, to: -0.5)
        try source.setParameter(MultiChannelMixerUnit.Parameter.volume, scope: .output, element: 0, to: 0.75)
        guard case .classInfo(let state) = try source.property(.classInfo, scope: .global, element: 0) else {
            Issue.record("wrong case"); return
        }
        let json = try JSONEncoder().encode(state)
        let decoded = try JSONDecoder().decode(AudioUnitState.self, from: json)
        let target = MultiChannelMixerUnit(inputs: 3)
        try target.setProperty(.classInfo, scope: .global, element: 0, to: .classInfo(decoded))
        #expect(try target.parameter(MultiChannelMixerUnit.Parameter.volume, scope: .input, element: 2) == 0.25)
        #expect(try target.parameter(MultiChannelMixerUnit.Parameter.pan, scope: .input, element: 1) == -0.5)
        #expect(try target.parameter(MultiChannelMixerUnit.Parameter.volume, scope: .output) == 0.75)
        let wrong = GainUnit()
        #expect(AudioError.Code.of { try wrong.restore(decoded) } == .invalidPropertyValue)
    }

    @Test func registryCreatesByDescriptionAndName() throws {
        let registry = AudioComponentRegistry.shared
        let output = try registry.instantiate(AudioComponentDescription(type: "auou", subType: "genr", manufacturer: "appl"))
        #expect(output is GenericOutputUnit)
        #expect(try registry.instantiate(named: "multichannelmixer") is MultiChannelMixerUnit)
        #expect(try registry.instantiate(named: "aumx/mcmx/appl") is MultiChannelMixerUnit)
        let missing = #expect(throws: AudioError.self) { try registry.instantiate(named: "Chorus") }
        #expect(missing?.code == .componentUnsupportedType)
        #expect(missing?.message.contains("available: RemoteIO, FilePlayer, FileRecorder, GenericOutput") == true)
    }
}

import Foundation

@Suite("README units example")
struct ReadmeUnitsExampleTests {
    @Test func readmeGraphExampleWorksAsWritten() throws {
        let graph = AudioGraph()
        let tone = graph.addNode(ToneGeneratorUnit())
        let eq = GraphicEQUnit()
        try eq.setPresentPreset(eq.factoryPresets.first { $0.name == "Rock" }!)
        let eqNode = graph.addNode(eq)
        let mixer = MultiChannelMixerUnit(inputs: 1)
        let mixerNode = graph.addNode(mixer)
        let out = graph.addNode(GenericOutputUnit())
        try graph.connect(tone, bus: 0, to: eqNode, input: 0)
        try graph.connect(eqNode, bus: 0, to: mixerNode, input: 0)
        try graph.connect(mixerNode, bus: 0, to: out, input: 0)
        try graph.initialize()
        try mixer.setProperty(.meteringMode, scope: .output, element: 0, to: .flag(true))
        try mixer.setChannelLayout(AudioChannelLayout(tag: .stereo), scope: .output, element: 0)
        try mixer.setParameter(MultiChannelMixerUnit.Parameter.volume, scope: .input, element: 0, to: 0.5, bufferOffset: 64)
        try mixer.rampParameter(MultiChannelMixerUnit.Parameter.volume, scope: .input, element: 0, to: 1, duration: 4800)
        let audio = try graph.renderOffline(frameCount: 48000)
        #expect(audio.count == 2 && audio[0].count == 48000)
        let peakLeft = try mixer.parameter(MultiChannelMixerUnit.Parameter.postPeakHoldLevel + 0, scope: .output, element: 0)
        let measured = 20 * log10(Double(audio[0].suffix(4800).map(abs).max() ?? 0))
        #expect(peakLeft > -40 && abs(Double(peakLeft) - measured) < 3, "meter \(peakLeft) dB, signal peak \(measured) dB")
        let error = #expect(throws: AudioError.self) { _ = try mixer.property(.streamFormat, scope: .global, element: 0) }
        #expect(error?.description == "invalid scope (-10866): MultiChannelMixer: StreamFormat is not available in the global scope")
    }
}
