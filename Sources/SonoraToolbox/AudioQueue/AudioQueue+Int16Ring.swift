import SonoraCore

/// 16-bit PCM kept as 16-bit integers in the ring: the queue's thread copies the program's
/// frames into it as they are, and the render side converts them to float as it reads them
/// (`AudioQueueRenderer.int16Frames`) — what a bare render callback converting 16-bit frames
/// from memory does. Half the bytes of the float ring written on the queue's (or the feeder's)
/// thread and read on the I/O thread, and no conversion pass before the ring.
///
/// The rule: a queue's ring has 16-bit storage when its format is 16-bit signed integer
/// linear PCM, little-endian (on a little-endian host), mono or interleaved stereo, packed
/// (`int16RingFormat`); it holds 16-bit frames while no rate stage runs (play rate enabled,
/// or a stream rate other than the output's: its output is not 16-bit). Everything else that
/// writes the ring without a rate stage writes values that came from the stream's 16-bit
/// samples (`Float(sample) / 32768`, or silence for a start-time gap), so they go back to the
/// same integers exactly. The render side's conversion is `SampleConversion.decode`'s, and the
/// gains, the sum and the meters then run on the same floats: the output is the same bit for bit.
///
/// The storage changes form only while the ring holds no unread frame (after it drained):
/// from float to 16-bit also only with no decoded float waiting (it may be a rate stage's);
/// from 16-bit to float (a rate stage came) the stage's frames wait until then.
extension AudioQueue {
    /// Whether a queue of `format` gets a ring with 16-bit storage (see the rule above).
    static func int16RingFormat(_ format: StreamFormat) -> Bool {
        #if _endian(little)
        let channels = Int(format.channelsPerFrame)
        return format.pcmSample == .int16 && !format.isBigEndian && (channels == 1 || channels == 2)
            && (format.isInterleaved || channels == 1) && Int(format.bytesPerFrame) == 2 * channels
        #else
        return false
        #endif
    }

    /// At each pass of the queue's thread: the storage the ring's next frames take.
    func syncRingStorage() {
        guard renderer.int16Frames != nil else { return }
        let wanted = rateStage == nil && prefersInt16Ring.load(ordering: .relaxed)
        guard renderer.holdsInt16.pointee.load(ordering: .relaxed) != wanted else { return }
        // The producer's view: every frame written has been read (or dropped) by the render side.
        guard renderer.ring.writableFrames == renderer.ring.capacity else { return }
        if wanted && pendingOffset < pendingDecoded.count { return }
        renderer.holdsInt16.pointee.store(wanted, ordering: .releasing)
    }

    /// `part` (a write region of the ring) filled with `count` interleaved 16-bit frames from `source`.
    func copyInt16(_ source: UnsafeRawPointer, into part: AudioBufferList) {
        guard let storage = renderer.int16Frames, part.frameCount > 0 else { return }
        let channels = renderer.channelCount
        UnsafeMutableRawPointer(storage + part.frameOffset * channels)
            .copyMemory(from: source, byteCount: part.frameCount * channels * 2)
    }

    /// `part` (a write region) filled from interleaved floats that came from 16-bit samples
    /// (× 32768 gives the integer back exactly).
    func storeInt16(_ source: UnsafePointer<Float>, into part: AudioBufferList) {
        guard let storage = renderer.int16Frames, part.frameCount > 0 else { return }
        let channels = renderer.channelCount
        let destination = storage + part.frameOffset * channels
        for index in 0..<(part.frameCount * channels) {
            destination[index] = Int16(max(min(source[index] * 32768, 32767), -32768))
        }
    }
}
