import Foundation
import SonoraCore
import SonoraHAL
import SonoraTestSupport
@testable import SonoraToolbox
import SonoraUnits
import Testing

/// Interruptions from a scripted backend reach each kind of participant as Table 7-2 says:
/// queues, players and recorders pause and resume, graphs stop, system sounds go silent.
@Suite("Audio session: interruptions", .serialized)
struct AudioSessionInterruptionTests {
    /// An active session on a scripted backend, with its events recorded.
    static func activeSession() throws -> (AudioSession, ScriptedSessionBackend, SessionEvents) {
        let backend = ScriptedSessionBackend()
        let session = AudioSession(backend: backend)
        let events = SessionEvents()
        session.addListener { events.add(SessionEvents.describe($0)) }
        try session.setActive(true)
        return (session, backend, events)
    }

    static func deliver(_ event: AudioSessionBackendEvent, _ backend: ScriptedSessionBackend, _ session: AudioSession) {
        backend.send(event)
        session.waitForDelivery()
    }

    @Test("an offline queue pauses on began and, with shouldResume, plays on from the very next sample")
    func queuePausesAndResumes() throws {
        let (session, backend, events) = try Self.activeSession()
        let queue = try inSession(session) { try monoFloatQueue(recorder: Recorder()) }
        defer { try? queue.dispose(immediate: true) }
        #expect(session.participantCount == 1)
        let ramp = (0..<4096).map { Float($0 + 1) / 4096 }
        try enqueue(ramp, on: queue)
        try queue.start()
        let first = floats(try queue.offlineRender(frames: 512))
        Self.deliver(.interruptionBegan, backend, session)
        #expect(session.isInterrupted)
        let during = floats(try queue.offlineRender(frames: 512))
        Self.deliver(.interruptionEnded(shouldResume: true), backend, session)
        let after = floats(try queue.offlineRender(frames: 512))
        #expect(first == Array(ramp[0..<512]))
        #expect(during.allSatisfy { $0 == 0 }, "silent while interrupted")
        #expect(after == Array(ramp[512..<1024]), "continues where it paused")
        #expect(events.all == ["began", "ended true"])
    }

    @Test("shouldResume false leaves the queue paused; a queue the program paused is not resumed by the end")
    func noResume() throws {
        let (session, backend, _) = try Self.activeSession()
        let (playing, paused) = try inSession(session) { (try monoFloatQueue(recorder: Recorder()), try monoFloatQueue(recorder: Recorder())) }
        defer { [playing, paused].forEach { try? $0.dispose(immediate: true) } }
        for queue in [playing, paused] {
            try enqueue((0..<2048).map { Float($0 + 1) / 2048 }, on: queue)
            try queue.start()
            _ = try queue.offlineRender(frames: 256)
        }
        try paused.pause()
        Self.deliver(.interruptionBegan, backend, session)
        Self.deliver(.interruptionEnded(shouldResume: false), backend, session)
        #expect(floats(try playing.offlineRender(frames: 256)).allSatisfy { $0 == 0 })
        Self.deliver(.interruptionBegan, backend, session)
        Self.deliver(.interruptionEnded(shouldResume: true), backend, session)
        #expect(floats(try paused.offlineRender(frames: 256)).allSatisfy { $0 == 0 }, "paused by the program: stays paused")
    }

    @Test("an inactive session hears no interruption: nothing pauses")
    func inactiveSessionIgnores() throws {
        let backend = ScriptedSessionBackend()
        let session = AudioSession(backend: backend)
        let queue = try inSession(session) { try monoFloatQueue(recorder: Recorder()) }
        defer { try? queue.dispose(immediate: true) }
        try enqueue((0..<1024).map { Float($0 + 1) / 1024 }, on: queue)
        try queue.start()
        Self.deliver(.interruptionBegan, backend, session)
        #expect(!session.isInterrupted)
        #expect(floats(try queue.offlineRender(frames: 256)) == (0..<256).map { Float($0 + 1) / 1024 })
    }

    @Test("a playing AudioPlayer pauses (its delegate told) and resumes where it paused; the samples continue")
    func playerPausesAndResumes() throws {
        let (session, backend, events) = try Self.activeSession()
        let folder = try TemporaryFolder()
        let path = folder.path("tone.wav")
        try AudioPlayerTests.sine(path, seconds: 0.5)
        let expected = AudioPlayerTests.channel(try decodedSamples(of: path), 0)
        let tap = try PlayedTap(channels: 2, capacity: 48000)
        let player = try inSession(session) { try AudioPlayer(contentsOf: URL(fileURLWithPath: path), output: try AudioQueueOutput(device: tap)) }
        let delegate = AudioPlayerTests.Events()
        player.delegate = delegate
        #expect(session.participantCount == 1, "the player, not its queue")
        try player.play()
        try AudioPlayerTests.run(tap, [player], cycles: 4)
        Self.deliver(.interruptionBegan, backend, session)
        #expect(!player.isPlaying)
        try AudioPlayerTests.run(tap, [player], cycles: 4)
        Self.deliver(.interruptionEnded(shouldResume: true), backend, session)
        #expect(player.isPlaying)
        try AudioPlayerTests.run(tap, [player], cycles: 8)
        player.stop()
        #expect(delegate.lock.withLock { delegate.interruptions } == ["began", "ended true"])
        #expect(events.all == ["began", "ended true"])
        // 4 periods heard, 4 silent while interrupted, then the file from where it paused.
        let played = tap.played[0]
        #expect(played.count >= 16 * 256)
        #expect(Array(played[0..<1024]) == Array(expected[0..<1024]))
        #expect(played[1024..<2048].allSatisfy { $0 == 0 }, "silent while interrupted")
        #expect(Array(played[2048..<4096]) == Array(expected[1024..<3072]), "the samples continue where they paused")
    }

    @Test("a recording AudioRecorder pauses and records on; the file holds every frame captured while recording")
    func recorderPausesAndResumes() throws {
        let (session, backend, _) = try Self.activeSession()
        let folder = try TemporaryFolder()
        let url = folder.url("take.wav")
        let (recorder, device) = try inSession(session) {
            try AudioRecorderTests.recorder(url, AudioRecorderSettings(sampleRate: 48000, numberOfChannels: 1), channels: 1)
        }
        #expect(session.participantCount == 1, "the recorder, not its queue")
        try recorder.record()
        try AudioRecorderTests.run(device, recorder, cycles: 6)
        Self.deliver(.interruptionBegan, backend, session)
        #expect(!recorder.isRecording)
        try AudioRecorderTests.run(device, recorder, cycles: 3)
        Self.deliver(.interruptionEnded(shouldResume: true), backend, session)
        #expect(recorder.isRecording)
        try AudioRecorderTests.run(device, recorder, cycles: 6)
        recorder.stop()
        let samples = try AudioRecorderTests.decoded(url.path)
        #expect(samples.count >= 12 * 256)
        #expect(samples == AudioRecorderTests.ramp(frames: 0..<samples.count, channels: 1), "no frame lost or repeated at the pause")
    }

    @Test("a graph on an I/O unit stops on began and is not restarted by the end (the program restarts it)")
    func graphStops() throws {
        let (session, backend, _) = try Self.activeSession()
        let tap = try PlayedTap(channels: 2, capacity: 48000)
        let io = IOUnit()
        try io.setDevice(tap)
        let graph = AudioGraph()
        let tone = graph.addNode(ToneGeneratorUnit())
        let out = graph.addNode(io)
        try graph.connect(tone, bus: 0, to: out, input: 0)
        try graph.initialize()
        try graph.start()
        session.register(graph)
        try tap.run(cycles: 4)
        #expect(tap.played[0].contains { $0 != 0 })
        Self.deliver(.interruptionBegan, backend, session)
        #expect(!graph.isRunning && !tap.isRunning)
        Self.deliver(.interruptionEnded(shouldResume: true), backend, session)
        #expect(!graph.isRunning)
        try graph.start()
        #expect(graph.isRunning)
        graph.stop()
    }

    @Test("a system sound played while interrupted is not heard and still completes; one playing goes silent at began")
    func systemSoundSilent() throws {
        let (session, backend, _) = try Self.activeSession()
        let folder = try TemporaryFolder()
        let path = folder.path("beep.wav")
        try SystemSoundTests.sine(path, seconds: 0.2)
        let sound = try SystemSound(contentsOf: URL(fileURLWithPath: path))
        let tap = try PlayedTap(channels: 2, capacity: 48000)
        let player = try inSession(session) { SystemSoundPlayer(output: try AudioQueueOutput(device: tap)) }
        #expect(session.participantCount == 1, "the player, not its voices")
        let completions = Completions()
        try player.play(sound) { completions.add() }
        try SystemSoundTests.run(tap, player, cycles: 4)
        #expect(tap.played[0].contains { $0 != 0 })
        Self.deliver(.interruptionBegan, backend, session)
        #expect(completions.wait(for: 1), "the sound cut at began completes")
        let heardBefore = tap.frames
        try player.play(sound) { completions.add() }
        #expect(completions.wait(for: 2), "a sound played while interrupted completes")
        try SystemSoundTests.run(tap, player, cycles: 20)
        #expect(tap.played[0][heardBefore...].allSatisfy { $0 == 0 }, "nothing heard while interrupted")
        Self.deliver(.interruptionEnded(shouldResume: true), backend, session)
        try player.play(sound) { completions.add() }
        try SystemSoundTests.run(tap, player, cycles: 4)
        #expect(tap.played[0][(heardBefore + 20 * 256)...].contains { $0 != 0 }, "heard again after the end")
    }

    @Test("listeners run in the order events happened and added, on one thread that is not the sender's, never the device's")
    func listenerOrder() throws {
        let (session, backend, events) = try Self.activeSession()
        let second = SessionEvents()
        session.addListener { second.add("second " + SessionEvents.describe($0)) }
        let interruptions = SessionEvents()
        session.addInterruptionListener { interruptions.add("\($0)") }
        let script: [AudioSessionBackendEvent] = [
            .duck(AudioSessionDuck(gainDB: -12, isActive: true)), .interruptionBegan,
            .routeChange(reason: .override, route: AudioSessionRoute(outputs: [AudioSessionPort(name: "speaker", roles: [.speaker])])),
            .interruptionEnded(shouldResume: true), .duck(AudioSessionDuck(gainDB: 0, isActive: false)),
        ]
        for event in script { backend.send(event) }
        session.waitForDelivery()
        #expect(events.all == ["duck -12.0 true", "began", "route override [] → [\"speaker\"]", "ended true", "duck 0.0 false"])
        #expect(second.all == events.all.map { "second " + $0 })
        #expect(interruptions.all == ["began", "ended(shouldResume: true)"])
        let threads = events.listenerThreads + second.listenerThreads
        #expect(!threads.contains { pthread_equal($0, pthread_self()) != 0 })
        #expect(session.currentRoute.outputs == [AudioSessionPort(name: "speaker", roles: [.speaker])])
    }

    @Test("the async sequence delivers the same events in order")
    func asyncEvents() async throws {
        let (session, backend, _) = try Self.activeSession()
        let stream = session.events
        let reader = Task {
            var seen: [String] = []
            for await event in stream {
                seen.append(SessionEvents.describe(event))
                if seen.count == 3 { break }
            }
            return seen
        }
        // The listener exists once the sequence is made; events sent now are buffered.
        backend.send(.interruptionBegan)
        backend.send(.duck(AudioSessionDuck(gainDB: -6, isActive: true)))
        backend.send(.interruptionEnded(shouldResume: false))
        #expect(await reader.value == ["began", "duck -6.0 true", "ended false"])
    }

    @Test("a registered context participant (the OpenAL-style hook) is suspended at began and told of the end")
    func customParticipant() throws {
        final class Context: AudioSessionParticipant, @unchecked Sendable {
            let lock = NSLock()
            var calls: [String] = []
            func audioSessionInterruptionBegan() { lock.withLock { calls.append("suspend") } }
            func audioSessionInterruptionEnded(shouldResume: Bool) { lock.withLock { calls.append("ended \(shouldResume)") } }
        }
        let (session, backend, _) = try Self.activeSession()
        let context = Context()
        session.register(context)
        Self.deliver(.interruptionBegan, backend, session)
        Self.deliver(.interruptionEnded(shouldResume: true), backend, session)
        session.unregister(context)
        Self.deliver(.interruptionBegan, backend, session)
        #expect(context.lock.withLock { context.calls } == ["suspend", "ended true"])
    }
}
