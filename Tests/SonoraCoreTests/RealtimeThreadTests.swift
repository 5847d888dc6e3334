import Foundation
import SonoraCore
import Synchronization
import Testing

@Suite("RealtimeThread", .serialized)
struct RealtimeThreadTests {
    final class Observation: @unchecked Sendable {
        var scheduling: RealtimeThread.Scheduling = .normal
        var flushesDenormals = false
        var denormalProduct: Float = -1
        var name = ""
        var cpu = -1
    }

    @Test func reportsTheSchedulingTheKernelGave() throws {
        let seen = Observation()
        let thread = try RealtimeThread(RealtimeThreadOptions(name: "sonora-test-rt", priority: 10, cpu: 0)) {
            seen.scheduling = RealtimeThread.currentScheduling
            seen.flushesDenormals = RealtimeThread.currentFlushesDenormals
            // The smallest denormal times two: 2.8e-45 normally, 0 with denormals-are-zero.
            var operands: [Float] = [Float(bitPattern: 1), 2]
            withUnsafeMutablePointer(to: &operands) { _ in }  // keep the optimizer from folding it
            seen.denormalProduct = operands[0] * operands[1]
            seen.name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            seen.cpu = RealtimeThread.currentCPU
        }
        thread.join()
        #expect(seen.scheduling == thread.scheduling)
        if getuid() == 0 {
            // Root may use SCHED_FIFO: the request must have been granted.
            #expect(thread.scheduling == .fifo(priority: 10))
            #expect(thread.warnings.isEmpty)
        } else if thread.scheduling == .normal {
            #expect(thread.warnings.contains { $0.contains("SCHED_FIFO priority 10 not granted") })
        }
        #expect(seen.flushesDenormals)
        #expect(seen.denormalProduct == 0)
        #expect(seen.name == "sonora-test-rt")
        if thread.warnings.isEmpty { #expect(seen.cpu == 0) }
    }

    @Test func normalSchedulingWhenNoPriorityIsAsked() throws {
        let seen = Observation()
        let thread = try RealtimeThread(RealtimeThreadOptions(name: "a-very-long-thread-name", priority: nil, flushDenormals: false)) {
            seen.scheduling = RealtimeThread.currentScheduling
            seen.flushesDenormals = RealtimeThread.currentFlushesDenormals
            seen.name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        }
        thread.join()
        thread.join()  // a second join is harmless
        #expect(thread.scheduling == .normal && seen.scheduling == .normal)
        #expect(!seen.flushesDenormals)
        #expect(seen.name == "a-very-long-thr")  // the kernel keeps 15 bytes
    }

    @Test func impossiblePriorityFallsBackWithAWarning() throws {
        let ran = Atomic<Bool>(false)
        let thread = try RealtimeThread(RealtimeThreadOptions(name: "bad-priority", priority: 500)) {
            ran.store(true, ordering: .relaxed)
        }
        thread.join()
        let didRun = ran.load(ordering: .relaxed)
        #expect(didRun)
        #expect(thread.scheduling == .normal)
        #expect(thread.warnings.first?.contains("SCHED_FIFO priority 500 not granted") == true)
    }

    @Test func lockMemoryLocksThePagesOrSaysWhy() throws {
        func lockedKilobytes() -> Int {
            let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix("VmLck:") } ?? ""
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
        }
        let warning = RealtimeThread.lockMemory()
        defer { RealtimeThread.unlockMemory() }
        if getuid() == 0 {
            #expect(warning == nil)
            #expect(lockedKilobytes() > 0)
        } else if let warning {
            #expect(warning.hasPrefix("mlockall failed"))
        }
        RealtimeThread.unlockMemory()
        #expect(lockedKilobytes() == 0)
    }

    @Test func impossibleAffinityIsAWarningNotAFailure() throws {
        let thread = try RealtimeThread(RealtimeThreadOptions(name: "bad-cpu", priority: nil, cpu: 4096)) {}
        thread.join()
        #expect(thread.warnings.contains { $0.contains("cannot pin 'bad-cpu' to CPU 4096: this machine has") })
    }
}
