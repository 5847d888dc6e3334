import CSonoraSystem
import Logging
import SonoraCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The appliance's server socket: a Unix stream socket (0600, or 0660 with a group) that
/// speaks newline-delimited JSON (at most 64 KiB a line) and hands each stream's shared
/// memory and eventfd over with `SCM_RIGHTS`.
///
/// One event-loop thread (`poll`) accepts, reads and answers every client, so an idle or
/// hostile client costs a buffer, not a thread. Clients are known by `SO_PEERCRED`; a
/// client that goes away (end of stream, hang-up, error) has its streams detached and
/// freed there, off the realtime thread, and the handler is told. The realtime side is
/// `streams`, serviced by the appliance's I/O thread.
public final class ApplianceServer: @unchecked Sendable {
    public let path: String
    public let limits: ApplianceServerLimits
    /// What clients are told at hello; only the device's name changes (the appliance
    /// switching devices), read on the server's loop, written by the control side.
    public var format: ApplianceServerFormat { formatState.withLock { $0 } }
    private let formatState: ControlLock<ApplianceServerFormat>
    /// What the I/O thread services (`mixPlayback`, `deliverCapture`).
    public let streams: ApplianceStreamTable

    private let handler: ApplianceSessionHandler
    private let logger: Logger
    private let listener: Int32
    private let wake: WakePipe
    private var acceptor: ConnectionAcceptor
    /// Times accepting was paused for want of descriptors (loop thread; the warning is logged
    /// once every 100 pauses, 10 s of shortage).
    private var acceptPauses = 0
    private let identity: (device: UInt64, inode: UInt64)
    private let running = Atomic<Bool>(false)
    private let stopping = Atomic<Bool>(false)
    private var thread: RealtimeThread?
    private let pendingEvents = ControlLock<[(pid: Int32, event: ApplianceEvent)]>([])
    /// Times the loop woke (tests: an idle loop does not wake on a timer).
    let loopTurns = Atomic<Int>(0)
    /// The named connections and their stream ids, republished by the loop when one says
    /// hello, opens or closes a stream, loses one (a fault) or goes; the streams' figures are
    /// read from the table when `clients` is read.
    private let published = ControlLock<[(client: ApplianceClientInfo, streams: [Int])]>([])

    // Loop-thread state.
    private var connections: [ApplianceServerConnection] = []
    private var nextConnection = 1
    private var nextStream = 1
    private let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 16)

    /// Binds `path` (its folder is created if missing: 0700, or with `group` 0750 and owned
    /// by it, so the group's members can reach the socket; a stale socket is replaced,
    /// anything else there is refused). With `group`, the socket is 0660 and owned by it.
    public init(
        path: String, group: gid_t? = nil, limits: ApplianceServerLimits = ApplianceServerLimits(), format: ApplianceServerFormat,
        handler: ApplianceSessionHandler, logger: Logger
    ) throws(AudioError) {
        self.path = path
        self.limits = limits
        formatState = ControlLock(format)
        self.handler = handler
        self.logger = logger
        streams = ApplianceStreamTable(capacity: limits.maximumStreams)
        var address = try ApplianceSocket.address(path)
        let folder = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        if !folder.isEmpty {
            if mkdir(folder, group == nil ? 0o700 : 0o750) == 0 {
                if let group {
                    // (mkdir's mode passes through the umask: set it exactly.)
                    _ = chown(folder, uid_t.max, group)
                    _ = chmod(folder, 0o750)
                }
            } else if errno != EEXIST {
                throw AudioError(.badFilePath, "cannot make the folder \(folder) for \(path): \(ApplianceSocket.errorText(errno))")
            }
        }
        var info = stat()
        if lstat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFSOCK else {
                throw AudioError(.badFilePath, "\(path) exists and is not a socket; not replacing it")
            }
            guard !isApplianceRunning(path: path) else { throw AudioError(.illegalOperation, "an appliance already serves \(path)") }
            unlink(path)
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw AudioError(.hardwareUnspecified, "cannot create a socket: \(ApplianceSocket.errorText(errno))") }
        // The socket file takes its mode from the socket's inode, less the umask (Linux): set on
        // the socket before bind, the file never exists with more than `mode`. Not by changing
        // the umask around bind: that is the process's, and a folder or file another thread made
        // meanwhile came out 0600 (a clean run's ThreadSanitizer pass caught a folder so made).
        let mode: mode_t = group == nil ? 0o600 : 0o660
        _ = fchmod(fd, mode)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        // Exactly `mode`: a stricter umask took bits the owner (or the group) needs to connect.
        if bound == 0 { _ = chmod(path, mode) }
        guard bound == 0 else {
            let reason = ApplianceSocket.errorText(errno)
            close(fd)
            throw AudioError(.badFilePath, "cannot bind \(path): \(reason)")
        }
        if let group, chown(path, uid_t.max, group) != 0 {
            let reason = ApplianceSocket.errorText(errno)
            close(fd)
            unlink(path)
            throw AudioError(.permissions, "cannot give \(path) to group \(group): \(reason)")
        }
        lstat(path, &info)
        identity = (UInt64(info.st_dev), UInt64(info.st_ino))
        guard listen(fd, 64) == 0 else {
            let reason = ApplianceSocket.errorText(errno)
            close(fd)
            unlink(path)
            throw AudioError(.badFilePath, "cannot listen on \(path): \(reason)")
        }
        listener = fd
        acceptor = ConnectionAcceptor(listener: fd)
        do throws(AudioError) {
            wake = try WakePipe()
        } catch {
            close(fd)
            unlink(path)
            throw error
        }
    }

    deinit {
        stop()
        chunk.deallocate()
    }

    /// Starts the event-loop thread.
    public func start() {
        guard !stopping.load(ordering: .acquiring), !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        do {
            thread = try RealtimeThread(RealtimeThreadOptions(name: "sonora-server", priority: nil, flushDenormals: false)) { [unowned(unsafe) self] in
                self.loop()
            }
        } catch {
            logger.error("appliance server: \(error)")
            running.store(false, ordering: .releasing)
        }
    }

    /// Closes every client (their streams detached and freed) and the socket, and removes
    /// the socket file if it is still the one this server created.
    public func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if running.load(ordering: .acquiring) {
            signalWake()
            thread?.join()
            thread = nil
        }
        for connection in connections { drop(connection, reason: "the appliance stopped") }
        connections = []
        streams.collectRetired()
        close(listener)
        var info = stat()
        if lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK
            && UInt64(info.st_dev) == identity.device && UInt64(info.st_ino) == identity.inode {
            unlink(path)
        }
    }

    /// Sends `event` to every connection of process `pid` (from any thread).
    public func send(_ event: ApplianceEvent, toClient pid: Int32) {
        guard event.fields != nil else { return }
        pendingEvents.withLock { $0.append((pid, event)) }
        signalWake()
    }

    /// The appliance now plays on (and captures from) `device`: clients attaching from now
    /// on are told so at hello. Telling the attached ones is the session server's business.
    public func setDeviceName(_ device: String) {
        formatState.withLock { $0.device = device }
    }

    /// The connected clients (after `hello`) and their streams, with the streams' figures
    /// (gain, peak, counters) as of now: read on demand, not kept up to date by the loop.
    public var clients: [ApplianceClientInfo] {
        let list = published.withLock { $0 }
        guard list.contains(where: { !$0.streams.isEmpty }) else { return list.map(\.client) }
        let byID = Dictionary(streams.snapshot().map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return list.map { entry in
            var client = entry.client
            client.streams = entry.streams.compactMap { byID[$0] }
            return client
        }
    }

    private func signalWake() { wake.signal() }

    // MARK: The loop

    /// Descriptors before the connections': the listener, the wake pipe, the fault eventfd.
    private static let fixedDescriptors = 3

    /// Sleeps until something happens — a client's socket, the wake pipe (an event to send,
    /// `stop`), the stream table's fault eventfd — and does only what that asks. The one
    /// timeout is for retired streams a realtime call was still using when they were
    /// detached: looked at again every 20 ms until freed. (Until 2026-11, a 20 ms timeout
    /// every turn and faulted streams, retired memory and a client-list rebuild every turn and
    /// twice a second: ~21 µs of CPU per 256-frame cycle with 16 clients, for nothing.)
    private func loop() {
        var descriptors: [pollfd] = []
        var retiredWaiting = 0
        let faultDescriptor = streams.faultDescriptor
        while !stopping.load(ordering: .acquiring) {
            descriptors.removeAll(keepingCapacity: true)
            let now = HostTime.now.seconds
            descriptors.append(pollfd(fd: acceptor.pollDescriptor(now: now), events: Int16(POLLIN), revents: 0))
            descriptors.append(pollfd(fd: wake.readDescriptor, events: Int16(POLLIN), revents: 0))
            // (A negative descriptor is skipped by poll.)
            descriptors.append(pollfd(fd: faultDescriptor, events: Int16(POLLIN), revents: 0))
            for connection in connections {
                // A connection being closed is read no more (its input would wake every turn).
                var events = connection.closesAfterFlush ? Int16(0) : Int16(POLLIN)
                if !connection.output.isEmpty { events |= Int16(POLLOUT) }
                descriptors.append(pollfd(fd: connection.descriptor, events: events, revents: 0))
            }
            // No timeout unless there is something to look at again: streams retired while a
            // realtime call ran, faults with no eventfd to announce them, or the listener
            // left out while the process is short of descriptors.
            var timeout: Int32 = retiredWaiting > 0 || faultDescriptor < 0 ? 20 : -1
            if let resume = acceptor.millisecondsToResume(now: now) { timeout = timeout < 0 ? resume : min(timeout, resume) }
            let ready = poll(&descriptors, nfds_t(descriptors.count), timeout)
            loopTurns.wrappingAdd(1, ordering: .relaxed)
            if stopping.load(ordering: .acquiring) { break }
            if ready < 0 && errno != EINTR { logger.error("appliance server: poll failed: \(ApplianceSocket.errorText(errno))") }
            if descriptors[1].revents != 0 { wake.drain() }
            deliverPendingEvents()
            if descriptors[0].revents & Int16(POLLIN) != 0 { acceptClients() }
            var gone: [ApplianceServerConnection] = []
            for (index, connection) in connections.enumerated() where index + Self.fixedDescriptors < descriptors.count {
                let revents = descriptors[index + Self.fixedDescriptors].revents
                if revents & Int16(POLLIN) != 0 && !connection.closesAfterFlush {
                    if !readFrom(connection) { gone.append(connection); continue }
                } else if revents & Int16(POLLHUP | POLLERR) != 0 {
                    gone.append(connection)
                    continue
                }
                if !connection.output.isEmpty {
                    if !connection.flush() || connection.queuedBytes > limits.maximumQueuedBytes { gone.append(connection); continue }
                }
                if connection.closesAfterFlush && connection.output.isEmpty { gone.append(connection) }
            }
            for connection in gone { drop(connection, reason: "connection closed") }
            if faultDescriptor < 0 || descriptors[2].revents != 0 {
                if faultDescriptor >= 0 { _ = sonora_eventfd_drain(faultDescriptor) }
                removeFaultedStreams()
            }
            retiredWaiting = streams.collectRetired()
        }
    }

    private func acceptClients() {
        while true {
            let fd: Int32
            switch acceptor.accept() {
            case .connection(let accepted): fd = accepted
            case .drained: return
            case .outOfDescriptors:
                // Nothing of the appliance's own to close: leave the listener out of the
                // poll set for a moment (see ConnectionAcceptor; before, the loop spun).
                acceptor.pause(now: HostTime.now.seconds)
                acceptPauses += 1
                if acceptPauses % 100 == 1 {
                    logger.warning("appliance server: out of file descriptors; new clients wait until some are free")
                }
                return
            }
            var pid: Int32 = 0, uid: UInt32 = 0, gid: UInt32 = 0
            guard sonora_peer_credentials(fd, &pid, &uid, &gid) == 0 else {
                close(fd)
                continue
            }
            let connection = ApplianceServerConnection(number: nextConnection, descriptor: fd, pid: pid, uid: uid)
            nextConnection += 1
            if connections.count >= limits.maximumClients {
                connection.enqueue(Self.errorLine(id: nil, AudioError(.tooManyFilesOpen, "the appliance serves at most \(limits.maximumClients) clients")))
                _ = connection.flush()
                continue  // closed as it goes out of scope
            }
            connections.append(connection)
        }
    }

    /// Reads what arrived and answers each complete line. False when the client is gone.
    private func readFrom(_ connection: ApplianceServerConnection) -> Bool {
        // A few chunks a turn, so one client sending without pause cannot starve the others.
        for _ in 0..<4 {
            let got = recv(connection.descriptor, chunk.baseAddress, chunk.count, Int32(MSG_DONTWAIT))
            if got == 0 { return false }
            if got < 0 { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR }
            connection.input.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[..<got]))
            while let newline = connection.input.firstIndex(of: UInt8(ascii: "\n")) {
                if newline > ApplianceSocket.maximumLineBytes { break }
                let line = Array(connection.input[..<newline])
                connection.input.removeSubrange(...newline)
                answer(line, from: connection)
            }
            if connection.input.count > ApplianceSocket.maximumLineBytes {
                connection.enqueue(Self.errorLine(id: nil, AudioError(.parameterError, "a request line is longer than \(ApplianceSocket.maximumLineBytes) bytes; closing the connection")))
                connection.input = []
                connection.closesAfterFlush = true
                return true
            }
        }
        return true
    }

    private static func errorLine(id: ApplianceValue?, _ error: AudioError) -> [UInt8] {
        ApplianceJSON.serialize(["id": id ?? .null, "ok": false, "status": .int(Int(error.status)), "error": .string(error.message)])
    }

    private func answer(_ line: [UInt8], from connection: ApplianceServerConnection) {
        var id: ApplianceValue = .null
        do throws(AudioError) {
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { return }  // blank lines are ignored
            let request = try ApplianceJSON.parseObject(line)
            if let given = request["id"] { id = given }
            guard case .int = id else { throw AudioError(.parameterError, "a request needs \"id\": an integer") }
            let op = try request.requiredString("op", in: "request")
            var fields = request
            fields["id"] = nil
            fields["op"] = nil
            if connection.name == nil && op != "hello" { throw AudioError(.illegalOperation, "\(op): the first request must be hello {name}") }
            var descriptors: [Int32] = []
            var reply = try perform(op, fields, connection, descriptors: &descriptors)
            // The client list changes with these (before the reply is sent, so a client that
            // has its answer finds itself listed).
            if op == "hello" || op == "open_stream" || op == "close_stream" { publish() }
            reply["id"] = id
            reply["ok"] = true
            if !descriptors.isEmpty { reply["fds"] = .int(descriptors.count) }
            connection.enqueue(ApplianceJSON.serialize(reply), descriptors: descriptors)
        } catch {
            connection.enqueue(Self.errorLine(id: id, error))
        }
    }

    private func perform(_ op: String, _ fields: [String: ApplianceValue], _ connection: ApplianceServerConnection, descriptors: inout [Int32]) throws(AudioError) -> [String: ApplianceValue] {
        switch op {
        case "hello":
            let name = try fields.requiredString("name", in: "hello")
            guard name.utf8.count <= 256 else { throw AudioError(.parameterError, "hello: field 'name' is longer than 256 bytes") }
            if connection.name != nil { throw AudioError(.illegalOperation, "hello: this connection already said hello") }
            connection.name = name
            return format.helloFields
        case "open_stream":
            return try openStream(fields, connection, descriptors: &descriptors)
        case "close_stream":
            let id = try fields.requiredInt("stream", in: "close_stream")
            guard let index = connection.streams.firstIndex(of: id) else { throw AudioError(.badStream, "close_stream: this connection has no stream \(id)") }
            connection.streams.remove(at: index)
            streams.detach(id)
            return [:]
        case "session_activate", "session_deactivate", "session_status":
            return try handler.handle(op: op, fields: fields, from: connection.info(streams: streamInfo(connection)))
        default:
            throw AudioError(.unsupportedOperation, "unknown op '\(Self.excerpt(op))'; ops: hello, open_stream, close_stream, session_activate, session_deactivate, session_status")
        }
    }

    private func openStream(_ fields: [String: ApplianceValue], _ connection: ApplianceServerConnection, descriptors: inout [Int32]) throws(AudioError) -> [String: ApplianceValue] {
        let directionName = try fields.requiredString("direction", in: "open_stream")
        guard let direction = ApplianceStreamDirection(rawValue: directionName) else {
            throw AudioError(.parameterError, "open_stream: direction '\(Self.excerpt(directionName))' is neither playback nor capture")
        }
        let channels = try fields.requiredInt("channels", in: "open_stream")
        guard (1...64).contains(channels) else { throw AudioError(.parameterError, "open_stream: channels \(channels) out of 1…64") }
        _ = try fields.optionalString("role", in: "open_stream")
        if let reason = handler.mayOpenStream(direction: direction, client: connection.info(streams: streamInfo(connection))) {
            throw AudioError(.devicePermissions, "open_stream: \(direction.rawValue) refused: \(reason)")
        }
        guard streams.count < limits.maximumStreams else {
            throw AudioError(.tooManyFilesOpen, "open_stream: too many streams (the appliance allows \(limits.maximumStreams))")
        }
        let capacity = ApplianceStreamLayout.capacity(periodFrames: format.periodFrames, periods: format.periods)
        let memory = try ApplianceStreamMemory.create(channels: channels, capacity: capacity, sampleRate: format.sampleRate, periodFrames: format.periodFrames)
        let wakeFD = sonora_eventfd()
        guard wakeFD >= 0 else { throw AudioError(.hardwareUnspecified, "open_stream: cannot create an eventfd: \(ApplianceSocket.errorText(sonora_errno()))") }
        let passedWake = dup(wakeFD)
        let passedMemory = dup(memory.descriptor)
        memory.closeDescriptor()  // the mapping stays; the client gets its own descriptor
        let id = nextStream
        nextStream += 1
        let stream = ApplianceServerStream(
            id: id, pid: connection.pid, connection: connection.number, direction: direction, memory: memory, wakeDescriptor: wakeFD,
            faultDescriptor: streams.faultDescriptor)
        guard passedWake >= 0, passedMemory >= 0, streams.attach(stream) else {
            if passedWake >= 0 { close(passedWake) }
            if passedMemory >= 0 { close(passedMemory) }
            throw AudioError(.tooManyFilesOpen, "open_stream: too many streams (the appliance allows \(limits.maximumStreams))")
        }
        connection.streams.append(id)
        descriptors = [passedMemory, passedWake]
        logger.debug("appliance server: \(connection.name ?? "") (pid \(connection.pid)) opened \(direction.rawValue) stream \(id), \(channels) channels")
        return ["stream": .int(id), "channels": .int(channels), "sample_rate": .int(format.sampleRate), "period": .int(format.periodFrames), "capacity": .int(capacity)]
    }

    private func streamInfo(_ connection: ApplianceServerConnection) -> [ApplianceStreamInfo] {
        let ids = Set(connection.streams)
        return streams.snapshot().filter { ids.contains($0.id) }
    }

    private func deliverPendingEvents() {
        let events = pendingEvents.withLock { pending in
            defer { pending.removeAll() }
            return pending
        }
        for (pid, event) in events {
            guard let fields = event.fields else { continue }
            let line = ApplianceJSON.serialize(fields)
            for connection in connections where connection.pid == pid && connection.name != nil { connection.enqueue(line) }
        }
    }

    /// A stream whose client forged its ring position: removed, and the client told.
    private func removeFaultedStreams() {
        let faulted = streams.faultedStreams()
        defer { if !faulted.isEmpty { publish() } }
        for stream in faulted {
            logger.warning("appliance server: stream \(stream.id) of pid \(stream.pid) faulted (its ring position was out of range); removed")
            streams.detach(stream.id)
            guard let connection = connections.first(where: { $0.number == stream.connection }) else { continue }
            connection.streams.removeAll { $0 == stream.id }
            connection.enqueue(ApplianceJSON.serialize(ApplianceEvent.streamRemoved(stream: stream.id, reason: "faulted").fields!))
        }
    }

    private func drop(_ connection: ApplianceServerConnection, reason: String) {
        let info = connection.info(streams: streamInfo(connection))
        for id in connection.streams { streams.detach(id) }
        connection.streams = []
        connections.removeAll { $0 === connection }
        if connection.name != nil { publish() }
        logger.debug("appliance server: \(connection.name ?? "") (pid \(connection.pid)) left: \(reason)")
        if connection.name != nil { handler.clientDetached(info) }
    }

    /// Republishes the named connections and their stream ids (no stream figures: those
    /// are read when `clients` is).
    private func publish() {
        let list = connections.compactMap { connection -> (client: ApplianceClientInfo, streams: [Int])? in
            guard connection.name != nil else { return nil }
            return (connection.info(), connection.streams)
        }
        published.withLock { $0 = list }
    }

    private static func excerpt(_ text: String) -> String { DeviceSpecifier.excerpt(text) }
}
