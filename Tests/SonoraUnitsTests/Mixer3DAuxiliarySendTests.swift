import Foundation
import SonoraCore
import SonoraDSP
import SonoraTestSupport
import Testing
@testable import SonoraUnits

/// The 3D mixer's auxiliary sends (EFX sends) and direct shelves: levels, the shelves' gains
/// at their reference frequencies, the bus count property, no heap call while rendering.
@Suite("3D mixer: auxiliary sends and EFX shelves")
struct Mixer3DAuxiliarySendTests {
    typealias P = Mixer3DUnit.Parameter

    /// A mixer with `buses` auxiliary buses and one tone input of `channels`.
    func mixer(buses: Int, frequency: Double, channels: Int = 1, amplitude: Float = 0.5) throws -> (Mixer3DUnit, Mixer3DToneSource) {
        let unit = try makeMixer3D(inputs: 1, inputChannels: channels, maximumFrames: 512)
        try unit.setProperty(.auxiliaryBusCount, scope: .global, element: 0, to: .elementCount(buses))
        let source = Mixer3DToneSource(frequency: frequency, amplitude: amplitude)
        try unit.setRenderCallback(RenderCallback(source), input: 0)
        return (unit, source)
    }

    /// Renders `cycles` of 512 frames; returns the output's left channel and each bus.
    func render(_ unit: Mixer3DUnit, cycles: Int, buses: Int) throws -> (left: [Float], buses: [[Float]]) {
        let output = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 512)
        var left: [Float] = []
        var sent = Array(repeating: [Float](), count: buses)
        for cycle in 0..<cycles {
            var flags = RenderActionFlags()
            let status = unit.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(cycle * 512)), bus: 0, frameCount: 512, into: output.list)
            #expect(status == .noError)
            left += Array(output.list[0])
            for bus in 0..<buses { sent[bus] += Array(UnsafeBufferPointer(start: unit.auxiliaryBus(bus)!, count: 512)) }
        }
        return (left, sent)
    }

    static func rms(_ samples: ArraySlice<Float>) -> Double {
        (samples.reduce(0) { $0 + Double($1) * Double($1) } / Double(samples.count)).squareRoot()
    }

    @Test func sendLevelsAreExactAndIndependentOfTheDirectGain() throws {
        let (unit, source) = try mixer(buses: 2, frequency: 0, amplitude: 0.5)  // a constant: levels read sample by sample
        defer { withExtendedLifetime(source) {} }
        try unit.setParameter(P.gain, scope: .input, element: 0, to: -20)
        try unit.setParameter(P.auxiliarySendLevel(0), scope: .input, element: 0, to: -6)
        try unit.setParameter(P.auxiliarySendLevel(1), scope: .input, element: 0, to: 0)
        try unit.initialize()
        let (_, buses) = try render(unit, cycles: 2, buses: 2)
        #expect(abs(buses[0][700] - 0.5 * powf(10, -6 / 20)) < 1e-6, "bus 0: \(buses[0][700])")
        #expect(abs(buses[1][700] - 0.5) < 1e-6, "bus 1: \(buses[1][700])")
        #expect(unit.auxiliaryBus(2) == nil)
    }

    /// A stereo input is sent as its channels' sum at equal power.
    @Test func stereoInputsAreSummedAtEqualPower() throws {
        let (unit, source) = try mixer(buses: 1, frequency: 0, channels: 2, amplitude: 0.25)
        defer { withExtendedLifetime(source) {} }
        try unit.setParameter(P.auxiliarySendLevel(0), scope: .input, element: 0, to: 0)
        try unit.initialize()
        let (_, buses) = try render(unit, cycles: 2, buses: 1)
        #expect(abs(buses[0][700] - 0.5 * 0.70710678) < 1e-6)
    }

    /// The shelves' gains at 5 kHz and 250 Hz are the parameters (EFX's reference frequencies),
    /// twice that in dB far beyond; flat far on the other side.
    @Test(arguments: [
        (5_000.0, true, Float(-12), -12.0), (16_000.0, true, -12, -24.0), (100.0, true, -12, 0.0),
        (250.0, false, -9, -9.0), (30.0, false, -9, -18.0), (8_000.0, false, -9, 0.0),
    ])
    func shelvesHaveTheirGainAtTheReferenceFrequency(frequency: Double, high: Bool, decibels: Float, expected: Double) throws {
        let (unit, source) = try mixer(buses: 1, frequency: frequency)
        defer { withExtendedLifetime(source) {} }
        try unit.setParameter(P.auxiliarySendLevel(0), scope: .input, element: 0, to: 0)
        try unit.setParameter(high ? P.auxiliarySendHighFrequencyGain(0) : P.auxiliarySendLowFrequencyGain(0), scope: .input, element: 0, to: decibels)
        try unit.setParameter(high ? P.directHighFrequencyGain : P.directLowFrequencyGain, scope: .input, element: 0, to: decibels)
        try unit.initialize()
        let (filtered, filteredBuses) = try render(unit, cycles: 40, buses: 1)
        let (plainUnit, plainSource) = try mixer(buses: 1, frequency: frequency)
        defer { withExtendedLifetime(plainSource) {} }
        try plainUnit.setParameter(P.auxiliarySendLevel(0), scope: .input, element: 0, to: 0)
        try plainUnit.initialize()
        let (plain, plainBuses) = try render(plainUnit, cycles: 40, buses: 1)
        let window = 8_192..<20_480
        // The shelf's far side is an asymptote: within 0.3 dB there, 0.05 dB at the reference.
        let tolerance = abs(expected) == Double(abs(decibels)) ? 0.05 : 0.3
        let send = 20 * log10(Self.rms(filteredBuses[0][window]) / Self.rms(plainBuses[0][window]))
        let direct = 20 * log10(Self.rms(filtered[window]) / Self.rms(plain[window]))
        #expect(abs(send - expected) < tolerance, "send: \(send) dB")
        #expect(abs(direct - expected) < tolerance, "direct: \(direct) dB")
    }

    @Test func busCountIsCheckedAndFixedWhileInitialized() throws {
        let unit = try makeMixer3D()
        #expect(AudioError.Code.of { try unit.setProperty(.auxiliaryBusCount, scope: .global, element: 0, to: .elementCount(5)) } == .invalidPropertyValue)
        #expect(AudioError.Code.of { try unit.setProperty(.auxiliaryBusCount, scope: .input, element: 0, to: .elementCount(1)) } == .invalidScope)
        try unit.setProperty(.auxiliaryBusCount, scope: .global, element: 0, to: .elementCount(3))
        try unit.initialize()
        #expect(AudioError.Code.of { try unit.setProperty(.auxiliaryBusCount, scope: .global, element: 0, to: .elementCount(1)) } == .propertyNotWritable)
        guard case .elementCount(let count) = try unit.property(.auxiliaryBusCount, scope: .global, element: 0) else {
            Issue.record("not an element count")
            return
        }
        #expect(count == 3)
    }
}

@Suite("3D mixer: auxiliary sends allocate nothing while rendering", .serialized, .enabled(if: AllocationCounter.isAvailable))
struct Mixer3DAuxiliarySendAllocationTests {
    /// 64 sources, each sending to two of four buses with moving levels and shelves: no heap call.
    @Test func sixtyFourSendingSourcesRenderWithoutHeapCalls() throws {
        typealias P = Mixer3DUnit.Parameter
        let count = 64
        let unit = try makeMixer3D(inputs: count, maximumFrames: 256)
        try unit.setProperty(.auxiliaryBusCount, scope: .global, element: 0, to: .elementCount(4))
        let sources = (0..<count).map { Mixer3DToneSource(frequency: 200 + Double($0) * 37, amplitude: 0.05) }
        for element in 0..<count { try unit.setRenderCallback(RenderCallback(sources[element]), input: element) }
        try unit.initialize()
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 256)
        func set(_ index: Int) throws {
            for element in 0..<count {
                let phase = Float((index + element * 7) % 40)
                try unit.setParameter(P.azimuth, scope: .input, element: element, to: phase * 9 - 180)
                try unit.setParameter(P.auxiliarySendLevel(element % 4), scope: .input, element: element, to: -phase)
                try unit.setParameter(P.auxiliarySendLevel((element + 1) % 4), scope: .input, element: element, to: phase > 20 ? -120 : -3)
                try unit.setParameter(P.auxiliarySendHighFrequencyGain(element % 4), scope: .input, element: element, to: -phase / 2)
                try unit.setParameter(P.directLowFrequencyGain, scope: .input, element: element, to: -phase / 3)
            }
        }
        var heapCalls = 0
        for index in 0..<600 {
            try set(index)
            var flags = RenderActionFlags()
            if index >= 100 { AllocationCounter.begin() }
            let status = unit.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(index * 256)), bus: 0, frameCount: 256, into: buffers.list)
            if index >= 100 { heapCalls += AllocationCounter.end() }
            #expect(status == .noError)
        }
        #expect(heapCalls == 0, "\(heapCalls) heap calls in 500 cycles")
        #expect(UnsafeBufferPointer(start: unit.auxiliaryBus(0)!, count: 256).contains { $0 != 0 })
        withExtendedLifetime(sources) {}
    }
}
