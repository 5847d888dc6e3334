import Foundation
import SonoraCore
import SonoraTestSupport
import SonoraToolbox
import Testing

/// Misuse of an input queue fails with Core Audio's kAudioQueueErr statuses, naming the
/// queue and the call.
@Suite("Input queue errors")
struct AudioInputQueueErrorTests {
    private func expectError(_ code: AudioError.Code, _ call: String, _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("\(call) did not fail")
        } catch let error as AudioError {
            #expect(error.code == code, "\(error.message)")
            #expect(error.message.contains("AudioInputQueue.\(call): input queue "), "\(error.message)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func misuseNamesTheQueueAndCall() throws {
        let pcm = StreamFormat.linearPCM(sampleRate: 48000, channels: 1, sample: .int16)
        let input = try AudioInputQueue(format: pcm) { _, _, _, _ in }
        let output = try AudioQueue(format: pcm) { _, _ in }
        defer { try? output.dispose(immediate: true) }
        let foreign = try output.allocateBuffer(byteCapacity: 64)
        expectError(.queueInvalidBuffer, "enqueue") { try input.enqueue(foreign) }

        let buffer = try input.allocateBuffer(byteCapacity: 64)
        // And the other way: an input queue's buffer is not the output queue's.
        buffer.byteSize = 64
        do {
            try output.enqueue(buffer)
            Issue.record("the output queue took an input queue's buffer")
        } catch {
            #expect(error.code == .queueInvalidBuffer && error.message.contains("AudioQueue.enqueue: queue "), "\(error.message)")
        }
        try input.enqueue(buffer)
        expectError(.queueBufferEnqueuedTwice, "enqueue") { try input.enqueue(buffer) }
        expectError(.queueInvalidBuffer, "enqueue") { try input.enqueue(try input.allocateBuffer(byteCapacity: 1)) }
        expectError(.queueInvalidRunState, "pause") { try input.pause() }
        expectError(.queueInvalidProperty, "currentLevelMeter") { _ = try input.currentLevelMeter() }
        expectError(.queueInvalidParameter, "allocateBuffer") { _ = try input.allocateBuffer(byteCapacity: 0) }
        expectError(.queueInvalidParameter, "offlineCapture") { try input.offlineCapture(frames: [0, 0], sliceFrames: 0) }

        try input.dispose()
        expectError(.queueInvalidated, "start") { try input.start() }
        expectError(.queueInvalidated, "enqueue") { try input.enqueue(buffer) }
    }

    @Test func variableSizePacketsNeedDescriptionRoom() throws {
        let alac = StreamFormat.compressed(.appleLossless, sampleRate: 44100, channels: 2)
        let input = try AudioInputQueue(format: alac) { _, _, _, _ in }
        defer { try? input.dispose() }
        expectError(.queueInvalidBuffer, "enqueue") { try input.enqueue(try input.allocateBuffer(byteCapacity: 8192)) }
    }

    @Test func aFormatWithoutAnEncoderIsRefused() throws {
        let bad = StreamFormat.linearPCM(sampleRate: 0, channels: 1, sample: .int16)
        #expect(throws: AudioError.self) { _ = try AudioInputQueue(format: bad) { _, _, _, _ in } }
    }
}
