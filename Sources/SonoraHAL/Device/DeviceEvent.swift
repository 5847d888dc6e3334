#if canImport(Glibc)
import Glibc
#endif
import SonoraCore

/// Something the I/O thread tells the control side, through a lock-free queue.
@frozen
public enum DeviceEvent: BitwiseCopyable, Hashable, Sendable {
    public enum Stream: UInt8, Sendable, BitwiseCopyable { case capture, playback }

    /// A stream ran out (playback) or over (capture); `nanoseconds` is how long it lasted
    /// until the stream ran again; the device recovered (prepare, prefill, restart).
    case xrun(Stream, nanoseconds: UInt64, sampleTime: Double)
    /// The device was suspended (-ESTRPIPE) and resumed.
    case resumed(Stream)
    /// The device failed or vanished (-ENODEV, -EBADFD, …): an interruption began; the
    /// driver's control thread keeps trying to re-open it with back-off while the I/O
    /// thread idles. `errno` is positive.
    case interruptionBegan(Stream, errno: Int32)
    /// The device is back and running again after `attempts` re-opens.
    case interruptionEnded(attempts: Int32)
    /// The render procedure returned a non-zero status; the period was silenced.
    case renderError(status: Int32, sampleTime: Double)
    /// The device's rate or period changed while it ran (a JACK server's new buffer size or
    /// rate, or a server back at another rate): `format` says the new one. The owner's
    /// format-change handler (`AudioDevice.setFormatChangeHandler`) ran before the first
    /// cycle at it. Not an interruption: no time is lost beyond the change itself.
    case formatChanged(sampleRate: Int, periodFrames: Int)
}

extension DeviceEvent: CustomStringConvertible {
    public var description: String {
        switch self {
        case .xrun(let stream, let ns, let time):
            "\(stream == .capture ? "capture overrun" : "playback underrun") at sample \(Int(time)), \(Double(ns / 10_000) / 100) ms until recovered"
        case .resumed(let stream): "\(stream) resumed after suspend"
        case .interruptionBegan(let stream, let code): "\(stream) device failed (\(String(cString: strerror(code)))); re-opening with back-off"
        case .interruptionEnded(let attempts): "device back after \(attempts) attempt\(attempts == 1 ? "" : "s")"
        case .renderError(let status, let time): "render error \(status) at sample \(Int(time)); period silenced"
        case .formatChanged(let rate, let frames): "format changed: \(rate) Hz, \(frames) frames per period"
        }
    }
}
