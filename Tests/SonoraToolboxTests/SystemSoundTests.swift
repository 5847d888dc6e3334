import Foundation
import SonoraCore
import SonoraFile
import SonoraHAL
import SonoraTestSupport
@testable import SonoraToolbox
import Testing

/// System Sound Services on a scripted device (`PlayedTap`, its cycles on the test's thread):
/// the sound's first frame in the next period, overlap, the oldest voice stolen, completions,
/// the alert action, and the reference documents' refusals.
@Suite("System sounds", .serialized)
struct SystemSoundTests {
    static func sine(_ path: String, seconds: Double, rate: Int = 48000, channels: Int = 2, frequency: Int = 440) throws {
        try runTool("/usr/bin/sox", ["-n", "-r", "\(rate)", "-c", "\(channels)", "-b", "16", path, "synth", "\(seconds)", "sine", "\(frequency)", "gain", "-12"])
    }

    /// Runs cycles, bringing every voice's queue thread to a fixed point before each (the
    /// scripted device runs faster than real time).
    static func run(_ tap: PlayedTap, _ player: SystemSoundPlayer, cycles: Int) throws {
        for _ in 0..<cycles {
            player.primeVoices()
            try tap.run(cycles: 1)
        }
    }

    static func left(_ sound: SystemSound) -> [Float] {
        stride(from: 0, to: sound.samples.count, by: Int(sound.format.channelsPerFrame)).map { sound.samples[$0] }
    }

    @Test("a play's first frame leaves in the next period, sample for sample, and the completion runs once, off the I/O thread")
    func nextPeriod() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("beep.wav")
        try Self.sine(path, seconds: 0.05)
        let sound = try SystemSound(contentsOf: URL(fileURLWithPath: path))
        #expect(sound.frameCount == 2400 && sound.format.sampleRate == 48000 && abs(sound.duration - 0.05) < 1e-9)
        let tap = try PlayedTap(channels: 2, capacity: 48000)
        let player = SystemSoundPlayer(output: try AudioQueueOutput(device: tap))
        let completions = Completions()
        // The first play opens the voice and starts the device; the second finds it running.
        try player.play(sound) { completions.add() }
        try Self.run(tap, player, cycles: 20)
        #expect(completions.wait(for: 1))
        try player.play(sound) { completions.add() }
        try Self.run(tap, player, cycles: 20)
        #expect(completions.wait(for: 2))
        let played = tap.played[0]
        #expect(Array(played.prefix(2400)) == Self.left(sound))
        #expect(played[2400..<5120].allSatisfy { $0 == 0 })
        #expect(Array(played[5120..<7520]) == Self.left(sound), "the second play begins exactly at the next period, frame 5,120")
        #expect(completions.count == 2 && completions.offTestThread)
        #expect(player.playingCount == 0)
    }

    @Test("the same sound again while it plays overlaps it (no cut-off)")
    func overlap() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("chime.wav")
        try Self.sine(path, seconds: 0.1, frequency: 660)
        let sound = try SystemSound(contentsOf: URL(fileURLWithPath: path))
        let tap = try PlayedTap(channels: 2, capacity: 48000)
        let player = SystemSoundPlayer(output: try AudioQueueOutput(device: tap))
        try player.play(sound)
        try Self.run(tap, player, cycles: 4)
        try player.play(sound)
        #expect(player.playingCount == 2)
        try Self.run(tap, player, cycles: 30)
        let samples = Self.left(sound), played = tap.played[0]
        for frame in 0..<5824 {
            let expected = (frame < 4800 ? samples[frame] : 0) + (frame >= 1024 ? samples[frame - 1024] : 0)
            guard played[frame] == expected else {
                Issue.record("frame \(frame): \(played[frame]), expected \(expected)")
                return
            }
        }
    }

    @Test("with every voice busy, the sound playing longest is stopped for the new one; its completion runs")
    func oldestStolen() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("long.wav")
        try Self.sine(path, seconds: 1)
        let sound = try SystemSound(contentsOf: URL(fileURLWithPath: path))
        let tap = try PlayedTap(channels: 2, capacity: 48000)
        let player = SystemSoundPlayer(output: try AudioQueueOutput(device: tap), maximumVoices: 2)
        let first = Completions(), second = Completions(), third = Completions()
        try player.play(sound) { first.add() }
        try Self.run(tap, player, cycles: 1)
        try player.play(sound) { second.add() }
        try Self.run(tap, player, cycles: 1)
        try player.play(sound) { third.add() }
        #expect(first.count == 1, "the oldest play ended")
        #expect(second.count == 0 && third.count == 0 && player.playingCount == 2)
    }

    @Test("refused with the reason: 30 s or longer, MP3, FLAC, a missing file, not audio")
    func refusals() throws {
        let folder = try TemporaryFolder()
        let long = folder.path("long.wav")
        try Self.sine(long, seconds: 31, rate: 8000, channels: 1)
        let tooLong = try #require(throws: AudioError.self) { try SystemSound(contentsOf: URL(fileURLWithPath: long)) }
        #expect(tooLong.code == .systemSoundExceededMaximumDuration && tooLong.message.contains("31.00 s") && tooLong.message.contains(long), "\(tooLong)")
        let mp3 = folder.path("beep.mp3")
        try runTool("/usr/bin/ffmpeg", ["-loglevel", "error", "-f", "lavfi", "-i", "sine=d=0.2", "-c:a", "libmp3lame", mp3])
        let notPCM = try #require(throws: AudioError.self) { try SystemSound(contentsOf: URL(fileURLWithPath: mp3)) }
        #expect(notPCM.code == .systemSoundUnspecified && notPCM.message.contains("CAF, AIFF or WAV") && notPCM.message.contains(mp3), "\(notPCM)")
        let flac = folder.path("beep.flac")
        try Self.sine(flac, seconds: 0.1)
        let notContainer = try #require(throws: AudioError.self) { try SystemSound(contentsOf: URL(fileURLWithPath: flac)) }
        #expect(notContainer.message.contains("CAF, AIFF or WAV"), "\(notContainer)")
        let missing = folder.path("missing.wav")
        let notFound = try #require(throws: AudioError.self) { try SystemSound(contentsOf: URL(fileURLWithPath: missing)) }
        #expect(notFound.code == .fileNotFound && notFound.message.contains(missing))
        let text = folder.path("text.wav")
        try Data("no audio in here".utf8).write(to: URL(fileURLWithPath: text))
        let garbage = try #require(throws: AudioError.self) { try SystemSound(contentsOf: URL(fileURLWithPath: text)) }
        #expect(garbage.message.contains(text), "\(garbage)")
    }

    @Test("an IMA4 CAF is accepted, decoded to its frames (the last packet's padding left out)")
    func ima4() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("click.caf")
        let tone = TestSignal.sine(frequency: 300, sampleRate: 8000, count: 64 * 10 + 17, amplitude: 0.6)
        try writeIMA4CAF(path, tone)
        let sound = try SystemSound(contentsOf: URL(fileURLWithPath: path))
        #expect(sound.frameCount == tone.count && sound.format.channelsPerFrame == 1 && sound.format.sampleRate == 8000)
        #expect(Array(sound.samples.prefix(tone.count)) == Array(try decodedSamples(of: path).prefix(tone.count)))
    }

    @Test("Services: IDs, a completion per play on the given queue, the alert's command, vibrate alone, dispose")
    func services() throws {
        let folder = try TemporaryFolder()
        let path = folder.path("bell.wav")
        try Self.sine(path, seconds: 0.02)
        let tap = try PlayedTap(channels: 2, capacity: 48000)
        SystemSoundServices.setOutput(try AudioQueueOutput(device: tap))
        defer { SystemSoundServices.alertAction = nil }
        let id = try SystemSoundServices.createSystemSoundID(URL(fileURLWithPath: path))
        #expect(id > SystemSoundServices.vibrate)
        let completions = Completions()
        let callbackQueue = DispatchQueue(label: "sonora-test-completions")
        try SystemSoundServices.addSystemSoundCompletion(id, queue: callbackQueue) { finished in
            #expect(finished == id)
            dispatchPrecondition(condition: .onQueue(callbackQueue))
            completions.add()
        }
        let marker = folder.path("alerted")
        SystemSoundServices.alertAction = .command(["/usr/bin/touch", marker])
        try SystemSoundServices.playAlertSound(id)
        for _ in 0..<12 {
            try tap.run(cycles: 1)
            usleep(2000)
        }
        #expect(completions.wait(for: 1))
        for _ in 0..<2000 where !FileManager.default.fileExists(atPath: marker) { usleep(1000) }
        #expect(FileManager.default.fileExists(atPath: marker), "the alert ran its command")
        #expect(tap.played[0].contains { $0 != 0 })
        // kSystemSoundID_Vibrate: the alert action alone.
        let vibrated = Completions()
        SystemSoundServices.alertAction = .handler { soundID in
            if soundID == SystemSoundServices.vibrate { vibrated.add() }
        }
        try SystemSoundServices.playSystemSound(SystemSoundServices.vibrate)
        #expect(vibrated.count == 1)
        // A GPIO line that does not exist: the reason is kept, naming the line.
        SystemSoundServices.alertAction = .gpioLine("sonora-no-such-line", seconds: 0.1)
        try SystemSoundServices.playAlertSound(SystemSoundServices.vibrate)
        for _ in 0..<2000 where SystemSoundServices.lastAlertActionError == nil { usleep(1000) }
        #expect(SystemSoundServices.lastAlertActionError?.message.contains("sonora-no-such-line") == true, "\(String(describing: SystemSoundServices.lastAlertActionError))")
        try SystemSoundServices.disposeSystemSoundID(id)
        let gone = try #require(throws: AudioError.self) { try SystemSoundServices.playSystemSound(id) }
        #expect(gone.code == .systemSoundUnspecified && gone.message.contains("\(id)"))
        #expect(throws: AudioError.self) { try SystemSoundServices.disposeSystemSoundID(id) }
    }
}

/// Counts completions and notes whether each came off the test's thread.
final class Completions: @unchecked Sendable {
    private let lock = NSLock()
    private var total = 0
    private var onTestThread = false
    private let testThread = pthread_self()
    private let signal = DispatchSemaphore(value: 0)

    func add() {
        lock.withLock {
            total += 1
            if pthread_equal(pthread_self(), testThread) != 0 { onTestThread = true }
        }
        signal.signal()
    }

    var count: Int { lock.withLock { total } }
    var offTestThread: Bool { lock.withLock { !onTestThread } }

    /// Waits (bounded) until `count` completions have come.
    func wait(for count: Int) -> Bool {
        while self.count < count {
            if signal.wait(timeout: .now() + 5) == .timedOut { return self.count >= count }
        }
        return true
    }
}
