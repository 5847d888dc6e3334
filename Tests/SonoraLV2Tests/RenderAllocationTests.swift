import CLilv
import Foundation
import SonoraCore
import SonoraTestSupport
import SonoraUnits
import Synchronization
import Testing
@testable import SonoraLV2

/// The render path of an LV2 unit makes no heap call, whatever the plugin kind:
/// plain audio, atom ports, MIDI, sidechain, parameter changes splitting runs.
@Suite("LV2 render allocates nothing", .serialized, .enabled(if: AllocationCounter.isAvailable))
struct RenderAllocationLV2Tests {
    static let plugins = [
        "http://lv2plug.in/plugins/eg-amp", "http://drobilla.net/plugins/mda/Delay", "urn:zamaudio:ZamCompX2",
        "http://gareus.org/oss/lv2/fil4#stereo", "http://lv2plug.in/plugins/eg-sampler",
        "http://lsp-plug.in/plugins/lv2/comp_delay_stereo", "http://lv2plug.in/plugins/eg-metro",
    ]

    final class Silence: RenderCallbackTarget {
        override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
            let buffers = request.pointee.buffers
            for channel in 0..<buffers.channelCount {
                let samples = buffers.samples(channel)
                for frame in 0..<request.pointee.frameCount { samples[frame] = Float(frame % 64) / 64 - 0.5 }
            }
            return .noError
        }
    }

    @Test(arguments: plugins)
    func renderMakesNoHeapCalls(_ uri: String) throws {
        let unit = try Fixtures.unit(uri, maximumFrames: 512)
        for input in 0..<unit.elementCount(.input) { try unit.setRenderCallback(Silence(), input: input) }
        try unit.initialize()
        defer { unit.uninitialize() }
        let outputs = try (0..<unit.elementCount(.output)).map { element in
            try OwnedAudioBufferList(
                channelCount: Int(try unit.streamFormat(scope: .output, element: element).channelsPerFrame), frameCapacity: 512)
        }
        let floatPatchParameter = unit.plugin.patchParameters.first { $0.isWritable && $0.range == LV2URI.atomFloat }
        let control = unit.plugin.ports.first { $0.kind == .control && $0.direction == .input && !$0.isToggled && !$0.isInteger }
        // Plain values only in the measured loop (iterating an array of class references allocates in debug builds).
        let lists = UnsafeMutableBufferPointer<AudioBufferList>.allocate(capacity: outputs.count)
        defer { lists.deallocate() }
        for (bus, output) in outputs.enumerated() { lists[bus] = output.list }
        func cycle(_ index: Int) -> AudioError.Code {
            var status = AudioError.Code.noError
            for bus in 0..<lists.count {
                var flags = RenderActionFlags()
                let result = unit.render(
                    flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(index * 512)), bus: bus, frameCount: 512,
                    into: lists[bus])
                if result != .noError { status = result }
            }
            return status
        }
        for index in 0..<20 { #expect(cycle(index) == .noError) }
        var heapCalls = 0
        for index in 20..<520 {
            // Control-side work between cycles (not counted): parameter changes and MIDI.
            if index % 10 == 0, let control {
                let info = try unit.parameterInfo(AudioUnitParameterID(control.index))
                try unit.setParameter(
                    AudioUnitParameterID(control.index), to: info.minValue + (info.maxValue - info.minValue) * Float(index % 7) / 7,
                    bufferOffset: index % 512)
            }
            if index % 25 == 0, unit.plugin.ports.contains(where: \.takesMIDI) {
                try unit.sendMIDI([0x90, 60, 100], at: 100)
            }
            if index % 25 == 5, let parameter = floatPatchParameter {
                try unit.setPatchParameter(parameter.uri, to: .float(parameter.minimum ?? 0))
            }
            if index % 100 == 0, unit.takesTransport {
                try unit.sendTransport(LV2Transport(frame: Int64(index * 512), speed: 1, beatsPerMinute: Float(100 + index % 50)))
            }
            AllocationCounter.begin()
            let status = cycle(index)
            heapCalls += AllocationCounter.end()
            #expect(status == .noError)
        }
        #expect(heapCalls == 0, "\(heapCalls) heap calls in 500 render cycles of \(uri)")
        withExtendedLifetime(outputs) {}
    }
}
