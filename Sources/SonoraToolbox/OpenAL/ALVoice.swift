import SonoraCore
import SonoraUnits
import Synchronization

/// The render side of one source: reads its queue into a mixer input (the input's render
/// callback). Plain state in raw memory, touched only on the render thread; what the API
/// reads back (position, end of play) goes through atomics. No allocation, locks or
/// reference counting.
struct ALVoice {
    var entries: UnsafePointer<ALQueueEntry>?
    var count = 0
    var firstSequence = 0
    var sequence = 0
    /// Position in the current entry, buffer frames (fractional while resampling).
    var frame: Double = 0
    var running = false
    var looping = false
    var rateScale: Double = 1
    var generation = 0
    /// Published: (sequence mod 2³², frame) of the position; the generation it belongs to;
    /// the last generation that played to its end.
    let cursor: UnsafeMutablePointer<Atomic<UInt64>>
    let cursorGeneration: UnsafeMutablePointer<Atomic<Int>>
    let endedGeneration: UnsafeMutablePointer<Atomic<Int>>
    /// Input frames served since the last start, and the stretches they came from (a ring of
    /// `ALVoiceSegment.capacity`, newest at `segmentHead - 1`).
    var served = 0
    let segments: UnsafeMutablePointer<ALVoiceSegment>
    var segmentHead = 0
    var segmentCount = 0
    /// What the last published heard position was computed from (to publish only on change).
    var publishedServed = -1
    var publishedAhead: Double = -1

    init(cursor: UnsafeMutablePointer<Atomic<UInt64>>, cursorGeneration: UnsafeMutablePointer<Atomic<Int>>,
         endedGeneration: UnsafeMutablePointer<Atomic<Int>>, segments: UnsafeMutablePointer<ALVoiceSegment>) {
        self.cursor = cursor
        self.cursorGeneration = cursorGeneration
        self.endedGeneration = endedGeneration
        self.segments = segments
    }

    /// Publishes the position heard: `ahead` input frames (the mixer's resampler look-ahead)
    /// behind the last one served. Before the first stretch after a start, its start position.
    mutating func publishHeard(ahead: Double) {
        guard segmentCount > 0, served != publishedServed || ahead != publishedAhead else { return }
        publishedServed = served
        publishedAhead = ahead
        let heard = Double(served) - ahead
        var found = segments[(segmentHead - segmentCount + ALVoiceSegment.capacity) % ALVoiceSegment.capacity]
        var offset = 0.0
        for back in 1...segmentCount {
            let segment = segments[(segmentHead - back + ALVoiceSegment.capacity) % ALVoiceSegment.capacity]
            if Double(segment.start) <= heard {
                found = segment
                // Past its end: silence served while paused, the voice stood at the stretch's end.
                offset = min(heard - Double(segment.start), Double(segment.length))
                break
            }
        }
        cursor.pointee.store(Self.pack(sequence: found.sequence, frame: found.frame + offset * found.step), ordering: .releasing)
    }

    private mutating func record(_ segment: ALVoiceSegment) {
        segments[segmentHead] = segment
        segmentHead = (segmentHead + 1) % ALVoiceSegment.capacity
        segmentCount = min(segmentCount + 1, ALVoiceSegment.capacity)
    }

    static func pack(sequence: Int, frame: Double) -> UInt64 {
        UInt64(UInt32(truncatingIfNeeded: sequence)) << 32 | UInt64(UInt32(clamping: Int(frame)))
    }

    mutating func publish() {
        cursor.pointee.store(Self.pack(sequence: sequence, frame: frame), ordering: .releasing)
    }

    mutating func apply(_ command: ALVoiceCommand) {
        switch command {
        case .queue(_, let entries, let count, let firstSequence):
            self.entries = entries
            self.count = count
            self.firstSequence = firstSequence
            if entries == nil || count == 0 { running = false }
        case .start(_, let generation, let sequence, let frame, let running):
            self.generation = generation
            self.sequence = sequence
            self.frame = frame
            self.running = running
            served = 0
            segmentCount = 0
            publishedServed = -1
            publish()
            cursorGeneration.pointee.store(generation, ordering: .releasing)
        case .run(_, let on):
            running = on
        case .halt:
            running = false
        case .looping(_, let on):
            looping = on
        case .rateScale(_, let scale):
            rateScale = scale
        case .effectSlot:
            break  // the bank's, not a voice's
        }
    }

    /// Fills `output` (the mixer input's channels) with `frameCount` frames.
    mutating func render(into output: AudioBufferList, frameCount: Int) {
        var done = 0
        defer {
            // Every frame pulled counts, silent ones too: the mixer's look-ahead counts them.
            served &+= frameCount
            if done < frameCount {
                for channel in 0..<output.channelCount {
                    (output.samples(channel) + done).update(repeating: 0, count: frameCount - done)
                }
            }
        }
        guard running, let entries, count > 0 else { return }
        let channels = output.channelCount
        // Entries passed without producing a frame: a queue of empty buffers ends instead of spinning.
        var emptyPasses = 0
        while done < frameCount {
            let index = sequence - firstSequence
            if index < 0 || index >= count {
                finish()
                return
            }
            let entry = entries[index]
            if frame >= Double(entry.frames) {
                frame -= Double(entry.frames)
                if entry.frames == 0 { frame = 0 }
                sequence += 1
                emptyPasses += 1
                if sequence - firstSequence >= count {
                    if looping && emptyPasses <= count {
                        sequence = firstSequence
                    } else {
                        finish()
                        return
                    }
                }
                continue
            }
            emptyPasses = 0
            let step = entry.step * rateScale
            let limit = Double(entry.frames)
            let source = entry.samples
            let sourceChannels = entry.channels
            let segmentStart = done, segmentFrame = frame
            if step == 1 && frame == frame.rounded(.down) {
                // At the buffer's own rate on a whole frame: a copy (the interpolator would give
                // the same samples).
                let run = min(frameCount - done, entry.frames - Int(frame))
                let at = Int(frame)
                for channel in 0..<channels {
                    let from = min(channel, sourceChannels - 1)
                    let destination = output.samples(channel) + done
                    if sourceChannels == 1 {
                        destination.update(from: source + at, count: run)
                    } else {
                        for index in 0..<run { destination[index] = source[(at &+ index) &* sourceChannels &+ from] }
                    }
                }
                frame += Double(run)
                done &+= run
            } else if channels == 1 && sourceChannels == 1 {
                done = Self.interpolateMono(source, from: &frame, step: step, limit: limit, into: output.samples(0), done, frameCount)
            } else {
                while done < frameCount && frame < limit {
                    let base = Int(frame)
                    let fraction = Float(frame - Double(base))
                    let at = base &* sourceChannels
                    for channel in 0..<channels {
                        let from = min(channel, sourceChannels - 1)
                        let a = source[at &+ from]
                        let b = source[at &+ sourceChannels &+ from]
                        output.samples(channel)[done] = a + (b - a) * fraction
                    }
                    frame += step
                    done &+= 1
                }
            }
            record(ALVoiceSegment(start: served &+ segmentStart, length: done &- segmentStart, sequence: sequence, frame: segmentFrame, step: step))
        }
    }

    /// The next `frameCount` frames where the buffer holds them, when `render` would only copy
    /// them: a mono entry at its own rate, on a whole frame, with that many frames left in it.
    /// The voice advances as `render` would (position, served frames, the stretch recorded);
    /// nil (nothing changed) otherwise, and the mixer pulls through `render`.
    mutating func lend(frameCount: Int) -> UnsafePointer<Float>? {
        guard running, let entries, frameCount > 0 else { return nil }
        let index = sequence - firstSequence
        guard index >= 0, index < count else { return nil }
        let entry = entries[index]
        guard entry.channels == 1, entry.step * rateScale == 1, frame == frame.rounded(.down), frame >= 0 else { return nil }
        let at = Int(frame)
        guard at + frameCount <= entry.frames else { return nil }
        record(ALVoiceSegment(start: served, length: frameCount, sequence: sequence, frame: frame, step: 1))
        frame += Double(frameCount)
        served &+= frameCount
        return UnsafePointer(entry.samples + at)
    }

    /// Linear interpolation of a mono buffer into outputs `done`… until `frameCount` or the
    /// buffer's end, `frame` advancing by `step` per output (the same positions as one frame at
    /// a time); returns where the output stopped. Output pointers hoisted, no per-channel lookups.
    @inline(__always)
    private static func interpolateMono(
        _ source: UnsafePointer<Float>, from frame: inout Double, step: Double, limit: Double,
        into output: UnsafeMutablePointer<Float>, _ start: Int, _ frameCount: Int
    ) -> Int {
        var done = start
        var position = frame
        while done < frameCount && position < limit {
            let base = Int(position)
            let fraction = Float(position - Double(base))
            let a = source[base], b = source[base &+ 1]
            output[done] = a + (b - a) * fraction
            position += step
            done &+= 1
        }
        frame = position
        return done
    }

    /// Played to the end: stopped, and the API is told through `endedGeneration`.
    private mutating func finish() {
        running = false
        publish()
        endedGeneration.pointee.store(generation, ordering: .releasing)
    }

    /// The mixer input's lender (`Mixer3DInputLender`); the context is this voice's address.
    static let lender: Mixer3DInputLender.Function = { context, frames in
        context.unsafelyUnwrapped.assumingMemoryBound(to: ALVoice.self).pointee.lend(frameCount: frames)
    }

    /// The mixer input's render callback; the context is this voice's address.
    static let callback: RenderCallback.Function = { context, request in
        let voice = context.unsafelyUnwrapped.assumingMemoryBound(to: ALVoice.self)
        let request = request.assumingMemoryBound(to: RenderRequest.self)
        voice.pointee.render(into: request.pointee.buffers, frameCount: request.pointee.frameCount)
        return 0
    }
}
