import Foundation
import SonoraCore
import SonoraHAL
import SonoraTestSupport
@testable import SonoraToolbox
import SonoraUnits
import Testing

/// The local backend (no appliance): interruptions and route changes from the program's own
/// devices, through the watchers the queues already run; properties from the devices in use.
@Suite("Audio session: local backend", .serialized)
struct AudioSessionLocalBackendTests {
    func waitUntil(_ condition: () -> Bool) -> Bool {
        for _ in 0..<5000 where !condition() { usleep(1000) }
        return condition()
    }

    @Test("a device that vanishes and comes back: interruption began, route change old device unavailable, then new device available and ended(shouldResume: true); the queue paused meanwhile plays on")
    func vanishingDevice() throws {
        let session = AudioSession(backend: LocalAudioSessionBackend())
        let events = SessionEvents()
        session.addListener { events.add(SessionEvents.describe($0)) }
        try session.setActive(true)
        let device = try FaultyDevice()
        let output = try AudioQueueOutput(device: device)
        let queue = try inSession(session) {
            try AudioQueue(format: .linearPCM(sampleRate: 48000, channels: 2, sample: .float32)) { _, _ in }
        }
        defer { try? queue.dispose(immediate: true) }
        try queue.setOutput(output)
        try enqueue([Float](repeating: 0.25, count: 48000), on: queue)
        try queue.prime()
        try queue.start()
        try device.tap.run(cycles: 2)
        session.waitForDelivery()
        let name = output.deviceName
        #expect(session.currentRoute.outputs.map(\.name) == [name])
        #expect(session.currentRoute.outputs.first?.roles == [.virtual])

        device.post(.interruptionBegan(.playback, errno: ENODEV))
        #expect(waitUntil { events.all.count >= 2 })
        // Paused by the session, not stopped: no reason, still running.
        #expect(queue.isRunning && queue.stopReason == nil && !queue.isPlayingForSession)
        #expect(session.isInterrupted)
        device.post(.interruptionEnded(attempts: 1))
        #expect(waitUntil { events.all.count >= 4 })
        #expect(events.all == [
            "began", "route oldDeviceUnavailable [\"\(name)\"] → []",
            "route newDeviceAvailable [] → [\"\(name)\"]", "ended true",
        ])
        #expect(!session.isInterrupted && queue.isPlayingForSession)
        // Delivered on the session's queue: not the device's cycles (this thread) nor the I/O thread.
        #expect(!events.listenerThreads.contains { pthread_equal($0, pthread_self()) != 0 })
    }

    @Test("a queue on its own I/O unit pauses while its device is gone and plays on when it is back")
    func ownUnitPausesAndResumes() throws {
        let session = AudioSession(backend: LocalAudioSessionBackend())
        let events = SessionEvents()
        session.addListener { events.add(SessionEvents.describe($0)) }
        try session.setActive(true)
        let device = try FaultyDevice()
        let queue = try inSession(session) {
            try AudioQueue(format: .linearPCM(sampleRate: 48000, channels: 2, sample: .float32)) { _, _ in }
        }
        defer { try? queue.dispose(immediate: true) }
        let io = IOUnit()
        try io.setDevice(device)
        try queue.setOutputUnit(io)
        try enqueue([Float](repeating: 0.25, count: 2 * 4800), on: queue)
        try queue.prime()
        try queue.start()
        try device.tap.run(cycles: 2)
        device.post(.interruptionBegan(.playback, errno: ENODEV))
        #expect(waitUntil { events.all.count >= 2 })
        #expect(queue.isRunning && queue.stopReason == nil && !queue.isPlayingForSession)
        device.post(.interruptionEnded(attempts: 2))
        #expect(waitUntil { events.all.count >= 4 })
        #expect(events.all == [
            "began", "route oldDeviceUnavailable [\"\(io.deviceName)\"] → []",
            "route newDeviceAvailable [] → [\"\(io.deviceName)\"]", "ended true",
        ])
        #expect(queue.isPlayingForSession && !session.isInterrupted)
        try queue.stop(immediate: true)
    }

    @Test("an input queue whose device vanishes stops as before (its recording complete); starting it again on the device that is back ends the interruption")
    func inputVanishAndRestart() throws {
        let session = AudioSession(backend: LocalAudioSessionBackend())
        let events = SessionEvents()
        session.addListener { events.add(SessionEvents.describe($0)) }
        try session.setActive(true)
        let device = try VanishingInput(channels: 1)
        let queue = try inSession(session) {
            try inputQueue(.linearPCM(sampleRate: 48000, channels: 1, sample: .int16), recording: InputRecording(), byteCapacity: 1024)
        }
        defer { try? queue.dispose() }
        let io = IOUnit()
        try io.setDevice(device)
        try queue.setInputUnit(io)
        try queue.start()
        try device.ramp.run(cycles: 4)
        device.post(.interruptionBegan(.capture, errno: ENODEV))
        #expect(waitUntil { events.all.count >= 2 && !queue.isRunning })
        #expect(queue.stopReason != nil && session.isInterrupted)
        try queue.start()
        session.waitForDelivery()
        #expect(events.all == [
            "began", "route oldDeviceUnavailable [] → []", "route newDeviceAvailable [] → []", "ended true",
        ])
        #expect(!session.isInterrupted)
        try queue.stop(immediate: true)
    }

    @Test("an inactive session hears the route change but no interruption; the queue stops as it always did")
    func inactiveHearsRoute() throws {
        let session = AudioSession(backend: LocalAudioSessionBackend())
        let events = SessionEvents()
        session.addListener { events.add(SessionEvents.describe($0)) }
        let device = try FaultyDevice()
        let output = try AudioQueueOutput(device: device)
        let queue = try inSession(session) {
            try AudioQueue(format: .linearPCM(sampleRate: 48000, channels: 2, sample: .float32)) { _, _ in }
        }
        defer { try? queue.dispose(immediate: true) }
        try queue.setOutput(output)
        try enqueue([Float](repeating: 0.25, count: 4800), on: queue)
        try queue.start()
        device.post(.interruptionBegan(.playback, errno: ENODEV))
        #expect(waitUntil { !events.all.isEmpty && !queue.isRunning })
        session.waitForDelivery()
        #expect(events.all == ["route oldDeviceUnavailable [\"\(output.deviceName)\"] → []"])
        #expect(!session.isInterrupted && queue.stopReason != nil)
    }

    @Test("the preferred I/O buffer duration sets the period of the device a queue opens; the granted duration's listener fires")
    func preferredBufferDuration() throws {
        let session = AudioSession(backend: LocalAudioSessionBackend())
        let changes = SessionEvents()
        for property in [AudioSessionProperty.ioBufferDuration, .outputNumberOfChannels, .currentRoute, .sampleRate] {
            try session.addPropertyListener(property) { changes.add($0.rawValue) }
        }
        #expect(session.ioBufferDuration == 256.0 / 48000 && session.outputNumberOfChannels == 0)
        try session.setPreferredIOBufferDuration(512.0 / 48000)
        #expect(session.preferredIOBufferDuration == 512.0 / 48000)
        session.waitForDelivery()
        #expect(changes.all.isEmpty, "a preference alone changes nothing granted")
        let queue = try inSession(session) {
            try AudioQueue(format: .linearPCM(sampleRate: 48000, channels: 2, sample: .float32)) { _, _ in }
        }
        defer { try? queue.dispose(immediate: true) }
        // A device name no other suite opens (shared outputs are per name).
        try queue.setCurrentDevice("inprocess:7919")
        session.waitForDelivery()
        #expect(queue.output?.unit?.device?.format.periodFrames == 512)
        #expect(session.ioBufferDuration == 512.0 / 48000)
        #expect(session.outputNumberOfChannels == 2 && session.sampleRate == 48000)
        #expect(changes.all == ["ioBufferDuration", "outputNumberOfChannels", "currentRoute"])
        let error = #expect(throws: AudioError.self) { try session.setPreferredIOBufferDuration(5) }
        #expect(error?.code == .parameterError)
    }

    @Test("without a sound card (this machine): no input available from ALSA, volume unknown (1), ALSA ports without roles")
    func noCard() throws {
        let backend = LocalAudioSessionBackend()
        #expect(ALSACardControls.cards().isEmpty, "the build machine has no sound card; the naming logic is tested on element lists")
        #expect(!backend.isInputAvailable && backend.outputVolume == nil)
        #expect(backend.portRoles(forDevice: "hw:0", driver: "alsa", input: false) == [.unknown])
        #expect(backend.portRoles(forDevice: "null", driver: "null", input: false) == [.virtual])
        let session = AudioSession(backend: backend)
        #expect(session.outputVolume == 1 && !session.isInputAvailable && !session.isOtherAudioPlaying)
    }
}
