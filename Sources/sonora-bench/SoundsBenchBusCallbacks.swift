import Foundation
import SonoraCore
import SonoraHAL
import SonoraUnits
import Synchronization

/// The anchor issue 18 names for many players: "64 bare render callbacks doing the same
/// decode-free copy" — what a Core Audio program does without players: a multichannel mixer
/// unit with one input bus per source, each bus fed by a plain render callback that converts
/// its source's 16-bit frames from memory, the mixer in front of the I/O unit on the same
/// kind of timer-paced null device as the players'.
extension SoundsBenchmark {
    /// `sources` render callbacks on the inputs of one `MultiChannelMixerUnit` (volume 1, pan
    /// centre: as a player at its defaults), the mixer into an I/O unit on a null device of the
    /// players' configuration, for `seconds`: the process's CPU and the seconds of the device's
    /// output. Every callback reads the same 16-bit block, each at its own place (as the
    /// one-callback anchor's sources).
    func measureBusCallbacks(sources: Int, samples: [Int16]) throws -> QueueBenchmark.CPUSample {
        let device = try AudioDevices.open(named: "null", configuration: AudioDeviceConfiguration(
            sampleRate: Int(Self.rate), periodFrames: period, inputChannels: 0, outputChannels: 2))
        let block = SoundsBenchSourceBlock(samples)
        let format = StreamFormat.canonical(sampleRate: Self.rate, channels: 2)
        let graph = AudioGraph()
        let io = IOUnit()
        try io.setDevice(device)
        let ioNode = graph.addNode(io)
        let mixer = MultiChannelMixerUnit(inputs: sources)
        try mixer.setStreamFormat(format, scope: .output, element: 0)
        let mixerNode = graph.addNode(mixer)
        let callbacks = (0..<sources).map { SoundsBenchBusCopy(block: block, start: $0 * 4801) }
        for (input, callback) in callbacks.enumerated() {
            try mixer.setStreamFormat(format, scope: .input, element: input)
            try graph.setRenderCallback(callback, node: mixerNode, input: input)
        }
        try graph.connect(mixerNode, bus: 0, to: ioNode, input: 0)
        try graph.initialize()
        defer {
            graph.stop()
            graph.uninitialize()
            device.stop()
            withExtendedLifetime((callbacks, block)) {}
        }
        try graph.start()
        usleep(300_000)  // past the start, as the players' run
        let cyclesBefore = device.statistics.cycles
        let cpuBefore = QueueBenchmark.processCPU()
        usleep(useconds_t(seconds * 1_000_000))
        let cpuAfter = QueueBenchmark.processCPU()
        let cycles = device.statistics.cycles - cyclesBefore
        let played = callbacks.reduce(0) { $0 + $1.frames }
        guard played > 0 else { throw BenchmarkFailure("the mixer's \(sources) render callbacks were never called") }
        return QueueBenchmark.CPUSample(cpuSeconds: cpuAfter - cpuBefore, audioSeconds: Double(cycles * period) / Self.rate,
                                        underruns: 0, xruns: device.statistics.xruns)
    }
}

/// One block of interleaved 16-bit stereo frames every bus callback reads (nobody writes it
/// after it is made), as the one-callback anchor's.
final class SoundsBenchSourceBlock: @unchecked Sendable {
    let samples: UnsafeMutableBufferPointer<Int16>

    init(_ source: [Int16]) {
        samples = .allocate(capacity: source.count)
        _ = samples.initialize(from: source)
    }

    deinit { samples.deallocate() }
}

/// A bare render callback on one mixer input: its source's next frames, Int16 interleaved →
/// Float32 per channel, straight from memory (the copy `QueueBenchBareCopy` does for one
/// source), round and round.
final class SoundsBenchBusCopy: RenderCallbackTarget, @unchecked Sendable {
    private let source: UnsafeMutableBufferPointer<Int16>
    private var position: Int
    private let played = Atomic<Int>(0)

    init(block: SoundsBenchSourceBlock, start frame: Int) {
        source = block.samples
        position = (frame * 2) % max(block.samples.count, 1)
    }

    var frames: Int { played.load(ordering: .relaxed) }

    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        let frames = request.pointee.frameCount
        let buffers = request.pointee.buffers
        let left = buffers.samples(0), right = buffers.samples(buffers.channelCount > 1 ? 1 : 0)
        let scale: Float = 1.0 / 32768
        var position = self.position
        for frame in 0..<frames {
            if position + 2 > source.count { position = 0 }
            left[frame] = Float(source[position]) * scale
            right[frame] = Float(source[position + 1]) * scale
            position += 2
        }
        self.position = position
        played.wrappingAdd(frames, ordering: .relaxed)
        return .noError
    }
}
