import SonoraCore
import SonoraDSP

/// Linear PCM buffers go from the enqueued bytes straight into the ring, converted and
/// deinterleaved in one pass as room comes (the ring's float channels are the decoded form).
///
/// Why: through the converter a PCM buffer was touched four times on the queue's thread —
/// converted into a byte array, copied to a Float array, held interleaved, deinterleaved
/// into the ring — and allocated twice; with many players on one device that was most of
/// their cost. The bytes are read where the program put them (the buffer is the queue's
/// until it is handed back), not copied at `enqueue`. `SampleConversion.decode` is what the
/// converter's PCM decoder does, and the 16-bit fast path computes the same products, so
/// the frames are the same bit for bit.
extension AudioQueue {
    /// Whether enqueued buffers are read in place (linear PCM, interleaved or mono).
    var readsInPlace: Bool { format.pcmSample != nil && (format.isInterleaved || format.channelsPerFrame == 1) }

    /// The entry's bytes (a copy, for the converter, of a buffer read in place).
    func contents(of entry: QueuedBuffer) -> [UInt8] {
        guard entry.bytes.isEmpty, let buffer = entry.buffer, entry.byteCount > 0 else { return entry.bytes }
        return Array(UnsafeRawBufferPointer(start: buffer.audioData, count: entry.byteCount))
    }

    /// Takes `entry` on the direct path when it can (an interleaved or mono linear PCM buffer,
    /// no play-rate stage, no start time, nothing decoded still waiting); true if it did.
    func takeDirectPCM(_ entry: QueuedBuffer) -> Bool {
        guard let buffer = entry.buffer, entry.startTime == nil, rateStage == nil,
              pendingOffset >= pendingDecoded.count, pendingPCMFrame >= pendingPCMEnd,
              format.pcmSample != nil, format.isInterleaved || format.channelsPerFrame == 1 else { return false }
        let frameBytes = Int(format.bytesPerFrame)
        // Read in place: `enqueue` kept no copy of these formats' bytes (`readsInPlace`).
        guard frameBytes > 0, entry.bytes.isEmpty, entry.byteCount % frameBytes == 0 else { return false }
        let frames = entry.byteCount / frameBytes
        let trimStart = min(max(entry.trimAtStart, 0), frames)
        let trimEnd = min(max(entry.trimAtEnd, 0), frames - trimStart)
        if !entry.events.isEmpty { stampEvents(entry.events, at: decodedTotal) }
        // The buffer stays enqueued (and alive, in `current`) until every frame is in the ring.
        pendingPCM = UnsafeRawPointer(buffer.audioData)
        pendingPCMFrame = trimStart
        pendingPCMEnd = frames - trimEnd
        decodedTotal += pendingPCMEnd - pendingPCMFrame
        if pendingPCMFrame >= pendingPCMEnd { clearPendingPCM() }
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
        guard let sample = format.pcmSample, let bytes = pendingPCM else { return false }
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
        // A ring of 16-bit frames takes the bytes as they are (AudioQueue+Int16Ring).
        let int16 = renderer.holdsInt16.pointee.load(ordering: .relaxed)
        func convert(_ part: AudioBufferList, from frame: Int) {
            let start = bytes + frame * frameBytes
            if int16 {
                copyInt16(start, into: part)
                return
            }
            #if _endian(little)
            if sample == .int16, !bigEndian, frameBytes == 2 * channels, channels <= 2 {
                Self.decodeInt16(start, channels: channels, into: part)
                return
            }
            #endif
            for channel in 0..<channels {
                SampleConversion.decode(
                    start + channel * sampleBytes, sample: sample, bigEndian: bigEndian,
                    stride: frameBytes, into: part.samples(channel), count: part.frameCount)
            }
        }
        if region.first.frameCount > 0 { convert(region.first, from: first) }
        if region.second.frameCount > 0 { convert(region.second, from: first + region.first.frameCount) }
        try? ring.commitWrite(count)
        pendingPCMFrame += count
        writtenTotal += count
        if pendingPCMFrame >= pendingPCMEnd { clearPendingPCM() }
        return true
    }

    /// Little-endian 16-bit mono or interleaved stereo (on a little-endian host) into `part`'s float channels, eight
    /// frames a step: the same `Float(sample) * (1 / 32768)` as `SampleConversion.decode`
    /// (exact: a power-of-two scale), without its per-sample stride loop.
    static func decodeInt16(_ source: UnsafeRawPointer, channels: Int, into part: AudioBufferList) {
        let count = part.frameCount
        let scale = SIMD8<Float>(repeating: 1 / 32768)
        var frame = 0
        if channels == 2 {
            let left = UnsafeMutableRawPointer(part.samples(0)), right = UnsafeMutableRawPointer(part.samples(1))
            while frame &+ 8 <= count {
                let words = source.loadUnaligned(fromByteOffset: frame &* 4, as: SIMD16<Int16>.self)
                left.storeBytes(of: SIMD8<Float>(words.evenHalf) * scale, toByteOffset: frame &* 4, as: SIMD8<Float>.self)
                right.storeBytes(of: SIMD8<Float>(words.oddHalf) * scale, toByteOffset: frame &* 4, as: SIMD8<Float>.self)
                frame &+= 8
            }
        } else {
            let mono = UnsafeMutableRawPointer(part.samples(0))
            while frame &+ 8 <= count {
                let words = source.loadUnaligned(fromByteOffset: frame &* 2, as: SIMD8<Int16>.self)
                mono.storeBytes(of: SIMD8<Float>(words) * scale, toByteOffset: frame &* 4, as: SIMD8<Float>.self)
                frame &+= 8
            }
        }
        guard frame < count else { return }
        for channel in 0..<channels {
            SampleConversion.decode(
                source + frame * 2 * channels + channel * 2, sample: .int16, bigEndian: false,
                stride: 2 * channels, into: part.samples(channel) + frame, count: count - frame)
        }
    }
}
