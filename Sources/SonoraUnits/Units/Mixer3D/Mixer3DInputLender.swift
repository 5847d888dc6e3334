import SonoraCore

/// A mono input's samples lent in place: where the input's render callback would copy
/// samples it already holds (a player reading its buffer at the buffer's own rate), the unit
/// can read them where they are instead of having them copied into the input's buffer first.
///
/// The lender stands for the input's render callback, and gives exactly the samples that
/// callback would render, advancing its source as that call would: the unit asks it (on the
/// render thread) for `frames` frames and mixes from the pointer it returns, or, when it
/// returns nil (it cannot lend this slice: a buffer boundary, resampling, stopped), pulls
/// the input through its callback as usual. The unit asks only while the input is fed by
/// the callback whose context is the lender's (a callback replaced or cross-fading, or an
/// input served from a render plan, is pulled as always), only for mono inputs at playback
/// rate 1, and never writes through the pointer (it copies before an in-place filter).
/// The samples must stay valid and unchanged until the render call returns.
public struct Mixer3DInputLender: BitwiseCopyable {
    /// `frames` samples from `context`'s source, or nil to be pulled instead. Realtime rules.
    public typealias Function = @convention(c) (_ context: UnsafeMutableRawPointer?, _ frames: Int) -> UnsafePointer<Float>?

    public var function: Function
    /// The same context as the input's render callback's.
    public var context: UnsafeMutableRawPointer?

    public init(function: Function, context: UnsafeMutableRawPointer?) {
        self.function = function
        self.context = context
    }
}

extension Mixer3DUnit {
    /// Sets (or, with nil, removes) the lender of mono input `element`, beside its render
    /// callback (see `Mixer3DInputLender`). Uninitialized only: the render side takes the
    /// lenders when it is built.
    public func setInputLender(_ lender: Mixer3DInputLender?, element: Int) throws(AudioError) {
        guard !isInitialized else {
            throw AudioError(.initialized, "\(name): input lenders are set while the unit is uninitialized")
        }
        guard element >= 0, element < inputs.count else {
            throw AudioError(.invalidElement, "\(name): no input \(element) for a lender")
        }
        inputLenders[element] = lender
    }
}

extension RenderContext {
    /// Whether input `element` is pulled through the render callback whose context is
    /// `context`, with no cross-fade from an earlier source and not from a render plan's
    /// bound inputs: the only case where a lender may stand in for the pull.
    func isPulledThroughCallback(_ element: Int, context: UnsafeMutableRawPointer?) -> Bool {
        guard !core.pointee.pullsServedFromInputs else { return false }
        guard case .none = core.pointee.fadeSources[element] else { return false }
        guard case .callback(let callback) = core.pointee.inputSources[element] else { return false }
        return callback.context == context
    }
}
