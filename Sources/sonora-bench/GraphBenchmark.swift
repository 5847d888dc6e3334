import Foundation
import SonoraCore
import SonoraDSP
@_spi(Benchmark) import SonoraUnits
import Synchronization

/// `sonora-bench graph`: what the unit model and the graph cost on top of the
/// DSP they run. Each case renders the same work twice in one run — through
/// an `AudioGraph` of units (its render plan), and as a hand-written loop over the
/// same kernels with no graph — and reports the graph's time against the loop's.
/// Goals (issue 22): chain ≤ 1.10 × loop, mixer ≤ 1.05 × loop in every trial, ≤ 10 ns
/// of graph work per node, the same per-node cost at 1,024 nodes as at 64, and an
/// update of one node of a 1,024-node graph live on the realtime side within 1 ms.
struct GraphBenchmark {
    var cycles: Int
    var trials: Int
    /// Every plan step by the full step (`--full-steps`): the lean step's reference.
    var fullSteps = false
    /// Alternating graph/loop blocks per mixer trial (`mixerTrial`); 1: back to back, whole.
    var mixerBlocks = 80
    let frames = 128

    func run() throws -> (rows: [BenchmarkRow], notes: [String]) {
        var chainGraph: [Double] = []
        var chainLoop: [Double] = []
        var mixerGraph: [Double] = []
        var mixerLoop: [Double] = []
        var mixerRatios: [Double] = []
        var controlRatios: [Double] = []
        var oneBufferRatios: [Double] = []
        var oneBufferLoop: [Double] = []
        var bigGraph: [Double] = []
        var bigLoop: [Double] = []
        // The 1,024-node case renders 16× the work per cycle: 1/16 of the cycles keeps trials alike in length.
        let bigCycles = max(1, cycles / 16)
        for _ in 0..<trials {
            chainGraph.append(try gainChainThroughGraph(units: 64, cycles: cycles))
            chainLoop.append(try gainChainByHand(units: 64, cycles: cycles))
            let mixerResult = try mixerTrial(blocks: mixerBlocks)
            mixerGraph.append(mixerResult.graph)
            mixerLoop.append(mixerResult.loop)
            mixerRatios.append(mixerResult.ratio)
            if mixerBlocks > 1 {
                controlRatios.append(try mixerControlTrial(blocks: mixerBlocks))
                let oneBuffer = try mixerOneBufferTrial(blocks: mixerBlocks)
                oneBufferRatios.append(oneBuffer.ratio)
                oneBufferLoop.append(oneBuffer.loop)
            }
            bigGraph.append(try gainChainThroughGraph(units: 1024, cycles: bigCycles))
            bigLoop.append(try gainChainByHand(units: 1024, cycles: bigCycles))
        }
        let updates = try updateHandOver(units: 1024, updates: 41)
        let chain = (median(chainGraph), median(chainLoop))
        let mixer = (median(mixerGraph), median(mixerLoop))
        // Goals are judged on ratios within a trial (graph and loop run back to back),
        // which the machine's changing load affects alike.
        let chainRatios = zip(chainGraph, chainLoop).map { $0 / $1 }
        // Graph work per node: the graph's time beyond the loop's, per unit (within a trial).
        let overhead64 = median(zip(chainGraph, chainLoop).map { ($0 - $1) * 1000 / 64 })
        let overhead1024 = median(zip(bigGraph, bigLoop).map { ($0 - $1) * 1000 / 1024 })
        let big = (median(bigGraph), median(bigLoop))
        let rows = [
            BenchmarkRow(
                metric: "64 gain units in a chain ÷ hand-written loop, 128-frame stereo cycle", unit: "ratio",
                sonora: median(chainRatios), anchor: "hand-written loop + 10 %", anchorValue: 1.10, better: .lower),
            BenchmarkRow(
                metric: "graph work per node per cycle (64-unit chain, graph − loop)", unit: "ns", sonora: overhead64,
                anchor: "10 ns", anchorValue: 10, better: .lower),
            BenchmarkRow(
                metric: "mixer with 64 stereo inputs ÷ hand-written loop, worst of the trials", unit: "ratio",
                sonora: mixerRatios.max() ?? 0, anchor: "hand-written loop + 5 % in every trial", anchorValue: 1.05, better: .lower),
            BenchmarkRow(
                metric: "mixer with 64 stereo inputs ÷ hand-written loop, median", unit: "ratio",
                sonora: median(mixerRatios), anchor: "hand-written loop + 5 %", anchorValue: 1.05, better: .lower),
            BenchmarkRow(
                metric: "cost per node per cycle, 1,024-unit chain", unit: "ns", sonora: big.0 * 1000 / 1024,
                anchor: "64-unit chain per node × 1.10 (flat)", anchorValue: chain.0 * 1000 / 64 * 1.10, better: .lower),
            BenchmarkRow(
                metric: "graph work per node per cycle (1,024-unit chain, graph − loop)", unit: "ns", sonora: overhead1024,
                anchor: "10 ns", anchorValue: 10, better: .lower),
            BenchmarkRow(
                metric: "update() of one node in a 1,024-node graph until live on the realtime side, median", unit: "ms",
                sonora: updates.median, anchor: "1 ms", anchorValue: 1, better: .lower),
            BenchmarkRow(
                metric: "update() of one node in a 1,024-node graph until live on the realtime side, worst", unit: "ms",
                sonora: updates.worst, anchor: "1 ms", anchorValue: 1, better: .lower),
            BenchmarkRow(
                metric: "update() of one node in a 1,024-node graph: CPU time of the call (compile + hand-over), median", unit: "ms",
                sonora: updates.callCPUMedian, anchor: "1 ms", anchorValue: 1, better: .lower),
        ]
        let notes = [
            fullSteps ? "full steps only (--full-steps): the lean step is off" : "lean steps on (the default)",
            "median of \(trials) trials of \(cycles) cycles each (1,024-unit chain: \(bigCycles)); graph and loop back to back in each trial",
            String(format: "  chain: graph %.2f µs, hand loop %.2f µs per cycle (overhead %+.1f %%)", chain.0, chain.1, (chain.0 / chain.1 - 1) * 100),
            "  chain ratios per trial: " + chainRatios.map { String(format: "%.3f", $0) }.joined(separator: " "),
            mixerBlocks > 1
                ? "  mixer trials: \(mixerBlocks) alternating graph/loop blocks of \(max(1, cycles / mixerBlocks)) cycles each; a trial's ratio is the median of its block pairs' ratios (thread CPU time)"
                : "  mixer trials: graph then loop, \(cycles) cycles each, back to back",
            String(format: "  mixer: graph %.2f µs, hand loop %.2f µs per cycle (overhead %+.1f %%)", mixer.0, mixer.1, (mixer.0 / mixer.1 - 1) * 100),
            "  mixer ratios per trial: " + mixerRatios.map { String(format: "%.3f", $0) }.joined(separator: " "),
            controlRatios.isEmpty ? "  mixer control (A/A): not run (one block per side)"
                : "  mixer control (A/A: the hand loop ÷ a second hand loop with buffers of its own, measured as the mixer trials are), per trial: "
                    + controlRatios.map { String(format: "%.3f", $0) }.joined(separator: " "),
            oneBufferRatios.isEmpty ? "  mixer ÷ one-buffer hand loop: not run (one block per side)"
                : String(format: "  mixer ÷ a hand loop that fills and mixes each input through one buffer (what a careful hand-written mixer does; a note, not the goal's anchor; %.2f µs per cycle), per trial: ", median(oneBufferLoop))
                    + oneBufferRatios.map { String(format: "%.3f", $0) }.joined(separator: " "),
            String(format: "  1,024-unit chain: graph %.2f µs, hand loop %.2f µs per cycle", big.0, big.1),
            String(format: "  update hand-over (%d updates, another thread rendering the graph): update() alone median %.3f ms (%.3f ms of its thread's CPU time), until live median %.3f ms, worst %.3f ms",
                   updates.count, updates.callMedian, updates.callCPUMedian, updates.median, updates.worst),
        ]
        return (rows, notes)
    }

    /// One case alone (`--only`), for a profiler: nothing else runs in the process.
    enum Case: String, CaseIterable {
        case chainGraph = "chain-graph"
        case chainLoop = "chain-loop"
        case mixerGraph = "mixer-graph"
        case mixerLoop = "mixer-loop"
    }

    /// Microseconds per cycle of `only`.
    func run(_ only: Case, units: Int) throws -> Double {
        switch only {
        case .chainGraph: try gainChainThroughGraph(units: units, cycles: cycles)
        case .chainLoop: try gainChainByHand(units: units, cycles: cycles)
        case .mixerGraph: try mixerThroughGraph()
        case .mixerLoop: try mixerByHand()
        }
    }

    /// Microseconds per cycle of `body`, over `cycles` cycles after a warm-up.
    func time(cycles: Int? = nil, _ body: (Int) -> Void) -> Double {
        let cycles = cycles ?? self.cycles
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

    func gainChain(units: Int) throws -> (graph: AudioGraph, nodes: [AudioGraph.Node], head: AudioGraph.Node) {
        let graph = AudioGraph()
        let source = Constant()
        var previous: AudioGraph.Node?
        var nodes: [AudioGraph.Node] = []
        for index in 0..<units {
            let gain = GainUnit()
            try gain.setParameter(GainUnit.Parameter.gain, to: index % 2 == 0 ? 0.1 : -0.1)
            try gain.setMaximumFramesPerSlice(frames)
            let node = graph.addNode(gain)
            if let previous { try graph.connect(previous, bus: 0, to: node, input: 0) } else { try graph.setRenderCallback(source, node: node, input: 0) }
            previous = node
            nodes.append(node)
        }
        let output = GenericOutputUnit()
        try output.setMaximumFramesPerSlice(frames)
        let head = graph.addNode(output)
        try graph.connect(previous!, bus: 0, to: head, input: 0)
        graph.plansLeanSteps = !fullSteps
        try graph.initialize()
        return (graph, nodes, head)
    }

    func gainChainThroughGraph(units: Int, cycles: Int) throws -> Double {
        let graph = try gainChain(units: units).graph
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames)
        let list = buffers.list
        return time(cycles: cycles) { cycle in
            var flags = RenderActionFlags()
            _ = graph.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(cycle * frames)), frameCount: frames, into: list)
        }
    }

    /// The same work by hand: fill the source, then the gain copies ping-ponging
    /// between two buffers (dB to linear once per unit per cycle, as the unit does),
    /// and the output's copy.
    func gainChainByHand(units: Int, cycles: Int) throws -> Double {
        let a = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames)
        let b = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames)
        let out = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames)
        let gains = (0..<units).map { Float($0 % 2 == 0 ? 0.1 : -0.1) }
        return gains.withUnsafeBufferPointer { gains in
            time(cycles: cycles) { _ in
                for channel in 0..<2 { a.list.samples(channel).update(repeating: 0.5, count: frames) }
                var from = a.list
                var to = b.list
                for node in 0..<units {
                    let gain = Decibels.toLinear(gains[node])
                    for channel in 0..<2 { Mixing.copy(from.samples(channel), to: to.samples(channel), count: frames, gain: gain) }
                    swap(&from, &to)
                }
                out.list.copy(from: from)
            }
        }
    }

    func mixerThroughGraph() throws -> Double {
        let graph = try mixerGraphCycle()
        return time { _ = graph($0) }
    }

    /// One cycle of the 64-input mixer through an `AudioGraph` (the graph and its buffers
    /// live as long as the closure).
    func mixerGraphCycle() throws -> (Int) -> AudioError.Code {
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
        graph.plansLeanSteps = !fullSteps
        try graph.initialize()
        let buffers = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames)
        let list = buffers.list
        let frames = self.frames
        return { cycle in
            var flags = RenderActionFlags()
            return withExtendedLifetime(buffers) {
                graph.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(cycle * frames)), frameCount: frames, into: list)
            }
        }
    }

    /// The mixer's work by hand: fill 64 stereo inputs, meter each before and
    /// after its volume, sum with volume and balance, meter the sum, copy out.
    func mixerByHand() throws -> Double {
        let loop = try MixerLoop(frames: frames)
        return time { _ in loop.cycle() }
    }

    /// The hand-written mixer's buffers and meters, and its cycle.
    final class MixerLoop {
        let frames: Int
        let inputs: [OwnedAudioBufferList]
        let scratch: OwnedAudioBufferList
        let sum: OwnedAudioBufferList
        let out: OwnedAudioBufferList
        let meters: UnsafeMutablePointer<LevelMeter>

        /// `oneInputBuffer`: one input buffer for `cycleThroughOneBuffer` instead of 64.
        init(frames: Int, oneInputBuffer: Bool = false) throws {
            self.frames = frames
            inputs = try (0..<(oneInputBuffer ? 1 : 64)).map { _ in try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames) }
            scratch = try OwnedAudioBufferList(channelCount: 1, frameCapacity: frames)
            sum = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames)
            out = try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames)
            meters = .allocate(capacity: 64 * 4 + 2)
            meters.initialize(repeating: LevelMeter(sampleRate: 48000), count: 64 * 4 + 2)
        }

        deinit { meters.deallocate() }

        func cycle() {
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

        /// `cycle`'s work with each input filled into the one input buffer and mixed before the
        /// next is filled (what the mixer's steady cycle does since it pulls every callback
        /// input into one region): the working set of a careful hand-written mixer.
        func cycleThroughOneBuffer() {
            let input = inputs[0].list
            sum.list.clear()
            for index in 0..<64 {
                for channel in 0..<2 { input.samples(channel).update(repeating: 0.5, count: frames) }
                for channel in 0..<2 {
                    meters[index * 4 + channel].measure(input.samples(channel), count: frames)
                    Mixing.copy(input.samples(channel), to: scratch.list.samples(0), count: frames, gain: 0.5)
                    meters[index * 4 + 2 + channel].measure(scratch.list.samples(0), count: frames)
                    Mixing.add(scratch.list.samples(0), into: sum.list.samples(channel), count: frames, gain: 1)
                }
            }
            for channel in 0..<2 { meters[256 + channel].measure(sum.list.samples(channel), count: frames) }
            out.list.copy(from: sum.list)
        }
    }

    /// The calling thread's CPU time in nanoseconds.
    static func threadCPUNanoseconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) * 1e9 + Double(time.tv_nsec)
    }

    /// One mixer trial, graph against loop: `cycles` cycles each, in `blocks` alternating
    /// blocks (the first of a pair alternates between graph and loop). Returns µs per cycle of
    /// each side (median over the blocks) and the trial's ratio: the median of the ratios of
    /// the blocks run back to back, each timed by the thread's CPU time. One block is the whole
    /// trial run back to back, graph first, by the wall clock (the form before `--blocks`).
    ///
    /// Why: at load a trial of 20,000 cycles per side (~0.5 s each) is often preempted in one
    /// side and not the other, and per-trial ratios spread 0.75–1.8 on one binary. Blocks a few
    /// milliseconds long side by side see the same machine; CPU time leaves out the time the
    /// thread did not run; the median pair drops the blocks whose caches another process
    /// emptied. Both sides run the same cycles, measured and reduced alike.
    func mixerTrial(blocks: Int) throws -> (graph: Double, loop: Double, ratio: Double) {
        let graph = try mixerGraphCycle()
        let loop = try MixerLoop(frames: frames)
        if blocks <= 1 {
            let graphTime = time { _ = graph($0) }
            let loopTime = time { _ in loop.cycle() }
            return (graphTime, loopTime, graphTime / loopTime)
        }
        let perBlock = max(1, cycles / blocks)
        var graphCycle = 0
        // The thread's CPU time, not the wall clock: a block the scheduler preempted is
        // charged what it ran, not what the other processes ran meanwhile.
        func graphBlock() -> Double {
            let start = Self.threadCPUNanoseconds()
            for _ in 0..<perBlock {
                _ = graph(graphCycle)
                graphCycle += 1
            }
            return (Self.threadCPUNanoseconds() - start) / 1000 / Double(perBlock)
        }
        func loopBlock() -> Double {
            let start = Self.threadCPUNanoseconds()
            for _ in 0..<perBlock { loop.cycle() }
            return (Self.threadCPUNanoseconds() - start) / 1000 / Double(perBlock)
        }
        // Warm-up, as `time` does.
        for _ in 0..<100 {
            _ = graph(graphCycle)
            graphCycle += 1
            loop.cycle()
        }
        var graphTimes: [Double] = []
        var loopTimes: [Double] = []
        var ratios: [Double] = []
        for block in 0..<blocks {
            let g: Double
            let l: Double
            if block % 2 == 0 {
                g = graphBlock()
                l = loopBlock()
            } else {
                l = loopBlock()
                g = graphBlock()
            }
            graphTimes.append(g)
            loopTimes.append(l)
            ratios.append(g / l)
        }
        return (median(graphTimes), median(loopTimes), median(ratios))
    }

    /// The mixer trial's measurement with the graph replaced by a second copy of the loop (its
    /// own buffers, as the graph has its own): what the method reads when both sides do the
    /// same work — the spread a graph ÷ loop ratio has on this machine whatever the graph costs.
    func mixerControlTrial(blocks: Int) throws -> Double {
        let first = try MixerLoop(frames: frames)
        let second = try MixerLoop(frames: frames)
        let perBlock = max(1, cycles / blocks)
        func block(_ loop: MixerLoop) -> Double {
            let start = Self.threadCPUNanoseconds()
            for _ in 0..<perBlock { loop.cycle() }
            return (Self.threadCPUNanoseconds() - start) / 1000 / Double(perBlock)
        }
        for _ in 0..<100 {
            first.cycle()
            second.cycle()
        }
        var ratios: [Double] = []
        for index in 0..<blocks {
            let a: Double
            let b: Double
            if index % 2 == 0 {
                a = block(second)
                b = block(first)
            } else {
                b = block(first)
                a = block(second)
            }
            ratios.append(a / b)
        }
        return median(ratios)
    }

    /// The mixer trial's measurement (`mixerTrial`) against the one-buffer hand loop
    /// (`MixerLoop.cycleThroughOneBuffer`) instead of the goal's loop: whether the graph's
    /// standing against the loop comes from the reuse of one input buffer alone. A note.
    func mixerOneBufferTrial(blocks: Int) throws -> (loop: Double, ratio: Double) {
        let graph = try mixerGraphCycle()
        let loop = try MixerLoop(frames: frames, oneInputBuffer: true)
        let perBlock = max(1, cycles / blocks)
        var graphCycle = 0
        func graphBlock() -> Double {
            let start = Self.threadCPUNanoseconds()
            for _ in 0..<perBlock {
                _ = graph(graphCycle)
                graphCycle += 1
            }
            return (Self.threadCPUNanoseconds() - start) / 1000 / Double(perBlock)
        }
        func loopBlock() -> Double {
            let start = Self.threadCPUNanoseconds()
            for _ in 0..<perBlock { loop.cycleThroughOneBuffer() }
            return (Self.threadCPUNanoseconds() - start) / 1000 / Double(perBlock)
        }
        for _ in 0..<100 {
            _ = graph(graphCycle)
            graphCycle += 1
            loop.cycleThroughOneBuffer()
        }
        var loopTimes: [Double] = []
        var ratios: [Double] = []
        for block in 0..<blocks {
            let g: Double
            let l: Double
            if block % 2 == 0 {
                g = graphBlock()
                l = loopBlock()
            } else {
                l = loopBlock()
                g = graphBlock()
            }
            loopTimes.append(l)
            ratios.append(g / l)
        }
        return (median(loopTimes), median(ratios))
    }

    /// While another thread renders a `units`-gain chain cycle after cycle, inserts a gain
    /// into the middle of the chain (and takes it out again, alternately) and times each
    /// `update()` from the call until the realtime side has applied it: compile, hand-over,
    /// and the wait for the cycle in progress to end. Milliseconds.
    func updateHandOver(units: Int, updates: Int) throws -> (median: Double, worst: Double, callMedian: Double, callCPUMedian: Double, count: Int) {
        let (graph, nodes, _) = try gainChain(units: units)
        final class Shared: @unchecked Sendable {
            let stop = Atomic<Bool>(false)
            let graph: AudioGraph
            let buffers: OwnedAudioBufferList
            init(graph: AudioGraph, buffers: OwnedAudioBufferList) {
                self.graph = graph
                self.buffers = buffers
            }
        }
        let shared = Shared(graph: graph, buffers: try OwnedAudioBufferList(channelCount: 2, frameCapacity: frames))
        let frames = self.frames
        // SCHED_FIFO where permitted, as an I/O thread runs: "until live" then measures the
        // compile and the hand-over, not how long a loaded machine kept the renderer off a core.
        let renderer = try RealtimeThread(RealtimeThreadOptions(name: "bench-graph", priority: 70)) { [shared] in
            var cycle = 0
            let list = shared.buffers.list
            while !shared.stop.load(ordering: .acquiring) {
                var flags = RenderActionFlags()
                _ = shared.graph.render(flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(cycle * frames)), frameCount: frames, into: list)
                cycle += 1
            }
        }
        defer { shared.stop.store(true, ordering: .releasing) }
        let before = nodes[units / 2 - 1]
        let after = nodes[units / 2]
        var inserted: AudioGraph.Node?
        var live: [Double] = []
        var calls: [Double] = []
        var callCPU: [Double] = []
        /// This thread's CPU time (ns): what the call costs, apart from the waits a loaded machine adds.
        func threadCPU() -> Double { Self.threadCPUNanoseconds() }
        for index in 0..<updates {
            if let node = inserted {
                try graph.removeNode(node)
                try graph.connect(before, bus: 0, to: after, input: 0)
                inserted = nil
            } else {
                let gain = GainUnit()
                try gain.setMaximumFramesPerSlice(frames)
                let node = graph.addNode(gain)
                try graph.connect(before, bus: 0, to: node, input: 0)
                try graph.connect(node, bus: 0, to: after, input: 0)
                inserted = node
            }
            let target = graph.appliedUpdates + 1
            let cpuStart = threadCPU()
            let start = HostTime.now
            try graph.update()
            let called = HostTime.now
            let cpuCalled = threadCPU()
            while graph.appliedUpdates < target { sched_yield() }
            let end = HostTime.now
            if index > 0 {  // the first is a warm-up
                live.append(Double(end - start) / 1e6)
                calls.append(Double(called - start) / 1e6)
                callCPU.append((cpuCalled - cpuStart) / 1e6)
            }
            usleep(2000)
        }
        shared.stop.store(true, ordering: .releasing)
        renderer.join()
        return (median(live), live.max() ?? 0, median(calls), median(callCPU), live.count)
    }
}
