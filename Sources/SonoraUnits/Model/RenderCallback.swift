import SonoraCore

/// Flags that travel with a render call (`AudioUnitRenderActionFlags`), with Core Audio's values.
public struct RenderActionFlags: OptionSet, Hashable, Sendable, BitwiseCopyable {
    public var rawValue: UInt32
    @inlinable public init(rawValue: UInt32) { self.rawValue = rawValue }

    // Inlinable computed constants, not `static let`: another module (the LV2 unit, the
    // toolbox's queues, the pipeline's nodes) reads a `static let` through an addressor call.
    @inlinable public static var preRender: RenderActionFlags { RenderActionFlags(rawValue: 1 << 2) }
    @inlinable public static var postRender: RenderActionFlags { RenderActionFlags(rawValue: 1 << 3) }
    /// The unit rendered silence; the buffers are zero.
    @inlinable public static var outputIsSilence: RenderActionFlags { RenderActionFlags(rawValue: 1 << 4) }
    @inlinable public static var offlinePreflight: RenderActionFlags { RenderActionFlags(rawValue: 1 << 5) }
    @inlinable public static var offlineRender: RenderActionFlags { RenderActionFlags(rawValue: 1 << 6) }
    @inlinable public static var offlineComplete: RenderActionFlags { RenderActionFlags(rawValue: 1 << 7) }
    @inlinable public static var postRenderError: RenderActionFlags { RenderActionFlags(rawValue: 1 << 8) }
    @inlinable public static var doNotCheckRenderArgs: RenderActionFlags { RenderActionFlags(rawValue: 1 << 9) }
}

/// What a render callback is asked to produce: Core Audio's callback arguments
/// in one struct (flags, time stamp, bus, frame count, buffers to fill).
@frozen
public struct RenderRequest: BitwiseCopyable {
    public var flags: RenderActionFlags
    public var timeStamp: AudioTimeStamp
    public var bus: Int
    public var frameCount: Int
    public var buffers: AudioBufferList

    public init(flags: RenderActionFlags, timeStamp: AudioTimeStamp, bus: Int, frameCount: Int, buffers: AudioBufferList) {
        self.flags = flags
        self.timeStamp = timeStamp
        self.bus = bus
        self.frameCount = frameCount
        self.buffers = buffers
    }
}

/// Feeds an input element (or observes renders, as a notify callback), like
/// Core Audio's `AURenderCallbackStruct`: a C function and a context pointer,
/// so the realtime thread calls it with no reference counting.
///
/// The function receives the context and a pointer to a `RenderRequest`
/// (`request.assumingMemoryBound(to: RenderRequest.self)`), fills the buffers
/// and returns 0 or an `AudioError.Code` status. Swift code can instead subclass
/// `RenderCallbackTarget` and use `RenderCallback(target)`.
@frozen
public struct RenderCallback: BitwiseCopyable {
    public typealias Function = @convention(c) (
        _ context: UnsafeMutableRawPointer?, _ request: UnsafeMutableRawPointer
    ) -> Int32

    public var function: Function
    public var context: UnsafeMutableRawPointer?

    public init(function: Function, context: UnsafeMutableRawPointer?) {
        self.function = function
        self.context = context
    }

    /// Calls `target.render(_:)`, holding `target` unretained (the realtime thread must not
    /// retain): whoever sets the callback keeps `target` alive while it may be called. The
    /// overloads that take the target itself — `AudioUnit.setRenderCallback(_:input:)` with a
    /// `RenderCallbackTarget`, `AudioGraph.setRenderCallback(_:node:input:)` — keep it for you;
    /// a `RenderCallback` made here and set through the others (or kept in a property of
    /// your own) does not.
    public init(_ target: RenderCallbackTarget) {
        function = { context, request in
            Unmanaged<RenderCallbackTarget>.fromOpaque(context!)._withUnsafeGuaranteedRef { target in
                target.render(request.assumingMemoryBound(to: RenderRequest.self)).rawValue
            }
        }
        context = Unmanaged.passUnretained(target).toOpaque()
        targetIdentity = ObjectIdentifier(target)
    }

    /// Identifies the callback (function and context) for comparisons.
    var identity: [UInt] {
        [UInt(bitPattern: unsafeBitCast(function, to: UnsafeRawPointer.self)), UInt(bitPattern: context)]
    }

    /// The Swift object behind the callback, if it was made from one.
    var targetIdentity: ObjectIdentifier? = nil

    /// Calls the callback (on the realtime thread; used by I/O units outside this module).
    @inlinable
    public func call(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        AudioError.Code(rawValue: function(context, UnsafeMutableRawPointer(request)))
    }
}

/// Subclass and override `render(_:)` to feed a unit's input from Swift.
/// `render` runs on the realtime thread: no allocation, locks, logging or Foundation.
open class RenderCallbackTarget {
    public init() {}

    /// Fills `request.pointee.buffers` with `request.pointee.frameCount` frames.
    open func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        request.pointee.buffers.clear()
        request.pointee.flags.insert(.outputIsSilence)
        return .noError
    }
}
