import SonoraCore
import SonoraDSP

/// Linear PCM buffers go from the enqueued bytes straight into the ring, converted and
/// deinterleaved in one pass as room comes (the ring's float channels are the decoded form).
///
/// Why: through the converter a PCM buffer was touched four times on the queue's thread —
/// converted into a byte array, copied to a Float array, held interleaved, deinterleaved
/// into the ring — and allocated twice; with many players on one device that was most of
/// their cost. `SampleConversion.decode` is what the converter's PCM decoder does, so the
/// frames are the same bit for bit.
extension AudioQueue {
    /// Takes `entry` on the direct path when it can (an interleaved or mono linear PCM buffer,
    /// no play-rate stage, no start time, nothing decoded still waiting); true if it did.
    func takeDirectPCM(_ entry: QueuedBuffer) -> Bool {
        guard entry.buffer != nil, entry.startTime == nil, rateStage == nil,
              pendingOffset >= pendingDecoded.count, pendingPCMFrame >= pendingPCMEnd,
              format.pcmSample != nil, format.isInterleaved || format.channelsPerFrame == 1 else { return false }
        let frameBytes = Int(format.bytesPerFrame)
        guard frameBytes > 0, entry.bytes.count % frameBytes == 0 else { return false }
        let frames = entry.bytes.count / frameBytes
        let trimStart = min(max(entry.trimAtStart, 0), frames)
        let trimEnd = min(max(entry.trimAtEnd, 0), frames - trimStart)
        if !entry.events.isEmpty { stampEvents(entry.events, at: decodedTotal) }
        pendingPCM = entry.bytes
        pendingPCMFrame = trimStart
        pendingPCMEnd = frames - trimEnd
        decodedTotal += pendingPCMEnd - pendingPCMFrame
        if pendingPCMFrame >= pendingPCMEnd { clearPendingPCM() }
        return true
    }

    func clearPendingPCM() {
        pendingPCM = []
        pendingPCMFrame = 0
        pendingPCMEnd = 0
    }

    /// Converts what fits of the pending PCM buffer into the ring (the room `writePending`
    /// leaves: a quarter of the ring stays free for a reset's new frames); true if any moved.
    func writePendingPCM() -> Bool {
        guard let sample = format.pcmSample else { return false }
        let ring = renderer.ring
        let remaining = pendingPCMEnd - pendingPCMFrame
        // The producer's view of the fill (this thread writes the ring).
        let room = ring.writableFrames - ring.capacity / 4
        let region = ring.writeRegion(maxFrames: min(remaining, max(room, renderer.consumedFrames < discardThrough ? remaining : 0)))
        let count = region.frameCount
        guard count > 0 else { return false }
        let channels = renderer.channelCount
        let frameBytes = Int(format.bytesPerFrame)
        let sampleBytes = SampleConversion.byteCount(of: sample)
        let bigEndian = format.isBigEndian
        let first = pendingPCMFrame
        pendingPCM.withUnsafeBytes { raw in
            func convert(_ part: AudioBufferList, from frame: Int) {
                for channel in 0..<channels {
                    SampleConversion.decode(
                        raw.baseAddress! + frame * frameBytes + channel * sampleBytes, sample: sample, bigEndian: bigEndian,
                        stride: frameBytes, into: part.samples(channel), count: part.frameCount)
                }
            }
            if region.first.frameCount > 0 { convert(region.first, from: first) }
            if region.second.frameCount > 0 { convert(region.second, from: first + region.first.frameCount) }
        }
        try? ring.commitWrite(count)
        pendingPCMFrame += count
        writtenTotal += count
        if pendingPCMFrame >= pendingPCMEnd { clearPendingPCM() }
        return true
    }
}
