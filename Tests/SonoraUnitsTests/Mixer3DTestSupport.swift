import SonoraCore
@testable import SonoraUnits

#if canImport(Glibc)
import Glibc
#endif

/// A sine (or a constant, at frequency 0) on every channel, continuing across pulls whatever
/// their sizes: a 3D mixer input that counts the frames it was asked for.
final class Mixer3DToneSource: RenderCallbackTarget {
    let frequency: Double
    let amplitude: Float
    let sampleRate: Double
    var framesServed = 0

    init(frequency: Double, amplitude: Float = 0.5, sampleRate: Double = 48000) {
        self.frequency = frequency
        self.amplitude = amplitude
        self.sampleRate = sampleRate
    }

    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        let buffers = request.pointee.buffers
        let frames = request.pointee.frameCount
        for channel in 0..<buffers.channelCount {
            let samples = buffers.samples(channel)
            for frame in 0..<frames {
                samples[frame] = frequency == 0
                    ? amplitude
                    : amplitude * Float(sin(2 * Double.pi * frequency * Double(framesServed + frame) / sampleRate))
            }
        }
        framesServed += frames
        return .noError
    }
}

/// A 3D mixer with `inputs` inputs of `inputChannels`, output `outputChannels`, at 48 kHz.
func makeMixer3D(inputs: Int = 1, inputChannels: Int = 1, outputChannels: Int = 2, maximumFrames: Int = 512) throws -> Mixer3DUnit {
    let unit = Mixer3DUnit(inputs: inputs)
    try unit.setMaximumFramesPerSlice(maximumFrames)
    for element in 0..<inputs {
        try unit.setStreamFormat(.canonical(sampleRate: 48000, channels: inputChannels), scope: .input, element: element)
    }
    try unit.setStreamFormat(.canonical(sampleRate: 48000, channels: outputChannels), scope: .output, element: 0)
    return unit
}

/// Renders `cycles` × `frames` frames of the unit's output, channel by channel.
func renderMixer3D(_ unit: AudioUnit, cycles: Int, frames: Int, channels: Int, startingAt start: Int = 0) throws -> [[Float]] {
    var result = Array(repeating: [Float](), count: channels)
    for cycle in 0..<cycles {
        let block = try renderFrames(unit, frames: frames, sampleTime: Double((start + cycle) * frames), channels: channels)
        for channel in 0..<channels { result[channel] += block[channel] }
    }
    return result
}
