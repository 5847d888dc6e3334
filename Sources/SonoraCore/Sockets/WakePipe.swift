import CSonoraSystem

#if canImport(Glibc)
import Glibc
#endif

/// A pipe that wakes a `poll` loop from any thread: the loop polls `readDescriptor`,
/// other threads `signal()`. Both ends are non-blocking and close-on-exec, so a signal
/// never blocks (a full pipe already wakes the loop) and a drain never waits.
public final class WakePipe: @unchecked Sendable {
    public let readDescriptor: Int32
    private let writeDescriptor: Int32

    public init() throws(AudioError) {
        var ends: [Int32] = [-1, -1]
        guard sonora_pipe_nonblocking(&ends) == 0 else {
            throw AudioError(.hardwareUnspecified, "cannot create a pipe: \(String(cString: strerror(errno)))")
        }
        readDescriptor = ends[0]
        writeDescriptor = ends[1]
    }

    deinit {
        close(readDescriptor)
        close(writeDescriptor)
    }

    /// Wakes the loop (from any thread).
    public func signal() {
        var one: UInt8 = 1
        _ = write(writeDescriptor, &one, 1)
    }

    /// Empties the pipe (on the loop, after `poll` reported it readable).
    public func drain() {
        var sink = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        while withUnsafeMutableBytes(of: &sink, { read(readDescriptor, $0.baseAddress, $0.count) }) > 0 {}
    }
}
