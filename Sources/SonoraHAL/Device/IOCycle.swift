import SonoraCore

/// One period of an I/O cycle, handed to the device's `IOProcedure` on the I/O thread:
/// the captured input (canonical float), the output to fill, and when each is heard.
@frozen
public struct IOCycle: BitwiseCopyable {
    /// The captured period (zero channels when the device has no capture).
    public var input: AudioBufferList
    /// The period to fill (zero channels when the device has no playback).
    public var output: AudioBufferList
    public var frameCount: Int
    /// When the first input frame was captured (sample time continuous from the start).
    public var inputTime: AudioTimeStamp
    /// When the first output frame will be heard.
    public var outputTime: AudioTimeStamp

    public init(input: AudioBufferList, output: AudioBufferList, frameCount: Int, inputTime: AudioTimeStamp, outputTime: AudioTimeStamp) {
        self.input = input
        self.output = output
        self.frameCount = frameCount
        self.inputTime = inputTime
        self.outputTime = outputTime
    }
}

/// What a device calls once per period (Core Audio's `AudioDeviceIOProc`): a C function
/// and a context, so the I/O thread calls it without reference counting.
///
/// The function receives the context and a pointer to an `IOCycle`
/// (`cycle.assumingMemoryBound(to: IOCycle.self)`) and returns 0, or a non-zero status
/// that the device counts as a render error (the output period is then silenced).
@frozen
public struct IOProcedure: BitwiseCopyable {
    public typealias Function = @convention(c) (_ context: UnsafeMutableRawPointer?, _ cycle: UnsafeMutableRawPointer) -> Int32

    public var function: Function
    public var context: UnsafeMutableRawPointer?

    public init(function: Function, context: UnsafeMutableRawPointer?) {
        self.function = function
        self.context = context
    }

    /// Calls `target.process(_:)`; the caller keeps `target` alive while the device runs.
    public init(_ target: IOCycleTarget) {
        function = { context, cycle in
            Unmanaged<IOCycleTarget>.fromOpaque(context!)._withUnsafeGuaranteedRef { target in
                target.process(cycle.assumingMemoryBound(to: IOCycle.self))
            }
        }
        context = Unmanaged.passUnretained(target).toOpaque()
    }

    @inline(__always)
    func callAsFunction(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
        function(context, UnsafeMutableRawPointer(cycle))
    }
}

/// Subclass to handle I/O cycles in Swift. `process` runs on the realtime I/O thread:
/// no allocation, locks, logging or Foundation there.
open class IOCycleTarget: @unchecked Sendable {
    public init() {}

    /// Fills `cycle.output` (it arrives zeroed); returns 0 or a non-zero status.
    open func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 { 0 }
}
