import SonoraCore
import SonoraDSP

extension MultiChannelMixerUnit {
    /// A render plan's steady cycle of the mixer (`SteadyKernel.mixer`): what its lean render
    /// does — pull every input that is not a plan buffer (render callbacks, in element order,
    /// all before mixing), then one `process` — with each input's volume, enable and pan, and
    /// the output volume, read once from the constants `steadySlot` filled instead of from
    /// ramps moved on per input. Meters, MeteringMode switches and their publication are
    /// those of `process`. Realtime-safe; returns the first failing pull's status.
    static func renderSteady(_ slot: UnsafePointer<SteadySlot>, timeStamp: AudioTimeStamp, frameCount: Int) -> AudioError.Code {
        let kernel = slot.pointee.state!.assumingMemoryBound(to: MultiChannelMixerKernel.self)
        let core = kernel.pointee.core
        let inputs = kernel.pointee.steadyInputs
        let inputCount = core.pointee.inputCount
        for element in 0..<inputCount where !inputs[element].direct {
            let list = inputs[element].list.frames(from: 0, count: frameCount)
            switch inputs[element].source {
            case .callback(let callback):
                var request = RenderRequest(flags: [], timeStamp: timeStamp, bus: element, frameCount: frameCount, buffers: list)
                let status = withUnsafeMutablePointer(to: &request) { callback.call($0) }
                if status != .noError { return status }
            case .none, .connection:  // `steadySlot` takes no connection here: unconnected, silent
                list.clear()
            }
        }
        // What the unit's own input buffers hold is not a pull of this time stamp's (as the lean render says).
        core.pointee.lastPulledSampleTime = -1
        guard frameCount > 0, let whole = kernel.pointee.steadyOutput else { return .noError }
        let output = whole.frames(from: 0, count: frameCount)
        let published = core.pointee.published
        output.clear()
        for element in 0..<inputCount {
            let input = inputs + element
            kernel.pointee.mix(
                element, input.pointee.list.frames(from: 0, count: frameCount), enabled: input.pointee.enabled,
                volume: input.pointee.volume, volumes: nil, sides: input.pointee.sides, frames: frameCount, into: output,
                published)
        }
        kernel.pointee.publishInputMeters(inputCount: inputCount, published)
        kernel.pointee.finish(
            output, frames: frameCount, inputCount: inputCount, volume: kernel.pointee.steadyOutputVolume, volumes: nil,
            published)
        return .noError
    }
}
