import Foundation
import SonoraCore
import SonoraHAL
import SonoraTestSupport
@testable import SonoraToolbox
import Testing

/// A mono source at its buffer's own rate lends the mixer the buffer in place
/// (`ALVoice.lend`): what is heard is the buffer, across loops and buffer ends, and the mix
/// makes no heap call.
@Suite("OpenAL: mono buffers lent to the mixer", .serialized)
struct ALLentBufferTests {
    /// A source straight ahead at 1 m, pitch 1, no velocity: each output channel is the
    /// looping buffer at the equal-power centre gain, whichever path (lent or rendered) a
    /// block took (the 1000-frame buffer ends inside most 512-frame blocks).
    @Test func whatIsHeardIsTheBuffer() throws {
        let world = try ALWorld()
        defer { world.destroy() }
        let source = try world.context.makeSource()
        let frames = 1000
        let samples = (0..<frames).map { Float(sin(Double($0) * 0.37)) * 0.5 }
        source.buffer = try world.buffer(samples, frequency: 48000)
        source.isLooping = true
        source.position = [0, 0, -1]
        try source.play()
        _ = world.render(512)  // the first block starts at the targets; the gains stand still after it
        let out = world.render(4096)
        let left = world.channel(0, of: out), right = world.channel(1, of: out)
        let gain = left[0] / samples[512 % frames]
        #expect(abs(gain - Float(0.5).squareRoot()) < 1e-3, "centre gain \(gain)")
        var worst: Float = 0
        for index in 0..<4096 {
            let expected = gain * samples[(512 + index) % frames]
            worst = max(worst, abs(left[index] - expected), abs(right[index] - expected))
        }
        #expect(worst < 1e-6, "largest difference from the buffer: \(worst)")
    }

    @Test("no heap call in the mix with 64 sources at pitch 1 moving every block", .enabled(if: AllocationCounter.isAvailable))
    func noAllocation() throws {
        let world = try ALWorld(attributes: ALContextAttributes(monoSources: 64, stereoSources: 0))
        defer { world.destroy() }
        var sources: [ALSource] = []
        for index in 0..<64 {
            let source = try world.context.makeSource()
            source.buffer = try world.sine(200 + Double(index) * 10, frames: 4800 + index)
            source.isLooping = true
            sources.append(source)
        }
        try world.context.play(sources)
        let list = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 512)
        var total = 0
        for block in 0..<200 {
            let angle = Float(block) * 0.05
            for (index, source) in sources.enumerated() {
                // Around the listener at a fixed radius, no velocity: doppler 1, so the voices lend.
                let phase = angle + Float(index)
                source.position = [3 * cos(phase), 0.5 * sin(phase * 0.3), 3 * sin(phase)]
            }
            world.context.flushBeforeLoopbackRender()
            let count = AllocationCounter.count { world.device.mix(into: list.list(frameCount: 512), frameCount: 512) }
            if block >= 20 { total += count }  // the first cycles warm the paths up
        }
        #expect(total == 0)
        #expect(sources.allSatisfy { $0.state == .playing })
    }
}
