import SonoraCore
import SonoraDSP
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A linear PCM buffer the render side plays from where the program put it: its frames
/// after the trims, and the stream frame of the first.
///
/// Why: with many players on one device, converting each buffer into the queue's float ring
/// on the queue's thread and reading the ring back on the I/O thread touched every frame
/// three times, twice in memory another core had just written (perf, 64 players: the I/O
/// thread's loads of the ring's frames and the queue threads' stores into cold ring lines
/// were most of the players' cost). Read in place, the I/O thread converts each 16-bit frame
/// once, from half as many cache lines, and the queue's thread only hands buffers back. The
/// buffer is the queue's until it comes back (Core Audio's rule), so reading it late is safe;
/// it comes back once its last frame has been played (or dropped by a reset, after any render
/// call that may still read it has returned: `AudioQueue.waitForRenderCall`).
struct PCMSegment: BitwiseCopyable {
    /// The buffer's first byte after the start trim.
    var bytes: UnsafeRawPointer
    /// The stream frame of the first frame (the ring's frames before it play first).
    var startFrame: Int
    var frames: Int
}

/// How a queue's linear PCM frames are laid out (its stream format), for the render side.
struct PCMLayout {
    var sample: PCMSample
    var bigEndian: Bool
    /// Bytes from one frame to the next (all channels; a mono or interleaved format).
    var frameBytes: Int
    var sampleBytes: Int
    /// Little-endian 16-bit mono or stereo on a little-endian host: eight frames a step.
    var isInt16Fast: Bool

    /// The layout of `format`'s buffers, if the render side can read them in place.
    init?(_ format: StreamFormat) {
        guard let sample = format.pcmSample, format.isInterleaved || format.channelsPerFrame == 1,
              format.bytesPerFrame > 0 else { return nil }
        self.sample = sample
        bigEndian = format.isBigEndian
        frameBytes = Int(format.bytesPerFrame)
        sampleBytes = SampleConversion.byteCount(of: sample)
        let channels = Int(format.channelsPerFrame)
        #if _endian(little)
        isInt16Fast = sample == .int16 && !bigEndian && frameBytes == 2 * channels && channels <= 2
        #else
        isInt16Fast = false
        #endif
    }
}

extension AudioQueueRenderer {
    /// Segments the render side holds at once (buffers played in place and not yet back).
    static let segmentCapacity = 256
    /// Frames of a segment converted per step (the scratch's size; a slice takes several).
    static let scratchFrames = 1024

    /// The segment playing now, taken from `segments` when none is (render thread only).
    @inline(__always)
    func nextSegment() -> PCMSegment? {
        if segment == nil && segmentsSent.load(ordering: .acquiring) != segmentsTaken, let next = segments.pop() {
            segment = next
            segmentOffset = 0
            segmentsTaken &+= 1
        }
        return segment
    }

    /// Plays up to `maxFrames` frames of `current` (the segment now playing, from
    /// `segmentOffset`) into `output` from frame `offset`: converted into the scratch, gains
    /// applied, then added (as a mixer source) or copied — the same operations, in the same
    /// order, as on the ring's frames, so the result is the same bit for bit. Marks the
    /// segment done when its last frame has played. Returns the frames played. Realtime-safe.
    func playSegment(_ current: PCMSegment, maxFrames: Int, into output: AudioBufferList, at offset: Int, adding: Bool) -> Int {
        guard let layout = pcmLayout else { return 0 }
        let count = min(maxFrames, current.frames - segmentOffset)
        var moved = 0
        while moved < count {
            let step = min(count - moved, Self.scratchFrames)
            let part = segmentScratchList.frames(from: 0, count: step)
            Self.decode(current.bytes + (segmentOffset + moved) * layout.frameBytes, layout: layout, channels: channelCount, into: part)
            applyGains(part, from: 0, count: step)
            if adding {
                add(part, to: output, at: offset + moved)
            } else {
                copy(part, to: output, at: offset + moved)
            }
            moved += step
        }
        segmentOffset += count
        if segmentOffset >= current.frames { finishSegment() }
        return count
    }

    /// The current segment is played (or dropped): its buffer may go back.
    private func finishSegment() {
        segment = nil
        segmentOffset = 0
        segmentFinished = true
        segmentsDone.wrappingAdd(1, ordering: .releasing)
    }

    /// Drops every segment before stream frame `frame` (a reset's discard).
    func dropSegments(before frame: Int) {
        while let next = nextSegment(), next.startFrame < frame { finishSegment() }
    }

    /// Loads one word per 64-byte line of the next `frames` frames of `current` (the mixer's
    /// prefetch, as `touchFrames` does for the ring). Realtime-safe: loads only.
    @inline(__always)
    func touchSegment(_ current: PCMSegment, frames: Int) -> UInt32 {
        guard let layout = pcmLayout else { return 0 }
        let count = min(frames, current.frames - segmentOffset)
        guard count > 0 else { return 0 }
        let start = current.bytes + segmentOffset * layout.frameBytes
        let bytes = count * layout.frameBytes
        var sink: UInt32 = 0
        var offset = 0
        while offset < bytes {
            sink ^= UInt32(start.load(fromByteOffset: offset, as: UInt8.self))
            offset &+= 64
        }
        return sink ^ UInt32(start.load(fromByteOffset: bytes &- 1, as: UInt8.self))
    }

    /// Converts `part.frameCount` frames at `source` (laid out as `layout`) into `part`'s
    /// float channels: what the converter's PCM decoder does (`SampleConversion.decode`).
    static func decode(_ source: UnsafeRawPointer, layout: PCMLayout, channels: Int, into part: AudioBufferList) {
        if layout.isInt16Fast {
            decodeInt16(source, channels: channels, into: part)
            return
        }
        for channel in 0..<channels {
            SampleConversion.decode(
                source + channel * layout.sampleBytes, sample: layout.sample, bigEndian: layout.bigEndian,
                stride: layout.frameBytes, into: part.samples(channel), count: part.frameCount)
        }
    }

    /// Little-endian 16-bit mono or interleaved stereo (on a little-endian host) into `part`'s
    /// float channels, eight frames a step: the same `Float(sample) * (1 / 32768)` as
    /// `SampleConversion.decode` (exact: a power-of-two scale), without its per-sample stride loop.
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

    /// Returns once the render call in progress now (if any) has returned (the queue's
    /// thread, after sending a discard: later calls see the discard before reading a segment).
    func waitForRenderCall() {
        let seen = renderCalls.load(ordering: .sequentiallyConsistent)
        guard seen & 1 == 1 else { return }
        while renderCalls.load(ordering: .sequentiallyConsistent) == seen { sched_yield() }
    }
}
