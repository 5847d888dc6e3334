import Foundation
import SonoraCore
import SonoraDSP
import SonoraUnits

/// `sonora-bench graph`: what the unit model and the graph cost on top of the
/// DSP they run. Each case renders the same work twice in one run — through
/// an `AudioGraph` of units, and as a hand-written loop over the same kernels
/// with no graph — and reports the graph's time against the loop's × 1.05
/// (the goal: under 5 % overhead).
struct GraphBenchmark {
    var cycles: Int
    var trials: Int
    let frames = 128

    func run() throws -> (rows: [BenchmarkRow], notes: [String]) {
        var chainGraph: [Double] = []
        var chainLoop: [Double] = []
        var mixerGraph: [Double] = []
        var mixerLoop: [Double] = []
        for _ in 0..<trials {
            chainGraph.append(try gainChainThroughGraph())
            chainLoop.append(try gainChainByHand())
            mixerGraph.append(try mixerThroughGraph())
            mixerLoop.append(try mixerByHand())
        }
        let chain = (median(chainGraph), median(chainLoop))
        let mixer = (median(mixerGraph), median(mixerLoop))
        // Goals are judged on ratios within a trial (graph and loop run back to back),
        // which the machine's changing load affects alike.
        let chainRatio = median(zip(chainGraph, chainLoop).map { $0 / $1 })
        let mixerRatio = median(zip(mixerGraph, mixerLoop).map { $0 / $1 })
        let rows = [
            BenchmarkRow(
                metric: "64 gain units in a chain ÷ hand-written loop, 128-frame stereo cycle", unit: "ratio",
                sonora: chainRatio, anchor: "hand-written loop + 5 %", anchorValue: 1.05, better: .lower),
            BenchmarkRow(
                metric: "cost per node per cycle (64-unit chain)", unit: "ns", sonora: chain.0 * 1000 / 64,
                anchor: "hand-written loop per node × 1.05", anchorValue: chain.1 * 1000 / 64 * 1.05, better: .lower),
            BenchmarkRow(
                metric: "mixer with 64 stereo inputs ÷ hand-written loop, 128-frame cycle", unit: "ratio",
                sonora: mixerRatio, anchor: "hand-written loop + 5 %", anchorValue: 1.05, better: .lower),
        ]
        let notes = [
            "median of \(trials) trials of \(cycles) cycles each; graph and loop back to back in each trial",
            String(format: "  chain: graph %.2f µs, hand loop %.2f µs per cycle (overhead %+.1f %%)", chain.0, chain.1, (chain.0 / chain.1 - 1) * 100),
            String(format: "  mixer: graph %.2f µs, hand loop %.2f µs per cycle (overhead %+.1f %%)", mixer.0, mixer.1, (mixer.0 / mixer.1 - 1) * 100),
        ]
        return (rows, notes)
    }

    /// Microseconds per cycle of `body`, over `cycles` cycles after a warm-up.
    func time(_ body: (Int) -> Void) -> Double {
        for cycle in 0..<100 { body(cycle) }
        let start = HostTime.now
        for cycle in 0..<cycles { body(cycle) }
        return Double(HostTime.now - start) / 1000 / Double(cycles)
    }

    final class Constant: RenderCallbackTarget {
        override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
            for channel in 0..<request.pointee.buffers.channelCount {
                request.pointee.buffers.samples(channel).update(repeating: 0.5, count: request.pointee.frameCount)
            }
            return .noError
        }
    }

    func gainChainThroughGraph() throws -> Double {
        let graph = AudioGraph()
        let source = Constant()
        var previous: AudioGraph.Node?
        for index in 0..<64 {
            let gain = GainUnit()
            try gain.setParameter(GainUnit.Parameter.gain, to: index % 2 == 0 ? 0.1 : -0.1)
            try gain.setMaximumFramesPerSlice(frames)
            let node = graph.addNode(gain)
            if let previous { try graph.connect(previous, bus: 0, to: node, input: 0) } else { try graph.setRenderCallback(source, node: node, input: 0) }
            previous = node
        }
        let output = GenericOutputUnit()
        try output.setMaximumFramesPerSlice(frames)
        let head = graph.addNode(output)
        try graph.connect(previous!, bus: 0, to: head, input: 0)
        try graph.initialize()
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames)
        let list = buffers.list
        return time { cycle in
            var flags = RenderActionFlags()
            _ = graph.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(cycle * frames)), frameCount: frames, into: list)
        }
    }

    /// The same work by hand: fill the source, then 64 gain copies ping-ponging
    /// between two buffers (dB to linear once per unit per cycle, as the unit does),
    /// and the output's copy.
    func gainChainByHand() throws -> Double {
        let a = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames)
        let b = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames)
        let out = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames)
        let gains = (0..<64).map { Float($0 % 2 == 0 ? 0.1 : -0.1) }
        return gains.withUnsafeBufferPointer { gains in
            time { _ in
                for channel in 0..<2 { a.list.samples(channel).update(repeating: 0.5, count: frames) }
                var from = a.list
                var to = b.list
                for node in 0..<64 {
                    let gain = Decibels.toLinear(gains[node])
                    for channel in 0..<2 { Mixing.copy(from.samples(channel), to: to.samples(channel), count: frames, gain: gain) }
                    swap(&from, &to)
                }
                out.list.copy(from: from)
            }
        }
    }

    func mixerThroughGraph() throws -> Double {
        let graph = AudioGraph()
        let mixer = MultiChannelMixerUnit(inputs: 64)
        try mixer.setMaximumFramesPerSlice(frames)
        let mixerNode = graph.addNode(mixer)
        let sources = (0..<64).map { _ in Constant() }
        // The loop meters every input and the output: the mixer must too (its metering is off by default, as Core Audio's).
        try mixer.setProperty(.meteringMode, scope: .output, element: 0, to: .flag(true))
        for (input, source) in sources.enumerated() {
            try mixer.setProperty(.meteringMode, scope: .input, element: input, to: .flag(true))
            try mixer.setParameter(MultiChannelMixerUnit.Parameter.volume, scope: .input, element: input, to: 0.5)
            try graph.setRenderCallback(source, node: mixerNode, input: input)
        }
        let output = GenericOutputUnit()
        try output.setMaximumFramesPerSlice(frames)
        let head = graph.addNode(output)
        try graph.connect(mixerNode, bus: 0, to: head, input: 0)
        try graph.initialize()
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames)
        let list = buffers.list
        return time { cycle in
            var flags = RenderActionFlags()
            _ = graph.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(cycle * frames)), frameCount: frames, into: list)
        }
    }

    /// The mixer's work by hand: fill 64 stereo inputs, meter each before and
    /// after its volume, sum with volume and balance, meter the sum, copy out.
    func mixerByHand() throws -> Double {
        let inputs = try (0..<64).map { _ in try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames) }
        let scratch = try OwnedAudioBufferList(channelCount: 1, frameCapacity: frames)
        let sum = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames)
        let out = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames)
        var meters = Array(repeating: LevelMeter(sampleRate: 48000), count: 64 * 4 + 2)
        return meters.withUnsafeMutableBufferPointer { meters in
            time { _ in
                for input in inputs {
                    for channel in 0..<2 { input.list.samples(channel).update(repeating: 0.5, count: frames) }
                }
                sum.list.clear()
                for (index, input) in inputs.enumerated() {
                    for channel in 0..<2 {
                        meters[index * 4 + channel].measure(input.list.samples(channel), count: frames)
                        Mixing.copy(input.list.samples(channel), to: scratch.list.samples(0), count: frames, gain: 0.5)
                        meters[index * 4 + 2 + channel].measure(scratch.list.samples(0), count: frames)
                        Mixing.add(scratch.list.samples(0), into: sum.list.samples(channel), count: frames, gain: 1)
                    }
                }
                for channel in 0..<2 { meters[256 + channel].measure(sum.list.samples(channel), count: frames) }
                out.list.copy(from: sum.list)
            }
        }
    }
}
