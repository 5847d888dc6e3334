import Dispatch
import Foundation
import Logging
import SonoraCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The control socket: a Unix-domain stream socket (created 0600, removed on exit) that
/// takes one JSON request per line (`ControlRequest`) and answers each with one JSON line
/// (`ControlResponse`).
///
/// One event-loop thread serves every client with `poll()` over non-blocking sockets — a
/// thread per client cost ~8 MB each and let idle clients lock `sonora ctl` out. SwiftNIO
/// would do the same job but adds a large dependency to a small appliance binary for one
/// socket with short lines; a poll loop is ~300 lines and has no dependency. Requests run
/// one at a time on SonoraCore's `Worker` (the controller is serialized anyway): the loop
/// submits the request line, the worker decodes and handles it, so a slow `reload` never
/// stalls accepting, reading or deadlines.
///
/// Limits: a request line is at most 64 KiB and must be complete within `timeout`
/// seconds of its first byte (a silent client: of connecting, or of its last answer) — a
/// deadline, not reset by each byte; an answer the client does not read within `timeout`
/// closes it. At `maximumClients`, the oldest idle client is closed with a `busy` error
/// to make room, so a local `sonora ctl` always gets in.
public final class ControlServer: @unchecked Sendable {
    public typealias Handler = @Sendable (ControlRequest) -> ControlResponse

    public let path: String
    /// Seconds a request may take to arrive, counted from its first byte.
    public let timeout: Double
    public let maximumClients: Int

    /// Counts for tests and logs.
    public struct Statistics: Equatable, Sendable {
        public var clients = 0
        /// Bytes held in all clients' buffers.
        public var bufferedBytes = 0
        public var accepted = 0
        /// Clients closed to make room for a new one.
        public var evicted = 0
        /// Clients closed at their deadline.
        public var timedOut = 0
        public var requests = 0
    }

    private let listener: Int32
    /// Wakes the loop for a finished request or `stop()`.
    private let wake: WakePipe
    private let identity: (device: UInt64, inode: UInt64)
    private let handler: Handler
    private let logger: Logger
    /// Runs requests off the loop: a job is a request's serial (8 bytes) and its line.
    private var worker: Worker!
    private let finished = ControlLock<[(serial: Int, answer: [UInt8])]>([])
    private let running = Atomic<Bool>(false)
    private let stopping = Atomic<Bool>(false)
    private let loopEnded = DispatchSemaphore(value: 0)
    private let published = ControlLock(Statistics())

    // Loop-thread state.
    private var connections: [ControlConnection] = []
    private var nextSerial = 0
    private var counts = Statistics()
    private var acceptor: ConnectionAcceptor
    private let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 16)

    /// Binds `path`. Refuses anything but a free path or a stale socket (see
    /// `ControlSocketPath.check`); a stale socket is replaced.
    public init(path: String, timeout: Double = 10, maximumClients: Int = 64, logger: Logger, handler: @escaping Handler) throws {
        guard maximumClients > 0, timeout > 0, timeout.isFinite else {
            throw ControlServerError("the control server needs at least one client and a positive timeout (got \(maximumClients), \(timeout) s)")
        }
        self.path = path
        self.timeout = timeout
        self.maximumClients = maximumClients
        self.handler = handler
        self.logger = logger
        switch ControlSocketPath.check(path) {
        case .failure(let problem): throw ControlServerError(problem.message)
        case .success(.staleSocket):
            // Look again just before removing: only a socket is ever unlinked.
            var info = stat()
            if lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK { unlink(path) }
        case .success(.free): break
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ControlServerError("cannot create a socket: \(String(cString: strerror(errno)))") }
        var address = ControlSocketPath.address(path)
        // The socket file is 0600: its mode comes from the socket's inode less the umask (Linux), so
        // it is set on the socket before bind, not by changing the process-wide umask around bind
        // (other threads' folders and files made meanwhile would get it; see ApplianceServer).
        _ = fchmod(fd, 0o600)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if bound == 0 { _ = chmod(path, 0o600) }
        guard bound == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw ControlServerError("cannot bind \(path): \(reason)")
        }
        var info = stat()
        lstat(path, &info)
        identity = (UInt64(info.st_dev), UInt64(info.st_ino))
        guard listen(fd, SOMAXCONN) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            unlink(path)
            throw ControlServerError("cannot listen on \(path): \(reason)")
        }
        listener = fd
        acceptor = ConnectionAcceptor(listener: fd)
        do throws(AudioError) {
            wake = try WakePipe()
        } catch {
            close(fd)
            unlink(path)
            throw ControlServerError(error.message)
        }
        // Every client may have one request in flight.
        let jobSize = 8 + ControlProtocol.maximumRequestBytes
        worker = try Worker(
            name: "sonora-ctl-work", capacity: min(maximumClients, 64) * (jobSize + RecordRing.headerSize) + jobSize + RecordRing.headerSize,
            maximumJobSize: jobSize, perform: { [unowned(unsafe) self] job in self.perform(job) })
    }

    /// On the worker thread: decode the request, handle it, hand the answer to the loop.
    private func perform(_ job: Worker.Job) {
        let serial = job.bytes.loadUnaligned(as: Int.self)
        let line = UnsafeRawBufferPointer(rebasing: job.bytes[8...])
        var answer: [UInt8]
        switch ControlRequest.decode(line) {
        case .failure(let failure): answer = ControlResponse.failure(failure).line()
        case .success(let request): answer = handler(request).line()
        }
        if answer.count > ControlProtocol.maximumResponseBytes {
            answer = ControlResponse.failure(ControlFailure(.tooLong, "the answer is longer than \(ControlProtocol.maximumResponseBytes) bytes")).line()
        }
        finished.withLock { $0.append((serial, answer)) }
        signalWake()
    }

    deinit {
        stop()
        chunk.deallocate()
    }

    public var statistics: Statistics { published.withLock { $0 } }

    /// Starts the event-loop thread.
    public func start() {
        guard !stopping.load(ordering: .acquiring), !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        do { try worker.start() } catch { logger.error("control: \(error)") }
        let thread = Thread { [self] in
            loop()
            loopEnded.signal()
        }
        thread.name = "sonora-control"
        thread.start()
    }

    /// Closes every client and the socket, and removes the socket file (if it is still
    /// the one this server created).
    public func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if running.load(ordering: .acquiring) {
            signalWake()
            loopEnded.wait()
        }
        // Requests already taken finish; then the worker's thread is joined.
        worker.stop()
        close(listener)
        var info = stat()
        if lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK
            && UInt64(info.st_dev) == identity.device && UInt64(info.st_ino) == identity.inode {
            unlink(path)
        }
    }

    private func signalWake() { wake.signal() }

    private static func now() -> Double { HostTime.now.seconds }

    // MARK: The loop

    private func loop() {
        var descriptors: [pollfd] = []
        descriptors.reserveCapacity(maximumClients + 3)
        while !stopping.load(ordering: .acquiring) {
            let now = Self.now()
            deliverFinished(now)
            expire(now)
            publish()
            descriptors.removeAll(keepingCapacity: true)
            descriptors.append(pollfd(fd: wake.readDescriptor, events: Int16(POLLIN), revents: 0))
            descriptors.append(pollfd(fd: acceptor.pollDescriptor(now: now), events: Int16(POLLIN), revents: 0))
            var nearest = now + 1
            if acceptor.pausedUntil > now { nearest = min(nearest, acceptor.pausedUntil) }
            for connection in connections {
                var events: Int16 = 0
                switch connection.phase {
                case .waiting, .reading: events = Int16(POLLIN)
                case .writing: events = Int16(POLLOUT)
                case .handling: break
                }
                if connection.phase != .handling { nearest = min(nearest, connection.deadline) }
                descriptors.append(pollfd(fd: connection.descriptor, events: events, revents: 0))
            }
            let milliseconds = Int32(max(0, ((nearest - now) * 1000).rounded(.up)))
            let ready = poll(&descriptors, nfds_t(descriptors.count), milliseconds)
            if ready < 0 && errno != EINTR { logger.error("control socket: poll failed: \(String(cString: strerror(errno)))"); break }
            guard ready > 0 else { continue }
            if descriptors[0].revents != 0 { wake.drain() }
            // Clients first (their slots are in `descriptors` in order), then new ones.
            let current = connections
            for (index, connection) in current.enumerated() {
                let revents = Int32(descriptors[index + 2].revents)
                guard revents != 0 else { continue }
                serve(connection, revents: revents)
            }
            if descriptors[1].revents != 0 { acceptClients() }
        }
        for connection in connections { close(connection.descriptor) }
        connections.removeAll()
        publish()
    }

    private func publish() {
        var snapshot = counts
        snapshot.clients = connections.count
        snapshot.bufferedBytes = connections.reduce(0) { $0 + $1.bufferedBytes }
        published.withLock { $0 = snapshot }
    }

    /// Moves the worker's answers into their clients' output.
    private func deliverFinished(_ now: Double) {
        let answers = finished.withLock { list -> [(serial: Int, answer: [UInt8])] in
            defer { list.removeAll() }
            return list
        }
        for (serial, answer) in answers {
            guard let connection = connections.first(where: { $0.serial == serial }), connection.phase == .handling else { continue }
            queue(answer, to: connection, now: now)
        }
    }

    /// Closes clients whose deadline passed, with an error saying so where one was due.
    private func expire(_ now: Double) {
        for connection in connections where connection.phase != .handling && connection.deadline <= now {
            counts.timedOut += 1
            switch connection.phase {
            case .waiting:
                sendAndClose(connection, ControlFailure(.timeout, "timed out: no request within \(Self.seconds(timeout))"))
            case .reading:
                sendAndClose(connection, ControlFailure(.timeout, "timed out: the request was not complete within \(Self.seconds(timeout)) of its first byte"))
            default:
                remove(connection)
            }
        }
    }

    private static func seconds(_ value: Double) -> String { String(format: "%g s", value) }

    private func acceptClients() {
        while true {
            let fd: Int32
            switch acceptor.accept() {
            case .connection(let accepted): fd = accepted
            case .drained: return
            case .outOfDescriptors:
                // Make room, or stop accepting for a moment (see ConnectionAcceptor).
                if !evictOldestIdle() { acceptor.pause(now: Self.now()); return }
                continue
            }
            counts.accepted += 1
            if connections.count >= maximumClients && !evictOldestIdle() {
                let failure = ControlFailure(.busy, "busy: \(maximumClients) clients are connected and each has a request in progress; try again")
                NonBlockingSocket.sendOnce(fd, ControlResponse.failure(failure).line())
                close(fd)
                continue
            }
            connections.append(ControlConnection(descriptor: fd, serial: nextSerial, deadline: Self.now() + timeout))
            nextSerial += 1
        }
    }

    /// Closes the oldest client with no request under way (else the oldest still sending
    /// one); false if every client has a request with the controller or an answer due.
    private func evictOldestIdle() -> Bool {
        let victim = connections.first { $0.phase == .waiting } ?? connections.first { $0.phase == .reading }
        guard let victim else { return false }
        counts.evicted += 1
        logger.debug("control socket: closing the oldest idle client to make room")
        sendAndClose(victim, ControlFailure(.busy, "closed to make room: \(maximumClients) clients were connected and this one was the oldest idle"))
        return true
    }

    private func serve(_ connection: ControlConnection, revents: Int32) {
        switch connection.phase {
        case .waiting, .reading:
            if revents & Int32(POLLIN | POLLHUP | POLLERR) != 0 { receive(connection) }
        case .writing:
            if revents & Int32(POLLOUT | POLLHUP | POLLERR) != 0 { flush(connection) }
        case .handling:
            // Only a full hang-up is reported here; nobody is left to answer.
            if revents & Int32(POLLHUP | POLLERR) != 0 { remove(connection) }
        }
    }

    private func receive(_ connection: ControlConnection) {
        let count = recv(connection.descriptor, chunk.baseAddress, chunk.count, Int32(MSG_DONTWAIT))
        if count < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return }
            remove(connection)
            return
        }
        if count == 0 {
            connection.inputEnded = true
            // A last line without its newline is still a request.
            if !connection.input.isEmpty && !connection.input.contains(10) { connection.input.append(10) }
        } else {
            if connection.phase == .waiting && connection.input.isEmpty {
                connection.phase = .reading
                connection.deadline = Self.now() + timeout
            }
            connection.input.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[..<count]))
        }
        processInput(connection)
    }

    /// Takes the next request line, if a whole one has arrived.
    private func processInput(_ connection: ControlConnection) {
        let now = Self.now()
        while let line = connection.takeLine() {
            if line.count > ControlProtocol.maximumRequestBytes {
                tooLong(connection)
                return
            }
            if line.allSatisfy({ $0 == 32 || $0 == 13 || $0 == 9 }) { continue }
            counts.requests += 1
            var job = withUnsafeBytes(of: connection.serial) { Array($0) }
            job += line
            let submitted = job.withUnsafeBytes { worker.submit($0.baseAddress, count: $0.count) }
            if submitted {
                connection.phase = .handling
            } else {
                queue(ControlResponse.failure(ControlFailure(.busy, "the control worker is busy; try again")).line(), to: connection, now: now)
            }
            return
        }
        if connection.input.count > ControlProtocol.maximumRequestBytes {
            tooLong(connection)
        } else if connection.inputEnded {
            remove(connection)
        } else if connection.input.isEmpty && connection.phase == .reading {
            // Only blank lines so far: still waiting for a request.
            connection.phase = .waiting
        }
    }

    private func tooLong(_ connection: ControlConnection) {
        connection.input = []
        connection.closeAfterWriting = true
        queue(ControlResponse.failure(ControlFailure(.tooLong, "request longer than \(ControlProtocol.maximumRequestBytes) bytes")).line(), to: connection, now: Self.now())
    }

    private func queue(_ answer: [UInt8], to connection: ControlConnection, now: Double) {
        connection.output = answer
        connection.written = 0
        connection.phase = .writing
        connection.deadline = now + timeout
        flush(connection)
    }

    private func flush(_ connection: ControlConnection) {
        switch NonBlockingSocket.sendRemaining(connection.descriptor, connection.output, written: &connection.written) {
        case .complete: break
        case .wouldBlock: return
        case .failed:
            remove(connection)
            return
        }
        connection.releaseIdleBuffers()
        if connection.closeAfterWriting {
            remove(connection)
            return
        }
        // Answered: the next request's deadline starts now (or at its first byte, if
        // part of it is here already).
        connection.phase = connection.input.isEmpty ? .waiting : .reading
        connection.deadline = Self.now() + timeout
        if !connection.input.isEmpty || connection.inputEnded { processInput(connection) }
    }

    /// Best effort: one non-blocking send of a short error, then close.
    private func sendAndClose(_ connection: ControlConnection, _ failure: ControlFailure) {
        NonBlockingSocket.sendOnce(connection.descriptor, ControlResponse.failure(failure).line())
        remove(connection)
    }

    private func remove(_ connection: ControlConnection) {
        guard let index = connections.firstIndex(where: { $0 === connection }) else { return }
        close(connection.descriptor)
        connections.remove(at: index)
    }
}

public struct ControlServerError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
