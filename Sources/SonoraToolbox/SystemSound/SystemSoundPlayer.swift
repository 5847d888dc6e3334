import Foundation
import SonoraCore
import SonoraHAL

/// Plays system sounds on one output: a few voices, each an output queue on the device's
/// shared mixer, kept attached so a play costs a copy and a start — the first frame leaves
/// in the next I/O period. The same sound played again while it plays takes another voice
/// (the two overlap); with every voice busy, the one playing longest is stopped for it.
public final class SystemSoundPlayer: @unchecked Sendable {
    /// Voices at most (sounds heard at once).
    public let maximumVoices: Int
    private let destination: Destination
    private let lock = NSLock()
    private var voices: [Voice] = []
    private var plays = 0
    /// The session whose interruptions silence the sounds (the process's, from creation).
    let session = AudioSession.current

    private enum Destination {
        case output(AudioQueueOutput)
        case device(String)
    }

    /// One queue and its one buffer; `completion` belongs to the play under way.
    private final class Voice: @unchecked Sendable {
        let queue: AudioQueue
        var buffer: AudioQueueBuffer
        var playing = false
        var startedAt = 0
        var completion: (@Sendable () -> Void)?

        init(queue: AudioQueue, buffer: AudioQueueBuffer) {
            self.queue = queue
            self.buffer = buffer
        }
    }

    /// Voices on a mixer output the program made.
    public init(output: AudioQueueOutput, maximumVoices: Int = 8) {
        destination = .output(output)
        self.maximumVoices = max(1, maximumVoices)
        session.register(self, kind: .systemSounds)
    }

    /// Voices on the device named `device` (its shared output, as queues naming it share).
    public init(device: String, maximumVoices: Int = 8) {
        destination = .device(device)
        self.maximumVoices = max(1, maximumVoices)
        session.register(self, kind: .systemSounds)
    }

    deinit {
        for voice in voices { try? voice.queue.dispose(immediate: true) }
    }

    /// Sounds playing now.
    public var playingCount: Int { lock.withLock { voices.filter(\.playing).count } }

    /// Brings each playing voice's queue thread to a fixed point (its ring refilled): for a
    /// device driven faster than real time, as the tests drive a scripted one.
    func primeVoices() {
        let playing = lock.withLock { voices.filter(\.playing).map(\.queue) }
        for queue in playing { _ = try? queue.prime() }
    }

    /// Plays `sound` now; `completion` runs (on a voice's thread, never the I/O thread) when it
    /// has played, or was stopped to free its voice.
    public func play(_ sound: SystemSound, completion: (@Sendable () -> Void)? = nil) throws(AudioError) {
        // Silent while the session is interrupted (Table 7-2): not heard, but it completes
        // (off the caller's thread, as a voice's completion runs).
        if session.isInterrupted {
            if let completion { DispatchQueue.global().async(execute: completion) }
            return
        }
        let bytes = sound.samples.count * 4
        // Choose under the lock, act outside it: stopping a voice waits for its thread, whose
        // IsRunning listener takes the lock.
        let (reused, stolen) = lock.withLock { () -> (Voice?, (Voice, (@Sendable () -> Void)?)?) in
            plays += 1
            if let idle = voices.first(where: { !$0.playing && $0.queue.format == sound.format }) {
                idle.playing = true
                idle.startedAt = plays
                idle.completion = completion
                return (idle, nil)
            }
            guard voices.count >= maximumVoices, let oldest = voices.filter(\.playing).min(by: { $0.startedAt < $1.startedAt }) ?? voices.first else {
                return (nil, nil)
            }
            let finished = oldest.completion
            oldest.completion = nil
            oldest.playing = false
            voices.removeAll { $0 === oldest }
            return (nil, (oldest, finished))
        }
        if let (voice, finished) = stolen {
            try? voice.queue.dispose(immediate: true)
            finished?()
        }
        let voice: Voice
        if let reused {
            voice = reused
        } else {
            voice = try makeVoice(for: sound, bytes: bytes)
            lock.withLock {
                voice.playing = true
                voice.startedAt = plays
                voice.completion = completion
                voices.append(voice)
            }
        }
        do throws(AudioError) {
            if voice.buffer.byteCapacity < bytes {
                try voice.queue.freeBuffer(voice.buffer)
                voice.buffer = try voice.queue.allocateBuffer(byteCapacity: bytes)
            }
            voice.buffer.byteSize = bytes
            sound.samples.withUnsafeBytes { voice.buffer.audioData.copyMemory(from: $0.baseAddress!, byteCount: bytes) }
            try voice.queue.enqueue(voice.buffer)
            try voice.queue.prime()
            try voice.queue.start()
            // The voice stops right after the sound's last frame (IsRunning false: its listener).
            try voice.queue.stop(immediate: false)
        } catch {
            lock.withLock {
                voice.playing = false
                voice.completion = nil
            }
            throw AudioError(error.code, "SystemSoundPlayer.play: \(sound.url.lastPathComponent): \(error.message)")
        }
    }

    /// An interruption began: every sound playing stops now (its completion runs).
    func silenceForInterruption() {
        let playing = lock.withLock { voices.filter(\.playing).map(\.queue) }
        for queue in playing { try? queue.stop(immediate: true) }
    }

    private func makeVoice(for sound: SystemSound, bytes: Int) throws(AudioError) -> Voice {
        let queue = try session.governing { () throws(AudioError) in try AudioQueue(format: sound.format) { _, _ in } }
        // The player is the session's participant; its voices are not paused on their own.
        session.unregister(queue)
        do throws(AudioError) {
            switch destination {
            case .output(let output): try queue.setOutput(output)
            case .device(let name): try queue.setCurrentDevice(name)
            }
            let voice = Voice(queue: queue, buffer: try queue.allocateBuffer(byteCapacity: max(bytes, 4096)))
            try queue.addPropertyListener(.isRunning) { [weak self, unowned(unsafe) voice] queue, _ in
                self?.voiceStopped(voice, queue)
            }
            return voice
        } catch {
            try? queue.dispose(immediate: true)
            throw AudioError(error.code, "SystemSoundPlayer: \(sound.url.lastPathComponent): \(error.message)")
        }
    }

    /// IsRunning changed on a voice's thread: when it went false, the play is over.
    private func voiceStopped(_ voice: Voice, _ queue: AudioQueue) {
        guard !queue.isRunning else { return }
        let finished = lock.withLock { () -> (@Sendable () -> Void)? in
            guard voice.playing else { return nil }
            voice.playing = false
            defer { voice.completion = nil }
            return voice.completion
        }
        finished?()
    }
}
