import Foundation
import SonoraCore
import SonoraTestSupport
import SonoraToolbox
import Testing

/// Every kAudioQueueErr status the queue throws, reached and asserted, with a message that
/// names the queue and the call.
@Suite("AudioQueue errors")
struct AudioQueueErrorTests {
    /// Runs `body`, expects an AudioError with `code` whose message names `call` and the queue.
    func expectError(_ code: AudioError.Code, _ call: String, _ queue: AudioQueue?, _ body: () throws -> Void,
                     sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            try body()
            Issue.record("no error, expected \(code.name)", sourceLocation: sourceLocation)
        } catch let error as AudioError {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            #expect(error.message.contains("AudioQueue.\(call)"), "\(error)", sourceLocation: sourceLocation)
            if let queue { #expect(error.message.contains(queue.name), "\(error)", sourceLocation: sourceLocation) }
        } catch {
            Issue.record("\(error)", sourceLocation: sourceLocation)
        }
    }

    @Test("the statuses keep Core Audio's numeric values")
    func numericValues() {
        let expected: [(AudioError.Code, Int32)] = [
            (.queueInvalidBuffer, -66687), (.queueBufferEmpty, -66686), (.queueDisposalPending, -66685),
            (.queueInvalidProperty, -66684), (.queueInvalidPropertySize, -66683), (.queueInvalidParameter, -66682),
            (.queueCannotStart, -66681), (.queueInvalidDevice, -66680), (.queueBufferInQueue, -66679),
            (.queueInvalidRunState, -66678), (.queueInvalidQueueType, -66677), (.queuePermissions, -66676),
            (.queueInvalidPropertyValue, -66675), (.queuePrimeTimedOut, -66674), (.queueCodecNotFound, -66673),
            (.queueInvalidCodecAccess, -66672), (.queueInvalidated, -66671), (.queueTooManyTaps, -66670),
            (.queueInvalidTapContext, -66669), (.queueRecordUnderrun, -66668), (.queueInvalidTapType, -66667),
            (.queueBufferEnqueuedTwice, -66666), (.queueCannotStartYet, -66665), (.queueEnqueueDuringReset, -66632),
            (.queueInvalidOfflineMode, -66626),
        ]
        for (code, value) in expected {
            #expect(code.rawValue == value)
            #expect(code.name != "error", "\(value) has no name")
        }
    }

    @Test("buffer statuses: invalid buffer, buffer empty, enqueued twice, buffer in queue")
    func bufferErrors() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(recorder: recorder)
        let other = try monoFloatQueue(recorder: recorder)
        defer {
            try? queue.dispose(immediate: true)
            try? other.dispose(immediate: true)
        }
        let foreign = try other.allocateBuffer(byteCapacity: 64)
        foreign.fill(with: bytes([1, 2]))
        expectError(.queueInvalidBuffer, "enqueue", queue) { try queue.enqueue(foreign) }
        let empty = try queue.allocateBuffer(byteCapacity: 64)
        expectError(.queueBufferEmpty, "enqueue", queue) { try queue.enqueue(empty) }
        empty.byteSize = 6
        expectError(.queueInvalidBuffer, "enqueue", queue) { try queue.enqueue(empty) }  // 1.5 frames
        let buffer = try enqueue([1, 2, 3], on: queue)
        expectError(.queueBufferEnqueuedTwice, "enqueue", queue) { try queue.enqueue(buffer) }
        expectError(.queueBufferInQueue, "freeBuffer", queue) { try queue.freeBuffer(buffer) }
        try queue.freeBuffer(empty)
        expectError(.queueInvalidBuffer, "freeBuffer", queue) { try queue.freeBuffer(empty) }
        expectError(.queueInvalidParameter, "enqueue", queue) { try enqueue([1, 2, 3], on: queue, trimStart: 2, trimEnd: 2) }
        expectError(.queueInvalidParameter, "allocateBuffer", queue) { _ = try queue.allocateBuffer(byteCapacity: 0) }
    }

    @Test("variable-size packets need descriptions that fit the buffer")
    func packetDescriptionErrors() throws {
        let queue = try AudioQueue(format: .compressed(.mpeg4AAC, sampleRate: 44100, channels: 2)) { _, _ in }
        defer { try? queue.dispose(immediate: true) }
        let buffer = try queue.allocateBuffer(byteCapacity: 100, packetDescriptionCapacity: 1)
        buffer.fill(with: [UInt8](repeating: 0, count: 100))
        expectError(.queueInvalidBuffer, "enqueue", queue) { try queue.enqueue(buffer) }
        expectError(.queueInvalidBuffer, "enqueue", queue) {
            try queue.enqueue(buffer, packetDescriptions: [AudioStreamPacketDescription(startOffset: 50, dataByteSize: 60)])
        }
        expectError(.queueInvalidBuffer, "enqueue", queue) {
            try queue.enqueue(buffer, packetDescriptions: [AudioStreamPacketDescription(startOffset: 0, dataByteSize: 10), AudioStreamPacketDescription(startOffset: 10, dataByteSize: 10)])
        }
    }

    @Test("property statuses: invalid property, property size, property value; run state")
    func propertyErrors() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        expectError(.queueInvalidProperty, "setMagicCookie", queue) { try queue.setMagicCookie([1]) }
        expectError(.queueInvalidProperty, "currentLevelMeter", queue) { _ = try queue.currentLevelMeter() }
        expectError(.queueInvalidPropertyValue, "setDecodeBufferSizeFrames", queue) { try queue.setDecodeBufferSizeFrames(10) }
        expectError(.queueInvalidParameter, "setParameter", queue) { try queue.setParameter(.volume, 1.5) }
        expectError(.queueInvalidParameter, "setParameter", queue) { try queue.setParameter(.pan, 0.5) }  // mono
        expectError(.queueInvalidParameter, "setParameter", queue) { try queue.setParameter(.volumeRampTime, .nan) }
        expectError(.queueInvalidParameter, "removePropertyListener", queue) { try queue.removePropertyListener(.isRunning, token: 99) }
        expectError(.queueInvalidRunState, "pause", queue) { try queue.pause() }
        try queue.start()
        expectError(.queueInvalidRunState, "setDecodeBufferSizeFrames", queue) { try queue.setDecodeBufferSizeFrames(1024) }
        expectError(.queueInvalidRunState, "setOfflineRenderFormat", queue) { try queue.setOfflineRenderFormat(nil) }

        let aac = try AudioQueue(format: .compressed(.mpeg4AAC, sampleRate: 44100, channels: 2)) { _, _ in }
        defer { try? aac.dispose(immediate: true) }
        expectError(.queueInvalidPropertySize, "setMagicCookie", aac) { try aac.setMagicCookie([]) }
    }

    @Test("a stop from inside the callback that would wait on itself is refused")
    func stopFromCallback() throws {
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 1, sample: .float32)
        let seen = SendableBox<[AudioError]>([])
        let queue = try AudioQueue(format: format) { queue, _ in
            do { try queue.stop(immediate: true) } catch let error as AudioError { seen.value.append(error) } catch {}
        }
        defer { try? queue.dispose(immediate: true) }
        try queue.setOfflineRenderFormat(floatFormat(like: format))
        try enqueue([1, 2], on: queue)
        try queue.prime()
        #expect(seen.value.map(\.code) == [.queueInvalidRunState])
        #expect(seen.value.first?.message.contains("AudioQueue.stop") == true)
    }

    @Test("codec not found, cannot start, invalid offline mode")
    func formatAndModeErrors() throws {
        expectError(.queueCodecNotFound, "init", nil) {
            _ = try AudioQueue(format: .compressed(AudioFormatID(rawValue: "ac-3"), sampleRate: 48000, channels: 2)) { _, _ in }
        }
        expectError(.queueInvalidPropertyValue, "init", nil) {
            _ = try AudioQueue(format: .linearPCM(sampleRate: 0, channels: 1, sample: .int16)) { _, _ in }
        }
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .int16)
        let queue = try AudioQueue(format: format) { _, _ in }
        defer { try? queue.dispose(immediate: true) }
        expectError(.queueCannotStart, "start", queue) { try queue.start() }
        expectError(.queueInvalidOfflineMode, "offlineRender", queue) { _ = try queue.offlineRender(frames: 10) }
        expectError(.queueInvalidOfflineMode, "setOfflineRenderFormat", queue) {
            try queue.setOfflineRenderFormat(.linearPCM(sampleRate: 44100, channels: 2, sample: .float32))
        }
        expectError(.queueInvalidOfflineMode, "setOfflineRenderFormat", queue) {
            try queue.setOfflineRenderFormat(.appleIMA4(sampleRate: 48000, channels: 2))
        }
        try queue.setOfflineRenderFormat(.linearPCM(sampleRate: 48000, channels: 2, sample: .int16))
        expectError(.queueInvalidParameter, "offlineRender", queue) { _ = try queue.offlineRender(frames: 0) }
        expectError(.queueInvalidParameter, "start", queue) { try queue.start(atDeviceSampleTime: -5) }
        #expect(try queue.offlineRender(frames: 10).count == 10 * 4)
    }

    @Test("disposal pending, then invalidated once what was queued has played")
    func disposal() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(recorder: recorder)
        let stopped = SendableBox(false)
        try queue.addPropertyListener(.isRunning) { queue, _ in if !queue.isRunning { stopped.value = true } }
        try enqueue(numbered(1...100), on: queue)
        try queue.prime()
        try queue.start()
        let spare = try queue.allocateBuffer(byteCapacity: 4)
        spare.fill(with: bytes([1]))
        try queue.dispose(immediate: false)
        expectError(.queueDisposalPending, "enqueue", queue) { try queue.enqueue(spare) }
        expectError(.queueDisposalPending, "allocateBuffer", queue) { _ = try queue.allocateBuffer(byteCapacity: 4) }
        expectError(.queueDisposalPending, "start", queue) { try queue.start() }
        let output = floats(try queue.offlineRender(frames: 150))
        #expect(Array(output.prefix(100)) == numbered(1...100))
        #expect(stopped.value)
        expectError(.queueInvalidated, "offlineRender", queue) { _ = try queue.offlineRender(frames: 10) }
        expectError(.queueInvalidated, "allocateBuffer", queue) { _ = try queue.allocateBuffer(byteCapacity: 4) }

        // A stopped queue disposed of later: at once, its buffers handed back.
        let idle = try monoFloatQueue(recorder: recorder)
        let before = recorder.count
        try enqueue([1, 2, 3], on: idle)
        try idle.dispose(immediate: false)
        #expect(recorder.count == before + 1)
        expectError(.queueInvalidated, "prime", idle) { try idle.prime() }

        let immediate = try monoFloatQueue(recorder: recorder)
        try immediate.dispose(immediate: true)
        expectError(.queueInvalidated, "prime", immediate) { try immediate.prime() }
        expectError(.queueInvalidated, "dispose", immediate) { try immediate.dispose(immediate: true) }
    }

    @Test("a packet the decoder refuses is reported through ConverterError and its buffer comes back")
    func converterError() throws {
        let returned = SendableBox(0)
        let queue = try AudioQueue(format: .compressed(.mpeg4AAC, sampleRate: 44100, channels: 2)) { _, _ in returned.value += 1 }
        defer { try? queue.dispose(immediate: true) }
        let changed = SendableBox(false)
        try queue.addPropertyListener(.converterError) { _, _ in changed.value = true }
        try queue.setOfflineRenderFormat(.linearPCM(sampleRate: 44100, channels: 2, sample: .float32))
        let buffer = try queue.allocateBuffer(byteCapacity: 64, packetDescriptionCapacity: 1)
        buffer.fill(with: [UInt8](repeating: 0xFF, count: 64))
        try queue.enqueue(buffer, packetDescriptions: [AudioStreamPacketDescription(startOffset: 0, dataByteSize: 64)])
        try queue.prime()
        #expect(queue.converterError != nil)
        #expect(queue.converterError?.message.contains(queue.name) == true)
        #expect(changed.value)
        #expect(returned.value == 1)
    }
}
