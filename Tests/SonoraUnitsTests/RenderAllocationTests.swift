import CAllocationCounter
import SonoraCore
import Testing
@testable import SonoraUnits

@Suite("No allocation while rendering", .serialized, .enabled(if: sonora_allocation_counter_available() != 0))
struct RenderAllocationTests {
    /// A 20-unit chain (generator → 17 gains → mixer → output) rendered for 10,000
    /// cycles of 128 frames, with parameter changes and ramps arriving between cycles.
    @Test func twentyUnitGraphRendersWithoutHeapCalls() throws {
        let generator = ToneGeneratorUnit()
        let gains = (0..<17).map { _ in GainUnit() }
        let mixer = MultiChannelMixerUnit(inputs: 1)
        let output = GenericOutputUnit()
        var previous: AudioUnit = generator
        for gain in gains {
            try gain.connect(input: 0, from: previous, bus: 0)
            previous = gain
        }
        try mixer.connect(input: 0, from: previous, bus: 0)
        try output.connect(input: 0, from: mixer, bus: 0)
        let units: [AudioUnit] = [generator] + gains + [mixer, output]
        #expect(units.count == 20)
        for unit in units {
            try unit.setMaximumFramesPerSlice(128)
            try unit.initialize()
        }
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 128)
        let list = buffers.list
        func cycle(_ index: Int) -> AudioError.Code {
            var flags = RenderActionFlags()
            return output.render(
                flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(index * 128)), bus: 0, frameCount: 128, into: list)
        }
        for index in 0..<50 { #expect(cycle(index) == .noError) }  // warm up every path
        try gains[3].rampParameter(GainUnit.Parameter.gain, to: -12, duration: 300)
        _ = cycle(50)

        var heapCalls = 0
        var failures = 0
        for index in 51..<10_051 {
            if index % 100 == 0 {
                try gains[index % 17].setParameter(GainUnit.Parameter.gain, to: Float(index % 12) - 6, bufferOffset: index % 128)
                try mixer.rampParameter(MultiChannelMixerUnit.Parameter.volume, scope: .input, element: 0, to: Float(index / 100 % 10 + 1) / 10, duration: 200)
            }
            sonora_allocation_counter_begin()
            let status = cycle(index)
            heapCalls += sonora_allocation_counter_end()
            if status != .noError { failures += 1 }
        }
        #expect(failures == 0)
        #expect(heapCalls == 0, "\(heapCalls) heap calls in 10,000 render cycles")
        #expect(list[0].contains { $0 != 0 })
    }
}
