/// One client of the control server, owned by its event-loop thread. Memory is bounded:
/// at most one request line (`ControlProtocol.maximumRequestBytes`, plus one read) in,
/// one answer (`ControlProtocol.maximumResponseBytes`) out; buffers are released when
/// idle, so an idle client costs a file descriptor and this object.
final class ControlConnection {
    enum Phase: Equatable {
        /// Nothing of a request yet (just connected, or answered): `deadline` counts from then.
        case waiting
        /// Part of a request: `deadline` counts from its first byte, not from each byte.
        case reading
        /// A request is with the controller; no deadline, nothing more is read.
        case handling
        /// An answer is being written; `deadline` bounds a client that does not read it.
        case writing
    }

    let descriptor: Int32
    /// Accept order: the oldest idle client is closed first when room is needed.
    let serial: Int
    var phase = Phase.waiting
    var deadline: Double
    var input: [UInt8] = []
    var output: [UInt8] = []
    var written = 0
    /// The client shut down its sending side: answer what it sent, then close.
    var inputEnded = false
    /// Close once `output` is written (after a too-long request, for instance).
    var closeAfterWriting = false

    init(descriptor: Int32, serial: Int, deadline: Double) {
        self.descriptor = descriptor
        self.serial = serial
        self.deadline = deadline
    }

    /// Bytes held in this client's buffers.
    var bufferedBytes: Int { input.capacity + output.capacity }

    /// The next complete line in `input` (without its newline), removed from it.
    func takeLine() -> [UInt8]? {
        guard let newline = input.firstIndex(of: 10) else { return nil }
        let line = Array(input[..<newline])
        input.removeSubrange(...newline)
        return line
    }

    /// Drops buffers that grew for a big request or answer once they are empty.
    func releaseIdleBuffers() {
        if input.isEmpty && input.capacity > 4096 { input = [] }
        if written >= output.count {
            output = []
            written = 0
        }
    }
}
