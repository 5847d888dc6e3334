import CRefcountCounter
import Foundation
import SonoraCore
import SonoraHAL
@_spi(Benchmark) import SonoraToolbox
import SonoraUnits

#if canImport(Glibc)
import Glibc
#endif

/// The OpenAL-style API's realtime side on a playback device: its contexts are mixed in the
/// I/O unit's input callback on the device's thread, which neither the graph cases nor the
/// players' rigs reach (a loopback device renders on the caller's thread, outside realtime).
extension RefcountAudit {
    /// One context on `ALDevice.playback("null")` with what a game's scene uses: 24 looping
    /// mono sources placed around the listener with velocities (doppler), two of them through
    /// a lowpass filter and eight sending to a reverb slot, a stereo source, and one source
    /// streaming queued buffers that the main thread unqueues and queues again; while
    /// counted, the main thread moves every source and turns the listener every 10 ms (the
    /// commands the realtime side takes). Counted as the device rigs are, on the null
    /// device's thread (`xrunEvery`: forced stalls, its xruns counted apart).
    static func countOpenAL(seconds: Double, xrunEvery: Int) throws -> DeviceCounts {
        func check<T>(_ what: String, _ body: () throws(ALError) -> T) throws -> T {
            do { return try body() } catch { throw AudioError(.unspecified, "the OpenAL rig: \(what): \(error)\(ALDevice.lastError.map { " (\($0))" } ?? "")") }
        }
        let device = try check("ALDevice.playback(null)") { () throws(ALError) in try ALDevice.playback("null") }
        let context = try check("a context") { () throws(ALError) in
            try ALContext(device: device, attributes: ALContextAttributes(monoSources: 32, stereoSources: 2))
        }
        let tally = UnsafeMutablePointer<DeviceTally>.allocate(capacity: 1)
        tally.initialize(to: DeviceTally())
        defer {
            context.destroy()
            device.close()
            tally.deinitialize(count: 1)
            tally.deallocate()
        }
        func buffer(hertz: Double, frames: Int, stereo: Bool = false) throws -> ALBuffer {
            let channels = stereo ? 2 : 1
            let samples = (0..<frames * channels).map { Float(0.25 * sin(2 * .pi * hertz * Double($0 / channels) / 48000)) }
            return try check("a buffer") { () throws(ALError) in
                let made = try context.makeBuffer()
                var failure: ALError?
                samples.withUnsafeBytes { bytes in
                    do throws(ALError) { try made.setData(bytes, format: stereo ? .stereoFloat32 : .monoFloat32, frequency: 48000) } catch { failure = error }
                }
                if let failure { throw failure }
                return made
            }
        }
        let tone = try buffer(hertz: 440, frames: 48000)
        let low = try buffer(hertz: 110, frames: 24000)
        let wide = try buffer(hertz: 330, frames: 48000, stereo: true)
        let chunks = try (0..<4).map { _ in try buffer(hertz: 660, frames: 2400) }
        let sources = try check("the scene") { () throws(ALError) -> (placed: [ALSource], stream: ALSource, all: [ALSource]) in
            let slot = try context.makeAuxiliaryEffectSlot()
            try slot.setEffect(.reverb(ALReverbProperties()))
            var placed: [ALSource] = []
            for index in 0..<24 {
                let source = try context.makeSource()
                try source.setBuffer(index % 3 == 0 ? low : tone)
                try source.setLooping(true)
                let angle = Float(index) / 24 * 2 * .pi
                try source.setPosition([3 * cos(angle), 0, 3 * sin(angle)])
                try source.setVelocity([-sin(angle), 0, cos(angle)])
                if index < 2 { try source.setDirectFilter(try ALFilter.lowpass(gain: 0.8, gainHF: 0.3)) }
                if index >= 16 { try source.setAuxiliarySend(0, slot: slot) }
                placed.append(source)
            }
            let stereo = try context.makeSource()
            try stereo.setBuffer(wide)
            try stereo.setLooping(true)
            let stream = try context.makeSource()
            try stream.queue(chunks)
            return (placed, stream, placed + [stereo, stream])
        }
        try check("play") { () throws(ALError) in for source in sources.all { try source.play() } }
        guard let io = device.ioUnit, let hardware = io.device else {
            throw AudioError(.unspecified, "the OpenAL rig: the playback device did not start its I/O unit")
        }
        tally.pointee.armStalls(every: xrunEvery, format: hardware.format) { hardware.statistics.xruns }  // (released with the tally)
        try io.addRenderNotify(RenderCallback(function: Self.tallyNotify, context: UnsafeMutableRawPointer(tally)))
        usleep(300_000)
        tally.pointee.armed = true
        // The application's side while counted: every source moved and the listener turned
        // every 10 ms, the stream's played buffers queued again.
        let end = Date().addingTimeInterval(seconds)
        var step = 0
        var requeued = 0
        while Date() < end {
            step += 1
            try check("moving the scene") { () throws(ALError) in
                for (index, source) in sources.placed.enumerated() {
                    let angle = Float(index) / 24 * 2 * .pi + Float(step) * 0.01
                    try source.setPosition([3 * cos(angle), 0, 3 * sin(angle)])
                }
                try context.listener.setOrientation(at: [sin(Float(step) * 0.005), 0, -cos(Float(step) * 0.005)], up: [0, 1, 0])
                let played = sources.stream.buffersProcessed
                if played > 0 {
                    let done = try sources.stream.unqueueBuffers(played)
                    try sources.stream.queue(done)
                    requeued += done.count
                }
                if sources.stream.state != .playing { try sources.stream.play() }
            }
            usleep(10_000)
        }
        tally.pointee.armed = false
        usleep(50_000)
        io.stop()
        guard tally.pointee.render.spans > 0, tally.pointee.between.spans > 0 else {
            throw AudioError(.unspecified, "the OpenAL rig: no render cycle was counted (device cycles \(hardware.statistics.cycles))")
        }
        guard requeued > 0 else { throw AudioError(.unspecified, "the OpenAL rig: the streaming source never finished a buffer") }
        if xrunEvery > 0, tally.pointee.recoveryXruns == 0 {
            throw AudioError(.unspecified, "the OpenAL rig: \(tally.pointee.stalls) stalls of \(tally.pointee.stallMicroseconds) µs made no xrun (raise --device-seconds or lower --xrun-every)")
        }
        let t = tally.pointee
        return DeviceCounts(
            render: t.render, between: t.between, recovery: t.recovery, recoveryXruns: t.recoveryXruns, stalls: t.stalls,
            stallMicroseconds: t.stallMicroseconds)
    }
}
