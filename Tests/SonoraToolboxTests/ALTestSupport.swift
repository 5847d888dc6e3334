import Foundation
import SonoraToolbox

/// A loopback OpenAL world for tests: a stereo 48 kHz loopback device and one context.
struct ALWorld {
    let device: ALDevice
    let context: ALContext

    /// Few sources unless asked: each is a 3D mixer input made with the context.
    init(frequency: Int = 48000, channels: Int = 2, attributes: ALContextAttributes = ALContextAttributes(monoSources: 8, stereoSources: 2)) throws {
        device = try ALDevice.loopback(frequency: frequency, channels: channels)
        context = try ALContext(device: device, attributes: attributes)
    }

    /// Renders `frames` frames, interleaved.
    func render(_ frames: Int) -> [Float] {
        var out = [Float](repeating: 0, count: frames * device.channels)
        out.withUnsafeMutableBufferPointer { device.render(into: $0.baseAddress!, frames: frames) }
        return out
    }

    /// Channel `channel` of interleaved `samples`.
    func channel(_ channel: Int, of samples: [Float]) -> [Float] {
        stride(from: channel, to: samples.count, by: device.channels).map { samples[$0] }
    }

    /// A mono Float32 buffer holding `samples`.
    func buffer(_ samples: [Float], frequency: Int = 48000) throws -> ALBuffer {
        let buffer = try context.makeBuffer()
        try samples.withUnsafeBytes { try buffer.setData($0, format: .monoFloat32, frequency: frequency) }
        return buffer
    }

    /// A mono buffer of a `frequency`-Hz sine, `frames` long, amplitude 0.5.
    func sine(_ hertz: Double, frames: Int, frequency: Int = 48000) throws -> ALBuffer {
        try buffer((0..<frames).map { Float(0.5 * sin(2 * .pi * hertz * Double($0) / Double(frequency))) }, frequency: frequency)
    }

    func destroy() {
        context.destroy()
        device.close()
    }
}

func rms(_ samples: [Float]) -> Double {
    guard !samples.isEmpty else { return 0 }
    return (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count)).squareRoot()
}
