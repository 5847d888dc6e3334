import SonoraCore
import SonoraDSP

extension MultiChannelMixerUnit {
    /// A render plan's steady cycle of the mixer (`SteadyKernel.mixer`): what its lean render
    /// does — pull every input that is not a plan buffer (render callbacks, in element order),
    /// and mix them as `process` does, each input right after its pull — with each input's volume, enable and pan, and
    /// the output volume, read once from the constants `steadySlot` filled instead of from
    /// ramps moved on per input. Meters, MeteringMode switches and their publication are
    /// those of `process`. Realtime-safe; returns the first failing pull's status.
    static func renderSteady(_ slot: UnsafePointer<SteadySlot>, timeStamp: AudioTimeStamp, frameCount: Int) -> AudioError.Code {
        // One copy of the kernel's fields for the cycle: `kernel.pointee.mix(…)` in the loop
        // copied the whole struct (128 bytes) to the stack for every input, and `mix` read it
        // back before those stores had drained.
        let kernel = slot.pointee.state!.assumingMemoryBound(to: MultiChannelMixerKernel.self).pointee
        let core = kernel.core
        let inputs = kernel.steadyInputs
        let inputCount = core.pointee.inputCount
        // What the unit's own input buffers hold is not a pull of this time stamp's (as the lean render says).
        core.pointee.lastPulledSampleTime = -1
        guard frameCount > 0, let whole = kernel.steadyOutput else {
            return pullInputs(inputs, count: inputCount, timeStamp: timeStamp, frameCount: frameCount)
        }
        let output = whole.frames(from: 0, count: frameCount)
        let published = core.pointee.published
        output.clear()
        // Each input is mixed right after its pull, while what its callback wrote is still in
        // L1; and every pulled input is pulled into the same memory (`steadyPullLists`), so the
        // cycle streams no input buffers (64 stereo inputs of 128 frames in buffers of their
        // own were 64 KiB, more than L1 holds): the callbacks still run in element order, one
        // each, each into a list of its input's channel count; a failed pull ends the cycle silent.
        for element in 0..<inputCount {
            let input = inputs + element
            let list = input.pointee.list.frames(from: 0, count: frameCount)
            if !input.pointee.direct {
                let status = pull(input.pointee.source, into: list, element: element, timeStamp: timeStamp, frameCount: frameCount)
                if status != .noError {
                    output.clear()
                    return status
                }
            }
            kernel.mix(
                element, list, enabled: input.pointee.enabled, volume: input.pointee.volume, volumes: nil,
                sides: input.pointee.sides, frames: frameCount, into: output, published)
        }
        kernel.publishInputMeters(inputCount: inputCount, published)
        kernel.finish(
            output, frames: frameCount, inputCount: inputCount, volume: kernel.steadyOutputVolume, volumes: nil,
            published)
        return .noError
    }

    /// One input's pull for a steady cycle: its render callback, or silence.
    @inline(__always)
    private static func pull(
        _ source: InputSource, into list: AudioBufferList, element: Int, timeStamp: AudioTimeStamp, frameCount: Int
    ) -> AudioError.Code {
        switch source {
        case .callback(let callback):
            var request = RenderRequest(flags: [], timeStamp: timeStamp, bus: element, frameCount: frameCount, buffers: list)
            return withUnsafeMutablePointer(to: &request) { callback.call($0) }
        case .none, .connection:  // `steadySlot` takes no connection here: unconnected, silent
            list.clear()
            return .noError
        }
    }

    /// Every input's pull, in element order, without mixing (a cycle with no output to mix into).
    private static func pullInputs(
        _ inputs: UnsafeMutablePointer<MultiChannelMixerKernel.SteadyInput>, count: Int, timeStamp: AudioTimeStamp, frameCount: Int
    ) -> AudioError.Code {
        for element in 0..<count where !inputs[element].direct {
            let status = pull(inputs[element].source, into: inputs[element].list.frames(from: 0, count: frameCount), element: element, timeStamp: timeStamp, frameCount: frameCount)
            if status != .noError { return status }
        }
        return .noError
    }
}
