import Dispatch
import Foundation
import SonoraCore
import SonoraFile
import SonoraToolbox
import SonoraUnits

/// `sonora play`'s engine: one run of same-format files through one output queue on the
/// device, until the last frame has played (or SIGINT), with the meter read every 20 ms.
final class FilePlayback {
    let device: String
    let volume: Float
    /// The play rate (1: as recorded); the queue resamples, so the pitch follows.
    let rate: Float
    let interruption: Interruption
    let progress: PlayProgress?

    init(device: String, volume: Float, rate: Float, interruption: Interruption, progress: PlayProgress?) {
        self.device = device
        self.volume = volume
        self.rate = rate
        self.interruption = interruption
        self.progress = progress
    }

    /// Plays `files` (result indices `indices`) from `startFrame` of the first; `loopsAlone`:
    /// repeat them in this queue until interrupted. Adds what played to `result`.
    func play(_ files: [AudioFile], indices: [Int], startFrame: Int, loopsAlone: Bool, into result: inout PlayResult) throws(AudioError) {
        let source = try AudioQueueFileSource(files: files, startFrame: startFrame, loops: loopsAlone)
        let format = source.format
        let queue = try AudioQueue(format: format) { queue, buffer in source.fill(queue, buffer) }
        var disposed = false
        defer { if !disposed { source.halt(); try? queue.dispose(immediate: true) } }
        if let cookie = files[0].magicCookie, !format.isLinearPCM, format.formatID != .appleIMA4 { try queue.setMagicCookie(cookie) }
        let io = IOUnit()
        try io.setDevice(named: device)
        try queue.setOutputUnit(io)
        try queue.setParameter(.volume, volume)
        if rate != 1 {
            // Time-pitch must be on before the queue primes; at rate 1 the path stays bit-exact without it.
            try queue.setTimePitchEnabled(true)
            try queue.setParameter(.playRate, rate)
        }
        try queue.setLevelMeteringEnabled(true)
        let finished = DispatchSemaphore(value: 0)
        try queue.addPropertyListener(.isRunning) { queue, _ in if !queue.isRunning { finished.signal() } }
        let timeline = try queue.createTimeline()
        for _ in 0..<3 {
            source.fill(queue, try queue.allocateBuffer(byteCapacity: source.bufferByteCapacity, packetDescriptionCapacity: source.packetDescriptionCapacity))
        }
        if let failure = source.failure { throw failure }
        try queue.prime()
        try queue.start()
        var peak: Float = 0
        var interrupted = false
        let secondsBefore = result.seconds
        while finished.wait(timeout: .now() + 0.02) == .timedOut {
            if interruption.happened {
                interrupted = true
                break
            }
            if let levels = try? queue.currentLevelMeter() { peak = max(peak, levels.map(\.peak).max() ?? 0) }
            // The timeline counts the device's frames; at another rate the file moved rate × as far.
            let now = timeline.currentTime().sampleTime * Double(rate)
            progress?.update(seconds: secondsBefore + now / format.sampleRate, pass: source.passes(within: Int(now)) + result.passes, peak: peak)
        }
        if interrupted {
            source.halt()
            try queue.stop(immediate: true)
        }
        if let levels = try? queue.currentLevelMeter() { peak = max(peak, levels.map(\.peak).max() ?? 0) }
        let timelineFrames = Int(timeline.currentTime().sampleTime)
        let underruns = queue.underruns
        disposed = true
        try queue.dispose(immediate: true)
        if let failure = source.failure { throw failure }
        // Every enqueued frame played unless interrupted; then the timeline says how far it got.
        var played = source.enqueuedFrames.reduce(0) { $0 + $1.frames }
        if interrupted { played = min(played, Int(Double(timelineFrames) * Double(rate))) }
        var remaining = played
        for entry in source.enqueuedFrames where remaining > 0 {
            let frames = min(entry.frames, remaining)
            result.files[indices[entry.file]].frames += frames
            result.files[indices[entry.file]].seconds = Double(result.files[indices[entry.file]].frames) / format.sampleRate
            remaining -= frames
        }
        result.frames += played
        result.seconds += Double(played) / format.sampleRate
        // What the queue's timeline counted: the device's frames, underrun silence included.
        result.deviceSeconds += Double(timelineFrames) / format.sampleRate
        result.underruns += underruns
        result.peak = max(result.peak, peak)
        // Passes this queue played into beyond its first (looping on its own); the caller counts the first.
        result.passes += source.passes(within: played) - 1
    }
}
