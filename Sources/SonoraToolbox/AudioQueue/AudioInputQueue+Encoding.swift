import Foundation
import SonoraCore
import SonoraFile

/// The input queue's thread: frames from the ring, encoded, into the enqueued buffers, which
/// go back to the program through the callback.
extension AudioInputQueue {
    /// One wake-up: passes until nothing is left to do (a fixed point), then releases waiters.
    func serve() {
        passDone.lock()
        let wanted = passRequested
        passDone.unlock()
        while servePass() {}
        publishWakeThreshold()
        passDone.lock()
        passCompleted = max(passCompleted, wanted)
        passDone.broadcast()
        passDone.unlock()
    }

    /// One step; true if it did something.
    private func servePass() -> Bool {
        let (discard, drain, stopping, hasBuffer) = (try? withLock {
            (discardRequested, drainRequested, stopAfterDrain, !queued.isEmpty)
        }) ?? (false, false, false, false)
        if discard {
            try? capturer.ring.commitRead(capturer.ring.readableFrames)
            pendingBytes = []
            pendingPackets = AudioConverterPackets()
            pendingPacketIndex = 0
            converter?.reset()
            // Dropped, not flushed: the packets delivered are whole, none padded.
            let leading = lastPrimeInfo.leadingFrames
            _ = try? withLock { lastPrimeInfo = AudioConverterPrimeInfo(leadingFrames: leading) }
            streamStartFrames = takenFrames
            if let current, current.byteSize > 0 { deliver() }
            _ = try? withLock { discardRequested = false }
            return true
        }
        if moveToBuffers() { return true }
        // Frames are taken only while a buffer can receive them: with none, the ring fills and
        // the capture side drops (an overrun), as Core Audio's input queue does.
        let canReceive = current != nil || hasBuffer
        if capturer.ring.readableFrames > 0 && (canReceive || drain) && pendingIsEmpty {
            encode(takeFrames())
            return true
        }
        if drain {
            if capturer.ring.readableFrames > 0 {
                encode(takeFrames())
                return true
            }
            finishStream()
            _ = moveToBuffers()
            if let current, current.byteSize > 0 { deliver() }
            let announce = (try? withLock { () -> Bool in
                drainRequested = false
                if stopping { stopAfterDrain = false }
                defer { announcesStop = false }
                return announcesStop
            }) ?? false
            if announce { fire(.isRunning) }
            return true
        }
        return false
    }

    /// Tells the capture side how many frames in the ring are worth waking this thread for:
    /// linear PCM, what completes the buffer being filled (or the next one enqueued) less
    /// what is already encoded and waiting; with no buffer to fill, half the ring (an enqueue
    /// wakes the thread itself); a compressed format, 1 — every slice, as its packets' sizes
    /// are not known ahead. Never more than half the ring, so the ring cannot fill first.
    private func publishWakeThreshold() {
        let ring = capturer.ring
        var threshold = ring.capacity / 2
        if format.isLinearPCM {
            let frameBytes = max(1, Int(format.bytesPerFrame))
            let room: Int? = if let current {
                current.byteCapacity / frameBytes * frameBytes - current.byteSize
            } else {
                (try? withLock { queued.first.map { $0.byteCapacity / frameBytes * frameBytes } }) ?? nil
            }
            if let room { threshold = min(threshold, max(1, (room - pendingBytes.count) / frameBytes)) }
        } else {
            threshold = 1
        }
        capturer.wakeThreshold.store(max(1, threshold), ordering: .relaxed)
    }

    private var pendingIsEmpty: Bool { pendingBytes.isEmpty && pendingPacketIndex >= pendingPackets.count }

    /// Everything readable in the ring, interleaved.
    private func takeFrames() -> [Float] {
        let ring = capturer.ring
        let region = ring.readRegion(maxFrames: ring.readableFrames)
        let channels = capturer.channelCount
        var samples = [Float](repeating: 0, count: region.frameCount * channels)
        var frame = 0
        for part in [region.first, region.second] where part.frameCount > 0 {
            for channel in 0..<channels {
                let source = part.samples(channel)
                for index in 0..<part.frameCount { samples[(frame + index) * channels + channel] = source[index] }
            }
            frame += part.frameCount
        }
        try? ring.commitRead(region.frameCount)
        takenFrames += region.frameCount
        return samples
    }

    private func encode(_ samples: [Float]) {
        let bytes = samples.withUnsafeBytes { Array($0) }
        do throws(AudioError) {
            guard let converter else {
                pendingBytes += bytes
                return
            }
            if format.isLinearPCM {
                pendingBytes += try converter.convert(bytes)
            } else if format.bytesPerPacket > 0 {
                appendConstantSizePackets(try converter.convert(bytes))
            } else {
                pendingPackets.append(contentsOf: try converter.convertToPackets(bytes))
            }
        } catch {
            _ = try? withLock { encoderError = error }
        }
    }

    /// Whole packets of a constant-size format (IMA4), described for the buffer filler.
    private func appendConstantSizePackets(_ data: [UInt8]) {
        let size = Int(format.bytesPerPacket)
        var offset = 0
        while offset + size <= data.count {
            pendingPackets.append(Array(data[offset..<offset + size]))
            offset += size
        }
    }

    /// The end of the recorded stream: the encoder's held-back frames, then a fresh encoder.
    private func finishStream() {
        let streamFrames = takenFrames - streamStartFrames
        streamStartFrames = takenFrames
        guard let converter, !format.isLinearPCM else { return }
        var prime = AudioConverterPrimeInfo()
        do throws(AudioError) {
            // IMA4 is the converter's own (constant-size) codec: its last packet comes from flush(),
            // padded to the packet's frames.
            if format.bytesPerPacket > 0 {
                appendConstantSizePackets(try converter.flush())
                let packetFrames = max(Int(format.framesPerPacket), 1)
                prime.trailingFrames = (packetFrames - streamFrames % packetFrames) % packetFrames
            } else {
                let last = try converter.flushPackets()
                pendingPackets.append(contentsOf: last)
                prime = converter.primeInfo
                // A short last packet (ALAC's) where the format's packets hold a fixed count: a
                // file stores it as a whole packet, so its missing frames are padding there.
                let fixed = Int(format.framesPerPacket)
                if fixed > 0, let final = last.descriptions.last, final.variableFramesInPacket > 0, Int(final.variableFramesInPacket) < fixed {
                    prime.trailingFrames += fixed - Int(final.variableFramesInPacket)
                }
            }
        } catch {
            _ = try? withLock { encoderError = error }
        }
        _ = try? withLock { lastPrimeInfo = prime }
        converter.reset()
    }

    /// The next buffer to fill: the one being filled, or the first enqueued.
    private func currentBuffer() -> AudioQueueBuffer? {
        if let current { return current }
        guard let next = try? withLock({ queued.isEmpty ? nil : queued.removeFirst() }) else { return nil }
        next.byteSize = 0
        current = next
        currentDescriptions = []
        return next
    }

    /// Moves encoded data into buffers, delivering each full one; true if anything moved.
    private func moveToBuffers() -> Bool {
        var moved = false
        if format.isLinearPCM {
            let frameBytes = Int(format.bytesPerFrame)
            var offset = 0
            while offset < pendingBytes.count, let buffer = currentBuffer() {
                let usable = buffer.byteCapacity / frameBytes * frameBytes
                let count = min(usable - buffer.byteSize, pendingBytes.count - offset)
                pendingBytes.withUnsafeBytes {
                    (buffer.audioData + buffer.byteSize).copyMemory(from: $0.baseAddress! + offset, byteCount: count)
                }
                buffer.byteSize += count
                offset += count
                moved = true
                if buffer.byteSize == usable { deliver() }
            }
            pendingBytes.removeFirst(offset)
            return moved
        }
        let constantSize = Int(format.bytesPerPacket)
        while pendingPacketIndex < pendingPackets.count, let buffer = currentBuffer() {
            let description = pendingPackets.descriptions[pendingPacketIndex]
            let size = Int(description.dataByteSize)
            let fits = buffer.byteSize + size <= buffer.byteCapacity
                && (constantSize > 0 || currentDescriptions.count < buffer.packetDescriptionCapacity)
            if !fits {
                if buffer.byteSize == 0 {
                    _ = try? withLock { encoderError = error(.queueInvalidBuffer, "enqueue", "a \(size)-byte packet does not fit the buffer's \(buffer.byteCapacity) bytes") }
                    pendingPacketIndex += 1
                } else {
                    deliver()
                }
                moved = true
                continue
            }
            pendingPackets.data.withUnsafeBytes {
                (buffer.audioData + buffer.byteSize).copyMemory(from: $0.baseAddress! + Int(description.startOffset), byteCount: size)
            }
            currentDescriptions.append(AudioStreamPacketDescription(
                startOffset: Int64(buffer.byteSize), variableFramesInPacket: description.variableFramesInPacket, dataByteSize: UInt32(size)))
            buffer.byteSize += size
            pendingPacketIndex += 1
            moved = true
            // A constant-size format knows the buffer is full without seeing the next packet.
            if constantSize > 0 && buffer.byteSize + constantSize > buffer.byteCapacity { deliver() }
        }
        if pendingPacketIndex >= pendingPackets.count && pendingPackets.count > 0 {
            pendingPackets = AudioConverterPackets()
            pendingPacketIndex = 0
        }
        return moved
    }

    /// Hands the buffer being filled to the program (not under the lock).
    private func deliver() {
        guard let buffer = current else { return }
        current = nil
        let descriptions = format.bytesPerPacket > 0 ? [] : currentDescriptions
        let frames: Int
        if format.isLinearPCM {
            frames = buffer.byteSize / Int(format.bytesPerFrame)
        } else if format.bytesPerPacket > 0 {
            frames = buffer.byteSize / Int(format.bytesPerPacket) * Int(format.framesPerPacket)
        } else {
            frames = currentDescriptions.reduce(0) { $0 + Int($1.variableFramesInPacket == 0 ? format.framesPerPacket : $1.variableFramesInPacket) }
        }
        // In the input's sample time: where the first kept frame was, plus what came since.
        let startTime = capturer.origin + deliveredFrames
        deliveredFrames += frames
        currentDescriptions = []
        _ = try? withLock {
            buffer.state = .idle
            callbackThread = pthread_self()
        }
        switch callbackContext {
        case .queueThread: callback(self, buffer, startTime, descriptions)
        case .dispatchQueue(let queue): queue.sync { callback(self, buffer, startTime, descriptions) }
        }
        _ = try? withLock { callbackThread = nil }
    }
}
