import Foundation
import SonoraToolbox
import Testing

/// Source states as OpenAL 1.1 defines them, observed through a loopback device: play,
/// pause, stop and rewind singly and in groups, playing to the end, looping, restarts.
@Suite("OpenAL: source state transitions", .serialized)
struct ALSourceStateTests {
    @Test("initial → playing → paused → playing → stopped → initial; pause and stop of an initial source change nothing")
    func transitions() throws {
        let world = try ALWorld()
        defer { world.destroy() }
        let source = try world.context.makeSource()
        source.buffer = try world.sine(440, frames: 48000)
        #expect(source.state == .initial)
        try source.pause()
        #expect(source.state == .initial, "pause of an initial source is a no-op")
        try source.stop()
        #expect(source.state == .initial, "stop of an initial source is a no-op (as OpenAL Soft)")
        try source.play()
        #expect(source.state == .playing)
        _ = world.render(256)
        try source.pause()
        #expect(source.state == .paused)
        let paused = source.sampleOffset
        _ = world.render(256)
        #expect(source.sampleOffset == paused, "a paused source holds its position")
        try source.play()
        #expect(source.state == .playing)
        _ = world.render(256)
        #expect(source.sampleOffset == paused + 256, "play of a paused source resumes where it paused")
        try source.stop()
        #expect(source.state == .stopped)
        #expect(source.sampleOffset == 0)
        try source.rewind()
        #expect(source.state == .initial)
        try source.play()
        try source.rewind()
        #expect(source.state == .initial, "rewind of a playing source goes to initial")
        #expect(world.context.takeError() == nil)
    }

    @Test("a source plays to its end and stops by itself; play of a playing source restarts it")
    func endAndRestart() throws {
        let world = try ALWorld()
        defer { world.destroy() }
        let source = try world.context.makeSource()
        source.buffer = try world.sine(440, frames: 1000)
        try source.play()
        _ = world.render(512)
        #expect(source.state == .playing)
        #expect(source.sampleOffset == 512)
        try source.play()
        #expect(source.sampleOffset == 0, "play while playing starts again from the beginning")
        _ = world.render(300)
        #expect(source.sampleOffset == 300)
        _ = world.render(800)
        #expect(source.state == .stopped)
        #expect(source.sampleOffset == 0)
        #expect(source.buffersProcessed == 0, "a static source reports no processed buffers")
        try source.play()
        #expect(source.state == .playing, "a stopped source plays again from the start")
    }

    @Test("a looping source wraps around and keeps playing; turning looping off lets it end")
    func looping() throws {
        let world = try ALWorld()
        defer { world.destroy() }
        let source = try world.context.makeSource()
        source.buffer = try world.sine(440, frames: 1000)
        source.isLooping = true
        try source.play()
        _ = world.render(2500)
        #expect(source.state == .playing)
        #expect(source.sampleOffset == 500)
        source.isLooping = false
        _ = world.render(600)
        #expect(source.state == .stopped)
    }

    @Test("a source without buffers goes straight to stopped on play")
    func noBuffer() throws {
        let world = try ALWorld()
        defer { world.destroy() }
        let source = try world.context.makeSource()
        try source.play()
        #expect(source.state == .stopped)
    }

    @Test("group play starts every source in the same cycle; group stop and rewind act on all")
    func groups() throws {
        let world = try ALWorld()
        defer { world.destroy() }
        let a = try world.context.makeSource()
        let b = try world.context.makeSource()
        a.buffer = try world.sine(440, frames: 48000)
        b.buffer = try world.sine(660, frames: 48000)
        try world.context.play([a, b])
        #expect(a.state == .playing && b.state == .playing)
        _ = world.render(777)
        #expect(a.sampleOffset == 777 && b.sampleOffset == 777)
        try world.context.pause([a, b])
        #expect(a.state == .paused && b.state == .paused)
        try world.context.stop([a, b])
        #expect(a.state == .stopped && b.state == .stopped)
        try world.context.rewind([a, b])
        #expect(a.state == .initial && b.state == .initial)
    }
}
