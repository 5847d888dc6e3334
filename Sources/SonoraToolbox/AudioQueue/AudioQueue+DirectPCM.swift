import Foundation
import SonoraCore
import SonoraDSP

/// Linear PCM buffers are played from where the program put them: the queue's thread sends
/// the render side a segment (the buffer's bytes, its frames, its stream frame) and hands the
/// buffer back once the render side has played it (`AudioQueueRenderer+Segments`).
///
/// Why: through the ring a PCM buffer was converted into floats on the queue's thread and
/// read back on the I/O thread — with many players on one device, stores and loads of
/// memory the other core had just touched, most of their cost (perf). Before the ring
/// path it went through the converter too: four passes and two allocations per buffer.
/// The bytes are read where the program put them (the buffer is the queue's until it is
/// handed back), not copied at `enqueue`.
extension AudioQueue {
    /// Whether enqueued buffers are read in place (linear PCM, interleaved or mono).
    var readsInPlace: Bool { format.pcmSample != nil && (format.isInterleaved || format.channelsPerFrame == 1) }

    /// The entry's bytes (a copy, for the converter, of a buffer read in place).
    func contents(of entry: QueuedBuffer) -> [UInt8] {
        guard entry.bytes.isEmpty, let buffer = entry.buffer, entry.byteCount > 0 else { return entry.bytes }
        return Array(UnsafeRawBufferPointer(start: buffer.audioData, count: entry.byteCount))
    }

    /// A buffer the render side plays in place, not yet handed back.
    struct PlayingSegment {
        var buffer: AudioQueueBuffer
        /// Its number among the segments sent (the render side counts them done in order).
        var sequence: Int
        var frames: Int
    }

    /// Whether the next entry may be taken: always while the render side holds fewer than two
    /// buffers (so the next is there before the one playing ends: gapless at any ring size);
    /// beyond that, while the frames not yet played are under the ring's three quarters (what
    /// the ring path decodes ahead) and the segment queue has room.
    /// (Segments a reset dropped stay in the queue until the render side next runs: a full
    /// queue makes the entry wait, never the thread.)
    var canTakeAnotherEntry: Bool {
        guard renderer.pcmLayout != nil else { return true }
        guard segmentsSentTotal &- renderer.segmentsDone.load(ordering: .acquiring) < renderer.segments.capacity else { return false }
        guard playingSegments.count >= 2 else { return true }
        let ring = renderer.ring
        let ahead = decodedTotal - renderer.consumedFrames
        return ahead < ring.capacity - ring.capacity / 4
    }

    /// Takes `entry` on a direct path when it can (an interleaved or mono linear PCM buffer,
    /// no play-rate stage, no start time, nothing decoded still waiting); true if it did.
    /// Live, the render side plays it in place (a segment); offline — where the caller's
    /// thread renders, and a buffer comes back once its frames are decoded, deterministically
    /// at each fixed point — its frames are converted into the ring as room comes.
    func takeDirectPCM(_ entry: QueuedBuffer) -> Bool {
        guard let buffer = entry.buffer, entry.startTime == nil, rateStage == nil,
              pendingOffset >= pendingDecoded.count, pendingPCMFrame >= pendingPCMEnd,
              let layout = renderer.pcmLayout else { return false }
        // Read in place: `enqueue` kept no copy of these formats' bytes (`readsInPlace`).
        guard entry.bytes.isEmpty, entry.byteCount % layout.frameBytes == 0 else { return false }
        let frames = entry.byteCount / layout.frameBytes
        let trimStart = min(max(entry.trimAtStart, 0), frames)
        let trimEnd = min(max(entry.trimAtEnd, 0), frames - trimStart)
        let played = frames - trimStart - trimEnd
        if !entry.events.isEmpty { stampEvents(entry.events, at: decodedTotal) }
        guard renderer.wakesWorker.load(ordering: .relaxed), played > 0 else {
            // Offline (or nothing to play): into the ring; the buffer goes back once it is all there.
            pendingPCM = UnsafeRawPointer(buffer.audioData)
            pendingPCMFrame = trimStart
            pendingPCMEnd = frames - trimEnd
            decodedTotal += played
            if played == 0 { clearPendingPCM() }
            current = entry
            return true
        }
        let segment = PCMSegment(bytes: UnsafeRawPointer(buffer.audioData) + trimStart * layout.frameBytes, startFrame: decodedTotal, frames: played)
        // Room was checked (`canTakeAnotherEntry`): a full queue could only wait for the render side.
        while !renderer.send(segment) { usleep(100) }
        playingSegments.append(PlayingSegment(buffer: buffer, sequence: segmentsSentTotal, frames: played))
        segmentsSentTotal &+= 1
        playingFrames += played
        decodedTotal += played
        return true
    }

    func clearPendingPCM() {
        pendingPCM = nil
        pendingPCMFrame = 0
        pendingPCMEnd = 0
    }

    /// Converts what fits of the pending PCM buffer into the ring (the room `writePending`
    /// leaves: a quarter of the ring stays free for a reset's new frames); true if any moved.
    func writePendingPCM() -> Bool {
        guard let layout = renderer.pcmLayout, let bytes = pendingPCM else { return false }
        let ring = renderer.ring
        let remaining = pendingPCMEnd - pendingPCMFrame
        // The producer's view of the fill (this thread writes the ring).
        let room = ring.writableFrames - ring.capacity / 4
        let region = ring.writeRegion(maxFrames: min(remaining, max(room, renderer.consumedFrames < discardThrough ? remaining : 0)))
        let count = region.frameCount
        guard count > 0 else { return false }
        let channels = renderer.channelCount
        let first = pendingPCMFrame
        if region.first.frameCount > 0 {
            AudioQueueRenderer.decode(bytes + first * layout.frameBytes, layout: layout, channels: channels, into: region.first)
        }
        if region.second.frameCount > 0 {
            AudioQueueRenderer.decode(bytes + (first + region.first.frameCount) * layout.frameBytes, layout: layout, channels: channels, into: region.second)
        }
        try? ring.commitWrite(count)
        pendingPCMFrame += count
        writtenTotal += count
        if pendingPCMFrame >= pendingPCMEnd { clearPendingPCM() }
        return true
    }

    /// Hands back the buffers the render side has played; true if any went back.
    func handBackPlayedSegments() -> Bool {
        guard let first = playingSegments.first else { return false }
        let done = renderer.segmentsDone.load(ordering: .acquiring)
        guard done &- first.sequence > 0 else { return false }
        var returned: [AudioQueueBuffer] = []
        while let next = playingSegments.first, done &- next.sequence > 0 {
            playingSegments.removeFirst()
            playingFrames -= next.frames
            returned.append(next.buffer)
        }
        for buffer in returned { handBack(buffer) }
        return true
    }

    /// A reset: the buffers the render side holds, taken back from it. Their segments are
    /// dropped by the discard already sent; a render call in progress may still read one, so
    /// this waits for it to return first.
    func takeBackSegments() -> [AudioQueueBuffer] {
        guard !playingSegments.isEmpty else { return [] }
        renderer.waitForRenderCall()
        defer {
            playingSegments = []
            playingFrames = 0
        }
        return playingSegments.map(\.buffer)
    }

    /// Frames the render side holds in segments, not yet played (approximately, while it plays).
    var framesInSegments: Int { playingFrames }

    /// As `AudioQueueRenderer.decodeInt16` (the render side converts the buffers it plays in place).
    static func decodeInt16(_ source: UnsafeRawPointer, channels: Int, into part: AudioBufferList) {
        AudioQueueRenderer.decodeInt16(source, channels: channels, into: part)
    }
}
