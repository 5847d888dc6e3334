import Foundation
import SonoraCore
import SonoraTestSupport
@testable import SonoraToolbox
import SonoraUnits
import Testing

/// EFX in Sonora's OpenAL API: its errors (as OpenAL's), any Sonora unit as a slot's effect,
/// sends that stop when their slot is emptied, and a mix with sends and effects that never
/// touches the heap.
@Suite("OpenAL EFX: slots, sends, filters")
struct ALEffectsTests {
    @Test func filterGainsOutsideZeroToOneAreInvalidValues() {
        #expect(throws: ALError.invalidValue) { try ALFilter.lowpass(gainHF: 1.5) }
        #expect(throws: ALError.invalidValue) { try ALFilter.highpass(gain: -0.1) }
        #expect(throws: ALError.invalidValue) { try ALFilter.bandpass(gainLF: .nan) }
    }

    @Test func slotsSendsAndEffectsReportOpenALErrors() throws {
        let world = try ALWorld()
        defer { world.destroy() }
        let slots = try (0..<ALAuxiliaryEffectSlot.maximumPerContext).map { _ in try world.context.makeAuxiliaryEffectSlot() }
        #expect(throws: ALError.outOfMemory) { try world.context.makeAuxiliaryEffectSlot() }
        #expect(world.context.takeError() == .outOfMemory)
        let source = try world.context.makeSource()
        #expect(throws: ALError.invalidValue) { try source.setAuxiliarySend(2, slot: slots[0]) }  // 2 sends by default
        #expect(throws: ALError.invalidValue) { try slots[0].setGain(2) }
        var reverb = ALReverbProperties()
        reverb.decayTime = 30
        #expect(throws: ALError.invalidValue) { try slots[0].setEffect(.reverb(reverb)) }
        #expect(throws: ALError.invalidValue) { try source.setRoomRolloffFactor(11) }
        try source.setAuxiliarySend(1, slot: slots[0])
        #expect(throws: ALError.invalidOperation) { try slots[0].delete() }  // in use
        try slots[1].delete()
        #expect(throws: ALError.invalidName) { try source.setAuxiliarySend(0, slot: slots[1]) }
        #expect(throws: ALError.invalidName) { try slots[1].setGain(0.5) }
        _ = try world.context.makeAuxiliaryEffectSlot()  // the deleted slot's bus is free again
        let other = try ALWorld()
        defer { other.destroy() }
        let foreign = try other.context.makeAuxiliaryEffectSlot()
        #expect(throws: ALError.invalidName) { try source.setAuxiliarySend(0, slot: foreign) }
        #expect(throws: ALError.invalidValue) {
            try ALContext(device: try ALDevice.loopback(frequency: 48_000, channels: 2), attributes: ALContextAttributes(maxAuxiliarySends: 5))
        }
    }

    /// Any Sonora unit as the effect: a gain unit at −6 dB (stereo in and out: it gets the
    /// mono send on both channels) on a send at full level. The dry source in front is panned
    /// at −3 dB per side, the effect's stereo output is not: wet/dry on the left is −6 + 3 dB.
    @Test func anySonoraUnitRunsAsTheEffect() throws {
        let world = try ALWorld()
        defer { world.destroy() }
        let source = try world.context.makeSource()
        source.buffer = try world.sine(1_000, frames: 48_000)
        source.position = [0, 0, -1]
        try source.play()
        _ = world.render(4_800)
        let dry = SignalMeasurement.rms(world.channel(0, of: world.render(9_600)))
        let unit = GainUnit()
        try unit.setParameter(GainUnit.Parameter.gain, to: -6)
        let slot = try world.context.makeAuxiliaryEffectSlot()
        try slot.setEffect(unit: unit)
        #expect(slot.effectUnit === unit)
        try source.setAuxiliarySend(0, slot: slot)
        try source.setDirectFilter(try .lowpass(gain: 0))
        _ = world.render(4_800)
        let wet = world.channel(0, of: world.render(9_600))
        let wetLevel = SignalMeasurement.rms(wet)
        #expect(abs(20 * log10(wetLevel / dry) - (-6 - 20 * log10(0.70710678))) < 0.1, "wet \(wetLevel), dry \(dry)")
        try slot.setEffect(.null)
        _ = world.render(4_800)
        #expect(SignalMeasurement.peak(world.render(4_800)) < 1e-6, "an empty slot is silent")
    }
}

@Suite("OpenAL EFX: no heap call in the mix", .serialized, .enabled(if: AllocationCounter.isAvailable))
struct ALEffectsAllocationTests {
    /// 64 moving sources, each sending to a reverb and to a parametric EQ slot through filters,
    /// the reverb's parameters and a send changed along the way: no heap call in the mix.
    @Test func sixtyFourSendingSourcesMixWithoutHeapCalls() throws {
        let world = try ALWorld(attributes: ALContextAttributes(monoSources: 64, stereoSources: 0))
        defer { world.destroy() }
        let reverbSlot = try world.context.makeAuxiliaryEffectSlot()
        try reverbSlot.setEffect(.reverb(ALReverbProperties()))
        let unitSlot = try world.context.makeAuxiliaryEffectSlot()
        try unitSlot.setEffect(unit: ParametricEQUnit())
        var sources: [ALSource] = []
        for index in 0..<64 {
            let source = try world.context.makeSource()
            source.buffer = try world.sine(200 + Double(index) * 10, frames: 4_800)
            source.isLooping = true
            try source.setAuxiliarySend(0, slot: reverbSlot, filter: try .lowpass(gain: 0.8, gainHF: 0.5))
            if index % 2 == 0 { try source.setAuxiliarySend(1, slot: unitSlot, filter: try .highpass(gainLF: 0.3)) }
            try source.setDirectFilter(try .bandpass(gain: 0.9, gainLF: 0.7, gainHF: 0.6))
            sources.append(source)
        }
        try world.context.play(sources)
        let list = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 512)
        var total = 0
        for block in 0..<200 {
            let angle = Float(block) * 0.05
            for (index, source) in sources.enumerated() {
                let phase = angle + Float(index)
                source.position = [3 * cos(phase), 0, 3 * sin(phase)]
            }
            if block == 100 {
                var reverb = ALReverbProperties()
                reverb.decayTime = 2.5
                try reverbSlot.setEffect(.reverb(reverb))
                try sources[3].setAuxiliarySend(0, slot: nil)
                try reverbSlot.setGain(0.5)
            }
            world.context.flushBeforeLoopbackRender()
            let count = AllocationCounter.count { world.device.mix(into: list.list(frameCount: 512), frameCount: 512) }
            if block >= 20 { total += count }
        }
        #expect(total == 0, "\(total) heap calls")
        #expect(sources.allSatisfy { $0.state == .playing })
    }
}
