import SonoraCore
import SonoraDSP
import Synchronization

/// One slice of a render cycle, handed to a unit's `process(_:)`: the frames
/// between two parameter events (or the whole cycle when there are none), with
/// the input and output buffers already offset to the slice.
///
/// Parameter contract: read each parameter you use once per slice, either as a
/// value at the slice start (`parameter(_:)`) or as one value per frame
/// (`parameterValues(_:)`); both advance a running ramp past the slice. While a
/// ramp runs, slices are at most `AudioUnit.rampSliceFrames` long, so scalar
/// reads follow the ramp closely and per-frame reads follow it exactly.
public struct RenderContext {
    public let frameCount: Int
    /// Where this slice starts within the render cycle.
    public let frameOffset: Int
    /// Time stamp of the slice's first frame.
    public let timeStamp: AudioTimeStamp
    /// The output element being rendered.
    public let bus: Int
    /// The buffers to fill, `frameCount` frames.
    public let output: AudioBufferList
    // Usable from inline: the accessors a unit in another module calls every render (its
    // inputs, bypass, published values) inline into it instead of being a call each.
    @usableFromInline let core: UnsafeMutablePointer<RealtimeCore>
    let unit: Unmanaged<AudioUnit>

    /// For units that pull their own inputs (`pullsInputsItself`): pulls
    /// `frameCount` frames (at most MaximumFramesPerSlice) from input `element`
    /// into its buffer, stamped `sampleTime`, and returns them, or the failure status.
    public func pullInput(_ element: Int, frameCount: Int, sampleTime: Double) -> (AudioBufferList, AudioError.Code) {
        pullInput(element, frameCount: frameCount, timeStamp: AudioTimeStamp(sampleTime: sampleTime))
    }

    /// As `pullInput(_:frameCount:sampleTime:)`, stamped `timeStamp` whole: a unit that
    /// passes its slice's time on (the I/O unit) keeps the host time and rate scalar, which
    /// a render callback needs to schedule against the host clock.
    public func pullInput(_ element: Int, frameCount: Int, timeStamp: AudioTimeStamp) -> (AudioBufferList, AudioError.Code) {
        if core.pointee.pullsServedFromInputs {
            // A plan's head: the whole render's input is bound already; this slice is part of it.
            let count = max(0, min(frameCount, core.pointee.maximumFrames - frameOffset))
            return (core.pointee.inputLists[element].frames(from: frameOffset, count: count), .noError)
        }
        let list = core.pointee.inputLists[element].frames(from: 0, count: min(frameCount, core.pointee.maximumFrames))
        let status = unit._withUnsafeGuaranteedRef {
            $0.pull(core.pointee.inputSources[element], element: element, into: list, timeStamp: timeStamp)
        }
        return (list, status)
    }

    /// Input `element`'s whole buffer (frames from 0), where `pullInput` puts what it pulls.
    public func pulledInput(_ element: Int) -> AudioBufferList {
        core.pointee.inputLists[element]
    }

    /// Longest pull `pullInput` takes.
    public var maximumFrames: Int { core.pointee.maximumFrames }

    /// The input element's pulled samples for this slice.
    @inlinable @inline(__always)
    public func input(_ element: Int) -> AudioBufferList {
        core.pointee.inputLists[element].frames(from: frameOffset, count: frameCount)
    }

    /// Number of input elements.
    @inlinable
    public var inputCount: Int { core.pointee.inputCount }

    /// The parameter's value at the slice start; moves its ramp past the slice.
    @inline(__always)
    public func parameter(_ slot: Int) -> Float {
        let ramp = core.pointee.ramps + slot
        let value = ramp.pointee.value
        ramp.pointee.advance(frames: frameCount)
        return value
    }

    /// The parameter's value for each frame of the slice (exact along ramps).
    /// At most `RealtimeCore.scratchCount` such arrays are valid at once.
    public func parameterValues(_ slot: Int) -> UnsafePointer<Float> {
        let ramp = core.pointee.ramps + slot
        let index = core.pointee.nextScratch
        core.pointee.nextScratch = (index + 1) % RealtimeCore.scratchCount
        let values = core.pointee.scratch + index * core.pointee.maximumFrames
        if ramp.pointee.isRamping {
            for frame in 0..<frameCount { values[frame] = ramp.pointee.next() }
        } else {
            values.update(repeating: ramp.pointee.value, count: frameCount)
        }
        return UnsafePointer(values)
    }

    /// Publishes a value the unit measured (a meter) for `AudioUnit.parameter(_:)` to read.
    /// Meters in decibels are published as linear amplitude (RMS or peak) and converted
    /// when read, so the render path spends no logarithms on them.
    @inlinable
    public func publish(_ value: Float, slot: Int) {
        core.pointee.published[slot].store(value.bitPattern, ordering: .relaxed)
    }

    /// Whether BypassEffect is on (for units whose `handlesBypass` is true).
    @inlinable
    public var isBypassed: Bool { core.pointee.bypass }

    /// True if the parameter is moving along a ramp at the slice start.
    @inline(__always)
    public func isRamping(_ slot: Int) -> Bool { core.pointee.ramps[slot].isRamping }
}
