import Foundation
import SonoraCore
import SonoraLV2
import SonoraUnits

/// `sonora-bench scale`: how the cost of one unit of work grows with the amount of work —
/// per node for chains of gain units in an `AudioGraph`, per input of a mixer, per linked-up
/// LV2 instance, per audio queue and per player on one device. A flat line is the goal: the
/// cost per unit at the largest size is judged against the case's smallest size + 10 %.
struct ScaleBenchmark {
    /// One line of the plot: a cost per unit at each size.
    struct Series: Codable {
        var name: String
        /// What one unit is (node, input, instance, queue, player).
        var unitName: String
        /// What the cost is (e.g. "ns per node per 128-frame cycle").
        var costUnit: String
        var sizes: [Int]
        var costs: [Double]

        enum CodingKeys: String, CodingKey {
            case name, sizes, costs
            case unitName = "unit_name"
            case costUnit = "cost_unit"
        }
    }

    var quick: Bool
    var trials: Int
    /// Seconds each queue/player count plays on the null device.
    var deviceSeconds: Double
    var lv2Plugin: String
    let frames = 128

    var graphSizes: [Int] { quick ? [1, 16, 64] : [1, 16, 64, 256, 1024] }
    var mixerSizes: [Int] { quick ? [2, 16] : [2, 4, 8, 16, 32, 64, 128, 256] }
    var lv2Sizes: [Int] { quick ? [1, 4] : [1, 2, 4, 8, 16, 32, 64, 128] }
    var deviceSizes: [Int] { quick ? [1, 4] : [1, 4, 16, 64] }
    /// Node renders per measurement (so small graphs run many cycles, large ones few).
    var renderBudget: Int { quick ? 20_000 : 400_000 }

    func run(progress: (String) -> Void) throws -> (rows: [BenchmarkRow], notes: [String], series: [Series]) {
        var series: [Series] = []
        var notes = [
            "median of \(trials) trials per size; \(frames)-frame stereo cycles unless said; queues and players: process CPU on a timer-paced null device (256-frame periods), \(deviceSeconds) s per count"
        ]
        progress("gain chains in a graph: \(graphSizes.map(String.init).joined(separator: ", ")) nodes …")
        series.append(
            Series(
                name: "graph: chain of gain units", unitName: "node", costUnit: "ns per node per \(frames)-frame cycle",
                sizes: graphSizes, costs: try graphSizes.map { try perUnit(size: $0, build: gainChain) }))
        progress("mixer inputs: \(mixerSizes.map(String.init).joined(separator: ", ")) …")
        series.append(
            Series(
                name: "mixer: inputs of one MultiChannelMixerUnit", unitName: "input",
                costUnit: "ns per input per \(frames)-frame cycle", sizes: mixerSizes,
                costs: try mixerSizes.map { try perUnit(size: $0, build: mixer) }))
        progress("LV2 instances (\(lv2Plugin)): \(lv2Sizes.map(String.init).joined(separator: ", ")) …")
        do {
            let costs = try lv2Sizes.map { try perUnit(size: $0, build: lv2Chain) }
            series.append(
                Series(
                    name: "LV2: instances of \(lv2Plugin.split(separator: "/").last.map(String.init) ?? lv2Plugin) in a chain",
                    unitName: "instance", costUnit: "ns per instance per \(frames)-frame cycle", sizes: lv2Sizes, costs: costs))
        } catch {
            notes.append("  LV2 row left out: \(error)")
        }
        progress("audio queues on one device: \(deviceSizes.map(String.init).joined(separator: ", ")) …")
        series.append(
            Series(
                name: "queues: AudioQueues on one device", unitName: "queue", costUnit: "ns CPU per queue per 256-frame period",
                sizes: deviceSizes, costs: try deviceSizes.map { try queueCost(count: $0) }))
        progress("players on one device: \(deviceSizes.map(String.init).joined(separator: ", ")) …")
        series.append(
            Series(
                name: "players: AudioPlayers on one device", unitName: "player", costUnit: "ns CPU per player per 256-frame period",
                sizes: deviceSizes, costs: try playerCosts(deviceSizes)))

        var rows: [BenchmarkRow] = []
        for line in series {
            guard let first = line.costs.first, let firstSize = line.sizes.first else { continue }
            for (size, cost) in zip(line.sizes, line.costs) {
                rows.append(
                    BenchmarkRow(
                        metric: "\(line.name), \(size) \(line.unitName)\(size == 1 ? "" : "s"): cost per \(line.unitName)",
                        unit: "ns", sonora: cost,
                        anchor: "cost per \(line.unitName) at \(firstSize) + 10 % (flat)", anchorValue: first * 1.1,
                        better: .lower))
            }
            notes.append(
                "  \(line.name) (\(line.costUnit)): "
                    + zip(line.sizes, line.costs).map { String(format: "%d → %.0f", $0, $1) }.joined(separator: ", "))
        }
        return (rows, notes, series)
    }

    // MARK: Graphs rendered offline

    /// A graph of `size` units of work and the buffer it renders into.
    typealias Built = (graph: AudioGraph, output: AudioBufferList, keep: [AnyObject])

    /// Nanoseconds per unit per cycle: the median over trials of a graph of `size` units.
    func perUnit(size: Int, build: (Int) throws -> Built) throws -> Double {
        let built = try build(size)
        defer { built.graph.uninitialize() }
        let cycles = max(20, renderBudget / size)
        var times: [Double] = []
        var cycle = 0
        func render(_ count: Int) {
            for _ in 0..<count {
                var flags = RenderActionFlags()
                _ = built.graph.render(
                    flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(cycle * frames)), frameCount: frames,
                    into: built.output)
                cycle += 1
            }
        }
        render(max(10, cycles / 10))  // warm-up: caches, page faults, first allocations off the clock
        for _ in 0..<trials {
            let start = HostTime.now
            render(cycles)
            times.append(Double(HostTime.now - start) / Double(cycles) / Double(size))
        }
        return median(times)
    }

    final class Constant: RenderCallbackTarget {
        override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
            for channel in 0..<request.pointee.buffers.channelCount {
                request.pointee.buffers.samples(channel).update(repeating: 0.25, count: request.pointee.frameCount)
            }
            return .noError
        }
    }

    func finish(_ graph: AudioGraph, last: AudioGraph.Node, channels: Int, keep: [AnyObject]) throws -> Built {
        let output = GenericOutputUnit()
        try output.setMaximumFramesPerSlice(frames)
        if channels != 2 {
            let format = StreamFormat.canonical(sampleRate: 48000, channels: channels)
            try output.setStreamFormat(format, scope: .input, element: 0)
            try output.setStreamFormat(format, scope: .output, element: 0)
        }
        let head = graph.addNode(output)
        try graph.connect(last, bus: 0, to: head, input: 0)
        try graph.initialize()
        let buffers = try OwnedAudioBufferList(channelCount: channels, frameCapacity: frames)
        return (graph, buffers.list, keep + [buffers])
    }

    func gainChain(_ size: Int) throws -> Built {
        let graph = AudioGraph()
        let source = Constant()
        var previous: AudioGraph.Node?
        for index in 0..<size {
            let gain = GainUnit()
            try gain.setParameter(GainUnit.Parameter.gain, to: index % 2 == 0 ? 0.1 : -0.1)
            try gain.setMaximumFramesPerSlice(frames)
            let node = graph.addNode(gain)
            if let previous {
                try graph.connect(previous, bus: 0, to: node, input: 0)
            } else {
                try graph.setRenderCallback(source, node: node, input: 0)
            }
            previous = node
        }
        return try finish(graph, last: previous!, channels: 2, keep: [source])
    }

    func mixer(_ inputs: Int) throws -> Built {
        let graph = AudioGraph()
        let mixer = MultiChannelMixerUnit(inputs: inputs)
        try mixer.setMaximumFramesPerSlice(frames)
        let node = graph.addNode(mixer)
        let sources = (0..<inputs).map { _ in Constant() }
        for (input, source) in sources.enumerated() {
            try mixer.setParameter(MultiChannelMixerUnit.Parameter.volume, scope: .input, element: input, to: 0.5)
            try graph.setRenderCallback(source, node: node, input: input)
        }
        return try finish(graph, last: node, channels: 2, keep: sources)
    }

    func lv2Chain(_ size: Int) throws -> Built {
        let graph = AudioGraph()
        var previous: AudioGraph.Node?
        var channels = 0
        let source = Constant()
        for _ in 0..<size {
            let unit = try LV2Unit(uri: lv2Plugin, options: .init(sampleRate: 48000, maximumFrames: frames, workerMode: .inline))
            guard unit.elementCount(.input) == 1 else {
                throw BenchmarkFailure("\(lv2Plugin) has \(unit.elementCount(.input)) input buses; the scale bench chains plugins with one")
            }
            channels = Int(try unit.streamFormat(scope: .output, element: 0).channelsPerFrame)
            let node = graph.addNode(unit)
            if let previous {
                try graph.connect(previous, bus: 0, to: node, input: 0)
            } else {
                try graph.setRenderCallback(source, node: node, input: 0)
            }
            previous = node
        }
        return try finish(graph, last: previous!, channels: channels, keep: [source])
    }

    // MARK: Queues and players on a device (process CPU, as sonora-bench queue / sounds measure)

    func queueCost(count: Int) throws -> Double {
        let benchmark = QueueBenchmark(seconds: deviceSeconds, rounds: 1, queues: count)
        let sample = try benchmark.measureShared(count: count, source: QueueBenchmark.sourceSamples(seconds: 2))
        return try perPeriod(sample, count: count, period: benchmark.period)
    }

    func playerCosts(_ counts: [Int]) throws -> [Double] {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sonora-bench-scale-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("loop.wav").path
        try SoundsBenchmark.writeWAV(path, samples: QueueBenchmark.sourceSamples(seconds: 2), channels: 2)
        return try counts.map { count in
            let benchmark = SoundsBenchmark(seconds: deviceSeconds, players: count)
            return try perPeriod(try benchmark.measurePlayers(path), count: count, period: benchmark.period)
        }
    }

    func perPeriod(_ sample: QueueBenchmark.CPUSample, count: Int, period: Int) throws -> Double {
        let periods = sample.audioSeconds * QueueBenchmark.rate / Double(period)
        guard periods > 0 else { throw BenchmarkFailure("the null device played no period in \(deviceSeconds) s (\(count) at once)") }
        return sample.cpuSeconds * 1e9 / periods / Double(count)
    }

    func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }
}
