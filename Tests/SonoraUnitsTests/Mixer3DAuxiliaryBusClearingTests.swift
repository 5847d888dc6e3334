import Foundation
import SonoraCore
import SonoraTestSupport
import Testing
@testable import SonoraUnits

/// The auxiliary buses are cleared only where a render wrote them: what a bus holds after a
/// render is still exactly what that render sent, when a send stops and when slices change length.
@Suite("3D mixer: auxiliary buses cleared where written")
struct Mixer3DAuxiliaryBusClearingTests {
    typealias P = Mixer3DUnit.Parameter

    @Test func aBusHoldsOnlyWhatTheLastRenderSent() throws {
        let unit = try makeMixer3D(inputs: 1, inputChannels: 1, maximumFrames: 512)
        try unit.setProperty(.auxiliaryBusCount, scope: .global, element: 0, to: .elementCount(2))
        let source = Mixer3DToneSource(frequency: 0, amplitude: 0.5)  // a constant
        defer { withExtendedLifetime(source) {} }
        try unit.setRenderCallback(RenderCallback(source), input: 0)
        try unit.setParameter(P.auxiliarySendLevel(0), scope: .input, element: 0, to: 0)
        try unit.initialize()
        let output = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 512)
        var time = 0.0
        func render(_ frames: Int) -> [Float] {
            var flags = RenderActionFlags()
            let status = unit.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: time), bus: 0, frameCount: frames, into: output.list)
            #expect(status == .noError)
            time += Double(frames)
            return Array(UnsafeBufferPointer(start: unit.auxiliaryBus(0)!, count: 512))
        }
        // On: a short slice, then a full one (the bus holds the send over each slice's frames).
        let short = render(128)
        #expect(short[0..<128].allSatisfy { abs($0 - 0.5) < 1e-6 })
        let full = render(512)
        #expect(full.allSatisfy { abs($0 - 0.5) < 1e-6 })
        // Off: the slice that ramps the level down, then silence at every frame of every later slice.
        try unit.setParameter(P.auxiliarySendLevel(0), scope: .input, element: 0, to: -120)
        let ramp = render(512)
        #expect(ramp[0] > 0 && abs(ramp[511]) < 1e-6)
        for frames in [512, 256, 512] {
            let bus = render(frames)
            #expect(bus.allSatisfy { $0 == 0 }, "after \(frames) frames: \(bus.first { $0 != 0 } ?? 0)")
        }
        // The bus no input ever sent to stays silent.
        #expect(UnsafeBufferPointer(start: unit.auxiliaryBus(1)!, count: 512).allSatisfy { $0 == 0 })
        // On again: the send is back at its level.
        try unit.setParameter(P.auxiliarySendLevel(0), scope: .input, element: 0, to: 0)
        _ = render(512)
        #expect(render(512).allSatisfy { abs($0 - 0.5) < 1e-6 })
    }
}
