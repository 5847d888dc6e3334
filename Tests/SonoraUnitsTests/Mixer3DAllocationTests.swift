import SonoraCore
import SonoraTestSupport
import Testing
@testable import SonoraUnits

@Suite("3D mixer: no allocation while rendering", .serialized, .enabled(if: AllocationCounter.isAvailable))
struct Mixer3DAllocationTests {
    /// 64 sources moving every cycle (azimuth, elevation, distance, gain), with every placement,
    /// rate changes, occlusion/obstruction and reverb sends, and a property change along the
    /// way: no heap call in 2,000 render cycles.
    @Test(arguments: [2, 6])
    func sixtyFourMovingSourcesRenderWithoutHeapCalls(outputChannels: Int) throws {
        let count = 64
        let unit = try makeMixer3D(inputs: count, outputChannels: outputChannels, maximumFrames: 256)
        for element in stride(from: 1, to: count, by: 4) {
            try unit.setStreamFormat(.canonical(sampleRate: 48000, channels: 2), scope: .input, element: element)
        }
        let sources = (0..<count).map { Mixer3DToneSource(frequency: 200 + Double($0) * 37, amplitude: 0.05) }
        let algorithms: [Mixer3DUnit.SpatializationAlgorithm] = [.equalPowerPanning, .sphericalHead, .hrtf, .vectorBasedPanning, .stereoPassThrough]
        for element in 0..<count {
            try unit.setRenderCallback(RenderCallback(sources[element]), input: element)
            try unit.setProperty(
                .spatializationAlgorithm, scope: .input, element: element, to: .spatializationAlgorithm(algorithms[element % algorithms.count]))
            if element % 3 == 0 { try unit.setParameter(Mixer3DUnit.Parameter.reverbBlend, scope: .input, element: element, to: 30) }
            if element % 7 == 0 { try unit.setParameter(Mixer3DUnit.Parameter.obstructionAttenuation, scope: .input, element: element, to: -12) }
            if element % 11 == 0 { try unit.setParameter(Mixer3DUnit.Parameter.occlusionAttenuation, scope: .input, element: element, to: -9) }
        }
        try unit.initialize()
        let buffers = try OwnedAudioBufferList(channelCount: outputChannels, frameCapacity: 256)
        func cycle(_ index: Int) throws -> AudioError.Code {
            for element in 0..<count {
                let phase = Float(index + element * 13)
                try unit.setParameter(Mixer3DUnit.Parameter.azimuth, scope: .input, element: element, to: (phase * 2).truncatingRemainder(dividingBy: 360) - 180)
                try unit.setParameter(Mixer3DUnit.Parameter.elevation, scope: .input, element: element, to: (phase.truncatingRemainder(dividingBy: 60)) - 30)
                try unit.setParameter(Mixer3DUnit.Parameter.distance, scope: .input, element: element, to: 1 + phase.truncatingRemainder(dividingBy: 20))
                if element % 5 == 0 {
                    try unit.setParameter(Mixer3DUnit.Parameter.playbackRate, scope: .input, element: element, to: 0.6 + Float(index % 14) / 10)
                }
                if element % 9 == 0 {
                    try unit.rampParameter(Mixer3DUnit.Parameter.gain, scope: .input, element: element, to: -Float(index % 20), duration: 300)
                }
            }
            var flags = RenderActionFlags()
            return unit.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(index * 256)), bus: 0, frameCount: 256, into: buffers.list)
        }
        for index in 0..<100 { #expect(try cycle(index) == .noError) }  // warm every path
        var heapCalls = 0
        var failures = 0
        for index in 100..<2100 {
            if index == 1000 {
                try unit.setProperty(.spatializationAlgorithm, scope: .input, element: 0, to: .spatializationAlgorithm(.sphericalHead))
            }
            // Parameter sets happen on this thread too: count only the render.
            for element in 0..<count {
                let phase = Float(index + element * 13)
                try unit.setParameter(Mixer3DUnit.Parameter.azimuth, scope: .input, element: element, to: (phase * 2).truncatingRemainder(dividingBy: 360) - 180)
            }
            var flags = RenderActionFlags()
            AllocationCounter.begin()
            let status = unit.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(index * 256)), bus: 0, frameCount: 256, into: buffers.list)
            heapCalls += AllocationCounter.end()
            if status != .noError { failures += 1 }
            if index % 50 == 0 { _ = try cycle(index) }
        }
        #expect(failures == 0)
        #expect(heapCalls == 0, "\(heapCalls) heap calls in 2,000 cycles")
        #expect(buffers.list[0].contains { $0 != 0 })
    }
}
