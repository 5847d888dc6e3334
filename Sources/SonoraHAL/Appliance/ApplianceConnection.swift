import CSonoraSystem
import SonoraCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One client connection to the appliance: requests and their replies (one at a time per
/// caller; replies matched by id), events, and the descriptors that come with a reply.
/// A reader thread takes every line off the socket; when the server goes away, pending
/// requests fail and the event handler gets `.disconnected` once.
public final class ApplianceConnection: @unchecked Sendable {
    /// The appliance's format, from its answer to `hello`.
    public private(set) var serverFormat = ApplianceServerFormat(sampleRate: 0, periodFrames: 0, periods: 0, outputChannels: 0, inputChannels: 0, device: "")
    public let path: String
    private let descriptor: Int32
    private var reader: RealtimeThread?
    private let state = ControlLock(State())
    private let replyArrived: UnsafeMutablePointer<sem_t>
    private let closed = Atomic<Bool>(false)
    /// One request in flight at a time: its reply is the one the semaphore announces.
    private let requestLock = ControlLock(())
    /// How long a request waits for its reply.
    static let replyTimeoutSeconds = 5

    private struct State {
        var nextID = 1
        var replies: [Int: (fields: [String: ApplianceValue], descriptors: [Int32])] = [:]
        var waiting: Set<Int> = []
        var receivedDescriptors: [Int32] = []
        var handler: (@Sendable (ApplianceEvent) -> Void)?
        var queuedEvents: [ApplianceEvent] = []
        var disconnected = false
    }

    /// Connects to the appliance at `path` (default: `ApplianceSocket.clientPath()`) and
    /// says hello as `name`.
    public static func connect(path: String? = nil, name: String) throws(AudioError) -> ApplianceConnection {
        let target = path ?? ApplianceSocket.clientPath()
        let fd = try ApplianceSocket.connect(target)
        let connection = try ApplianceConnection(descriptor: fd, path: target, name: name)
        return connection
    }

    private init(descriptor: Int32, path: String, name: String) throws(AudioError) {
        self.descriptor = descriptor
        self.path = path
        replyArrived = .allocate(capacity: 1)
        sem_init(replyArrived, 0, 0)
        // Every stored property is set: deinit frees the semaphore whatever happens; the
        // reader is joined here before the error leaves (it must not outlive `self`).
        reader = try RealtimeThread(RealtimeThreadOptions(name: "sonora-client", priority: nil, flushDenormals: false)) { [unowned(unsafe) self] in
            self.readLoop()
        }
        do {
            serverFormat = try ApplianceServerFormat(hello: request("hello", ["name": .string(name)]))
        } catch {
            close()
            throw error
        }
    }

    deinit {
        close()
        sem_destroy(replyArrived)
        replyArrived.deallocate()
    }

    /// Sends `op` with `fields` and waits for its reply: the reply's fields (without `id`
    /// and `ok`), or the server's refusal as an `AudioError` with its status and message.
    public func request(_ op: String, _ fields: [String: ApplianceValue]) throws(AudioError) -> [String: ApplianceValue] {
        let (reply, descriptors) = try requestWithDescriptors(op, fields)
        for fd in descriptors { Glibc.close(fd) }
        return reply
    }

    /// As `request`, also returning the descriptors that came with the reply (the caller
    /// owns them).
    func requestWithDescriptors(_ op: String, _ fields: [String: ApplianceValue]) throws(AudioError) -> ([String: ApplianceValue], [Int32]) {
        try requestLock.withLock { _ throws(AudioError) in try exchange(op, fields) }
    }

    private func exchange(_ op: String, _ fields: [String: ApplianceValue]) throws(AudioError) -> ([String: ApplianceValue], [Int32]) {
        let id: Int = try state.withLock { state throws(AudioError) in
            guard !state.disconnected else { throw AudioError(.hardwareNotRunning, "\(op): the appliance at \(path) is gone") }
            defer { state.nextID += 1 }
            state.waiting.insert(state.nextID)
            return state.nextID
        }
        var message = fields
        message["id"] = .int(id)
        message["op"] = .string(op)
        let line = ApplianceJSON.serialize(message) + [UInt8(ascii: "\n")]
        guard line.count <= ApplianceSocket.maximumLineBytes else {
            _ = state.withLock { $0.waiting.remove(id) }
            throw AudioError(.parameterError, "\(op): the request is longer than \(ApplianceSocket.maximumLineBytes) bytes")
        }
        guard sendAll(line) else {
            _ = state.withLock { $0.waiting.remove(id) }
            throw AudioError(.hardwareNotRunning, "\(op): cannot write to the appliance at \(path): \(ApplianceSocket.errorText(errno))")
        }
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        deadline.tv_sec += Self.replyTimeoutSeconds
        while true {
            let answer: (fields: [String: ApplianceValue], descriptors: [Int32])?? = state.withLock { state in
                if let reply = state.replies.removeValue(forKey: id) {
                    state.waiting.remove(id)
                    return .some(reply)
                }
                if state.disconnected {
                    state.waiting.remove(id)
                    return .some(nil)
                }
                return nil
            }
            if let answer {
                guard let (reply, descriptors) = answer else { throw AudioError(.hardwareNotRunning, "\(op): the appliance at \(path) went away") }
                guard reply["ok"]?.boolValue == true else {
                    for fd in descriptors { Glibc.close(fd) }
                    let status = Int32(truncatingIfNeeded: reply["status"]?.intValue ?? Int(AudioError.Code.unspecified.rawValue))
                    throw AudioError(AudioError.Code(rawValue: status), reply["error"]?.stringValue ?? "\(op) refused")
                }
                var fields = reply
                fields["id"] = nil
                fields["ok"] = nil
                fields["fds"] = nil
                return (fields, descriptors)
            }
            if sem_timedwait(replyArrived, &deadline) != 0 && errno == ETIMEDOUT {
                _ = state.withLock { $0.waiting.remove(id) }
                throw AudioError(.hardwareNotRunning, "\(op): the appliance at \(path) did not answer within \(Self.replyTimeoutSeconds) s")
            }
        }
    }

    /// Calls `handler` with every event, on the connection's reader thread (events that
    /// came before are delivered at once). The handler must not call `request` or `close`
    /// (the reader thread would wait for itself): hand work to another thread.
    public func onEvent(_ handler: @escaping @Sendable (ApplianceEvent) -> Void) {
        let queued: [ApplianceEvent] = state.withLock { state in
            state.handler = handler
            defer { state.queuedEvents = [] }
            return state.queuedEvents
        }
        for event in queued { handler(event) }
    }

    /// True once the server has gone away (or `close()` was called).
    public var isConnected: Bool { !state.withLock { $0.disconnected } }

    /// Closes the connection (the server detaches its streams) and joins the reader.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        shutdown(descriptor, Int32(SHUT_RDWR))
        reader?.join()
        reader = nil
        Glibc.close(descriptor)
        let leftover = state.withLock { state in
            defer { state.receivedDescriptors = [] }
            return state.receivedDescriptors + state.replies.values.flatMap(\.descriptors)
        }
        for fd in leftover { Glibc.close(fd) }
    }

    private func sendAll(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if count < 0 {
                if errno == EINTR { continue }
                return false
            }
            sent += count
        }
        return true
    }

    // MARK: The reader thread

    private func readLoop() {
        var buffer: [UInt8] = []
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 16)
        defer { chunk.deallocate() }
        var passed = [Int32](repeating: -1, count: 16)
        while true {
            var count: Int32 = 0
            let got = passed.withUnsafeMutableBufferPointer { fds in
                sonora_receive_with_fds(descriptor, chunk.baseAddress, chunk.count, fds.baseAddress, Int32(fds.count), &count, 1)
            }
            if got < 0 && sonora_errno() == EINTR { continue }
            if count > 0 { state.withLock { $0.receivedDescriptors += passed[..<Int(count)] } }
            if got <= 0 { break }
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[..<got]))
            while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                take(line)
            }
            if buffer.count > ApplianceSocket.maximumLineBytes { break }  // a broken server
        }
        let handler: (@Sendable (ApplianceEvent) -> Void)? = state.withLock { state in
            state.disconnected = true
            return state.handler
        }
        sem_post(replyArrived)
        if let handler { handler(.disconnected) } else { state.withLock { $0.queuedEvents.append(.disconnected) } }
    }

    private func take(_ line: [UInt8]) {
        guard let fields = try? ApplianceJSON.parseObject(line) else { return }
        if fields["event"] != nil {
            guard let event = ApplianceEvent(fields: fields) else { return }
            let handler: (@Sendable (ApplianceEvent) -> Void)? = state.withLock { state in
                if state.handler == nil { state.queuedEvents.append(event) }
                return state.handler
            }
            handler?(event)
            return
        }
        guard let id = fields["id"]?.intValue else { return }
        let wanted = max(0, fields["fds"]?.intValue ?? 0)
        let stray: [Int32] = state.withLock { state in
            let count = min(wanted, state.receivedDescriptors.count)
            let descriptors = Array(state.receivedDescriptors.prefix(count))
            state.receivedDescriptors.removeFirst(count)
            guard state.waiting.contains(id) else { return descriptors }
            state.replies[id] = (fields, descriptors)
            return []
        }
        for fd in stray { Glibc.close(fd) }
        sem_post(replyArrived)
    }
}
