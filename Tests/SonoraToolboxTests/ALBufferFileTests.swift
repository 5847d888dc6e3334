import Foundation
import SonoraTestSupport
import SonoraToolbox
import Testing

/// Buffers from files (sox-made WAV and FLAC) and from memory in every format, and the
/// docs/openal.md example (a source circling the listener) run as written.
@Suite("OpenAL: buffers from files and memory", .serialized)
struct ALBufferFileTests {
    static func sox(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sox")
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "sox \(arguments)")
    }

    @Test("a stereo 16-bit WAV at 44.1 kHz and a mono FLAC load with their rate, channels and length; 4 channels are refused")
    func files() throws {
        let folder = try TemporaryFolder()
        defer { folder.remove() }
        try Self.sox(["-n", "-r", "44100", "-c", "2", "-b", "16", folder.path("stereo.wav"), "synth", "0.5", "sine", "440"])
        try Self.sox(["-n", "-r", "22050", "-c", "1", "-b", "16", folder.path("mono.flac"), "synth", "0.25", "sine", "300"])
        try Self.sox(["-n", "-r", "48000", "-c", "4", "-b", "16", folder.path("quad.wav"), "synth", "0.1", "sine", "300"])
        let world = try ALWorld()
        defer { world.destroy() }
        let stereo = try world.context.makeBuffer()
        try stereo.load(contentsOf: folder.url("stereo.wav"))
        #expect(stereo.channels == 2 && stereo.frequency == 44100 && stereo.frameCount == 22050)
        let mono = try world.context.makeBuffer()
        try mono.load(contentsOf: folder.url("mono.flac"))
        #expect(mono.channels == 1 && mono.frequency == 22050 && mono.frameCount == 5512)
        let quad = try world.context.makeBuffer()
        #expect(throws: ALError.invalidValue) { try quad.load(contentsOf: folder.url("quad.wav")) }
        #expect(world.context.lastErrorMessage?.contains("4 channels") == true)
        _ = world.context.takeError()
        // The stereo file plays through a stereo input, unplaced, to its end.
        let source = try world.context.makeSource()
        source.buffer = stereo
        try source.play()
        let out = world.render(4800)
        #expect(rms(world.channel(0, of: out)) > 0.05 && rms(world.channel(1, of: out)) > 0.05)
        _ = world.render(48000)
        #expect(source.state == .stopped)
    }

    @Test("memory formats: 8-bit unsigned, 16-bit signed and float, mono and stereo, decode to the same levels")
    func memoryFormats() throws {
        let world = try ALWorld()
        defer { world.destroy() }
        func level(_ bytes: [UInt8], _ format: ALFormat) throws -> Double {
            let buffer = try world.context.makeBuffer()
            try bytes.withUnsafeBytes { try buffer.setData($0, format: format, frequency: 48000) }
            #expect(buffer.size == bytes.count && buffer.bits == format.bits && buffer.channels == format.channels)
            let source = try world.context.makeSource()
            source.buffer = buffer
            source.isRelative = true  // at the listener: plain gain
            try source.play()
            let out = world.render(2400)
            try source.stop()
            source.buffer = nil
            try source.delete()
            return rms(world.channel(0, of: out))
        }
        let frames = 4800
        let value = (0..<frames).map { 0.5 * sin(2 * Double.pi * 480 * Double($0) / 48000) }
        let u8 = value.map { UInt8(clamping: Int((128 + $0 * 128).rounded())) }
        let s16 = value.flatMap { withUnsafeBytes(of: Int16(($0 * 32767).rounded())) { Array($0) } }
        let f32 = value.flatMap { withUnsafeBytes(of: Float($0)) { Array($0) } }
        let reference = try level(f32, .monoFloat32)
        #expect(reference > 0.1)
        #expect(abs(try level(s16, .mono16) / reference - 1) < 0.01)
        #expect(abs(try level(u8, .mono8) / reference - 1) < 0.02)
        func doubled(_ bytes: [UInt8], width: Int) -> [UInt8] {
            stride(from: 0, to: bytes.count, by: width).flatMap { Array(bytes[$0..<$0 + width]) + Array(bytes[$0..<$0 + width]) }
        }
        // Stereo buffers pass through; their left channel is the signal itself.
        let stereoReference = try level(doubled(f32, width: 4), .stereoFloat32)
        #expect(abs(try level(doubled(s16, width: 2), .stereo16) / stereoReference - 1) < 0.01)
        #expect(abs(try level(doubled(u8, width: 1), .stereo8) / stereoReference - 1) < 0.02)
    }

    @Test("the docs example: a looping source circling the listener moves from right to left ear and back")
    func docsExample() throws {
        let device = try ALDevice.loopback(frequency: 48000, channels: 2)
        let context = try ALContext(device: device, attributes: ALContextAttributes(monoSources: 4, stereoSources: 0))
        defer { context.destroy(); device.close() }
        ALContext.makeCurrent(context)
        let buffer = try context.makeBuffer()
        let tone = (0..<4800).map { Float(0.5 * sin(2 * Double.pi * 500 * Double($0) / 48000)) }
        try tone.withUnsafeBytes { try buffer.setData($0, format: .monoFloat32, frequency: 48000) }
        let source = try context.makeSource()
        source.buffer = buffer; source.isLooping = true; source.position = [2, 0, -1]
        try source.play()
        var mix = [Float](repeating: 0, count: 2 * 480)
        var balance: [Double] = []
        for step in 0..<100 {  // a source circling the listener
            let angle = Float(step) * 0.0628
            source.position = [2 * sin(angle), 0, -2 * cos(angle)]
            mix.withUnsafeMutableBufferPointer { device.render(into: $0.baseAddress!, frames: 480) }
            let left = rms(stride(from: 0, to: mix.count, by: 2).map { mix[$0] })
            let right = rms(stride(from: 1, to: mix.count, by: 2).map { mix[$0] })
            balance.append(right - left)
        }
        #expect(ALContext.makeCurrent(nil))
        #expect(balance[25] > 0, "a quarter turn: on the right")
        #expect(balance[75] < 0, "three quarters: on the left")
    }
}
