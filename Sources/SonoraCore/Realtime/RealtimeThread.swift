#if canImport(Glibc)
import Glibc
#endif
import CSonoraSystem
import Logging

/// How a realtime thread is to be started.
public struct RealtimeThreadOptions: Sendable {
    /// Name shown by `top -H` / `ps -L` (at most 15 bytes are kept).
    public var name: String
    /// SCHED_FIFO priority (1…99), or nil for normal scheduling.
    public var priority: Int32?
    /// CPU to pin the thread to, or nil to let the kernel choose.
    public var cpu: Int?
    /// Stack size; realtime threads get small stacks so `mlockall` locks little.
    public var stackSize: Int
    /// Flush denormals to zero on the thread (FTZ/DAZ), so decaying filters stay cheap.
    public var flushDenormals: Bool

    public init(
        name: String, priority: Int32? = 70, cpu: Int? = nil,
        stackSize: Int = 256 * 1024, flushDenormals: Bool = true
    ) {
        self.name = name
        self.priority = priority
        self.cpu = cpu
        self.stackSize = stackSize
        self.flushDenormals = flushDenormals
    }
}

/// A thread for audio work: SCHED_FIFO at a chosen priority where permitted
/// (falling back to normal scheduling with a logged warning), optional CPU
/// affinity, denormals flushed to zero.
public final class RealtimeThread: @unchecked Sendable {
    /// The scheduling the thread actually got.
    public enum Scheduling: Hashable, Sendable {
        case fifo(priority: Int32)
        case normal
    }

    public let name: String
    public let scheduling: Scheduling
    /// Why the requested realtime scheduling or affinity was not granted, if it was not.
    public let warnings: [String]
    private let handle: pthread_t
    private var joined = false

    private static let logger = Logger(label: "sonora.realtime")

    /// Starts `body` on a new thread.
    public init(_ options: RealtimeThreadOptions, body: @escaping @Sendable () -> Void) throws(AudioError) {
        var warnings: [String] = []
        let context = Unmanaged.passRetained(ThreadContext(options: options, body: body))
        var thread = pthread_t()
        var scheduling = Scheduling.normal
        var status: Int32 = -1

        // Pin through the attributes, so the thread never runs a moment elsewhere.
        var cpu = options.cpu
        if let wanted = cpu, wanted < 0 || wanted >= Int(sysconf(Int32(_SC_NPROCESSORS_CONF))) {
            warnings.append("cannot pin '\(options.name)' to CPU \(wanted): this machine has \(sysconf(Int32(_SC_NPROCESSORS_CONF))) CPUs")
            cpu = nil
        }
        if let priority = options.priority {
            status = Self.create(&thread, options, fifoPriority: priority, cpu: cpu, context)
            if status == 0 {
                scheduling = .fifo(priority: priority)
            } else {
                warnings.append(
                    "SCHED_FIFO priority \(priority) not granted for '\(options.name)' "
                        + "(\(String(cString: strerror(status)))); running with normal scheduling")
            }
        }
        if status != 0 {
            status = Self.create(&thread, options, fifoPriority: nil, cpu: cpu, context)
        }
        if status == EINVAL, let wanted = cpu {
            warnings.append("cannot pin '\(options.name)' to CPU \(wanted): \(String(cString: strerror(status)))")
            status = Self.create(&thread, options, fifoPriority: nil, cpu: nil, context)
        }
        guard status == 0 else {
            context.release()
            throw AudioError(.parameterError, "cannot start thread '\(options.name)': \(String(cString: strerror(status)))")
        }
        for warning in warnings { Self.logger.warning("\(warning)") }
        handle = thread
        name = options.name
        self.scheduling = scheduling
        self.warnings = warnings
    }

    deinit {
        if !joined { pthread_detach(handle) }
    }

    /// Waits for the thread's body to return.
    public func join() {
        guard !joined else { return }
        pthread_join(handle, nil)
        joined = true
    }

    /// Locks the process's memory (`mlockall`) so what the realtime path has touched never
    /// pages out. Locked on fault (`MCL_ONFAULT`): only pages touched — by the warm-up before
    /// the device starts, and later — are resident and locked, not every page of every mapped
    /// library (FFmpeg's codecs, ICU's data: ~200 MB resident otherwise). Realtime threads
    /// prefault their stacks. Kernels before 4.4 lock everything. Returns a warning when not permitted.
    ///
    /// The code pages mapped so far are dropped first (`sonora_drop_mapped_code`): start-up
    /// code, and the 64 KB the kernel maps around each code fault, would otherwise stay
    /// locked — 16 MB of the binary's 28 MB of code for `sonora run Configs/default.yaml`.
    /// The code the process runs from here on faults back in (from the page cache) and is locked.
    @discardableResult
    public static func lockMemory() -> String? {
        sonora_drop_mapped_code()
        if sonora_lock_memory_on_fault() == 0 { return nil }
        if sonora_errno() == EINVAL, mlockall(MCL_CURRENT | MCL_FUTURE) == 0 { return nil }
        let warning = "mlockall failed: \(String(cString: strerror(sonora_errno()))); memory may page out"
        logger.warning("\(warning)")
        return warning
    }

    /// Undoes `lockMemory()`.
    public static func unlockMemory() {
        munlockall()
    }

    /// The calling thread's scheduling, as the kernel reports it.
    public static var currentScheduling: Scheduling {
        var policy: Int32 = 0
        var parameters = sched_param()
        pthread_getschedparam(pthread_self(), &policy, &parameters)
        return policy == SCHED_FIFO ? .fifo(priority: parameters.sched_priority) : .normal
    }

    /// The CPU the calling thread is running on.
    public static var currentCPU: Int { Int(sonora_current_cpu()) }

    /// True if the calling thread flushes denormals to zero.
    public static var currentFlushesDenormals: Bool { sonora_denormals_flushed() != 0 }

    private static func create(
        _ thread: inout pthread_t, _ options: RealtimeThreadOptions, fifoPriority: Int32?, cpu: Int?,
        _ context: Unmanaged<ThreadContext>
    ) -> Int32 {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setstacksize(&attributes, max(options.stackSize, Int(PTHREAD_STACK_MIN)))
        if let cpu {
            let result = sonora_thread_attr_set_affinity(&attributes, Int32(cpu))
            if result != 0 { return result }
        }
        if let priority = fifoPriority {
            // Without EXPLICIT_SCHED the new thread silently inherits the creator's policy.
            pthread_attr_setinheritsched(&attributes, Int32(PTHREAD_EXPLICIT_SCHED))
            pthread_attr_setschedpolicy(&attributes, SCHED_FIFO)
            var parameters = sched_param(sched_priority: priority)
            pthread_attr_setschedparam(&attributes, &parameters)
        }
        return pthread_create(&thread, &attributes, { raw in
            let context = Unmanaged<ThreadContext>.fromOpaque(raw!).takeRetainedValue()
            context.run()
            return nil
        }, context.toOpaque())
    }
}

private final class ThreadContext {
    let options: RealtimeThreadOptions
    let body: @Sendable () -> Void

    init(options: RealtimeThreadOptions, body: @escaping @Sendable () -> Void) {
        self.options = options
        self.body = body
    }

    func run() {
        _ = sonora_thread_set_name(options.name)
        if options.flushDenormals { _ = sonora_flush_denormals() }
        // Half the stack (the top holds the thread's TLS): memory locked on fault would
        // otherwise fault each new stack page in on the realtime path.
        sonora_prefault_stack(max(options.stackSize, Int(PTHREAD_STACK_MIN)) / 2)
        body()
    }
}
