import CSonoraSystem
import SonoraCore
import SonoraDSP
import Synchronization

extension AudioUnit {
    /// Renders `frameCount` frames of output element `bus` into `buffers` (pull
    /// model): takes pending commands, pulls every input once per time stamp
    /// (from its connection or render callback), then calls `process(_:)` per
    /// slice between parameter events. Returns `.noError` or the failure status
    /// (also kept as LastRenderError). Realtime-safe.
    public func render(
        flags: inout RenderActionFlags, timeStamp: AudioTimeStamp, bus: Int, frameCount: Int,
        into buffers: AudioBufferList
    ) -> AudioError.Code {
        guard let core else { return .uninitialized }
        guard frameCount >= 0 && frameCount <= core.pointee.maximumFrames else {
            return failed(.tooManyFramesToProcess, core)
        }
        guard bus >= 0 && bus < core.pointee.outputCount else { return failed(.invalidElement, core) }
        guard buffers.channelCount == core.pointee.outputChannels[bus] && buffers.frameCount >= frameCount else {
            return failed(.parameterError, core)
        }
        let output = buffers.frames(from: 0, count: frameCount)
        applyCommands(core)
        if core.pointee.isSteady && !core.pointee.cachesOutput && !core.pointee.processesInPlace
            && !core.pointee.pullsOwnInputs
        {
            return renderSteady(core, timeStamp: timeStamp, bus: bus, frameCount: frameCount, output: output)
        }
        return renderGeneral(core, timeStamp: timeStamp, bus: bus, frameCount: frameCount, output: output)
    }

    /// `render` when the steady path is not taken (notifications, cache, in-place, slices).
    /// Out of line, so the steady path's function keeps a small frame: fewer registers saved
    /// and spilled, and stores wait behind a host's draining copies (issue 22, `lv2h8`).
    @inline(never)
    func renderGeneral(
        _ core: UnsafeMutablePointer<RealtimeCore>, timeStamp: AudioTimeStamp, bus: Int, frameCount: Int,
        output: AudioBufferList
    ) -> AudioError.Code {
        if core.pointee.cachesOutput && timeStamp.flags.contains(.sampleTimeValid)
            && core.pointee.cachedSampleTimes[bus] == timeStamp.sampleTime && core.pointee.cachedFrames[bus] == frameCount
        {
            output.copy(from: core.pointee.outputCaches[bus])
            return .noError
        }
        callNotify(core, .preRender, timeStamp: timeStamp, bus: bus, frameCount: frameCount, buffers: output)

        // In place: the input is pulled into the output buffers and processed there.
        var inPlace = false
        if core.pointee.processesInPlace && core.pointee.inputCount == 1 && core.pointee.outputCount == 1
            && core.pointee.ownedInputLists[0].channelCount == output.channelCount
        {
            if case .none = core.pointee.fadeSources[0] {
                inPlace = true
                core.pointee.inputLists[0] = output
            }
        }
        defer { if inPlace { core.pointee.inputLists[0] = core.pointee.ownedInputLists[0] } }

        // Every output element of one cycle shares one pull of the inputs.
        let isNewCycle = inPlace || timeStamp.sampleTime != core.pointee.lastPulledSampleTime
            || frameCount != core.pointee.lastPulledFrames || !timeStamp.flags.contains(.sampleTimeValid)
        if isNewCycle && !core.pointee.pullsOwnInputs {
            let status = pullInputs(core, timeStamp: timeStamp, frameCount: frameCount)
            if status != .noError { return failed(status, core) }
            core.pointee.lastPulledSampleTime = inPlace ? -1 : timeStamp.sampleTime
            core.pointee.lastPulledFrames = frameCount
        }

        let status = processSlices(core, timeStamp: timeStamp, bus: bus, frameCount: frameCount, output: output)
        if status != .noError { return failed(status, core) }
        if core.pointee.cachesOutput {
            core.pointee.outputCaches[bus].copy(from: output)
            core.pointee.cachedSampleTimes[bus] = timeStamp.sampleTime
            core.pointee.cachedFrames[bus] = frameCount
        }
        callNotify(core, .postRender, timeStamp: timeStamp, bus: bus, frameCount: frameCount, buffers: output)
        return .noError
    }

    /// `render` in the steady state (`RealtimeCore.isSteady`: no event, ramp, notification,
    /// bypass or crossfade) of a unit that neither caches its output nor processes in place
    /// nor pulls its inputs itself: exactly what the general path does then — each input
    /// pulled from its source once per time stamp, one `process` for the whole cycle — without
    /// its notification, cache, in-place and slice checks and calls (a light plugin's host
    /// paid them every render).
    @inline(__always)
    func renderSteady(
        _ core: UnsafeMutablePointer<RealtimeCore>, timeStamp: AudioTimeStamp, bus: Int, frameCount: Int,
        output: AudioBufferList
    ) -> AudioError.Code {
        if timeStamp.sampleTime != core.pointee.lastPulledSampleTime || frameCount != core.pointee.lastPulledFrames
            || !timeStamp.flags.contains(.sampleTimeValid)
        {
            for element in 0..<core.pointee.inputCount {
                let list = core.pointee.inputLists[element].frames(from: 0, count: frameCount)
                let source = core.pointee.inputSources[element]
                let status: AudioError.Code
                // A render callback (a host feeding the unit) inline: what `pull` does for it. Any
                // other source through `pullOutOfLine`, so this function's frame stays the size the
                // callback needs (inlined, `pull`'s connection case brought the source's render
                // checks and its spills into every render; issue 22, `lv2h8`).
                if case .callback(let callback) = source {
                    var request = RenderRequest(
                        flags: [], timeStamp: timeStamp.fieldwiseCopy, bus: element, frameCount: list.frameCount,
                        buffers: list)
                    status = withUnsafeMutablePointer(to: &request) { callback.call($0) }
                } else {
                    status = pullOutOfLine(source, element: element, into: list, timeStamp: timeStamp)
                }
                if status != .noError { return failed(status, core) }
            }
            core.pointee.lastPulledSampleTime = timeStamp.sampleTime
            core.pointee.lastPulledFrames = frameCount
        }
        guard frameCount > 0 else { return .noError }
        core.pointee.nextScratch = 0
        let status = process(
            RenderContext(
                frameCount: frameCount, frameOffset: 0, timeStamp: timeStamp.fieldwiseCopy, bus: bus, output: output,
                core: core, unit: Unmanaged.passUnretained(self)))
        return status == .noError ? .noError : failed(status, core)
    }

    /// `pull`, not inlined (`renderSteady`'s sources other than a render callback).
    @inline(never)
    func pullOutOfLine(_ source: InputSource, element: Int, into list: AudioBufferList, timeStamp: AudioTimeStamp)
        -> AudioError.Code
    {
        pull(source, element: element, into: list, timeStamp: timeStamp)
    }

    func failed(_ status: AudioError.Code, _ core: UnsafeMutablePointer<RealtimeCore>) -> AudioError.Code {
        core.pointee.lastError.pointee.store(status.rawValue, ordering: .relaxed)
        return status
    }

    /// Takes the commands the control side queued, if any. The check is inlined into every
    /// render (one atomic load and compare); the taking is not.
    @inline(__always)
    func applyCommands(_ core: UnsafeMutablePointer<RealtimeCore>) {
        guard core.pointee.commandsSent.pointee.load(ordering: .acquiring) != core.pointee.commandsTaken else { return }
        applyPendingCommands(core)
    }

    @inline(never)
    func applyPendingCommands(_ core: UnsafeMutablePointer<RealtimeCore>) {
        var applied = 0
        while let command = core.pointee.commands._withUnsafeGuaranteedRef({ $0.pop() }) {
            applied += 1
            switch command {
            case .parameter(let event):
                insert(event, core)
            case .setInput(let element, let source):
                setInputSource(source, element: Int(element), core, crossfade: false)
            case .setNotify(let index, let callback):
                core.pointee.notify[Int(index)] = callback
                var count = 0
                for slot in 0..<RealtimeCore.notifyCapacity where core.pointee.notify[slot] != nil { count += 1 }
                core.pointee.notifyCount = count
            case .setBypass(let on):
                core.pointee.bypass = on
            case .setCachesOutput(let on):
                core.pointee.cachesOutput = on
                for bus in 0..<core.pointee.outputCount { core.pointee.cachedSampleTimes[bus] = -1 }
            case .reset:
                resetRenderState()
            case .message(let message):
                receive(message)
            }
        }
        if applied > 0 {
            core.pointee.commandsTaken += applied
            core.pointee.commandsApplied.pointee.add(applied, ordering: .releasing)
        }
    }

    /// Keeps pending events sorted by frame offset (stable, so same-offset events keep their order).
    func insert(_ event: ParameterEvent, _ core: UnsafeMutablePointer<RealtimeCore>) {
        let events = core.pointee.events
        var count = core.pointee.eventCount
        if count == RealtimeCore.eventCapacity {
            apply(events[0], core)
            (events).update(from: events + 1, count: count - 1)
            count -= 1
        }
        var index = count
        while index > 0 && events[index - 1].frameOffset > event.frameOffset {
            events[index] = events[index - 1]
            index -= 1
        }
        events[index] = event
        core.pointee.eventCount = count + 1
    }

    func apply(_ event: ParameterEvent, _ core: UnsafeMutablePointer<RealtimeCore>) {
        let ramp = core.pointee.ramps + Int(event.slot)
        if event.duration > 0 {
            core.pointee.rampsActive = true
            ramp.pointee.ramp(
                from: event.hasStartValue ? event.startValue : nil, to: event.endValue, frames: Int(event.duration))
        } else {
            ramp.pointee.set(event.endValue)
        }
    }

    /// Changes what feeds an input (realtime side). With `crossfade`, the old
    /// source keeps playing, fading out over `crossfadeFrames` while the new fades in.
    func setInputSource(
        _ source: InputSource, element: Int, _ core: UnsafeMutablePointer<RealtimeCore>, crossfade: Bool
    ) {
        if crossfade, case .none = core.pointee.fadeSources[element] {
            core.pointee.fadeSources[element] = core.pointee.inputSources[element]
            core.pointee.fadePositions[element] = 0
            core.pointee.fadingInputs &+= 1
        }
        core.pointee.inputSources[element] = source
        core.pointee.lastPulledSampleTime = -1
    }

    func pullInputs(_ core: UnsafeMutablePointer<RealtimeCore>, timeStamp: AudioTimeStamp, frameCount: Int)
        -> AudioError.Code
    {
        for element in 0..<core.pointee.inputCount {
            let status = pullInput(element, core, timeStamp: timeStamp, frameCount: frameCount, rendered: nil)
            if status != .noError { return status }
        }
        return .noError
    }

    /// Fills input `element`'s list for this cycle: from its source (or, from a render
    /// plan, by copying `rendered`, the source's output the plan already made), then
    /// crossfades from the old source while a change of source fades in.
    func pullInput(
        _ element: Int, _ core: UnsafeMutablePointer<RealtimeCore>, timeStamp: AudioTimeStamp, frameCount: Int,
        rendered: AudioBufferList?
    ) -> AudioError.Code {
        let list = core.pointee.inputLists[element].frames(from: 0, count: frameCount)
        if let rendered {
            list.copy(from: rendered.frames(from: 0, count: frameCount))
        } else {
            let status = pull(core.pointee.inputSources[element], element: element, into: list, timeStamp: timeStamp)
            if status != .noError { return status }
        }
        if case .none = core.pointee.fadeSources[element] { return .noError }
        let old = core.pointee.fadeLists[element].frames(from: 0, count: frameCount)
        let oldStatus = pull(core.pointee.fadeSources[element], element: element, into: old, timeStamp: timeStamp, silentIfNone: true)
        if oldStatus != .noError { old.clear() }
        let length = Float(core.pointee.crossfadeFrames)
        var position = core.pointee.fadePositions[element]
        let start = position
        for channel in 0..<list.channelCount {
            let samples = list.samples(channel)
            let fading = old.samples(channel)
            position = start
            for frame in 0..<frameCount {
                let mix = min(1, Float(position) / length)
                samples[frame] = fading[frame] + (samples[frame] - fading[frame]) * mix
                position += 1
            }
        }
        core.pointee.fadePositions[element] = start + frameCount
        if start + frameCount >= core.pointee.crossfadeFrames {
            core.pointee.fadeSources[element] = .none
            core.pointee.fadingInputs &-= 1
        }
        return .noError
    }

    func pull(
        _ source: InputSource, element: Int, into list: AudioBufferList, timeStamp: AudioTimeStamp,
        silentIfNone: Bool = false
    ) -> AudioError.Code {
        switch source {
        case .none:
            if requiresConnectedInputs && !silentIfNone { return .noConnection }
            list.clear()
        case .connection(let unit, let bus):
            var flags = RenderActionFlags()
            return unit._withUnsafeGuaranteedRef {
                $0.render(flags: &flags, timeStamp: timeStamp, bus: bus, frameCount: list.frameCount, into: list)
            }
        case .callback(let callback):
            var request = RenderRequest(
                flags: [], timeStamp: timeStamp.fieldwiseCopy, bus: element, frameCount: list.frameCount, buffers: list)
            return withUnsafeMutablePointer(to: &request) { callback.call($0) }
        }
        return .noError
    }

    func processSlices(
        _ core: UnsafeMutablePointer<RealtimeCore>, timeStamp: AudioTimeStamp, bus: Int, frameCount: Int,
        output: AudioBufferList
    ) -> AudioError.Code {
        // Lean: no event, ramp or bypass — the loop below would make exactly this one call.
        if core.pointee.eventCount == 0 && !core.pointee.rampsActive && !core.pointee.bypass {
            guard frameCount > 0 else { return .noError }
            core.pointee.nextScratch = 0
            return process(
                RenderContext(
                    frameCount: frameCount, frameOffset: 0, timeStamp: timeStamp, bus: bus, output: output, core: core,
                    unit: Unmanaged.passUnretained(self)))
        }
        let events = core.pointee.events
        let eventCount = core.pointee.eventCount
        var eventIndex = 0
        var position = 0
        var status = AudioError.Code.noError
        while position < frameCount {
            while eventIndex < eventCount && Int(events[eventIndex].frameOffset) <= position {
                apply(events[eventIndex], core)
                eventIndex += 1
            }
            var end = eventIndex < eventCount ? min(frameCount, Int(events[eventIndex].frameOffset)) : frameCount
            if anyRamping(core) { end = min(end, position + Self.rampSliceFrames) }
            let context = RenderContext(
                frameCount: end - position, frameOffset: position,
                timeStamp: timeStamp.advanced(byFrames: position, sampleRate: core.pointee.sampleRate), bus: bus,
                output: output.frames(from: position, count: end - position), core: core,
                unit: Unmanaged.passUnretained(self))
            core.pointee.nextScratch = 0
            if core.pointee.bypass && core.pointee.inputCount > 0 && !handlesBypass {
                let input = context.input(0)
                if input.channelCount == context.output.channelCount {
                    context.output.copy(from: input)
                } else {
                    context.output.clear()
                }
            } else {
                status = process(context)
                if status != .noError { break }
            }
            position = end
        }
        // Events at or past the end of this cycle take effect now, before the next.
        while eventIndex < eventCount {
            apply(events[eventIndex], core)
            eventIndex += 1
        }
        core.pointee.eventCount = 0
        return status
    }

    func anyRamping(_ core: UnsafeMutablePointer<RealtimeCore>) -> Bool {
        guard core.pointee.rampsActive else { return false }
        let ramps = core.pointee.ramps
        for slot in 0..<core.pointee.slotCount where ramps[slot].isRamping { return true }
        core.pointee.rampsActive = false
        return false
    }

    func callNotify(
        _ core: UnsafeMutablePointer<RealtimeCore>, _ phase: RenderActionFlags, timeStamp: AudioTimeStamp, bus: Int,
        frameCount: Int, buffers: AudioBufferList
    ) {
        guard core.pointee.notifyCount > 0 else { return }
        for index in 0..<RealtimeCore.notifyCapacity {
            guard let callback = core.pointee.notify[index] else { continue }
            var request = RenderRequest(flags: phase, timeStamp: timeStamp, bus: bus, frameCount: frameCount, buffers: buffers)
            _ = withUnsafeMutablePointer(to: &request) { callback.call($0) }
        }
    }

    // MARK: Render notifications (control side)

    /// Adds a callback called before and after every render (flags `.preRender` / `.postRender`).
    /// Returns its index for `removeRenderNotify`. At most 8 per unit.
    @discardableResult
    public func addRenderNotify(_ callback: RenderCallback, keeping target: AnyObject? = nil) throws(AudioError) -> Int {
        guard let index = notifyCallbacks.firstIndex(where: { $0 == nil }) else {
            throw AudioError(.invalidPropertyValue, "\(name) already has \(RealtimeCore.notifyCapacity) render notifications")
        }
        notifyCallbacks[index] = (callback, target)
        send(.setNotify(index: Int32(index), callback: callback))
        return index
    }

    public func removeRenderNotify(_ index: Int) {
        guard index >= 0 && index < notifyCallbacks.count, let entry = notifyCallbacks[index] else { return }
        retire(entry.target)
        notifyCallbacks[index] = nil
        send(.setNotify(index: Int32(index), callback: nil))
    }
}

extension AudioTimeStamp {
    /// This time stamp read field by field, each field with one load of its own size. A caller
    /// builds its time stamp just before calling `render`, storing the fields one by one; the
    /// plain copy into a `RenderRequest` or `RenderContext` read them 16 bytes at a time, and a
    /// load spanning two stores cannot be forwarded from the store buffer: it waited until
    /// both stores reached the cache, behind every store before them — after a host's copy of
    /// its last output block, most of `render`'s time (perf on `sonora-bench lv2`, eg-amp).
    /// `sonora_opaque_u64` keeps the compiler from merging the loads again.
    @inline(__always)
    var fieldwiseCopy: AudioTimeStamp {
        AudioTimeStamp(
            sampleTime: Double(bitPattern: UInt64(sonora_opaque_u64(CUnsignedLongLong(sampleTime.bitPattern)))),
            hostTime: UInt64(sonora_opaque_u64(CUnsignedLongLong(hostTime))),
            rateScalar: Double(bitPattern: UInt64(sonora_opaque_u64(CUnsignedLongLong(rateScalar.bitPattern)))),
            wordClockTime: UInt64(sonora_opaque_u64(CUnsignedLongLong(wordClockTime))),
            flags: Flags(rawValue: UInt32(truncatingIfNeeded: sonora_opaque_u64(CUnsignedLongLong(flags.rawValue)))))
    }
}
