import CSonoraSystem

#if canImport(Glibc)
import Glibc
#endif

/// One client connection on the server's event loop: the peer's credentials, its bounded
/// input buffer, its queue of replies and events, its streams. Loop thread only.
final class ApplianceServerConnection {
    let number: Int
    let descriptor: Int32
    let pid: Int32
    let uid: UInt32
    /// The name from `hello`; nil until then.
    var name: String?
    var streams: [Int] = []
    var input: [UInt8] = []
    /// Replies and events not yet written, each with the descriptors its first byte carries.
    var output: [(bytes: [UInt8], descriptors: [Int32])] = []
    var sentOfFirst = 0
    var queuedBytes = 0
    /// Close once the queue is written (after an oversize line's error).
    var closesAfterFlush = false

    init(number: Int, descriptor: Int32, pid: Int32, uid: UInt32) {
        self.number = number
        self.descriptor = descriptor
        self.pid = pid
        self.uid = uid
    }

    deinit {
        for entry in output { for fd in entry.descriptors { close(fd) } }
        close(descriptor)
    }

    func info(streams: [ApplianceStreamInfo] = []) -> ApplianceClientInfo {
        ApplianceClientInfo(connection: number, pid: pid, uid: uid, name: name ?? "", streams: streams)
    }

    /// Queues one line (a newline is added) with `descriptors`, which it then owns.
    func enqueue(_ line: [UInt8], descriptors: [Int32] = []) {
        output.append((line + [UInt8(ascii: "\n")], descriptors))
        queuedBytes += line.count + 1
    }

    /// Writes what the socket takes now. False when the peer is gone.
    func flush() -> Bool {
        while let first = output.first {
            let remaining = first.bytes.count - sentOfFirst
            let sent = first.bytes.withUnsafeBytes { bytes in
                if sentOfFirst == 0 && !first.descriptors.isEmpty {
                    return first.descriptors.withUnsafeBufferPointer { fds in
                        sonora_send_with_fds(descriptor, bytes.baseAddress!, remaining, fds.baseAddress, Int32(fds.count))
                    }
                }
                return sonora_send_with_fds(descriptor, bytes.baseAddress! + sentOfFirst, remaining, nil, 0)
            }
            if sent < 0 {
                let code = sonora_errno()
                return code == EAGAIN || code == EWOULDBLOCK || code == EINTR
            }
            if sentOfFirst == 0 { for fd in first.descriptors { close(fd) } ; output[0].descriptors = [] }
            sentOfFirst += sent
            queuedBytes -= sent
            if sentOfFirst == first.bytes.count {
                output.removeFirst()
                sentOfFirst = 0
            }
        }
        return true
    }
}
