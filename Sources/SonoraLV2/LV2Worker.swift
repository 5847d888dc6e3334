import CLilv
import SonoraCore
import Synchronization

/// worker:schedule for one plugin instance.
///
/// `.thread`: the plugin's `run()` schedules work by copying it into a lock-free
/// ring and posting a semaphore; a normal-priority worker thread calls the plugin's
/// `work()`, whose responses go back through a second ring and are handed to
/// `work_response()` after the next `run()` on the realtime thread.
///
/// `.inline`: `work()` runs at once inside `schedule_work`, and its responses are
/// delivered right after that same `run()` — so offline renders are deterministic.
public final class LV2Worker: @unchecked Sendable {
    public enum Mode: Sendable { case inline, thread }

    public let mode: Mode
    let feature: UnsafeMutablePointer<LV2_Worker_Schedule>
    /// `.thread`: requests go to SonoraCore's `Worker`, which calls the plugin's `work()`.
    private let requests: Worker
    private let responses: RecordRing
    /// Scratch for one response on the realtime side.
    private let responseScratch: UnsafeMutableRawPointer
    static let recordCapacity = 16 * 1024
    /// At most 15 bytes: Linux truncates longer thread names.
    static let threadName = "lv2-worker"
    /// What the worker thread needs to call `work()`; set by `attach` while the thread is stopped.
    private let target: WorkTarget

    init(mode: Mode) throws(AudioError) {
        self.mode = mode
        let target = WorkTarget()
        self.target = target
        requests = try Worker(name: Self.threadName, capacity: 64 * 1024, maximumJobSize: Self.recordCapacity) { job in
            target.work(job.bytes)
        }
        responses = try RecordRing(capacity: 64 * 1024)
        responseScratch = .allocate(byteCount: Self.recordCapacity, alignment: 16)
        feature = .allocate(capacity: 1)
        feature.initialize(to: LV2_Worker_Schedule(handle: Unmanaged.passUnretained(self).toOpaque(), schedule_work: {
            handle, size, data in
            guard let handle else { return LV2_WORKER_ERR_UNKNOWN }
            return Unmanaged<LV2Worker>.fromOpaque(handle)._withUnsafeGuaranteedRef { $0.schedule(size: Int(size), data: data) }
        }))
        target.owner = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        stop()
        feature.deallocate()
        responseScratch.deallocate()
    }

    private var interface: UnsafePointer<LV2_Worker_Interface>? { target.interface }
    private var pluginHandle: LV2_Handle? { target.handle }

    /// Connects the worker to the instance's `worker:interface` and, in `.thread` mode, starts the thread.
    func attach(interface: UnsafePointer<LV2_Worker_Interface>?, handle: LV2_Handle?) {
        requests.stop()
        target.interface = interface
        target.handle = handle
        guard mode == .thread, interface != nil else { return }
        do { try requests.start() } catch {
            // No thread: schedule_work answers ERR_UNKNOWN instead of queueing work nobody runs.
            target.interface = nil
        }
    }

    /// Stops the worker thread (if any) after the requests already queued, waiting for it.
    func stop() {
        requests.stop()
    }

    private func schedule(size: Int, data: UnsafeRawPointer?) -> LV2_Worker_Status {
        guard let interface, let work = interface.pointee.work else { return LV2_WORKER_ERR_UNKNOWN }
        switch mode {
        case .inline:
            return work(pluginHandle, Self.respond, Unmanaged.passUnretained(self).toOpaque(), UInt32(size), data)
        case .thread:
            return requests.submit(data, count: size) ? LV2_WORKER_SUCCESS : LV2_WORKER_ERR_NO_SPACE
        }
    }

    static let respond: LV2_Worker_Respond_Function = { handle, size, data in
        guard let handle else { return LV2_WORKER_ERR_UNKNOWN }
        return Unmanaged<LV2Worker>.fromOpaque(handle)._withUnsafeGuaranteedRef {
            $0.responses.push(tag: 0, data, count: Int(size)) ? LV2_WORKER_SUCCESS : LV2_WORKER_ERR_NO_SPACE
        }
    }

    /// Realtime side, after each `run()`: hands pending responses to the plugin, then calls `end_run`.
    @inline(__always)
    func afterRun() {
        guard let interface else { return }
        if let workResponse = interface.pointee.work_response {
            while let record = responses.pop(into: responseScratch, capacity: Self.recordCapacity) {
                if record.count <= Self.recordCapacity {
                    _ = workResponse(pluginHandle, UInt32(record.count), responseScratch)
                }
            }
        }
        if let endRun = interface.pointee.end_run { _ = endRun(pluginHandle) }
    }

    /// Whether the worker thread has requests it has not taken yet (for tests waiting on it).
    var hasPendingRequests: Bool { requests.hasPendingJobs }
    var hasPendingResponses: Bool { !responses.isEmpty }
}

/// The plugin's `work()` and where its responses go, for the worker thread. Written only
/// while the thread is stopped (attach), read only by it afterwards.
private final class WorkTarget: @unchecked Sendable {
    var interface: UnsafePointer<LV2_Worker_Interface>?
    var handle: LV2_Handle?
    /// The LV2Worker, unretained: the respond function's handle.
    var owner: UnsafeMutableRawPointer?

    func work(_ bytes: UnsafeRawBufferPointer) {
        guard let work = interface?.pointee.work else { return }
        _ = work(handle, LV2Worker.respond, owner, UInt32(bytes.count), bytes.baseAddress)
    }
}
