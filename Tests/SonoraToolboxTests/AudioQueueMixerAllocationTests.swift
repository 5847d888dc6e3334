import Foundation
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import SonoraToolbox
import SonoraUnits
import Synchronization
import Testing

/// A timer-paced null device whose I/O thread counts its own heap calls while `counting`.
final class CountingDevice: AudioDevice, @unchecked Sendable {
    let inner: TimerDevice
    let counting = Atomic<Bool>(false)
    let heapCalls = Atomic<Int>(0)
    let countedCycles = Atomic<Int>(0)
    let cycles = Atomic<Int>(0)
    private var procedure: IOProcedure?
    private lazy var target = Target(self)

    init(periodFrames: Int) throws {
        inner = try TimerDevice(configuration: AudioDeviceConfiguration(
            sampleRate: 48000, periodFrames: periodFrames, inputChannels: 0, outputChannels: 2, realtimePriority: nil), mode: .null)
    }

    var driver: String { "counting:null" }
    var format: DeviceFormat { inner.format }
    var isRunning: Bool { inner.isRunning }
    func start(_ procedure: IOProcedure) throws(AudioError) {
        self.procedure = procedure
        try inner.start(IOProcedure(target))
    }
    func stop() { inner.stop() }
    var statistics: DeviceStatistics { inner.statistics }
    func takeEvents() -> [DeviceEvent] { inner.takeEvents() }
    func resetLoad() { inner.resetLoad() }

    func waitForCycles(_ count: Int) {
        let until = cycles.load(ordering: .acquiring) + count
        for _ in 0..<10_000 where cycles.load(ordering: .acquiring) < until { usleep(500) }
    }

    private final class Target: IOCycleTarget, @unchecked Sendable {
        unowned(unsafe) let device: CountingDevice
        init(_ device: CountingDevice) { self.device = device }
        override func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
            guard let procedure = device.procedure else { return 0 }
            let counting = device.counting.load(ordering: .acquiring)
            if counting { AllocationCounter.begin() }
            let status = procedure.function(procedure.context, UnsafeMutableRawPointer(cycle))
            if counting {
                device.heapCalls.wrappingAdd(AllocationCounter.end(), ordering: .relaxed)
                device.countedCycles.wrappingAdd(1, ordering: .relaxed)
            }
            device.cycles.wrappingAdd(1, ordering: .releasing)
            return status
        }
    }
}

/// The mixer's render side makes no heap call while queues join, play, start at a host
/// time, pause, stop and leave — on a scripted device (cycles between the control calls)
/// and on a device running its own I/O thread (control calls racing the cycles).
@Suite("No allocation in the queues' mixer", .serialized, .enabled(if: AllocationCounter.isAvailable))
struct AudioQueueMixerAllocationTests {
    func queue(channels: Int, refill: SendableBox<Bool>) throws -> AudioQueue {
        let queue = try AudioQueue(format: .linearPCM(sampleRate: 48000, channels: channels, sample: .int16)) { queue, buffer in
            guard refill.value else { return }
            try? queue.enqueue(buffer)
        }
        try queue.setDecodeBufferSizeFrames(4096)
        return queue
    }

    func fill(_ queue: AudioQueue, buffers: Int = 3) throws {
        let channels = Int(queue.format.channelsPerFrame)
        for index in 0..<buffers {
            let buffer = try queue.allocateBuffer(byteCapacity: 1000 * channels * 2)
            buffer.fill(with: (0..<1000 * channels).map { Int16(($0 * 31 + index * 7) % 2000 - 1000) }.withUnsafeBytes { Array($0) })
            try queue.enqueue(buffer)
        }
    }

    @Test("scripted device: join, play, start at a host time, pause, resume, stop, leave — no heap call in the cycles")
    func scripted() throws {
        let refill = SendableBox(true)
        let device = try PlayedTap(channels: 2, capacity: 4)
        let output = try AudioQueueOutput(device: device)
        let queues = try [queue(channels: 2, refill: refill), queue(channels: 1, refill: refill), queue(channels: 2, refill: refill)]
        defer { queues.forEach { try? $0.dispose(immediate: true) } }
        func round(counted: Bool) throws {
            device.countsAllocations = counted
            try queues[0].setOutput(output)
            try fill(queues[0])
            try queues[0].prime()
            try queues[0].start()
            try device.run(cycles: 4)
            try queues[1].setOutput(output)
            try fill(queues[1])
            try queues[1].prime()
            let at = try queues[0].deviceNearestStartTime()
            try queues[1].start(atHostTime: HostTime(nanoseconds: at.hostTime))
            try device.run(cycles: 4)
            try queues[2].setOutput(output)
            try fill(queues[2])
            try queues[2].prime()
            try queues[2].start(atDeviceSampleTime: Int(at.sampleTime) + 3000)
            for cycle in 0..<40 {
                if cycle == 10 { try queues[1].pause() }
                if cycle == 14 { try queues[1].start() }
                try device.run(cycles: 1)
                for queue in queues where queue.isRunning { try queue.prime() }
            }
            try queues[0].stop(immediate: true)
            try device.run(cycles: 2)
            try queues[0].setOutput(nil)
            try device.run(cycles: 2)
            refill.value = false
            try queues[1].stop(immediate: false)
            // What is queued plays out, then the device's buffer (IsRunning goes false after it).
            for _ in 0..<60 where queues[1].isRunning {
                try device.run(cycles: 1)
                _ = try queues[1].prime()
            }
            try queues[2].stop(immediate: true)
            try queues[1].setOutput(nil)
            try device.run(cycles: 2)
            try queues[2].setOutput(nil)
            refill.value = true
        }
        try round(counted: false)  // warm-up: every path once before counting
        try round(counted: true)
        #expect(device.allocations == 0, "\(device.allocations) heap calls in the I/O cycles")
    }

    @Test("a device on its own I/O thread: four queues join, start, pause, stop and leave while it runs — no heap call on the I/O thread")
    func concurrent() throws {
        let refill = SendableBox(true)
        let device = try CountingDevice(periodFrames: 128)
        let output = try AudioQueueOutput(device: device)
        let queues = try (0..<4).map { try queue(channels: 1 + $0 % 2, refill: refill) }
        defer {
            queues.forEach { try? $0.dispose(immediate: true) }
            device.stop()
        }
        func round() throws {
            for (index, queue) in queues.enumerated() {
                try queue.setOutput(output)
                try fill(queue)
                try queue.prime()
                if index % 2 == 0 { try queue.start() } else { try queue.start(atHostTime: HostTime.now + 3_000_000) }
                device.waitForCycles(2)
            }
            try queues[1].pause()
            device.waitForCycles(2)
            try queues[1].start()
            device.waitForCycles(4)
            try queues[2].stop(immediate: false)
            refill.value = false
            for _ in 0..<5000 where queues[2].isRunning { usleep(1000) }  // plays out (bounded wait)
            refill.value = true
            for (index, queue) in queues.enumerated() {
                if queue.isRunning { try queue.stop(immediate: true) }
                device.waitForCycles(1)
                try queue.setOutput(nil)
                // (The last queue out stops the device.)
                if index < queues.count - 1 { device.waitForCycles(1) }
            }
        }
        try round()  // warm-up (the device stopped with the last queue; it starts again)
        try round()
        device.counting.store(true, ordering: .releasing)
        for _ in 0..<5 { try round() }
        device.counting.store(false, ordering: .releasing)
        #expect(device.countedCycles.load(ordering: .relaxed) > 20)
        #expect(device.heapCalls.load(ordering: .relaxed) == 0, "\(device.heapCalls.load(ordering: .relaxed)) heap calls on the I/O thread")
    }
}
