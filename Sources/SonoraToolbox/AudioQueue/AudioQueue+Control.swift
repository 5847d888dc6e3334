import Foundation
import SonoraCore
import SonoraHAL
import SonoraUnits

/// Control: prime, start, pause, stop, flush, reset, dispose, and the barrier with the queue's thread.
extension AudioQueue {
    /// Decodes ahead (AudioQueuePrime) and returns the frames ready to play.
    @discardableResult
    public func prime(frames: Int = 0) throws(AudioError) -> Int {
        try withLock { () throws(AudioError) in
            try requireOpen("prime")
            decoding = true
        }
        barrier()
        // Neither side of the ring here: the atomic positions only.
        let ready = renderer.ring.approximateFillLevel
        return frames > 0 ? min(frames, ready) : ready
    }

    /// Starts (or resumes after `pause`) playing (AudioQueueStart); `deviceSampleTime` is the
    /// output's sample time to begin at (a live output's device sample time, as
    /// `deviceCurrentTime()` reads it; offline: frames of `offlineRender` since the format was
    /// set), nil for now.
    public func start(atDeviceSampleTime deviceSampleTime: Int? = nil) throws(AudioError) {
        if let deviceSampleTime, deviceSampleTime < 0 {
            try withLock { () throws(AudioError) in try requireOpen("start") }
            throw error(.queueInvalidParameter, "start", "start time \(deviceSampleTime) is negative")
        }
        try start("start", at: deviceSampleTime.map(StartTime.sample) ?? .now)
    }

    /// Starts playing on the device sample time heard at `hostTime` (AudioQueueStart with a
    /// host time): queues on one device started for the same host time begin on the same
    /// sample. A time already past starts now. Live outputs only.
    public func start(atHostTime hostTime: HostTime) throws(AudioError) {
        let call = "start(atHostTime:)"
        try withLock { () throws(AudioError) in
            try requireOpen(call)
            guard offlineFormat == nil else {
                throw error(.queueInvalidOfflineMode, call, "an offline queue has no host clock (start(atDeviceSampleTime:) takes offline frames)")
            }
        }
        // With a reading of the device's clock, the control side converts (and remembers the
        // answer for the next queue); before the device's first cycle, the render side does.
        if let live = liveClock, live.running, let sample = live.clock.startSample(forHostTime: hostTime.nanoseconds) {
            try start(call, at: .sample(max(0, sample)))
        } else {
            try start(call, at: .host(hostTime.nanoseconds))
        }
    }

    enum StartTime { case now, sample(Int), host(UInt64) }

    private func start(_ call: String, at time: StartTime) throws(AudioError) {
        let (resuming, shared) = try withLock { () throws(AudioError) -> (Bool, AudioQueueOutput?) in
            try requireOpen(call)
            guard offlineFormat != nil || outputUnit != nil || attachment != nil else {
                throw error(.queueCannotStart, call, "no output: give a device (setCurrentDevice), an output (setOutput), an I/O unit (setOutputUnit) or an offline render format")
            }
            let resuming = running
            running = true
            paused = false
            decoding = true
            stopReasonValue = nil
            return (resuming, offlineFormat == nil ? attachment?.output : nil)
        }
        switch time {
        case .now: push(.start(at: -1, resetTimeline: !resuming))
        case .sample(let sample): push(.start(at: sample, resetTimeline: !resuming))
        case .host(let host): push(.startAtHostTime(host, resetTimeline: !resuming))
        }
        do throws(AudioError) {
            // The render side holds a stop-after-queued end back by the device's buffer.
            if let shared {
                // A graph output has no unit of its own: its owner runs the device, so no drain is known.
                shared.mixer.clock.setOutputLatency(of: shared.unit?.device)
                try shared.startDevice()
            } else if let unit = try withLock({ () throws(AudioError) in offlineFormat == nil ? outputUnit : nil }) {
                let clock = (try? withLock { outputTarget })??.clock
                if !unit.isRunning { clock?.reset() }
                clock?.setOutputLatency(of: unit.device)
                try IOUnitUsers.shared.start(unit, by: self)
                watchOwnUnit()
            }
        } catch {
            _ = try? withLock { running = false }
            push(.stop)
            throw self.error(.queueCannotStart, call, "the device did not start: \(error.message)")
        }
        if !resuming { notify(.isRunning) }
    }

    /// Pauses without losing what is queued (AudioQueuePause); `start` resumes.
    public func pause() throws(AudioError) {
        try withLock { () throws(AudioError) in
            try requireOpen("pause")
            guard running else { throw error(.queueInvalidRunState, "pause", "the queue is not running") }
            paused = true
        }
        push(.pause)
    }

    /// Stops (AudioQueueStop). Immediately: the queue halts now and every buffer comes back
    /// through the callback before this returns. Otherwise: the queued buffers play out, then
    /// IsRunning goes false (with its listener) once the last frame has been heard: offline
    /// right after it is rendered; live once the device has played its buffer out after it
    /// (the render side counts the device's buffer, `roundTripFrames`, in device sample
    /// time), and only then does a unit of the queue's own stop, so no frame is cut.
    public func stop(immediate: Bool) throws(AudioError) {
        try withLock { () throws(AudioError) in try requireOpen("stop") }
        if immediate {
            try resetQueue("stop", stopping: true)
        } else {
            try withLock { () throws(AudioError) in stopAfterQueued = true }
            worker.wake()
        }
    }

    /// Decodes everything queued and drains the decoder (AudioQueueFlush), so the stream's
    /// last frames are in the ring (a codec holds some back until told the stream ended).
    public func flush() throws(AudioError) {
        try withLock { () throws(AudioError) in
            try requireOpen("flush")
            queued.append(QueuedBuffer(buffer: nil, bytes: [], descriptions: [], trimAtStart: 0, trimAtEnd: 0, startTime: nil, events: []))
        }
        barrier()
    }

    /// Drops what is queued and decoded, hands every buffer back, resets the decoder; a
    /// running queue keeps running (AudioQueueReset).
    public func reset() throws(AudioError) {
        try withLock { () throws(AudioError) in try requireOpen("reset") }
        try resetQueue("reset", stopping: false)
    }

    /// Disposes of the queue (AudioQueueDispose): immediately (as `stop(immediate: true)`), or
    /// after the queued buffers have played (calls then fail with 'disposal pending').
    public func dispose(immediate: Bool) throws(AudioError) {
        let playing = try withLock { () throws(AudioError) -> Bool in
            try requireOpen("dispose")
            return running
        }
        // A stopped queue has nothing to play out: a deferred dispose is then an immediate one.
        if immediate || !playing {
            try resetQueue("dispose", stopping: true)
            try withLock { () throws(AudioError) in
                lifecycle = .invalidated
                buffers.removeAll()
            }
            leaveOutput()
            worker.stop()
            releaseKeepAlive()
        } else {
            try withLock { () throws(AudioError) in
                lifecycle = .disposalPending
                stopAfterQueued = true
            }
            worker.wake()
        }
    }

    /// Gives up the queue's own reference (after its thread has stopped).
    func releaseKeepAlive() {
        let reference = try? withLock { () -> Unmanaged<AudioQueue>? in
            defer { keepAlive = nil }
            return keepAlive
        }
        reference?.release()
    }

    func resetQueue(_ call: String, stopping: Bool) throws(AudioError) {
        try withLock { () throws(AudioError) in
            if let thread = callbackThread, pthread_equal(thread, pthread_self()) != 0 {
                throw error(.queueInvalidRunState, call, "\(call) cannot wait for the queue's callback from inside that callback; use stop(immediate: false)")
            }
            resetRequested = true
        }
        barrier()
        let wasRunning = try withLock { () throws(AudioError) -> Bool in
            let wasRunning = running
            if stopping {
                running = false
                decoding = false
            }
            return wasRunning
        }
        if stopping {
            push(.stop)
            // The device stops too: silence now, and no period renders the queue meanwhile.
            stopWatchingOwnUnit()
            if let unit = (try? withLock { outputUnit }) ?? nil { IOUnitUsers.shared.stop(unit, by: self) }
        }
        applyOfflineCommands()
        if stopping && wasRunning { notify(.isRunning) }
    }

    /// Offline, no render thread drains the commands: apply them now (under the render lock).
    func applyOfflineCommands() {
        guard (try? withLock { offlineFormat != nil }) == true else { return }
        offlineRenderLock.lock()
        defer { offlineRenderLock.unlock() }
        renderer.render(idleOutput.list(frameCount: 0))
    }


    /// Runs one pass of the queue's thread (to its fixed point) and waits for it.
    func barrier() {
        passDone.lock()
        passRequested += 1
        let wanted = passRequested
        passDone.unlock()
        worker.wake()
        passDone.lock()
        while passCompleted < wanted { passDone.wait() }
        passDone.unlock()
    }
}
