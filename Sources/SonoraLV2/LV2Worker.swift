import CLilv
import Foundation
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
    private let requests: RecordRing
    private let responses: RecordRing
    /// Scratch for one request or response (the realtime side's and the worker thread's are separate).
    private let responseScratch: UnsafeMutableRawPointer
    private let requestScratch: UnsafeMutableRawPointer
    static let recordCapacity = 16 * 1024
    /// At most 15 bytes: Linux truncates longer thread names.
    static let threadName = "lv2-worker"
    private var interface: UnsafePointer<LV2_Worker_Interface>?
    private var pluginHandle: LV2_Handle?
    private var semaphore = sem_t()
    /// Set by stop(); read by the worker thread after each wake-up.
    private let stopping = Atomic<Bool>(false)
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)

    init(mode: Mode) throws(AudioError) {
        self.mode = mode
        requests = try RecordRing(capacity: 64 * 1024)
        responses = try RecordRing(capacity: 64 * 1024)
        responseScratch = .allocate(byteCount: Self.recordCapacity, alignment: 16)
        requestScratch = .allocate(byteCount: Self.recordCapacity, alignment: 16)
        feature = .allocate(capacity: 1)
        sem_init(&semaphore, 0, 0)
        feature.initialize(to: LV2_Worker_Schedule(handle: Unmanaged.passUnretained(self).toOpaque(), schedule_work: {
            handle, size, data in
            guard let handle else { return LV2_WORKER_ERR_UNKNOWN }
            return Unmanaged<LV2Worker>.fromOpaque(handle)._withUnsafeGuaranteedRef { $0.schedule(size: Int(size), data: data) }
        }))
    }

    deinit {
        stop()
        sem_destroy(&semaphore)
        feature.deallocate()
        responseScratch.deallocate()
        requestScratch.deallocate()
    }

    /// Connects the worker to the instance's `worker:interface` and, in `.thread` mode, starts the thread.
    func attach(interface: UnsafePointer<LV2_Worker_Interface>?, handle: LV2_Handle?) {
        self.interface = interface
        pluginHandle = handle
        guard mode == .thread, interface != nil, thread == nil else { return }
        stopping.store(false, ordering: .relaxed)
        let thread = Thread { [unowned self] in self.serve() }
        thread.name = Self.threadName
        self.thread = thread
        thread.start()
    }

    /// Stops the worker thread (if any), waiting for it.
    func stop() {
        guard thread != nil else { return }
        stopping.store(true, ordering: .releasing)
        sem_post(&semaphore)
        finished.wait()
        thread = nil
    }

    private func schedule(size: Int, data: UnsafeRawPointer?) -> LV2_Worker_Status {
        guard let interface, let work = interface.pointee.work else { return LV2_WORKER_ERR_UNKNOWN }
        switch mode {
        case .inline:
            return work(pluginHandle, Self.respond, Unmanaged.passUnretained(self).toOpaque(), UInt32(size), data)
        case .thread:
            guard requests.push(tag: 0, data, count: size) else { return LV2_WORKER_ERR_NO_SPACE }
            sem_post(&semaphore)
            return LV2_WORKER_SUCCESS
        }
    }

    private static let respond: LV2_Worker_Respond_Function = { handle, size, data in
        guard let handle else { return LV2_WORKER_ERR_UNKNOWN }
        return Unmanaged<LV2Worker>.fromOpaque(handle)._withUnsafeGuaranteedRef {
            $0.responses.push(tag: 0, data, count: Int(size)) ? LV2_WORKER_SUCCESS : LV2_WORKER_ERR_NO_SPACE
        }
    }

    private func serve() {
        while true {
            while sem_wait(&semaphore) != 0 {}
            if stopping.load(ordering: .acquiring) { break }
            while let record = requests.pop(into: requestScratch, capacity: Self.recordCapacity) {
                guard record.count <= Self.recordCapacity, let work = interface?.pointee.work else { continue }
                _ = work(pluginHandle, Self.respond, Unmanaged.passUnretained(self).toOpaque(), UInt32(record.count), requestScratch)
            }
        }
        finished.signal()
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
    var hasPendingRequests: Bool { !requests.isEmpty }
    var hasPendingResponses: Bool { !responses.isEmpty }
}
