import Dispatch
import Foundation
import SonoraCore
import SonoraDSP
import SonoraFile

/// The queue's thread: decoding into the ring, handing buffers back, stop and reset.
extension AudioQueue {
    /// One wake-up of the queue's thread: passes until nothing is left to do (so a barrier
    /// sees a fixed point: a deterministic state for offline render), then releases waiters.
    func serve() {
        serve(waiting: true)
    }

    /// As `serve()`; without `waiting` (the output's feeder thread), nothing is done while
    /// another thread holds `passLock` (that thread runs the passes). True if it served.
    @discardableResult
    func serve(waiting: Bool) -> Bool {
        passDone.lock()
        let wanted = passRequested
        passDone.unlock()
        if waiting { passLock.lock() } else if !passLock.try() { return false }
        while servePass() {}
        passLock.unlock()
        passDone.lock()
        passCompleted = max(passCompleted, wanted)
        passDone.broadcast()
        passDone.unlock()
        return true
    }

    /// One step; true if it did something.
    private func servePass() -> Bool {
        if handleReset() { return true }
        syncRateStage()
        syncRingStorage()
        if let stoppedAt = renderer.takeEndReached() {
            handleEnd(at: stoppedAt)
            return true
        }
        // A PCM buffer still being converted into the ring as room comes.
        if pendingPCMFrame < pendingPCMEnd {
            let wrote = writePendingPCM()
            if pendingPCMFrame < pendingPCMEnd { return wrote }
            return true
        }
        // Frames decoded earlier still waiting for room in the ring.
        if pendingOffset < pendingDecoded.count {
            let wrote = writePending()
            if pendingOffset < pendingDecoded.count { return wrote }
            return true
        }
        if let stage = rateStage {
            if stage.hasInput { return convertForRing(stage) }
            if endDraining {
                // The last frames were fed: the stream ends on the exact ring frame they map to.
                endRateSegment(stage)
                finishEnd()
                return true
            }
        }
        if let finished = current {
            current = nil
            if let buffer = finished.buffer { handBack(buffer) }
            return true
        }
        let (next, stopping) = (try? withLock { () -> (QueuedBuffer?, Bool) in
            // As in Core Audio, buffers wait until the queue is primed or started.
            // The end comes only after the last queued buffer, even one that waits for a start.
            (queued.isEmpty || !decoding ? nil : queued.removeFirst(), stopAfterQueued && queued.isEmpty)
        }) ?? (nil, false)
        if let next {
            decodeIntoPending(next)
            current = next
            return true
        }
        if stopping && !endSent {
            // Stop after the queued buffers: the decoder's held-back frames, then the end mark.
            decodeIntoPending(QueuedBuffer(buffer: nil, bytes: [], descriptions: [], trimAtStart: 0, trimAtEnd: 0, startTime: nil, events: []))
            if rateStage != nil {
                // Its end is known once the rate stage has fed its last frames (at the rates then).
                endDraining = true
            } else {
                finishEnd()
            }
            return true
        }
        return false
    }

    private func finishEnd() {
        push(.endOfStream(decodedTotal))
        endSent = true
        endDraining = false
        streamBase = decodedTotal
        _ = try? withLock { stopAfterQueued = false }
    }

    private func handleReset() -> Bool {
        guard let requested = try? withLock({ () -> Bool in
            guard resetRequested else { return false }
            resetRequested = false
            resetting = true
            return true
        }), requested else { return false }
        var returned: [AudioQueueBuffer] = []
        if let buffer = current?.buffer { returned.append(buffer) }
        current = nil
        pendingDecoded = []
        pendingOffset = 0
        clearPendingPCM()
        rateStage?.reset()
        endDraining = false
        consumedSeen = decodedTotal
        returned += (try? withLock { () -> [AudioQueueBuffer] in
            let held = queued.compactMap(\.buffer)
            queued = []
            stopAfterQueued = false
            return held
        }) ?? []
        converter.reset()
        // Stream frames jump to what was decoded: the render side drops the ring up to there
        // along with any parameter event stamped before it.
        let written = writtenTotal
        writtenTotal = decodedTotal
        streamBase = decodedTotal
        endSent = false
        push(.discard(through: decodedTotal, written: written))
        discardThrough = decodedTotal
        for buffer in returned { handBack(buffer) }
        _ = try? withLock { resetting = false }
        return true
    }

    private func handleEnd(at sampleTime: Int) {
        endSent = false
        let disposing = (try? withLock { () -> Bool in
            running = false
            decoding = false
            guard lifecycle == .disposalPending else { return false }
            lifecycle = .invalidated
            buffers.removeAll()
            return true
        }) ?? false
        // A live queue's own device stops once the last frame has left it (the render side
        // drained the device's buffer before reporting the end; from here: not the I/O thread).
        stopWatchingOwnUnit()
        if let unit = (try? withLock { outputUnit }) ?? nil { IOUnitUsers.shared.stop(unit, by: self) }
        fire(.isRunning)
        if disposing {
            // The deferred dispose ends here; this thread cannot join itself, so another does.
            DispatchQueue.global().async { [unowned(unsafe) self] in
                self.worker.stop()
                self.releaseKeepAlive()
            }
        }
    }

    /// Decodes one entry (a flush marker when it has no buffer), applies its start time, trims
    /// and parameter events, and appends the frames to `pendingDecoded`.
    private func decodeIntoPending(_ entry: QueuedBuffer) {
        if takeDirectPCM(entry) { return }
        let channels = renderer.channelCount
        var samples: [Float]
        do throws(AudioError) {
            samples = try decode(entry)
        } catch {
            _ = try? withLock { converterErrorValue = AudioError(error.code, "AudioQueue (decoding): \(name): \(error.message)") }
            fire(.converterError)
            return
        }
        var frames = samples.count / channels
        let trimStart = min(entry.trimAtStart, frames)
        var trimEnd = entry.trimAtEnd
        // A short last packet (ALAC, FLAC) decodes to fewer frames than its format says: those
        // missing frames are part of the end trim (a packet table's remainder counts them).
        if trimEnd > 0, let nominal = nominalFrames(of: entry), frames < nominal { trimEnd = max(trimEnd - (nominal - frames), 0) }
        trimEnd = min(trimEnd, frames - trimStart)
        if trimStart > 0 || trimEnd > 0 {
            samples = Array(samples[(trimStart * channels)..<((frames - trimEnd) * channels)])
            frames -= trimStart + trimEnd
        }
        // Where the entry's first frame lands in the ring (frames still in the rate stage's filter
        // count); its start time is in the queue's sample time (the stream's rate).
        if let startTime = entry.startTime.map({ ringFrame(forQueueSampleTime: $0) }), startTime > decodedTotal + (rateStage?.framesToEnd ?? 0) - streamBase {
            // The gap is silence in ring frames: the rate stage's segment ends before it, exactly.
            if let stage = rateStage { endRateSegment(stage) }
            let silence = max(startTime - (decodedTotal - streamBase), 0)
            pendingDecoded += [Float](repeating: 0, count: silence * channels)
            decodedTotal += silence
        }
        if let stage = rateStage {
            // Its events come out with the ring frame its first frame converts to.
            stage.append(samples, events: entry.events)
            // A flush (or the end of the stream) drains the resampler as it drains the decoder.
            if entry.buffer == nil { endRateSegment(stage) }
        } else {
            if !entry.events.isEmpty { stampEvents(entry.events, at: decodedTotal) }
            // Usually nothing waits (the previous buffer is all in the ring): take the decoded
            // array as it is rather than copying it (a copy per buffer showed in perf).
            if pendingDecoded.isEmpty { pendingDecoded = samples } else { pendingDecoded += samples }
            decodedTotal += frames
        }
    }

    /// Frames an entry's packets stand for: the format's frames per packet, or each packet's own.
    private func nominalFrames(of entry: QueuedBuffer) -> Int? {
        guard entry.buffer != nil else { return nil }
        if format.framesPerPacket > 0 {
            let packets = format.bytesPerPacket > 0 ? (entry.bytes.isEmpty ? entry.byteCount : entry.bytes.count) / Int(format.bytesPerPacket) : entry.descriptions.count
            return packets * Int(format.framesPerPacket)
        }
        let frames = entry.descriptions.reduce(0) { $0 + Int($1.variableFramesInPacket) }
        return frames > 0 ? frames : nil
    }

    private func decode(_ entry: QueuedBuffer) throws(AudioError) -> [Float] {
        if let cookie = try withLock({ () -> [UInt8]?? in
            defer { cookieChanged = false }
            return cookieChanged ? .some(magicCookieValue) : nil
        }) {
            converter.decompressionMagicCookie = cookie
        }
        let bytes: [UInt8]
        if entry.buffer == nil {
            bytes = try converter.flush()
        } else if format.isLinearPCM || format.formatID == .appleIMA4 {
            bytes = try converter.convert(contents(of: entry))
        } else {
            bytes = try converter.convert(packets: AudioConverterPackets(data: entry.bytes, descriptions: entry.descriptions))
        }
        return bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    func stampEvents(_ events: [AudioQueueParameterEvent], at frame: Int) {
        let rampTime = (try? withLock { volumeRampTime }) ?? 0
        let rampFrames = ringFrames(forSeconds: rampTime)
        for event in events {
            switch event.parameter {
            case .volume:
                pushEvent(StampedEvent(frame: frame, kind: .volume, value: event.value, rampFrames: rampFrames))
            case .pan:
                let gains = PanLaw.constantGain.gains(pan: event.value)
                pushEvent(StampedEvent(frame: frame, kind: .left, value: gains.left, rampFrames: rampFrames))
                pushEvent(StampedEvent(frame: frame, kind: .right, value: gains.right, rampFrames: rampFrames))
            case .volumeRampTime:
                _ = try? withLock { volumeRampTime = event.value }
            case .playRate:
                // From this buffer's first frame: the stage has fed every earlier frame.
                _ = try? withLock { playRateValue = event.value }
            }
        }
    }

    /// Copies what fits of `pendingDecoded` (interleaved) into the ring (non-interleaved),
    /// leaving a quarter of the ring free: after a reset, the render side drops the old frames
    /// only when it next renders, and the new ones must already be there for that slice (a
    /// seek — pause, reset, enqueue, resume — would otherwise begin with a slice of silence).
    private func writePending() -> Bool {
        let channels = renderer.channelCount
        let remaining = (pendingDecoded.count - pendingOffset) / channels
        let ring = renderer.ring
        // The producer's view of the fill (this thread writes the ring; `readableFrames` is the reader's).
        let room = ring.writableFrames - ring.capacity / 4
        let region = ring.writeRegion(maxFrames: min(remaining, max(room, renderer.consumedFrames < discardThrough ? remaining : 0)))
        let count = region.frameCount
        guard count > 0 else { return false }
        let int16 = renderer.holdsInt16.pointee.load(ordering: .relaxed)
        // A rate stage's frames wait for the float storage (`syncRingStorage`, once the ring drained).
        if int16 && rateStage != nil { return false }
        pendingDecoded.withUnsafeBufferPointer { source in
            let base = source.baseAddress! + pendingOffset
            if int16 {
                storeInt16(base, into: region.first)
                storeInt16(base + region.first.frameCount * channels, into: region.second)
                return
            }
            // Deinterleaves into the ring's two parts (no array of them: one allocation per write).
            func deinterleave(_ part: AudioBufferList, from frame: Int) {
                for channel in 0..<channels {
                    let destination = part.samples(channel)
                    var from = base + frame * channels + channel
                    for index in 0..<part.frameCount {
                        destination[index] = from.pointee
                        from += channels
                    }
                }
            }
            if region.first.frameCount > 0 { deinterleave(region.first, from: 0) }
            if region.second.frameCount > 0 { deinterleave(region.second, from: region.first.frameCount) }
        }
        try? renderer.ring.commitWrite(count)
        pendingOffset += count * channels
        writtenTotal += count
        if pendingOffset == pendingDecoded.count {
            pendingDecoded = []
            pendingOffset = 0
        }
        return true
    }

    /// Gives a buffer back to the program through the callback, on the callback's context.
    func handBack(_ buffer: AudioQueueBuffer) {
        _ = try? withLock { if buffer.state == .enqueued { buffer.state = .idle } }
        let body = { [unowned(unsafe) self] in
            _ = try? self.withLock { self.callbackThread = pthread_self() }
            self.callback(self, buffer)
            _ = try? self.withLock { self.callbackThread = nil }
        }
        switch callbackContext {
        case .queueThread: body()
        case .dispatchQueue(let queue): queue.sync(execute: body)
        }
    }
}
