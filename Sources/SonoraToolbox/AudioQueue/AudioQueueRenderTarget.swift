import Foundation
import SonoraCore
import SonoraDSP
import SonoraUnits
import Synchronization

/// A live queue's render side as its output sees it: the I/O unit's input 0 render
/// callback (a queue with its own unit, `setOutputUnit`), or a source of an
/// `AudioQueueOutput`'s mixer, which renders it into `scratch` and adds that to the mix.
///
/// The render side reaches the queue's renderer through an atomic pointer, so the program
/// can replace it (DecodeBufferSizeFrames) while a shared device keeps rendering: the old
/// renderer stays alive here until the mixer has finished the slice that may be using it.
final class QueueRenderTarget: RenderCallbackTarget, @unchecked Sendable {
    private let current = Atomic<UInt>(0)
    /// Owns the renderer the render side uses (control side, under `ownedLock`: the program's
    /// thread replaces it while the output's device watcher may mark it discontinuous).
    private var owned: AudioQueueRenderer
    private let ownedLock = NSLock()
    /// The clock of a unit of the queue's own (the mixer keeps one per device).
    let clock: AudioQueueDeviceClock
    /// The mixer whose slices must end before a replaced renderer may go (control side).
    weak var mixer: AudioQueueMixer?
    /// The mixer's scratch for this source (its channel count; the mixer's slice capacity).
    private var scratchStorage: OwnedAudioBufferList?
    private var scratch = AudioBufferList(channels: UnsafePointer(bitPattern: 8)!, channelCount: 0, frameCount: 0)

    init(renderer: AudioQueueRenderer, sampleRate: Double) {
        owned = renderer
        clock = AudioQueueDeviceClock(sampleRate: sampleRate)
        super.init()
        current.store(UInt(bitPattern: Unmanaged.passUnretained(renderer).toOpaque()), ordering: .releasing)
    }

    /// The renderer (control side). Setting it waits for the mixer's slice in progress, if any.
    var renderer: AudioQueueRenderer {
        get {
            ownedLock.lock()
            defer { ownedLock.unlock() }
            return owned
        }
        set {
            ownedLock.lock()
            let old = owned
            owned = newValue
            ownedLock.unlock()
            current.store(UInt(bitPattern: Unmanaged.passUnretained(newValue).toOpaque()), ordering: .sequentiallyConsistent)
            let mixer = self.mixer
            mixer?.rendererChanged(self)
            mixer?.waitForSliceInProgress()
            withExtendedLifetime(old) {}
        }
    }

    /// Gives the source a scratch list for the mixer's slices (before it joins the mixer).
    func prepareScratch(frames: Int) throws(AudioError) {
        let storage = try OwnedAudioBufferList(channelCount: renderer.channelCount, frameCapacity: frames)
        scratchStorage = storage
        scratch = storage.list
    }

    @inline(__always)
    private func withRenderer(_ body: (AudioQueueRenderer) -> Void) {
        let bits = current.load(ordering: .sequentiallyConsistent)
        Unmanaged<AudioQueueRenderer>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!)._withUnsafeGuaranteedRef(body)
    }

    /// The renderer the render side uses now, unretained (the mixer's prefetch before a
    /// slice; a replaced renderer stays alive until the slice in progress has ended). Realtime-safe.
    @inline(__always)
    var currentRenderer: UnsafeRawPointer {
        UnsafeRawPointer(bitPattern: current.load(ordering: .sequentiallyConsistent))!
    }

    /// As the I/O unit's render callback: the queue renders straight into the unit's buffers.
    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        let stamp = request.pointee.timeStamp
        let buffers = request.pointee.buffers
        let renderClock: RenderClock? = stamp.flags.contains(.sampleTimeValid)
            ? clock.slice(stamp, frames: buffers.frameCount) : nil
        withRenderer { $0.render(buffers, clock: renderClock) }
        return .noError
    }

    /// As a mixer source: renders `mix.frameCount` frames into the scratch (in pieces if the
    /// slice is longer than it) and adds them to `mix`: channel to channel, a mono queue to
    /// every channel, a queue's channels beyond the mix's dropped. `int16Scratch`: the
    /// mixer's, for a ring of 16-bit frames (`AudioQueueRenderer.add`). Realtime-safe.
    @inline(__always)
    func mix(into mix: AudioBufferList, clock: RenderClock, scratch int16Scratch: AudioBufferList) {
        // Straight from the ring unless the queue meters its own slice.
        var added = false
        withRenderer { added = $0.add(into: mix, clock: clock, scratch: int16Scratch) }
        if added { return }
        let capacity = scratch.frameCount
        guard capacity > 0 else { return }
        var done = 0
        while done < mix.frameCount {
            let count = min(capacity, mix.frameCount - done)
            let piece = scratch.frames(from: 0, count: count)
            var pieceClock = clock
            pieceClock.sampleTime += done
            if done > 0 { pieceClock.discontinuous = false }
            withRenderer { $0.render(piece, clock: pieceClock) }
            let target = mix.frames(from: done, count: count)
            for channel in 0..<target.channelCount {
                let source = piece.channelCount == 1 ? 0 : channel
                guard source < piece.channelCount else { break }
                Mixing.add(piece.samples(source), into: target.samples(channel), count: count, gain: 1)
            }
            done += count
        }
    }

    /// Marks the queue's timeline discontinuous (control side: the device dropped time).
    func markDiscontinuity() { renderer.markDiscontinuity() }
}
