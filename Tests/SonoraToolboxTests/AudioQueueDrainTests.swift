import Foundation
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import SonoraToolbox
import SonoraUnits
import Testing

/// Stop after the queued buffers on a live device: the stream's last frame is still in the
/// device's buffer when the queue renders it, so IsRunning goes false (and a unit of the
/// queue's own stops) only once the device has played that buffer out. The scripted device
/// runs one cycle at a time on the test's thread, so the cycle where the end is reached is
/// exact: no clock is read.
@Suite("Stop after queued waits for the device's buffer", .serialized)
struct AudioQueueDrainTests {
    static let frames = 1000
    static let period = 256

    /// Plays `frames` frames of a constant on `device` through `attach` (own unit or shared
    /// output), stops after the queued buffer, then runs one cycle at a time (each followed by
    /// a pass of the queue's thread) until IsRunning goes false. Returns the frames the device
    /// had played when IsRunning was last true and when it went false, and the listener's calls.
    func playOut(_ device: PlayedTap, attach: (AudioQueue) throws -> Void) throws -> (running: Int, stopped: Int, listener: [String]) {
        let seen = Recorder()
        let queue = try AudioQueue(format: .linearPCM(sampleRate: 48000, channels: 2, sample: .float32)) { _, _ in }
        defer { try? queue.dispose(immediate: true) }
        try attach(queue)
        _ = try queue.addPropertyListener(.isRunning) { queue, _ in seen.note("\(queue.isRunning)") }
        try enqueue([Float](repeating: 0.25, count: 2 * Self.frames), on: queue)
        try queue.prime()
        try queue.start()
        try queue.stop(immediate: false)
        // A pass of the queue's thread: the end mark reaches the render side before any cycle.
        try queue.prime()
        var lastRunning = 0
        for _ in 0..<64 {
            try device.run(cycles: 1)
            try queue.prime()
            guard queue.isRunning else { break }
            lastRunning = device.frames
        }
        // The listener runs on the queue's thread right after IsRunning changed.
        for _ in 0..<5000 where seen.notes.count < 2 { usleep(1000) }
        let played = device.played[0]
        #expect(Array(played.prefix(Self.frames)) == [Float](repeating: 0.25, count: Self.frames))
        #expect(played.dropFirst(Self.frames).allSatisfy { $0 == 0 })
        return (lastRunning, device.frames, seen.notes)
    }

    @Test("own I/O unit (setOutputUnit): IsRunning goes false and the unit stops only after the device's buffer has played out")
    func ownUnitDrains() throws {
        let device = try PlayedTap(channels: 2, capacity: 48000)
        let latency = device.format.roundTripFrames
        let io = IOUnit()
        try io.setDevice(device)
        let (running, stopped, listener) = try playOut(device) { try $0.setOutputUnit(io) }
        // The end is heard `latency` frames after it is rendered: not stopped before that …
        #expect(stopped >= Self.frames + latency, "IsRunning went false after \(stopped) frames; the last frame leaves the device at \(Self.frames + latency)")
        // … and not a period later than the first cycle that starts past it.
        #expect(running < Self.frames + latency + Self.period, "still running after \(running) frames")
        #expect(!io.isRunning)
        #expect(listener == ["true", "false"])
    }

    @Test("shared output: the queue's IsRunning goes false after the device's buffer has played out; the device keeps running")
    func sharedOutputDrains() throws {
        let device = try PlayedTap(channels: 2, capacity: 48000)
        let latency = device.format.roundTripFrames
        let output = try AudioQueueOutput(device: device)
        let (running, stopped, listener) = try playOut(device) { try $0.setOutput(output) }
        #expect(stopped >= Self.frames + latency, "IsRunning went false after \(stopped) frames; the last frame leaves the device at \(Self.frames + latency)")
        #expect(running < Self.frames + latency + Self.period, "still running after \(running) frames")
        #expect(listener == ["true", "false"])
    }

    @Test("offline render keeps its timing: IsRunning is false right after the slice that renders past the last frame")
    func offlineStopsAtLastFrame() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        try enqueue([Float](repeating: 0.5, count: Self.frames), on: queue)
        try queue.prime()
        try queue.start()
        try queue.stop(immediate: false)
        _ = try queue.offlineRender(frames: Self.frames + 24)
        try queue.prime()
        #expect(!queue.isRunning)
    }
}
