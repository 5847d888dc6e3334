import SonoraCore
import Testing
@testable import SonoraUnits

#if canImport(Glibc)
import Glibc
#endif

/// At rate 1 the 3D mixer reads an input where it was pulled (no copy); the filters that work
/// in place (occlusion, obstruction, the EFX shelves of the direct sound) get a copy first, so
/// the pulled buffer keeps what the input wrote.
@Suite("3D mixer: a rate-1 input is read where it was pulled")
struct Mixer3DPulledInputTests {
    /// A 5 kHz sine (negated on the second channel) that, at each pull and once at the end,
    /// checks that the buffers it filled last still hold what it wrote.
    final class CheckingSource: RenderCallbackTarget {
        private var written: [(UnsafeMutablePointer<Float>, [Float])] = []
        private var served = 0
        private(set) var changed = false

        func check() {
            for (pointer, samples) in written where zip(samples.indices, samples).contains(where: { pointer[$0.0] != $0.1 }) {
                changed = true
            }
            written = []
        }

        override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
            check()
            let buffers = request.pointee.buffers
            let frames = request.pointee.frameCount
            for channel in 0..<buffers.channelCount {
                let samples = buffers.samples(channel)
                let sign: Float = channel == 0 ? 1 : -1
                for frame in 0..<frames {
                    samples[frame] = sign * 0.5 * Float(sin(2 * Double.pi * 5000 * Double(served + frame) / 48000))
                }
                written.append((samples, Array(UnsafeBufferPointer(start: samples, count: frames))))
            }
            served += frames
            return .noError
        }
    }

    @Test(arguments: [1, 2], ["occlusion", "obstruction", "direct high shelf", "direct low shelf", "none"])
    func filtersLeaveThePulledInputAlone(channels: Int, filter: String) throws {
        let unit = try makeMixer3D(inputChannels: channels)
        let source = CheckingSource()
        try unit.setRenderCallback(RenderCallback(source), input: 0)
        typealias P = Mixer3DUnit.Parameter
        let parameter: AudioUnitParameterID? = switch filter {
        case "occlusion": P.occlusionAttenuation
        case "obstruction": P.obstructionAttenuation
        case "direct high shelf": P.directHighFrequencyGain
        case "direct low shelf": P.directLowFrequencyGain
        default: nil
        }
        if let parameter { try unit.setParameter(parameter, scope: .input, element: 0, to: -20) }
        try unit.setParameter(P.azimuth, scope: .input, element: 0, to: 30)
        try unit.initialize()
        defer { unit.uninitialize() }
        let out = try renderMixer3D(unit, cycles: 4, frames: 512, channels: 2)
        source.check()
        #expect(!source.changed, "the mixer wrote into the buffer it pulled")
        #expect(out[0].contains { $0 != 0 } && out[1].contains { $0 != 0 })
    }
}
