import Foundation
import SonoraCore
import SonoraDSP

/// One channel's level (AudioQueueLevelMeterState): average (RMS) and peak over the last
/// render slice, linear, or in dB for `currentLevelMeterDB`.
public struct AudioQueueLevel: Hashable, Sendable {
    public var average: Float
    public var peak: Float
    public init(average: Float, peak: Float) {
        self.average = average
        self.peak = peak
    }
}

extension AudioQueue {
    /// A queue property with listeners (AudioQueuePropertyID, Core Audio's four-char codes).
    public enum Property: UInt32, Sendable, CaseIterable {
        case isRunning = 0x6171_726E  // 'aqrn'
        case currentDevice = 0x6171_6364  // 'aqcd'
        case streamDescription = 0x6171_6674  // 'aqft'
        case magicCookie = 0x6171_6D63  // 'aqmc'
        case enableLevelMetering = 0x6171_6D65  // 'aqme'
        case currentLevelMeter = 0x6171_6D76  // 'aqmv'
        case currentLevelMeterDB = 0x6171_6D64  // 'aqmd'
        case decodeBufferSizeFrames = 0x6463_6266  // 'dcbf'
        case maximumOutputPacketSize = 0x786F_7073  // 'xops'
        case converterError = 0x7163_7665  // 'qcve'
        case channelLayout = 0x6171_636C  // 'aqcl'
        case enableTimePitch = 0x715F_7470  // 'q_tp'
        case timePitchAlgorithm = 0x7174_7061  // 'qtpa'
    }

    /// Calls `listener` on the queue's thread whenever `property` changes
    /// (AudioQueueAddPropertyListener); returns a token for `removePropertyListener`.
    @discardableResult
    public func addPropertyListener(_ property: Property, _ listener: @escaping (AudioQueue, Property) -> Void) throws(AudioError) -> Int {
        try withLock { () throws(AudioError) -> Int in
            try requireOpen("addPropertyListener")
            let id = nextListenerID
            nextListenerID += 1
            listeners[property, default: []].append((id, listener))
            return id
        }
    }

    /// Removes a listener (AudioQueueRemovePropertyListener).
    public func removePropertyListener(_ property: Property, token: Int) throws(AudioError) {
        try withLock { () throws(AudioError) in
            guard let index = listeners[property]?.firstIndex(where: { $0.id == token }) else {
                throw error(.queueInvalidParameter, "removePropertyListener", "no listener \(token) on \(property)")
            }
            listeners[property]?.remove(at: index)
        }
    }

    /// Announces a change from a program thread: the listeners run on the queue's thread.
    func notify(_ property: Property) {
        var tag = property.rawValue
        // The worker's job ring has one producer: program threads take turns.
        renderLock.lock()
        defer { renderLock.unlock() }
        worker.submit(tag: property.rawValue, &tag, count: 4)
    }

    /// Runs the listeners of `property` (on the queue's thread).
    func fire(_ property: Property?) {
        guard let property else { return }
        let bodies = (try? withLock { listeners[property]?.map(\.body) ?? [] }) ?? []
        for body in bodies { body(self, property) }
    }

    // MARK: Values

    /// kAudioQueueProperty_IsRunning.
    public var isRunning: Bool { (try? withLock { running }) ?? false }

    /// kAudioQueueProperty_StreamDescription.
    public var streamDescription: StreamFormat { format }

    /// kAudioQueueProperty_MagicCookie: the codec's setup (esds, ALACSpecificConfig, …), set
    /// before the first buffer of such a format.
    public var magicCookie: [UInt8]? { try? withLock { magicCookieValue } }

    public func setMagicCookie(_ cookie: [UInt8]) throws(AudioError) {
        let call = "setMagicCookie"
        try withLock { () throws(AudioError) in
            try requireOpen(call)
            guard !format.isLinearPCM && format.formatID != .appleIMA4 else {
                throw error(.queueInvalidProperty, call, "\(format.formatID) has no magic cookie")
            }
            guard !cookie.isEmpty else { throw error(.queueInvalidPropertySize, call, "a magic cookie of 0 bytes") }
            magicCookieValue = cookie
            cookieChanged = true
        }
        notify(.magicCookie)
    }

    /// kAudioQueueProperty_EnableLevelMetering.
    public var isLevelMeteringEnabled: Bool { (try? withLock { meteringEnabled }) ?? false }

    public func setLevelMeteringEnabled(_ enabled: Bool) throws(AudioError) {
        try withLock { () throws(AudioError) in
            try requireOpen("setLevelMeteringEnabled")
            meteringEnabled = enabled
        }
        push(.metering(enabled))
        applyOfflineCommands()
        notify(.enableLevelMetering)
    }

    /// kAudioQueueProperty_CurrentLevelMeter: each channel's level over the last render slice.
    public func currentLevelMeter() throws(AudioError) -> [AudioQueueLevel] {
        try withLock { () throws(AudioError) -> [AudioQueueLevel] in
            try requireOpen("currentLevelMeter")
            guard meteringEnabled else { throw error(.queueInvalidProperty, "currentLevelMeter", "level metering is off (setLevelMeteringEnabled(true))") }
            while let reading = renderer.meters.pop() {
                guard reading.channel < latestLevels.count else { continue }
                latestLevels[reading.channel] = AudioQueueLevel(average: reading.average, peak: reading.peak)
            }
            return latestLevels
        }
    }

    /// kAudioQueueProperty_CurrentLevelMeterDB: the same in dBFS.
    public func currentLevelMeterDB() throws(AudioError) -> [AudioQueueLevel] {
        try currentLevelMeter().map {
            AudioQueueLevel(average: Decibels.fromLinear($0.average), peak: Decibels.fromLinear($0.peak))
        }
    }

    /// kAudioQueueProperty_DecodeBufferSizeFrames: the ring between decoder and render side.
    public var decodeBufferSizeFrames: Int { renderer.ring.capacity }

    public func setDecodeBufferSizeFrames(_ frames: Int) throws(AudioError) {
        let call = "setDecodeBufferSizeFrames"
        try withLock { () throws(AudioError) in
            try requireOpen(call)
            guard frames >= 64 && frames <= 1 << 20 else {
                throw error(.queueInvalidPropertyValue, call, "\(frames) frames is outside 64…1048576")
            }
            guard !running, queued.isEmpty, buffers.values.allSatisfy({ $0.state != .enqueued }) else {
                throw error(.queueInvalidRunState, call, "the decode buffer can change only while the queue is stopped and empty")
            }
        }
        barrier()
        // Not across the notifications below: a listener that waits for a pass would wait forever.
        passLock.lock()
        offlineRenderLock.lock()
        // Made from the renderer it replaces and handed to the output target (if any) as one
        // step against an output joined on another thread (see `rendererLock`).
        rendererLock.lock()
        let replacement: AudioQueueRenderer
        do throws(AudioError) {
            replacement = try AudioQueueRenderer(channelCount: renderer.channelCount, ringFrames: frames, int16Storage: renderer.int16Frames != nil)
        } catch {
            rendererLock.unlock()
            offlineRenderLock.unlock()
            passLock.unlock()
            throw error
        }
        replacement.worker = Unmanaged.passUnretained(worker)
        replacement.wakesWorker.store(renderer.wakesWorker.load(ordering: .relaxed), ordering: .relaxed)
        replacement.feeder = renderer.feeder
        replacement.wakesFeeder.pointee.store(renderer.wakesFeeder.pointee.load(ordering: .relaxed), ordering: .releasing)
        renderer = replacement
        let target = (try? withLock { outputTarget }) ?? nil
        target?.renderer = replacement
        rendererLock.unlock()
        writtenTotal = 0
        decodedTotal = 0
        discardThrough = 0
        streamBase = 0
        consumedSeen = 0
        offlineRenderLock.unlock()
        passLock.unlock()
        if isLevelMeteringEnabled { push(.metering(true)) }
        notify(.decodeBufferSizeFrames)
    }

    /// kAudioQueueProperty_MaximumOutputPacketSize: the largest packet the queue's decoder
    /// produces (one frame of 32-bit float per channel).
    public var maximumOutputPacketSize: Int { 4 * Int(format.channelsPerFrame) }

    /// kAudioQueueProperty_ConverterError: the last decoding failure (its buffer was handed back unplayed).
    public var converterError: AudioError? { try? withLock { converterErrorValue } }

    /// Slices that found no decoded frames while running (each played silence).
    public var underruns: Int { renderer.underruns }

    /// A timeline for the queue's current time (AudioQueueCreateTimeline).
    public func createTimeline() throws(AudioError) -> AudioQueueTimeline {
        try withLock { () throws(AudioError) in try requireOpen("createTimeline") }
        return AudioQueueTimeline(queue: self)
    }

    // MARK: Parameters

    /// AudioQueueGetParameter.
    public func parameter(_ parameter: AudioQueueParameter) -> Float {
        (try? withLock { () -> Float in
            switch parameter {
            case .volume: volumeValue
            case .playRate: playRateValue
            case .volumeRampTime: volumeRampTime
            case .pan: panValue
            }
        }) ?? 0
    }

    /// AudioQueueSetParameter: volume ramps over the volume ramp time, per sample.
    public func setParameter(_ parameter: AudioQueueParameter, _ value: Float) throws(AudioError) {
        let call = "setParameter"
        let rampTime = try withLock { () throws(AudioError) -> Float in
            try requireOpen(call)
            try check(parameter, value, call)
            switch parameter {
            case .volume: volumeValue = value
            case .playRate: playRateValue = value
            case .volumeRampTime: volumeRampTime = value
            case .pan: panValue = value
            }
            return volumeRampTime
        }
        let rampFrames = ringFrames(forSeconds: rampTime)
        switch parameter {
        case .volume: push(.volume(value, rampFrames: rampFrames))
        case .pan:
            let gains = PanLaw.constantGain.gains(pan: value)
            push(.pan(left: gains.left, right: gains.right, rampFrames: rampFrames))
        case .volumeRampTime: return
        case .playRate:
            // The queue's thread converts at the new rate from its next frames.
            worker.wake()
            return
        }
        applyOfflineCommands()
    }

    func check(_ parameter: AudioQueueParameter, _ value: Float, _ call: String) throws(AudioError) {
        let range: ClosedRange<Float> = switch parameter {
        case .volume: 0...1
        case .playRate: 0.5...2
        case .volumeRampTime: 0...10
        case .pan: -1...1
        }
        guard value.isFinite, range.contains(value) else {
            throw error(.queueInvalidParameter, call, "\(parameter) \(value) is outside \(range.lowerBound)…\(range.upperBound)")
        }
        if parameter == .pan && format.channelsPerFrame != 2 {
            throw error(.queueInvalidParameter, call, "pan needs a stereo queue, not \(format.channelsPerFrame) channels")
        }
    }
}
