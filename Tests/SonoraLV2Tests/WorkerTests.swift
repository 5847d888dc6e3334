import CLilv
import Foundation
import Synchronization
import Testing
@testable import SonoraLV2

/// worker:schedule in both modes, through the same C entry points a plugin calls.
@Suite struct WorkerTests {
    /// A plugin-side worker: work() doubles the request and responds; work_response() records it.
    final class Recorder: @unchecked Sendable {
        let responses = Mutex<[UInt32]>([])
        let workThreads = Mutex<Set<UInt>>([])
    }

    static func interface() -> LV2_Worker_Interface {
        LV2_Worker_Interface(
            work: { handle, respond, respondHandle, size, data in
                let recorder = Unmanaged<Recorder>.fromOpaque(handle!).takeUnretainedValue()
                let thread = UInt(pthread_self())
                recorder.workThreads.withLock { $0.insert(thread) }
                var doubled = data!.load(as: UInt32.self) * 2
                return respond!(respondHandle, 4, &doubled)
            },
            work_response: { handle, _, data in
                let recorder = Unmanaged<Recorder>.fromOpaque(handle!).takeUnretainedValue()
                recorder.responses.withLock { $0.append(data!.load(as: UInt32.self)) }
                return LV2_WORKER_SUCCESS
            },
            end_run: nil)
    }

    @Test func inlineWorkIsAnsweredAfterTheSameRun() throws {
        let recorder = Recorder()
        let worker = try LV2Worker(mode: .inline)
        var interface = Self.interface()
        worker.attach(interface: withUnsafePointer(to: &interface) { $0 }, handle: Unmanaged.passUnretained(recorder).toOpaque())
        var request: UInt32 = 21
        let status = worker.feature.pointee.schedule_work(worker.feature.pointee.handle, 4, &request)
        #expect(status == LV2_WORKER_SUCCESS)
        worker.afterRun()
        #expect(recorder.responses.withLock { $0 } == [42])
        withExtendedLifetime(interface) {}
    }

    @Test func threadedWorkRunsOffTheCallingThread() async throws {
        let recorder = Recorder()
        let worker = try LV2Worker(mode: .thread)
        let interface = UnsafeMutablePointer<LV2_Worker_Interface>.allocate(capacity: 1)
        interface.initialize(to: Self.interface())
        defer { interface.deallocate() }
        worker.attach(interface: UnsafePointer(interface), handle: Unmanaged.passUnretained(recorder).toOpaque())
        var schedulingThreads = Set<UInt>()
        for value in UInt32(1)...5 {
            schedulingThreads.insert(UInt(pthread_self()))
            var request = value
            #expect(worker.feature.pointee.schedule_work(worker.feature.pointee.handle, 4, &request) == LV2_WORKER_SUCCESS)
        }
        var waited = 0
        while recorder.responses.withLock({ $0.count }) < 5 && waited < 400 {
            try await Task.sleep(nanoseconds: 5_000_000)
            worker.afterRun()
            waited += 1
        }
        worker.stop()
        #expect(recorder.responses.withLock { $0 } == [2, 4, 6, 8, 10])
        let workThreads = recorder.workThreads.withLock { $0 }
        #expect(workThreads.count == 1)
        #expect(workThreads.isDisjoint(with: schedulingThreads), "work ran on the scheduling thread")
    }
}
