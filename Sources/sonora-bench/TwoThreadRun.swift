import Foundation
import SonoraCore
import Synchronization

/// Runs a producer and a consumer on two threads (pinned to CPUs 0 and 1 when the
/// machine has two), released together, and returns the seconds until both end.
func timeTwoThreads(
    producer: @escaping @Sendable () -> Void,
    consumer: @escaping @Sendable () -> Void
) throws -> Double {
    let gate = GoGate()
    let pin = ProcessInfo.processInfo.activeProcessorCount >= 2
    let workers: [(body: @Sendable () -> Void, cpu: Int)] = [(producer, 0), (consumer, 1)]
    let threads = try workers.map { worker in
        let body = worker.body
        return try RealtimeThread(
            RealtimeThreadOptions(name: "bench-\(worker.cpu)", priority: nil, cpu: pin ? worker.cpu : nil)
        ) {
            gate.arriveAndWait()
            body()
        }
    }
    gate.waitForArrivals(2)
    let began = HostTime.now
    gate.open()
    threads.forEach { $0.join() }
    return Double(HostTime.now - began) / 1e9
}

/// Lets the measuring thread release both workers at once.
final class GoGate: Sendable {
    private let arrived = Atomic<Int>(0)
    private let opened = Atomic<Bool>(false)

    func arriveAndWait() {
        arrived.add(1, ordering: .releasing)
        while !opened.load(ordering: .acquiring) { sched_yield() }
    }

    func waitForArrivals(_ count: Int) {
        while arrived.load(ordering: .acquiring) < count { sched_yield() }
    }

    func open() { opened.store(true, ordering: .releasing) }
}

/// The median (upper median for an even count).
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
}
