#if canImport(Glibc)
import Glibc
#endif

/// What the poll loops do with a connected non-blocking socket.
public enum NonBlockingSocket {
    public enum SendOutcome: Equatable {
        /// Everything is written.
        case complete
        /// The socket's buffer is full: poll for `POLLOUT` and send the rest then.
        case wouldBlock
        /// The peer is gone (or the socket failed): close it.
        case failed
    }

    /// Sends `bytes` from `written` on, as far as the socket takes them now, advancing
    /// `written`. Never raises SIGPIPE.
    public static func sendRemaining(_ descriptor: Int32, _ bytes: [UInt8], written: inout Int) -> SendOutcome {
        while written < bytes.count {
            let sent = bytes.withUnsafeBytes { buffer in
                send(descriptor, buffer.baseAddress! + written, buffer.count - written, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if sent < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK { return .wouldBlock }
                if errno == EINTR { continue }
                return .failed
            }
            written += sent
        }
        return .complete
    }

    /// One non-blocking attempt to send a short line, for a peer about to be closed.
    public static func sendOnce(_ descriptor: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
    }
}
