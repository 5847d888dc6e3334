import Foundation
import SonoraToolbox
import Testing

/// Queued buffers (streaming): processed counts while playing, unqueueing, refilling,
/// running dry, and offsets across the queue.
@Suite("OpenAL: queued buffers and offsets", .serialized)
struct ALStreamingTests {
    @Test("processed counts follow the play position; unqueued buffers come back in order; the source stops when the queue runs dry")
    func streaming() throws {
        let world = try ALWorld()
        defer { world.destroy() }
        let source = try world.context.makeSource()
        let buffers = try (0..<4).map { _ in try world.sine(440, frames: 1000) }
        try source.queue(buffers)
        #expect(source.buffersQueued == 4)
        #expect(source.buffersProcessed == 0)
        try source.play()
        _ = world.render(2500)
        #expect(source.buffersProcessed == 2)
        #expect(source.sampleOffset == 2500)
        #expect(source.buffer === buffers[2], "the buffer playing now")
        let returned = try source.unqueueBuffers(2)
        #expect(returned.count == 2 && returned[0] === buffers[0] && returned[1] === buffers[1])
        #expect(source.buffersQueued == 2)
        #expect(source.buffersProcessed == 0)
        #expect(source.sampleOffset == 500, "offsets count from the head of what is still queued")
        // Refill with one of the returned buffers, as a streaming loop does.
        try source.queue(returned[0])
        #expect(source.buffersQueued == 3)
        _ = world.render(2400)
        #expect(source.state == .playing)
        #expect(source.buffersProcessed == 2)
        _ = world.render(200)
        #expect(source.state == .stopped, "the queue ran dry")
        #expect(source.buffersProcessed == 3, "a stopped source has processed every buffer")
        #expect(try source.unqueueBuffers(3).count == 3)
        #expect(source.buffersQueued == 0)
        #expect(world.context.takeError() == nil)
    }

    @Test("stop marks every buffer processed; rewind none; a looping queue reports none and wraps")
    func stopRewindLoop() throws {
        let world = try ALWorld()
        defer { world.destroy() }
        let source = try world.context.makeSource()
        try source.queue(try (0..<3).map { _ in try world.sine(440, frames: 1000) })
        try source.play()
        _ = world.render(1500)
        try source.stop()
        #expect(source.buffersProcessed == 3)
        try source.rewind()
        #expect(source.buffersProcessed == 0)
        source.isLooping = true
        try source.play()
        _ = world.render(3500)
        #expect(source.state == .playing)
        #expect(source.buffersProcessed == 0)
        #expect(source.sampleOffset == 500)
    }

    @Test("offsets: sample, second and byte offsets read and set, before play and while playing")
    func offsets() throws {
        let world = try ALWorld()
        defer { world.destroy() }
        let source = try world.context.makeSource()
        // 16-bit mono at 48 kHz: 2 bytes a frame.
        let samples = (0..<48000).map { Int16(truncatingIfNeeded: $0 & 0x7FF) }
        let buffer = try world.context.makeBuffer()
        try samples.withUnsafeBytes { try buffer.setData($0, format: .mono16, frequency: 48000) }
        #expect(buffer.bits == 16 && buffer.channels == 1 && buffer.size == 96000 && buffer.frequency == 48000)
        source.buffer = buffer
        source.sampleOffset = 12000
        #expect(source.sampleOffset == 0, "an offset set before play reads 0 until the source plays")
        try source.play()
        #expect(source.sampleOffset == 12000)
        _ = world.render(1000)
        #expect(source.sampleOffset == 13000)
        #expect(source.byteOffset == 26000)
        #expect(abs(source.secondOffset - 13000.0 / 48000) < 1e-6)
        source.secondOffset = 0.5
        #expect(source.sampleOffset == 24000)
        _ = world.render(100)
        #expect(source.sampleOffset == 24100)
        source.byteOffset = 2001
        #expect(source.sampleOffset == 1000, "byte offsets round down to a whole frame")
        try source.pause()
        source.sampleOffset = 40000
        _ = world.render(100)
        #expect(source.sampleOffset == 40000 && source.state == .paused)
    }

    @Test("a buffer at another rate plays at its own speed: offsets count its frames")
    func otherRate() throws {
        let world = try ALWorld()
        defer { world.destroy() }
        let source = try world.context.makeSource()
        source.buffer = try world.sine(440, frames: 24000, frequency: 24000)
        try source.play()
        _ = world.render(4800)
        #expect(source.sampleOffset == 2400)
        #expect(abs(source.secondOffset - 0.1) < 1e-4)
    }
}
