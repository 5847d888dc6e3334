import SonoraCore

extension AudioUnit {
    /// The second half of `render` for a unit in a render plan (`RenderPlan`): its
    /// inputs were rendered by earlier steps into the plan's buffers, and its pending
    /// commands and pre-render notifications ran at the step's start. Binds each input
    /// to its source's buffer (or pulls it — a render callback, no source, a source the
    /// plan does not know — and runs a crossfade in the unit's own input buffer), then
    /// renders with the same kernel as the pull. Realtime-safe.
    func renderPlanned(
        _ core: UnsafeMutablePointer<RealtimeCore>, timeStamp: AudioTimeStamp, bus: Int, frameCount: Int,
        output: AudioBufferList, inputs: UnsafeMutablePointer<RenderPlan.Input>, bindsInputs: Bool,
        servesPulls: Bool = false
    ) -> AudioError.Code {
        let inputCount = core.pointee.inputCount
        if bindsInputs {
            for element in 0..<inputCount {
                let input = inputs + element
                var direct = false
                var status = AudioError.Code.noError
                if let expected = input.pointee.source, case .connection(let unit, let sourceBus) = core.pointee.inputSources[element],
                   unit.toOpaque() == expected && sourceBus == input.pointee.bus
                {
                    if case .none = core.pointee.fadeSources[element] {
                        direct = true
                    } else {
                        status = pullInput(element, core, timeStamp: timeStamp, frameCount: frameCount, rendered: input.pointee.list)
                    }
                } else {
                    status = pullInput(element, core, timeStamp: timeStamp, frameCount: frameCount, rendered: nil)
                }
                input.pointee.direct = direct
                if status != .noError {
                    for earlier in 0..<element where inputs[earlier].direct {
                        core.pointee.inputLists[earlier] = core.pointee.ownedInputLists[earlier]
                    }
                    return status
                }
                if direct { core.pointee.inputLists[element] = input.pointee.list }
            }
            // What the unit's own input buffers hold is not this cycle's: a later pull re-pulls.
            core.pointee.lastPulledSampleTime = -1
        } else {
            for element in 0..<inputCount where inputs[element].direct {
                core.pointee.inputLists[element] = inputs[element].list
            }
        }
        core.pointee.pullsServedFromInputs = servesPulls
        let status = processSlices(core, timeStamp: timeStamp, bus: bus, frameCount: frameCount, output: output)
        core.pointee.pullsServedFromInputs = false
        for element in 0..<inputCount where inputs[element].direct {
            core.pointee.inputLists[element] = core.pointee.ownedInputLists[element]
        }
        if status != .noError { return status }
        if core.pointee.cachesOutput {
            // A pull of this unit in the same cycle (a crossfade's old source) gets what the plan rendered.
            core.pointee.outputCaches[bus].copy(from: output)
            core.pointee.cachedSampleTimes[bus] = timeStamp.sampleTime
            core.pointee.cachedFrames[bus] = frameCount
        }
        callNotify(core, .postRender, timeStamp: timeStamp, bus: bus, frameCount: frameCount, buffers: output)
        return .noError
    }

    /// The lean render's second half, after binding: one `process` for the whole cycle, the
    /// inputs unbound, the output cached for a pull in the same cycle.
    @inline(__always)
    func processLean(
        _ core: UnsafeMutablePointer<RealtimeCore>, timeStamp: AudioTimeStamp, bus: Int, frameCount: Int,
        output: AudioBufferList, inputs: UnsafeMutablePointer<RenderPlan.Input>
    ) -> AudioError.Code {
        let inputCount = core.pointee.inputCount
        var status = AudioError.Code.noError
        if frameCount > 0 {
            core.pointee.nextScratch = 0
            status = process(
                RenderContext(
                    frameCount: frameCount, frameOffset: 0, timeStamp: timeStamp, bus: bus, output: output, core: core,
                    unit: Unmanaged.passUnretained(self)))
        }
        for element in 0..<inputCount where inputs[element].direct {
            core.pointee.inputLists[element] = core.pointee.ownedInputLists[element]
        }
        if status != .noError { return status }
        if core.pointee.cachesOutput {
            core.pointee.outputCaches[bus].copy(from: output)
            core.pointee.cachedSampleTimes[bus] = timeStamp.sampleTime
            core.pointee.cachedFrames[bus] = frameCount
        }
        return .noError
    }

    /// `renderPlanned` for a steady unit (`RealtimeCore.isSteady`, checked by the plan this
    /// cycle), a unit that neither pulls its inputs itself nor serves pulls: each input bound
    /// to its source's buffer (or pulled: a render callback, no source, a source the plan
    /// does not know), one `process` for the whole cycle. No crossfade, event, ramp, bypass
    /// or notification can be in play, so this is what `renderPlanned` does in that state,
    /// without looking for them.
    ///
    /// `reusesBinding`: a steady cycle (`RenderPlan`: the last cycle rendered every step lean
    /// and no unit got a command since) binds each input as the last cycle found it
    /// (`RenderPlan.Input.direct`), without comparing its source again — only a command or an
    /// update's batch (which brings a new plan) changes an input's source, and neither came.
    /// Callers pass a constant, so each inlined copy keeps only its own branch. Realtime-safe.
    @inline(__always)
    func renderPlannedLean(
        _ core: UnsafeMutablePointer<RealtimeCore>, timeStamp: AudioTimeStamp, bus: Int, frameCount: Int,
        output: AudioBufferList, inputs: UnsafeMutablePointer<RenderPlan.Input>, bindsInputs: Bool,
        reusesBinding: Bool = false
    ) -> AudioError.Code {
        let inputCount = core.pointee.inputCount
        if bindsInputs {
            for element in 0..<inputCount {
                let input = inputs + element
                let direct: Bool
                if reusesBinding {
                    direct = input.pointee.direct
                } else if let expected = input.pointee.source,
                    case .connection(let unit, let sourceBus) = core.pointee.inputSources[element],
                    unit.toOpaque() == expected && sourceBus == input.pointee.bus
                {
                    direct = true
                    input.pointee.direct = true
                } else {
                    direct = false
                    input.pointee.direct = false
                }
                if direct {
                    core.pointee.inputLists[element] = input.pointee.list
                } else {
                    let status = pullInput(element, core, timeStamp: timeStamp, frameCount: frameCount, rendered: nil)
                    if status != .noError {
                        for earlier in 0..<element where inputs[earlier].direct {
                            core.pointee.inputLists[earlier] = core.pointee.ownedInputLists[earlier]
                        }
                        return status
                    }
                }
            }
            core.pointee.lastPulledSampleTime = -1
        } else {
            for element in 0..<inputCount where inputs[element].direct {
                core.pointee.inputLists[element] = inputs[element].list
            }
        }
        return processLean(core, timeStamp: timeStamp, bus: bus, frameCount: frameCount, output: output, inputs: inputs)
    }
}
