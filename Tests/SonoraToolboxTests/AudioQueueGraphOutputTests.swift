import Foundation
import SonoraCore
import SonoraHAL
import SonoraHALTestSupport
import SonoraTestSupport
import SonoraToolbox
import SonoraUnits
import Testing

/// Queues mixed into the caller's graph (`AudioQueueOutput(graph:node:input:…)`): the mix is
/// a node input's render callback, the graph's head pulls it (here: offline render, slice by
/// slice, the queues' threads brought to a fixed point between slices).
@Suite("Queues into the caller's graph", .serialized)
struct AudioQueueGraphOutputTests {
    func queue(rate: Double, channels: Int) throws -> AudioQueue {
        try AudioQueue(format: .linearPCM(sampleRate: rate, channels: channels, sample: .float32)) { _, _ in }
    }

    /// Renders `frames` frames from the graph's head in 256-frame slices, a barrier on the
    /// queues' threads after each (the period a device would give them).
    func render(_ graph: AudioGraph, frames: Int, queues: [AudioQueue]) throws -> [[Float]] {
        var result: [[Float]] = [[], []]
        for queue in queues { _ = try queue.prime() }
        for start in stride(from: 0, to: frames, by: 256) {
            let slice = try graph.renderOffline(frameCount: 256, sliceFrames: 256, startSampleTime: Double(start))
            for channel in 0..<2 { result[channel] += slice[channel] }
            for queue in queues { _ = try queue.prime() }
        }
        return result
    }

    /// queues → [mix] → gain (−6 dB) → generic output.
    func gainGraph(decibels: Float) throws -> (AudioGraph, AudioGraph.Node, GainUnit) {
        let graph = AudioGraph()
        let gain = GainUnit()
        let gainNode = graph.addNode(gain)
        let out = graph.addNode(GenericOutputUnit())
        try graph.connect(gainNode, bus: 0, to: out, input: 0)
        try gain.setParameter(GainUnit.Parameter.gain, scope: .global, element: 0, to: decibels)
        return (graph, gainNode, gain)
    }

    @Test("two queues into a gain node before the graph's output: the graph renders the gain applied to their sum")
    func twoQueuesThroughGain() throws {
        let (graph, gainNode, _) = try gainGraph(decibels: -6)
        let output = try AudioQueueOutput(graph: graph, node: gainNode, input: 0, sampleRate: 48000, channels: 2)
        try graph.initialize()
        #expect(output.unit == nil && output.graph === graph && output.deviceName == "\(graph.name(gainNode)) input 0")
        let first = try queue(rate: 48000, channels: 2), second = try queue(rate: 48000, channels: 1)
        defer { [first, second].forEach { try? $0.dispose(immediate: true) } }
        for queue in [first, second] { try queue.setOutput(output) }
        #expect(output.queueCount == 2)
        let frames = 6000
        let stereo = (0..<frames * 2).map { Float(($0 * 7) % 61 - 30) / 1024 }
        let mono = TestSignal.sine(frequency: 440, sampleRate: 48000, count: frames, amplitude: 0.25)
        try enqueue(stereo, on: first)
        try enqueue(mono, on: second)
        for queue in [first, second] {
            try queue.prime()
            try queue.start()
            try queue.stop(immediate: false)
        }
        let played = try render(graph, frames: 8192, queues: [first, second])
        #expect(!first.isRunning && !second.isRunning)
        let factor = Float(pow(10, -6.0 / 20))
        for channel in 0..<2 {
            let expected = (0..<frames).map { (stereo[$0 * 2 + channel] + mono[$0]) * factor }
            let worst = zip(played[channel].prefix(frames), expected).map { abs($0 - $1) }.max() ?? 0
            #expect(worst < 1e-6, "channel \(channel): off by \(worst)")
            #expect(played[channel][frames...].allSatisfy { $0 == 0 })
        }
    }

    @Test("a 44.1 kHz queue into a 48 kHz graph: converted by the queue, 1 kHz through the node, ⌈44100 × 48000 ÷ 44100⌉ frames")
    func otherRateIntoGraph() throws {
        let (graph, gainNode, _) = try gainGraph(decibels: 0)
        try graph.initialize()
        let output = try AudioQueueOutput(graph: graph, node: gainNode, sampleRate: 48000, channels: 2)
        let slow = try queue(rate: 44100, channels: 1)
        defer { try? slow.dispose(immediate: true) }
        try slow.setOutput(output)
        try enqueue(TestSignal.sine(frequency: 1000, sampleRate: 44100, count: 44100, amplitude: 0.5), on: slow)
        try slow.prime()
        try slow.start()
        try slow.stop(immediate: false)
        let played = try render(graph, frames: 50176, queues: [slow])
        #expect(!slow.isRunning)
        #expect(played[0][47990..<48000].contains { $0 != 0 } && played[0][48000...].allSatisfy { $0 == 0 })
        let frequency = SignalMeasurement.frequency(of: Array(played[1][500..<47500]), sampleRate: 48000)
        #expect(abs(frequency - 1000) < 0.2, "\(frequency) Hz")
    }

    @Test("live: the graph's own I/O unit (a scripted device) pulls the queues through the gain node; a 48 kHz and a 44.1 kHz queue; no heap call in the I/O cycles")
    func graphOnItsOwnDevice() throws {
        let device = try PlayedTap(channels: 2, capacity: 20000)
        let io = IOUnit()
        try io.setDevice(device)
        let graph = AudioGraph()
        let gain = GainUnit()
        try gain.setParameter(GainUnit.Parameter.gain, scope: .global, element: 0, to: -6)
        let gainNode = graph.addNode(gain)
        let ioNode = graph.addNode(io)
        try graph.connect(gainNode, bus: 0, to: ioNode, input: 0)
        let output = try AudioQueueOutput(graph: graph, node: gainNode, sampleRate: 48000, channels: 2)
        try graph.initialize()
        try graph.start()
        defer { graph.stop() }
        #expect(output.isRunning)
        let native = try queue(rate: 48000, channels: 2), slow = try queue(rate: 44100, channels: 1)
        defer { [native, slow].forEach { try? $0.dispose(immediate: true) } }
        for queue in [native, slow] { try queue.setOutput(output) }
        func cycle(_ count: Int) throws {
            for _ in 0..<count {
                try device.run(cycles: 1)
                for queue in [native, slow] { _ = try queue.prime() }
            }
        }
        // Warm-up round, not counted (a first call may instantiate runtime metadata).
        for queue in [native, slow] {
            try enqueue([Float](repeating: 0.1, count: Int(queue.format.channelsPerFrame) * 300), on: queue)
            try queue.prime()
            try queue.start()
            try queue.stop(immediate: false)
        }
        try cycle(6)
        let warm = device.frames
        let frames = 4000
        let stereo = (0..<frames * 2).map { Float(($0 * 7) % 61 - 30) / 1024 }
        try enqueue(stereo.enumerated().map { $0.offset % 2 == 0 ? $0.element : 0 }, on: native)
        try enqueue([Float](repeating: 0.25, count: 4410), on: slow)
        for queue in [native, slow] {
            try queue.prime()
            try queue.start()
            try queue.stop(immediate: false)
        }
        device.countsAllocations = true
        try cycle(24)
        device.countsAllocations = false
        #expect(!native.isRunning && !slow.isRunning)
        #expect(device.allocations == 0, "\(device.allocations) heap calls in the I/O cycles")
        let played = device.played.map { Array($0.dropFirst(warm)) }
        let factor = Float(pow(10, -6.0 / 20))
        // Right: the 44.1 kHz queue alone (mono to both channels), 4410 → 4800 frames, × the gain.
        #expect(played[1][4799] != 0 && played[1][4800...].allSatisfy { $0 == 0 })
        #expect(abs(played[1][2400] - 0.25 * factor) < 1e-3, "\(played[1][2400])")
        // Left: the 48 kHz queue's samples plus the right's, × the gain.
        let worst = (0..<frames).map { abs(played[0][$0] - (stereo[$0 * 2] * factor + played[1][$0])) }.max() ?? 0
        #expect(worst < 1e-6, "off by \(worst)")
    }

    @Test("an initialized graph whose node input is not at the mix's format is refused, naming the node input")
    func mismatchedInputRefused() throws {
        let (graph, gainNode, _) = try gainGraph(decibels: 0)
        try graph.initialize()
        let error = #expect(throws: AudioError.self) {
            _ = try AudioQueueOutput(graph: graph, node: gainNode, sampleRate: 44100, channels: 2)
        }
        #expect(error?.code == .queueInvalidDevice)
        #expect(error?.message.contains("AudioQueueOutput: \(graph.name(gainNode)) input 0: the input takes") == true, "\(String(describing: error))")
    }
}
