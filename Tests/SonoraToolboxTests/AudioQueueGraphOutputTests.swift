import Foundation
import SonoraCore
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
