import Foundation
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
@testable import SonoraToolbox
import SonoraUnits
import Testing

/// The ramp input (`RampInput`) with events the test posts, as the HAL's I/O thread posts
/// them: the ALSA driver reports a vanished PCM as an interruption.
final class VanishingInput: AudioDevice, @unchecked Sendable {
    let ramp: RampInput
    private let lock = NSLock()
    private var pending: [DeviceEvent] = []

    init(channels: Int) throws { ramp = try RampInput(channels: channels) }

    var driver: String { "scripted:vanishing" }
    var format: DeviceFormat { ramp.format }
    var isRunning: Bool { ramp.isRunning }
    func start(_ procedure: IOProcedure) throws(AudioError) { try ramp.start(procedure) }
    func stop() { ramp.stop() }
    var statistics: DeviceStatistics { ramp.statistics }
    func resetLoad() { ramp.resetLoad() }
    func takeEvents() -> [DeviceEvent] {
        lock.lock()
        defer { lock.unlock() }
        defer { pending = [] }
        return pending
    }
    func post(_ event: DeviceEvent) { lock.withLock { pending.append(event) } }
}

/// An input device that vanishes while recording: the queue delivers everything captured,
/// stops with the reason, and a recorder completes its file with all of it.
@Suite("Input queues when the device vanishes", .serialized)
struct AudioInputQueueFaultTests {
    func waitUntil(_ condition: () -> Bool) {
        for _ in 0..<5000 where !condition() { usleep(1000) }
    }

    @Test("the input's device vanishes: every captured frame is delivered, then IsRunning goes false with the reason")
    func queueStops() throws {
        let device = try VanishingInput(channels: 1)
        let recording = InputRecording()
        let format = StreamFormat.linearPCM(sampleRate: 48000, channels: 1, sample: .int16)
        let queue = try inputQueue(format, recording: recording, byteCapacity: 1024)
        defer { try? queue.dispose() }
        let io = IOUnit()
        try io.setDevice(device)
        try queue.setInputUnit(io)
        let notes = Recorder()
        _ = try queue.addPropertyListener(.isRunning) { queue, _ in notes.note("\(queue.isRunning) \(queue.stopReason?.message ?? "-")") }
        try queue.start()
        for _ in 0..<10 {
            try device.ramp.run(cycles: 1)
            try queue.flush()
        }
        device.post(.interruptionBegan(.capture, errno: ENODEV))
        waitUntil { !queue.isRunning && notes.notes.count == 2 }
        #expect(!queue.isRunning && !io.isRunning)
        let reason = try #require(queue.stopReason)
        #expect(reason.code == .queueInvalidDevice && reason.message.contains("went away") && reason.message.contains(queue.name), "\(reason)")
        #expect(notes.notes.last?.hasPrefix("false") == true && notes.notes.last?.contains("went away") == true, "\(notes.notes)")
        let expected = (0..<device.ramp.next).map { RampInput.sample($0, 0) }
        #expect(recording.allBytes == int16Bytes(expected), "\(recording.allBytes.count / 2) of \(expected.count) frames delivered")
        // A new start clears the reason.
        try queue.start()
        #expect(queue.stopReason == nil && queue.isRunning)
        try queue.stop(immediate: true)
    }

    @Test("a recorder whose device vanishes completes its file with everything captured and tells its delegate (unsuccessfully, with the reason)")
    func recorderKeepsWhatItHad() throws {
        let folder = try TemporaryFolder()
        let url = folder.url("cut.wav")
        let device = try VanishingInput(channels: 1)
        let io = IOUnit()
        try io.setDevice(device)
        let recorder = try AudioRecorder(url: url, settings: AudioRecorderSettings(sampleRate: 48000, numberOfChannels: 1), inputUnit: io)
        let events = AudioRecorderTests.Events()
        recorder.delegate = events
        try recorder.record()
        for _ in 0..<12 {
            try device.ramp.run(cycles: 1)
            try recorder.preparedQueue?.flush()
        }
        device.post(.interruptionBegan(.capture, errno: ENODEV))
        #expect(events.done.wait(timeout: .now() + 5) == .success)
        #expect(events.lock.withLock { events.finished } == [false])
        #expect(events.lock.withLock { events.errors.first?.message.contains("went away") } == true)
        #expect(!recorder.isRecording)
        #expect(try AudioRecorderTests.decoded(url.path) == AudioRecorderTests.ramp(frames: 0..<device.ramp.next, channels: 1))
    }
}
