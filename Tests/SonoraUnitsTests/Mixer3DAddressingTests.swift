import SonoraCore
import SonoraTestSupport
import Testing
@testable import SonoraUnits

@Suite("3D mixer: registry, properties and errors")
struct Mixer3DAddressingTests {
    @Test func registryFindsTheUnit() throws {
        let description = AudioComponentDescription(type: .mixer, subType: "3dem", manufacturer: .apple)
        let component = try #require(AudioComponentRegistry.shared.components.first { $0.description == description })
        #expect(component.name == "3DMixer")
        let unit = try #require(AudioComponentRegistry.shared.instantiate(description) as? Mixer3DUnit)
        #expect(unit.componentDescription == Mixer3DUnit.componentDescription)
        #expect(try unit.streamFormat(scope: .input, element: 0).channelsPerFrame == 1)
        #expect(try unit.streamFormat(scope: .output, element: 0).channelsPerFrame == 2)
    }

    @Test func parametersHaveCoreAudiosIDsAndRanges() throws {
        let unit = Mixer3DUnit(inputs: 2)
        let input = try unit.parameterList(scope: .input)
        #expect(Set(input).isSuperset(of: [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11]))
        #expect(Set(try unit.parameterList(scope: .output)).isSuperset(of: [3, 9]))
        let azimuth = try unit.parameterInfo(Mixer3DUnit.Parameter.azimuth, scope: .input)
        #expect(azimuth.minValue == -180 && azimuth.maxValue == 180 && azimuth.unit == .degrees)
        let rate = try unit.parameterInfo(Mixer3DUnit.Parameter.playbackRate, scope: .input)
        #expect(rate.minValue == 0.5 && rate.maxValue == 2 && rate.defaultValue == 1)
        let gain = try unit.parameterInfo(Mixer3DUnit.Parameter.gain, scope: .input)
        #expect(gain.minValue == -120 && gain.maxValue == 20 && gain.unit == .decibels)
        let occlusion = try unit.parameterInfo(Mixer3DUnit.Parameter.occlusionAttenuation, scope: .input)
        #expect(occlusion.minValue == -100 && occlusion.maxValue == 0)
        // Out-of-range values are clamped, as for every unit.
        let change = try unit.setParameter(Mixer3DUnit.Parameter.playbackRate, scope: .input, element: 1, to: 3)
        #expect(change.applied == 2 && change.wasClamped)
    }

    @Test func inputCountIsWritable() throws {
        let unit = Mixer3DUnit(inputs: 1)
        try unit.setElementCount(64, scope: .input)
        #expect(unit.elementCount(.input) == 64)
        #expect(try unit.streamFormat(scope: .input, element: 63).channelsPerFrame == 1)
        try unit.setProperty(.spatializationAlgorithm, scope: .input, element: 63, to: .spatializationAlgorithm(.sphericalHead))
        #expect(try unit.parameter(Mixer3DUnit.Parameter.enable, scope: .input, element: 63) == 1)
        try unit.setElementCount(3, scope: .input)
        #expect(AudioError.Code.of { _ = try unit.parameter(Mixer3DUnit.Parameter.azimuth, scope: .input, element: 3) } == .invalidElement)
        try unit.initialize()
        #expect(AudioError.Code.of { try unit.setElementCount(4, scope: .input) } == .invalidProperty
            || AudioError.Code.of { try unit.setElementCount(4, scope: .input) } != .noError)
    }

    @Test func propertiesRoundTrip() throws {
        let unit = Mixer3DUnit(inputs: 2)
        try unit.setProperty(.spatializationAlgorithm, scope: .input, element: 1, to: .spatializationAlgorithm(.vectorBasedPanning))
        guard case .spatializationAlgorithm(let algorithm) = try unit.property(.spatializationAlgorithm, scope: .input, element: 1) else {
            Issue.record("wrong value kind")
            return
        }
        #expect(algorithm == .vectorBasedPanning)
        let parameters = Mixer3DUnit.DistanceParameters(referenceDistance: 2, maximumDistance: 50, maximumAttenuation: 40)
        try unit.setProperty(.distanceParameters, scope: .input, element: 0, to: .distanceParameters(parameters))
        guard case .distanceParameters(let read) = try unit.property(.distanceParameters, scope: .input, element: 0) else {
            Issue.record("wrong value kind")
            return
        }
        #expect(read == parameters)
        try unit.setProperty(.renderingFlags, scope: .input, element: 0, to: .renderingFlags([.distanceAttenuation, .linearDistanceAttenuation]))
        try unit.setProperty(.attenuationCurve, scope: .input, element: 0, to: .attenuationCurve(.exponential))
        try unit.setProperty(.hrtfFilePath, scope: .global, element: 0, to: .filePath("/usr/share/libmysofa/MIT_KEMAR_normal_pinna.sofa"))
        guard case .filePath(let path) = try unit.property(.hrtfFilePath, scope: .global, element: 0) else {
            Issue.record("wrong value kind")
            return
        }
        #expect(path == "/usr/share/libmysofa/MIT_KEMAR_normal_pinna.sofa")
        // Changed while rendering: handed over, no error.
        try unit.initialize()
        try unit.setProperty(.spatializationAlgorithm, scope: .input, element: 0, to: .spatializationAlgorithm(.sphericalHead))
        _ = try renderFrames(unit, frames: 64)
    }

    @Test func badScopeElementAndValueAreRefused() throws {
        let unit = Mixer3DUnit(inputs: 2)
        func code(_ body: () throws -> Void) -> AudioError.Code { AudioError.Code.of(body) }
        #expect(code { try unit.setProperty(.spatializationAlgorithm, scope: .output, element: 0, to: .spatializationAlgorithm(.hrtf)) } == .invalidScope)
        #expect(code { try unit.setProperty(.spatializationAlgorithm, scope: .input, element: 2, to: .spatializationAlgorithm(.hrtf)) } == .invalidElement)
        #expect(code { _ = try unit.property(.renderingFlags, scope: .global, element: 0) } == .invalidScope)
        #expect(code { try unit.setProperty(.spatializationAlgorithm, scope: .input, element: 0, to: .flag(true)) } == .invalidPropertyValue)
        #expect(code { try unit.setProperty(.renderingFlags, scope: .input, element: 0, to: .renderingFlags(.init(rawValue: 0x8000))) } == .invalidPropertyValue)
        let bad = Mixer3DUnit.DistanceParameters(referenceDistance: 10, maximumDistance: 5, maximumAttenuation: 20)
        let error = #expect(throws: AudioError.self) {
            try unit.setProperty(.distanceParameters, scope: .input, element: 1, to: .distanceParameters(bad))
        }
        #expect(error?.code == .invalidPropertyValue)
        #expect(error?.message.contains("input 1") == true && error?.message.contains("maximum distance") == true)
        #expect(code { try unit.setProperty(.hrtfFilePath, scope: .input, element: 0, to: .filePath("x")) } == .invalidScope)
        #expect(code { try unit.setProperty(.hrtfFilePath, scope: .global, element: 0, to: .filePath("")) } == .invalidPropertyValue)
        #expect(code { try unit.setParameter(Mixer3DUnit.Parameter.azimuth, scope: .global, element: 0, to: 1) } != .noError)
        #expect(code { try unit.setParameter(Mixer3DUnit.Parameter.azimuth, scope: .input, element: 5, to: 1) } == .invalidElement)
        #expect(code { try unit.setParameter(Mixer3DUnit.Parameter.globalReverbGain, scope: .input, element: 0, to: 1) } != .noError)
        #expect(code { try unit.setStreamFormat(.canonical(sampleRate: 48000, channels: 3), scope: .input, element: 0) } == .formatNotSupported)
        #expect(code { try unit.setStreamFormat(.canonical(sampleRate: 48000, channels: 5), scope: .output, element: 0) } == .formatNotSupported)
        #expect(code { try unit.setStreamFormat(.canonical(sampleRate: 48000, channels: 6), scope: .output, element: 0) } == .noError)
    }
}
