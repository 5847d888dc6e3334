import CLV2Support
import CLilv
import SonoraCore
import SonoraUnits

extension LV2Unit {
    /// Builds the realtime state and connects every port that does not follow the
    /// caller's buffers (controls, atoms, CV/audio left unmapped) once.
    func buildRunState() throws(AudioError) {
        freeRunState()
        let maximumFrames = maximumFramesPerSlice
        func allocate<T>(_ type: T.Type, _ count: Int) -> UnsafeMutablePointer<T> {
            let memory = UnsafeMutableRawPointer.allocate(
                byteCount: max(1, count) * MemoryLayout<T>.stride, alignment: max(16, MemoryLayout<T>.alignment))
            runMemory.append(memory)
            return memory.bindMemory(to: T.self, capacity: max(1, count))
        }
        let values = instance.values

        // The channel entries sit in the run block after the state (`LV2RunState.Block`).
        let inputChannels = layout.channels(.input)
        let outputChannels = layout.channels(.output)
        let channelEntries = (runBlock + LV2RunState.Block.channelsOffset).bindMemory(
            to: LV2RunState.Channel.self, capacity: max(1, inputChannels.count + outputChannels.count))
        for (index, entry) in (inputChannels + outputChannels).enumerated() {
            (channelEntries + index).initialize(
                to: .init(
                    element: UInt16(entry.element), channel: UInt16(entry.channel), port: UInt32(entry.port), connected: nil))
        }
        let inputs = channelEntries
        let outputs = channelEntries + inputChannels.count
        var ownOutputs: UnsafeMutablePointer<UnsafeMutablePointer<Float>>?
        if layout.outputs.count > 1 {
            let list = allocate(UnsafeMutablePointer<Float>.self, outputChannels.count)
            for index in 0..<outputChannels.count {
                list[index] = allocate(Float.self, maximumFrames)
                list[index].initialize(repeating: 0, count: maximumFrames)
            }
            ownOutputs = list
        }

        let controlPorts = plugin.ports.filter { $0.kind == .control }
        let controlInputs = allocate(LV2RunState.Control.self, controlPorts.count)
        let controlOutputs = allocate(LV2RunState.Control.self, controlPorts.count)
        var inputCount = 0
        var outputCount = 0
        for port in controlPorts {
            let slot = try parameterSlot(ParameterAddress(AudioUnitParameterID(port.index)))
            if port.direction == .input {
                values[port.index] = try parameter(AudioUnitParameterID(port.index))
                controlInputs[inputCount] = .init(port: UInt32(port.index), slot: Int32(slot))
                inputCount += 1
            } else {
                controlOutputs[outputCount] = .init(port: UInt32(port.index), slot: Int32(slot))
                outputCount += 1
            }
        }

        let atomPorts = plugin.ports.filter { $0.kind == .atom }
        let atoms = allocate(LV2RunState.AtomPort.self, atomPorts.count)
        var midiAssigned = false
        let patchPortIndex = patchInputPort?.index
        for (index, port) in atomPorts.enumerated() {
            guard let (buffer, capacity) = instance.atomBuffers[port.index] else {
                throw AudioError(.failedInitialization, "\(name): atom port \(port.symbol) has no buffer")
            }
            let takesMIDI = port.direction == .input && port.takesMIDI && !midiAssigned
            if takesMIDI { midiAssigned = true }
            atoms[index] = .init(
                port: UInt32(port.index), buffer: buffer, capacity: capacity, isInput: port.direction == .input,
                takesMIDI: takesMIDI)
        }

        let mainInputChannels = layout.inputs.first.map { $0.ports.count } ?? 0
        var history: UnsafeMutablePointer<Float>?
        if plugin.latencyPortIndex != nil && mainInputChannels > 0 {
            history = allocate(Float.self, LV2Bypass.historyFrames * mainInputChannels)
            history!.initialize(repeating: 0, count: LV2Bypass.historyFrames * mainInputChannels)
        }
        let enabledPort = plugin.ports.first { $0.kind == .control && $0.direction == .input && $0.designation == LV2URI.enabled }
        let bypass = LV2Bypass(
            enabledPort: Int32(enabledPort?.index ?? -1), latencyPort: Int32(plugin.latencyPortIndex ?? -1),
            mix: isBypassed ? 1 : 0, channels: mainInputChannels, history: history, writePosition: 0)

        let urids = world.urids
        let state = (runBlock + LV2RunState.Block.stateOffset).bindMemory(to: LV2RunState.self, capacity: 1)
        state.initialize(
            to: LV2RunState(
                handle: instance.handle, run: instance.run, connectPort: instance.connectPort,
                seenEpoch: controlChanges.epoch, controlCopyFrames: 1, lastBypassed: isBypassed,
                inputCount: inputChannels.count, outputCount: outputChannels.count, bypass: bypass, changes: controlChanges,
                inputs: inputs, outputs: outputs,
                worker: Unmanaged.passUnretained(instance.features.worker),
                hasWorker: plugin.extensionData.contains(LV2URI.workerInterface)
                    || plugin.requiredFeatures.contains(LV2URI.workerSchedule)
                    || plugin.optionalFeatures.contains(LV2URI.workerSchedule),
                values: values, controlInputs: controlInputs,
                controlInputCount: inputCount, controlOutputs: controlOutputs, controlOutputCount: outputCount,
                controlSlack: 2 * maximumFrames + 1,
                atoms: atoms, atomCount: atomPorts.count, ownOutputs: ownOutputs, outputBusCount: layout.outputs.count,
                lastCycleStart: -1, lastCycleEnd: 0, midi: Unmanaged.passUnretained(midiQueue),
                pendingMIDI: allocate(LV2MIDIEvent.self, LV2RunState.midiCapacity), pendingMIDICount: 0, midiCycleEnd: 0,
                patchPort: Int32(atomPorts.firstIndex { $0.index == patchPortIndex } ?? -1),
                patches: Unmanaged.passUnretained(patchQueue),
                positionPort: Int32(atomPorts.firstIndex { $0.index == transportInputPort?.index } ?? -1), positionSent: false,
                positionURIDs: LV2PositionURIDs(urids), positionEvents: allocate(TransportPositionChange.self, LV2PositionURIDs.sliceCapacity),
                atomOutputs: Unmanaged.passUnretained(atomOutputRing), sequenceURID: urids.map(LV2URI.atomSequence),
                chunkURID: urids.map(LV2URI.atomChunk), midiURID: urids.map(LV2URI.midiEvent)))
        state.pointee.isPlain = atomPorts.isEmpty && !state.pointee.hasWorker && outputCount == 0
            && layout.outputs.count == 1 && ownOutputs == nil && history == nil && !outputChannels.isEmpty
        run = state
    }

    func freeRunState() {
        run = nil
        for memory in runMemory { memory.deallocate() }
        runMemory = []
    }

    /// One slice: controls from the parameter ramps, audio straight from the input
    /// buffers, one `run()` for the slice's frames, control outputs published.
    /// Realtime: no allocation, lock, log or ARC traffic.
    func renderSlice(_ context: RenderContext) -> AudioError.Code {
        guard let state = run else { return .uninitialized }
        if state.pointee.isPlain && state.pointee.controlCopyFrames == 0 && !state.pointee.lastBypassed
            && state.pointee.bypass.mix == 0 && !context.isBypassed
            && state.pointee.changes.epoch == state.pointee.seenEpoch
        {
            return renderPlainSlice(state, context)
        }
        return renderGeneralSlice(state, context)
    }

    /// `renderSlice` when the plain slice is not taken. Out of line, so the plain slice's
    /// function keeps a small frame (a few registers saved, no spills: stores, which wait
    /// behind a host's draining copy out).
    @inline(never)
    func renderGeneralSlice(_ state: UnsafeMutablePointer<LV2RunState>, _ context: RenderContext) -> AudioError.Code {
        let frames = context.frameCount
        let cycleStart = context.timeStamp.sampleTime - Double(context.frameOffset)
        let multiBus = state.pointee.outputBusCount > 1
        if multiBus && state.pointee.lastCycleStart == cycleStart
            && context.frameOffset + frames <= state.pointee.lastCycleEnd
        {
            copyOwnOutputs(state, context)
            return .noError
        }

        // Controls: copied only while a change may be in flight (LV2ControlChanges), or when
        // bypass flips (the enabled port's value comes back from its ramp).
        let bypassed = context.isBypassed
        let epoch = state.pointee.changes.epoch
        if epoch != state.pointee.seenEpoch {
            state.pointee.seenEpoch = epoch
            state.pointee.controlCopyFrames = state.pointee.changes.span + state.pointee.controlSlack
        }
        if bypassed != state.pointee.lastBypassed {
            state.pointee.lastBypassed = bypassed
            state.pointee.controlCopyFrames = max(state.pointee.controlCopyFrames, 1)
        }
        let enabledPort = Int(state.pointee.bypass.enabledPort)
        if state.pointee.controlCopyFrames > 0 {
            for index in 0..<state.pointee.controlInputCount {
                let control = state.pointee.controlInputs[index]
                state.pointee.values[Int(control.port)] = context.parameter(Int(control.slot))
            }
            if enabledPort >= 0 && bypassed { state.pointee.values[enabledPort] = 0 }
            state.pointee.controlCopyFrames = max(0, state.pointee.controlCopyFrames - frames)
        }
        connectInputs(state, state.pointee.inputs, state.pointee.inputCount, context)
        for index in 0..<state.pointee.outputCount {
            let channel = state.pointee.outputs[index]
            let samples: UnsafeMutablePointer<Float>
            if let own = state.pointee.ownOutputs {
                samples = own[index] + context.frameOffset
            } else {
                samples = context.output.samples(Int(channel.channel))
            }
            connect(state, state.pointee.outputs + index, to: UnsafeMutableRawPointer(samples))
        }
        if state.pointee.atomCount > 0 { prepareAtoms(state, context) }
        if state.pointee.outputCount == 0 { context.output.clear() }

        // The plugin may change the thread's FP mode (FTZ, rounding); the graph's thread keeps its own.
        let floatingPointState = sonora_fp_state_save()
        state.pointee.run(state.pointee.handle, UInt32(frames))
        putBackFloatingPointState(floatingPointState)

        if state.pointee.hasWorker { state.pointee.worker._withUnsafeGuaranteedRef { $0.afterRun() } }
        for index in 0..<state.pointee.controlOutputCount {
            let control = state.pointee.controlOutputs[index]
            context.publish(state.pointee.values[Int(control.port)], slot: Int(control.slot))
        }
        if state.pointee.atomCount > 0 { readAtomOutputs(state, context) }
        // Host bypass: only when it is on, fading, or keeping dry history for a latency port.
        if enabledPort < 0 && context.bus == 0
            && (bypassed || state.pointee.bypass.mix > 0 || state.pointee.bypass.history != nil)
            && context.inputCount > 0
        {
            let input = context.input(0)
            state.pointee.bypass.record(input)
            if bypassed || state.pointee.bypass.mix > 0 {
                let latencyPort = Int(state.pointee.bypass.latencyPort)
                let latency = latencyPort >= 0 ? Int(state.pointee.values[latencyPort]) : 0
                if multiBus { copyOwnOutputs(state, context) }
                state.pointee.bypass.apply(bypassed: bypassed, output: context.output, input: input, latency: latency)
                if multiBus {
                    state.pointee.lastCycleStart = cycleStart
                    state.pointee.lastCycleEnd = context.frameOffset + frames
                }
                return .noError
            }
        }
        if multiBus {
            state.pointee.lastCycleStart = cycleStart
            state.pointee.lastCycleEnd = context.frameOffset + frames
            copyOwnOutputs(state, context)
        }
        return .noError
    }

    /// The plain slice (`LV2RunState.isPlain`, decided at initialize) in the steady state — no
    /// control change in flight (so no control to copy), host bypass off and not fading: what
    /// `renderSlice` does then, without the checks for what such a plugin does not have (atom
    /// ports, worker, control outputs, several output elements, latency history).
    @inline(__always)
    func renderPlainSlice(_ state: UnsafeMutablePointer<LV2RunState>, _ context: RenderContext) -> AudioError.Code {
        // The entries at their fixed place after the state: no pointer loaded to find them.
        // Checks only (no call in the loop, so nothing to keep across one); connecting, which
        // happens when a buffer moved, out of line.
        if !plainPortsAreConnected(state, context) { connectPlainPorts(state, context) }
        let floatingPointState = sonora_fp_state_save()
        state.pointee.run(state.pointee.handle, UInt32(context.frameCount))
        putBackFloatingPointState(floatingPointState)
        return .noError
    }

    /// Whether every audio port of a plain plugin is connected where this slice's buffers are.
    @inline(__always)
    func plainPortsAreConnected(_ state: UnsafeMutablePointer<LV2RunState>, _ context: RenderContext) -> Bool {
        let channels = LV2RunState.channels(state)
        let inputCount = state.pointee.inputCount
        if inputCount > 0 {
            var element = Int(channels[0].element)
            var list = context.input(element)
            for index in 0..<inputCount {
                let channel = channels[index]
                if Int(channel.element) != element {
                    element = Int(channel.element)
                    list = context.input(element)
                }
                if channel.connected != UnsafeMutableRawPointer(list.samples(Int(channel.channel))) { return false }
            }
        }
        let outputs = channels + inputCount
        for index in 0..<state.pointee.outputCount {
            let channel = outputs[index]
            if channel.connected != UnsafeMutableRawPointer(context.output.samples(Int(channel.channel))) { return false }
        }
        return true
    }

    /// Connects a plain plugin's audio ports that moved (inputs, then outputs, as the general slice).
    @inline(never)
    func connectPlainPorts(_ state: UnsafeMutablePointer<LV2RunState>, _ context: RenderContext) {
        let channels = LV2RunState.channels(state)
        let inputCount = state.pointee.inputCount
        connectInputs(state, channels, inputCount, context)
        let outputs = channels + inputCount
        for index in 0..<state.pointee.outputCount {
            connect(state, outputs + index, to: UnsafeMutableRawPointer(context.output.samples(Int(outputs[index].channel))))
        }
    }

    /// Connects every audio input port to its element's buffer. One look at each input
    /// element's buffers, not one per channel: the channels of an element are listed together.
    @inline(__always)
    func connectInputs(
        _ state: UnsafeMutablePointer<LV2RunState>, _ inputs: UnsafeMutablePointer<LV2RunState.Channel>, _ count: Int,
        _ context: RenderContext
    ) {
        guard count > 0 else { return }
        var element = Int(inputs[0].element)
        var list = context.input(element)
        for index in 0..<count {
            let channel = inputs[index]
            if Int(channel.element) != element {
                element = Int(channel.element)
                list = context.input(element)
            }
            connect(state, inputs + index, to: UnsafeMutableRawPointer(list.samples(Int(channel.channel))))
        }
    }

    /// Puts the caller's FP mode back after a plugin ran. On x86 MXCSR is written back
    /// unconditionally: `ldmxcsr` of the saved value costs less than a second `stmxcsr` to
    /// compare (measured on this project's EPYC machine: save + compare 6.6 ns, save + restore
    /// 3.0 ns per call), and writing back a value that did not change leaves it unchanged, so
    /// the effect is the same. Elsewhere (arm64's FPCR write may synchronise the core) the mode
    /// is read and written back only when it changed.
    @inline(__always)
    func putBackFloatingPointState(_ saved: UInt) {
        #if arch(x86_64) || arch(i386)
        sonora_fp_state_restore(saved)
        #else
        if sonora_fp_state_save() != saved { sonora_fp_state_restore(saved) }
        #endif
    }

    /// Connects the entry's port to `pointer` unless it is connected there already.
    @inline(__always)
    func connect(
        _ state: UnsafeMutablePointer<LV2RunState>, _ entry: UnsafeMutablePointer<LV2RunState.Channel>,
        to pointer: UnsafeMutableRawPointer
    ) {
        if entry.pointee.connected != pointer {
            entry.pointee.connected = pointer
            state.pointee.connectPort(state.pointee.handle, entry.pointee.port, pointer)
        }
    }

    func copyOwnOutputs(_ state: UnsafeMutablePointer<LV2RunState>, _ context: RenderContext) {
        guard let own = state.pointee.ownOutputs else { return }
        for index in 0..<state.pointee.outputCount {
            let channel = state.pointee.outputs[index]
            guard Int(channel.element) == context.bus else { continue }
            context.output.samples(Int(channel.channel)).update(from: own[index] + context.frameOffset, count: context.frameCount)
        }
    }
}
