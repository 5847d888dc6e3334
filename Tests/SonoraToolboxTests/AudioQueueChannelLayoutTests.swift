import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import SonoraToolbox
import SonoraUnits
import Testing

/// kAudioQueueProperty_ChannelLayout: stored and reported, checked against the queue's channels.
@Suite("AudioQueue channel layout")
struct AudioQueueChannelLayoutTests {
    @Test("a layout for the queue's channels is stored, reported and announced")
    func setAndGet() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(channels: 2, recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        #expect(queue.channelLayout == nil)
        try queue.addPropertyListener(.channelLayout) { queue, _ in recorder.note("\(queue.channelLayout?.tag == .stereo)") }
        try queue.setChannelLayout(AudioChannelLayout(tag: .stereo))
        #expect(queue.channelLayout == AudioChannelLayout(tag: .stereo))
        let deadline = Date().addingTimeInterval(10)
        while recorder.notes.isEmpty && Date() < deadline { usleep(1000) }
        #expect(recorder.notes == ["true"])
        try queue.setChannelLayout(AudioChannelLayout(bitmap: 0b11))
        #expect(queue.channelLayout?.bitmap == 0b11)
    }

    @Test("a layout for another channel count fails with invalid property value, naming both counts", arguments: [
        AudioChannelLayout(tag: .mono), AudioChannelLayout(tag: .mpeg_5_1_A), AudioChannelLayout(bitmap: 0b111),
        AudioChannelLayout(channelLabels: [.left]), AudioChannelLayout(tag: .unknown),
    ])
    func mismatch(layout: AudioChannelLayout) throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(channels: 2, recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        try queue.setChannelLayout(AudioChannelLayout(tag: .stereo))
        let error = #expect(throws: AudioError.self) { try queue.setChannelLayout(layout) }
        #expect(error?.code == .queueInvalidPropertyValue)
        #expect(error?.message.contains("\(layout.channelCount) channels, the queue has 2") == true, "\(error?.message ?? "")")
        #expect(queue.channelLayout == AudioChannelLayout(tag: .stereo))
    }

    @Test("a layout in another channel order is reported, and the channels play in the queue's order")
    func reorderedLayoutIsOnlyReported() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(channels: 2, recorder: recorder)
        defer { try? queue.dispose(immediate: true) }
        let swapped = AudioChannelLayout(channelLabels: [.right, .left])
        try queue.setChannelLayout(swapped)
        #expect(queue.channelLayout?.channelLabels == [.right, .left])
        let frames = (0..<100).flatMap { [Float($0) / 200, -Float($0) / 200] }
        try enqueue(frames, on: queue)
        try queue.prime()
        try queue.start()
        #expect(floats(try queue.offlineRender(frames: 100)) == frames)
    }

    @Test("setting a layout on a disposed queue fails")
    func disposed() throws {
        let recorder = Recorder()
        let queue = try monoFloatQueue(recorder: recorder)
        try queue.dispose(immediate: true)
        let error = #expect(throws: AudioError.self) { try queue.setChannelLayout(AudioChannelLayout(tag: .mono)) }
        #expect(error?.code == .queueInvalidated)
    }
}
