import Foundation
import SonoraCore
import SonoraHAL
import SonoraTestSupport
@testable import SonoraToolbox
import Testing

/// What a loopback render of the OpenAL API sounds like: placement left/right and
/// front/back, silence of suspended contexts, interruptions through the process-local
/// session, and a render path that makes no heap call with 64 moving sources.
@Suite("OpenAL: loopback rendering", .serialized)
struct ALRenderTests {
    /// RMS per output channel of a source at `position` (relative to the default listener).
    static func levels(at position: SIMD3<Float>, channels: Int) throws -> [Double] {
        let world = try ALWorld(channels: channels)
        defer { world.destroy() }
        let source = try world.context.makeSource()
        source.buffer = try world.sine(500, frames: 48000)
        source.position = position
        try source.play()
        _ = world.render(4800)  // let any ramp settle
        let out = world.render(9600)
        return (0..<channels).map { rms(world.channel($0, of: out)) }
    }

    @Test("stereo: a source on the left is louder in the left channel, one on the right in the right, one ahead in both alike")
    func leftRight() throws {
        let left = try Self.levels(at: [-3, 0, 0], channels: 2)
        let right = try Self.levels(at: [3, 0, 0], channels: 2)
        let ahead = try Self.levels(at: [0, 0, -3], channels: 2)
        #expect(left[0] > 4 * left[1], "left: \(left)")
        #expect(right[1] > 4 * right[0], "right: \(right)")
        #expect(abs(ahead[0] - ahead[1]) < 0.05 * ahead[0], "ahead: \(ahead)")
        #expect(ahead[0] > 0.01)
    }

    @Test("quad (4.0): a source ahead is in the front pair, one behind in the rear pair")
    func frontBack() throws {
        let front = try Self.levels(at: [0, 0, -3], channels: 4)
        let back = try Self.levels(at: [0, 0, 3], channels: 4)
        #expect(front[0] + front[1] > 4 * (front[2] + front[3]), "front: \(front)")
        #expect(back[2] + back[3] > 4 * (back[0] + back[1]), "back: \(back)")
    }

    @Test("the distance model's gain is what is heard: a source at 4 m (inverse clamped) is a quarter of one at 1 m")
    func distanceHeard() throws {
        let near = try Self.levels(at: [0, 0, -1], channels: 2)
        let far = try Self.levels(at: [0, 0, -4], channels: 2)
        let ratio = far[0] / near[0]
        #expect(abs(20 * log10(ratio) - 20 * log10(0.25)) < 0.1, "ratio \(ratio)")
    }

    @Test("a suspended context is silent and holds its sources' positions; process continues where it stopped")
    func suspendProcess() throws {
        let world = try ALWorld()
        defer { world.destroy() }
        let source = try world.context.makeSource()
        source.buffer = try world.sine(500, frames: 48000)
        try source.play()
        _ = world.render(1000)
        world.context.suspend()
        let during = world.render(1000)
        #expect(during.allSatisfy { $0 == 0 })
        #expect(source.sampleOffset == 1000)
        world.context.process()
        _ = world.render(500)
        #expect(source.sampleOffset == 1500)
    }

    @Test("an interruption of the process-local session suspends the context; after it ends, making it current continues where it stopped")
    func interruption() throws {
        let session = AudioSession(backend: LocalAudioSessionBackend())
        try session.setActive(true)
        let world = try inSession(session) { try ALWorld() }
        defer { world.destroy() }
        #expect(ALContext.makeCurrent(world.context))
        let source = try world.context.makeSource()
        source.buffer = try world.sine(500, frames: 48000)
        try source.play()
        _ = world.render(1000)
        session.deviceReported(.interruptionBegan(.playback, errno: ENODEV), device: "test-card")
        session.waitForDelivery()
        #expect(session.isInterrupted)
        #expect(!world.context.isProcessing)
        let during = world.render(2000)
        #expect(during.allSatisfy { $0 == 0 }, "silent while interrupted")
        #expect(source.sampleOffset == 1000, "sources hold their place")
        #expect(source.state == .playing)
        // The seed's order: current context cleared while interrupted, made current again after.
        #expect(ALContext.makeCurrent(nil))
        session.deviceReported(.interruptionEnded(attempts: 1), device: "test-card")
        session.waitForDelivery()
        #expect(!session.isInterrupted)
        #expect(!world.context.isProcessing, "still suspended until the program makes it current")
        #expect(ALContext.makeCurrent(world.context))
        #expect(world.context.isProcessing)
        let after = world.render(500)
        #expect(source.sampleOffset == 1500, "continues where it stopped")
        #expect(rms(world.channel(0, of: after)) > 0.01)
        #expect(ALContext.makeCurrent(nil))
    }

    @Test("two contexts on one device are mixed; buffers are shared; suspending one leaves the other heard; a destroyed one is gone")
    func twoContexts() throws {
        let device = try ALDevice.loopback(frequency: 48000, channels: 2)
        defer { device.close() }
        let attributes = ALContextAttributes(monoSources: 2, stereoSources: 0)
        let first = try ALContext(device: device, attributes: attributes)
        let second = try ALContext(device: device, attributes: attributes)
        let buffer = try first.makeBuffer()
        try [Float](repeating: 0.5, count: 48000).withUnsafeBytes { try buffer.setData($0, format: .monoFloat32, frequency: 48000) }
        let a = try first.makeSource()
        let b = try second.makeSource()
        a.buffer = buffer
        b.buffer = buffer  // a buffer of the device, played by another context
        func level() -> Float {
            var out = [Float](repeating: 0, count: 2 * 960)
            out.withUnsafeMutableBufferPointer { device.render(into: $0.baseAddress!, frames: 960) }
            return out[out.count - 2]
        }
        try a.play()
        _ = level()
        let one = level()
        try b.play()
        _ = level()
        let both = level()
        #expect(one > 0.1 && abs(both / one - 2) < 0.01, "one \(one), both \(both)")
        second.suspend()
        _ = level()
        #expect(abs(level() / one - 1) < 0.01)
        second.destroy()
        #expect(abs(level() / one - 1) < 0.01)
        #expect(b.isDeleted, "a destroyed context deletes its sources")
        first.destroy()
        #expect(level() == 0)
    }

    @Test("a playback device on Sonora's timer-paced null device plays a source through to its end by itself")
    func playbackDevice() throws {
        let device = try ALDevice.playback("null")
        defer { device.close() }
        let context = try ALContext(device: device)
        let source = try context.makeSource()
        let buffer = try context.makeBuffer()
        try [Float](repeating: 0.25, count: 4800).withUnsafeBytes { try buffer.setData($0, format: .monoFloat32, frequency: 48000) }
        source.buffer = buffer
        try source.play()
        var sawProgress = false
        for _ in 0..<5000 where source.state == .playing {
            if source.sampleOffset > 0 { sawProgress = true }
            usleep(1000)
        }
        #expect(sawProgress)
        #expect(source.state == .stopped)
        context.destroy()
    }

    @Test("no heap call in the mix with 64 sources moving every block", .enabled(if: AllocationCounter.isAvailable))
    func noAllocation() throws {
        let world = try ALWorld(attributes: ALContextAttributes(monoSources: 64, stereoSources: 0))
        defer { world.destroy() }
        var sources: [ALSource] = []
        for index in 0..<64 {
            let source = try world.context.makeSource()
            source.buffer = try world.sine(200 + Double(index) * 10, frames: 4800)
            source.isLooping = true
            source.pitch = index % 3 == 0 ? 3 : 1.1  // some beyond the unit's rate range: the voice resamples
            sources.append(source)
        }
        try world.context.play(sources)
        let list = try OwnedAudioBufferList(channelCount: 2, frameCapacity: 512)
        var total = 0
        for block in 0..<200 {
            let angle = Float(block) * 0.05
            for (index, source) in sources.enumerated() {
                let phase = angle + Float(index)
                source.position = [3 * cos(phase), 0.5 * sin(phase * 0.3), 3 * sin(phase)]
                source.velocity = [-3 * sin(phase), 0, 3 * cos(phase)]
            }
            world.context.flushBeforeLoopbackRender()
            let count = AllocationCounter.count { world.device.mix(into: list.list(frameCount: 512), frameCount: 512) }
            if block >= 20 { total += count }  // the first cycles warm the paths up
        }
        #expect(total == 0)
        #expect(sources.allSatisfy { $0.state == .playing })
    }
}
