import Foundation
import SonoraCore
import SonoraDSP
import SonoraTestSupport
import SonoraToolbox
import Testing

/// Frames numbered 1, 2, 3 … so that a lost, repeated or moved frame shows.
func numbered(_ range: ClosedRange<Int>) -> [Float] { range.map { Float($0) } }

/// Renders `frames` frames in `slice`-frame steps.
func render(_ queue: AudioQueue, frames: Int, slice: Int = 100) throws -> [Float] {
    var output: [Float] = []
    var left = frames
    while left > 0 {
        let count = min(slice, left)
        output += floats(try queue.offlineRender(frames: count))
        left -= count
    }
    return output
}

@Suite("AudioQueue control, offline")
struct AudioQueueControlTests {
    @Test("stop after the queued buffers: every frame exactly once, IsRunning false right after the last")
    func stopAfterQueued() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        let rendered = SendableBox(0)
        let firedAt = SendableBox<[Int]>([])
        try queue.addPropertyListener(.isRunning) { queue, _ in
            if !queue.isRunning { firedAt.value.append(rendered.value) }
        }
        try enqueue(numbered(1...250), on: queue)
        try enqueue(numbered(251...500), on: queue)
        try enqueue(numbered(501...750), on: queue)
        try queue.prime()
        try queue.start()
        try queue.stop(immediate: false)
        #expect(queue.isRunning)
        var output: [Float] = []
        for _ in 0..<10 {
            output += floats(try queue.offlineRender(frames: 100))
            rendered.value = output.count
        }
        #expect(Array(output.prefix(750)) == numbered(1...750))
        #expect(output.dropFirst(750).allSatisfy { $0 == 0 })
        // Fired once, during the render call that played frame 750 (frames 701…800).
        #expect(firedAt.value == [700])
        #expect(!queue.isRunning)
        #expect(try queue.createTimeline().currentTime().sampleTime == 750)
        #expect(recorder.count == 3)
        #expect(queue.underruns == 0)
    }

    @Test("stop after queued, asked before the queue starts: what was queued still plays")
    func stopAfterQueuedBeforeStart() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        try enqueue(numbered(1...300), on: queue)
        try queue.stop(immediate: false)
        try queue.flush()  // lets the queue's thread see the stop before the start
        try queue.start()
        let output = try render(queue, frames: 400)
        #expect(Array(output.prefix(300)) == numbered(1...300))
        #expect(!queue.isRunning)
    }

    @Test("stop immediately: silence at once, every buffer handed back before stop returns, no enqueue meanwhile")
    func stopImmediately() throws {
        let recorder = Recorder()
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 1, sample: .float32)
        let refusals = SendableBox<[AudioError.Code]>([])
        let refill = SendableBox(true)
        let queue = try AudioQueue(format: format) { queue, buffer in
            recorder.add(buffer)
            guard refill.value else { return }
            do { try queue.enqueue(buffer) } catch let error as AudioError { refusals.value.append(error.code) } catch {}
        }
        defer { try? queue.dispose(immediate: true) }
        try queue.setOfflineRenderFormat(floatFormat(like: format))
        try queue.setDecodeBufferSizeFrames(256)
        try enqueue(numbered(1...200), on: queue)
        try enqueue(numbered(201...400), on: queue)
        try enqueue(numbered(401...600), on: queue)
        try queue.prime()
        try queue.start()
        let first = try render(queue, frames: 100)
        #expect(first == numbered(1...100))
        let returnedBefore = recorder.count
        #expect(returnedBefore == 1)  // the ring (256 frames) holds the first buffer and part of the second
        // The callback re-enqueued buffer 1, so all three are in the queue: all three come back,
        // and none can be enqueued again while the queue stops.
        try queue.stop(immediate: true)
        #expect(recorder.count == returnedBefore + 3)
        #expect(Set(recorder.returned.suffix(3)).count == 3)
        #expect(refusals.value == [.queueEnqueueDuringReset, .queueEnqueueDuringReset, .queueEnqueueDuringReset])
        #expect(!queue.isRunning)
        #expect(try render(queue, frames: 300).allSatisfy { $0 == 0 })
        refill.value = false
        // Started again, the queue plays only what is enqueued now, and ends right after it
        // (the frames dropped by the stop, written or still pending, are gone for good).
        try enqueue(numbered(2001...2150), on: queue)
        try queue.prime()
        try queue.start()
        try queue.stop(immediate: false)
        let again = try render(queue, frames: 300)
        #expect(Array(again.prefix(150)) == numbered(2001...2150))
        #expect(again.dropFirst(150).allSatisfy { $0 == 0 })
        #expect(!queue.isRunning)
        #expect(try queue.createTimeline().currentTime().sampleTime == 150)
    }

    @Test("trim at start and end, and a buffer's start time, exact to the frame; start at a device time")
    func trimAndStartTime() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        try enqueue(numbered(1...100), on: queue, trimStart: 10, trimEnd: 5)
        try enqueue(numbered(1001...1100), on: queue, startTime: 200)
        try queue.prime()
        try queue.start(atDeviceSampleTime: 50)
        try queue.stop(immediate: false)
        let output = try render(queue, frames: 500, slice: 64)
        #expect(output.prefix(50).allSatisfy { $0 == 0 })
        #expect(Array(output[50..<135]) == numbered(11...95))
        #expect(output[135..<250].allSatisfy { $0 == 0 })
        #expect(Array(output[250..<350]) == numbered(1001...1100))
        #expect(output[350...].allSatisfy { $0 == 0 })
        #expect(queue.underruns == 0)
    }

    @Test("pause and resume: no gap, no repeat; the timeline stands still while paused")
    func pauseResume() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        try enqueue(numbered(1...1000), on: queue)
        try queue.prime()
        try queue.start()
        let timeline = try queue.createTimeline()
        let before = try render(queue, frames: 333, slice: 111)
        try queue.pause()
        #expect(queue.isRunning)
        let paused = try render(queue, frames: 200)
        #expect(paused.allSatisfy { $0 == 0 })
        #expect(timeline.currentTime().sampleTime == 333)
        try queue.start()
        try queue.stop(immediate: false)
        let after = try render(queue, frames: 800, slice: 97)
        #expect(before + Array(after.prefix(667)) == numbered(1...1000))
        #expect(after.dropFirst(667).allSatisfy { $0 == 0 })
        #expect(!timeline.currentTime().discontinuity)
    }

    @Test("an underrun plays silence, is counted, and marks the timeline discontinuous once")
    func underrun() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        let timeline = try queue.createTimeline()
        try enqueue(numbered(1...150), on: queue)
        try queue.prime()
        try queue.start()
        let output = try render(queue, frames: 300)
        #expect(Array(output.prefix(150)) == numbered(1...150))
        #expect(output.dropFirst(150).allSatisfy { $0 == 0 })
        #expect(queue.underruns == 2)  // the slice 101…200 ran dry at 150, and 201…300 found nothing
        let time = timeline.currentTime()
        #expect(time.sampleTime == 300)
        #expect(time.discontinuity)
        #expect(!timeline.currentTime().discontinuity)
        // A late buffer plays from where the queue is.
        try enqueue(numbered(1...10), on: queue)
        #expect(Array(try render(queue, frames: 10)) == numbered(1...10))
    }

    @Test("a volume change ramps per sample, monotonic, to its target over the ramp time")
    func volumeRamp() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        try queue.setParameter(.volumeRampTime, 0.01)  // 480 frames at 48 kHz
        try enqueue([Float](repeating: 1, count: 4000), on: queue)
        try queue.prime()
        try queue.start()
        #expect(try render(queue, frames: 1000).allSatisfy { $0 == 1 })
        try queue.setParameter(.volume, 0.25)
        #expect(queue.parameter(.volume) == 0.25)
        let ramp = try render(queue, frames: 1000, slice: 128)
        let steps = zip(ramp, ramp.dropFirst()).map { $1 - $0 }
        #expect(steps.allSatisfy { $0 <= 0 })
        #expect(steps.allSatisfy { -$0 <= 0.75 / 480 + 1e-6 })
        #expect(ramp[0] == 1 && ramp[1] < 1)
        #expect(ramp[479] > 0.25 && ramp[480...].allSatisfy { $0 == 0.25 })
    }

    @Test("a buffer's parameter events take effect on its first frame")
    func parameterEvents() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(channels: 2, recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        try enqueue([Float](repeating: 1, count: 2 * 100), on: queue)
        try enqueue([Float](repeating: 1, count: 2 * 100), on: queue, events: [AudioQueueParameterEvent(.volume, 0.5), AudioQueueParameterEvent(.pan, 1)])
        try queue.prime()
        try queue.start()
        let output = try render(queue, frames: 200, slice: 64)
        #expect(output.prefix(200).allSatisfy { $0 == 1 })
        let second = Array(output[200...])
        let left = stride(from: 0, to: second.count, by: 2).map { second[$0] }
        let right = stride(from: 1, to: second.count, by: 2).map { second[$0] }
        #expect(left.allSatisfy { $0 == 0 })
        #expect(right.allSatisfy { $0 == 0.5 })
    }

    @Test("level metering equals the levels computed from the rendered samples")
    func metering() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(channels: 2, recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        #expect(throws: AudioError.self) { try queue.currentLevelMeter() }
        try queue.setLevelMeteringEnabled(true)
        let left = TestSignal.sine(frequency: 997, sampleRate: 48000, count: 2048, amplitude: 0.5)
        let right = TestSignal.whiteNoise(count: 2048, seed: 7, amplitude: 0.3)
        try enqueue(zip(left, right).flatMap { [$0, $1] }, on: queue)
        try queue.prime()
        try queue.start()
        _ = try render(queue, frames: 512, slice: 512)
        let slice = floats(try queue.offlineRender(frames: 480))
        let levels = try queue.currentLevelMeter()
        let decibels = try queue.currentLevelMeterDB()
        for channel in 0..<2 {
            let samples = stride(from: channel, to: slice.count, by: 2).map { slice[$0] }
            let rms = Float((samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count)).squareRoot())
            let peak = samples.map(abs).max() ?? 0
            #expect(abs(levels[channel].average - rms) <= 1e-6)
            #expect(levels[channel].peak == peak)
            #expect(abs(decibels[channel].average - Decibels.fromLinear(rms)) <= 1e-4)
            #expect(decibels[channel].peak == Decibels.fromLinear(peak))
        }
    }

    @Test("callbacks on a DispatchQueue, through Core Audio's C-convention form with user data")
    func dispatchQueueCCallback() throws {
        let dispatch = DispatchQueue(label: "aq-callbacks")
        let key = DispatchSpecificKey<Int>()
        dispatch.setSpecific(key: key, value: 42)
        final class Context: @unchecked Sendable {
            let key: DispatchSpecificKey<Int>
            var onQueue: [Bool] = []
            init(key: DispatchSpecificKey<Int>) { self.key = key }
        }
        let context = Context(key: key)
        let callback: AudioQueueOutputCallback = { userData, _, buffer in
            let context = Unmanaged<Context>.fromOpaque(userData!).takeUnretainedValue()
            context.onQueue.append(DispatchQueue.getSpecific(key: context.key) == 42 && AudioQueueBuffer.from(buffer).byteSize == 400)
        }
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 1, sample: .float32)
        let queue = try AudioQueue(format: format, callbackOn: .dispatchQueue(dispatch), callback: callback, userData: Unmanaged.passUnretained(context).toOpaque())
        defer { try? queue.dispose(immediate: true) }
        try queue.setOfflineRenderFormat(floatFormat(like: format))
        try enqueue(numbered(1...100), on: queue)
        try enqueue(numbered(101...200), on: queue)
        try queue.prime()
        #expect(context.onQueue == [true, true])
    }
}

/// A value the tests' callbacks and listeners set from the queue's thread; reads happen
/// after a barrier (offline render or prime), which orders them.
final class SendableBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.lock(); defer { lock.unlock() }; return stored }
        set { lock.lock(); stored = newValue; lock.unlock() }
    }
}
