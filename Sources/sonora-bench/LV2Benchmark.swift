import CLV2BenchAnchor
import CSonoraSystem
import Foundation
import SonoraCore
import SonoraFile
import SonoraLV2
import SonoraUnits

/// `sonora-bench lv2`: Sonora's LV2 host against a bare C loop around the same plugin's
/// run() (same buffers, same block size, same copies in and out), and lv2apply.
struct LV2Benchmark {
    var seconds: Int
    var trials: Int
    var withLV2Apply: Bool
    /// Thread CPU seconds each side's trial must take at least. At 20 s of audio eg-amp's
    /// trial was ~1 ms: one interruption decided its row. A trial renders the signal as many
    /// times over (passes, the same for both sides, turns still alternating) as this needs.
    var minimumTrialCPU = 0.2
    /// The most passes a trial makes, whatever `minimumTrialCPU` asks.
    static let maximumPasses = 10_000
    let blockSize = 512
    let sampleRate = 48000.0

    var plugins = Self.defaultPlugins

    /// What takes the host's place against the C loop (`--versus`). `host` is the benchmark; the
    /// others are checks of the harness itself, with Sonora's host left out of the timing:
    /// - `loop`: a second C loop over a second bare instance, its blocks placed like the host's
    ///   buffers (A/A: what two instances and the placement rule alone differ by);
    /// - `loop-in-host-buffers`: that second C loop rendering in the host's very buffers (the
    ///   unit's input list and the list it renders into);
    /// - `swift-loop`: the Swift harness's copies (as `HostRunner` makes them) around a direct
    ///   `run()` of a second bare instance, in the host's buffers.
    /// - `host-copy-first`: the host, with the harness's copy of the input made by `HostRunner`
    ///   right before it calls `render` (where the C loop makes it, after the last copy out)
    ///   instead of inside the unit's pull (the render callback then copies nothing).
    enum Versus: String, CaseIterable, Sendable {
        case host, loop, loopInHostBuffers = "loop-in-host-buffers", swiftLoop = "swift-loop", hostCopyFirst = "host-copy-first"
    }
    var versus = Versus.host
    /// `--versus swift-loop` only: stores of 8 bytes each the loop makes per block, after its copy
    /// out (`probeAt == "out"`) or between its copy in and `run()` (`"run"`), to see what a host's
    /// own stores cost at either place.
    var probeStores = 0
    var probeAt = "out"
    /// `--versus swift-loop` only: save MXCSR before `run()` and write it back after, as the host does.
    var probeMXCSR = false

    static let defaultPlugins: [(name: String, uri: String)] = [
        ("mda Delay", "http://drobilla.net/plugins/mda/Delay"),
        ("swh gverb", "http://plugin.org.uk/swh-plugins/gverb"),
        ("zam ZamCompX2", "urn:zamaudio:ZamCompX2"),
        ("dragonfly plate", "urn:dragonfly:plate"),
        ("lsp compressor_stereo", "http://lsp-plug.in/plugins/lv2/compressor_stereo"),
        ("x42-eq stereo", "http://gareus.org/oss/lv2/fil4#stereo"),
        // The lightest plugin there is (one multiply per sample): its row is almost all host work.
        ("eg-amp", "http://lv2plug.in/plugins/eg-amp"),
    ]

    /// Feeds every input channel from preallocated stereo signal memory by sample time (no ARC, no allocation).
    final class SignalInput: RenderCallbackTarget {
        let left: UnsafeMutablePointer<Float>
        let right: UnsafeMutablePointer<Float>
        let frames: Int
        /// The unit's input buffers as the first render handed them over (the C loop's input
        /// blocks are placed like them).
        let seen: UnsafeMutablePointer<UnsafeMutablePointer<Float>?>
        var seenCount = 0
        static let seenCapacity = 16
        /// The sample time at which the current pass over the signal starts (set by `HostRunner.run`
        /// before it takes the time): the frame to copy is the time stamp less this, a subtraction,
        /// as the C loop's `inputs[c] + position`. It was `sampleTime % frames`, an integer division
        /// per render the C loop does not make (≈ 2 ns, perf).
        let passStart: UnsafeMutablePointer<Double>
        init(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int) {
            self.left = left
            self.right = right
            self.frames = frames
            seen = .allocate(capacity: Self.seenCapacity)
            seen.initialize(repeating: nil, count: Self.seenCapacity)
            passStart = .allocate(capacity: 1)
            passStart.initialize(to: 0)
        }
        deinit {
            seen.deallocate()
            passStart.deallocate()
        }
        override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
            if seenCount == 0 {
                seenCount = min(request.pointee.buffers.channelCount, Self.seenCapacity)
                for channel in 0..<seenCount { seen[channel] = request.pointee.buffers.samples(channel) }
            }
            // Later passes over the signal carry on the time line (sample time pass × frames + position).
            let start = Int(request.pointee.timeStamp.sampleTime - passStart.pointee)
            let count = min(request.pointee.frameCount, frames - start)
            for channel in 0..<request.pointee.buffers.channelCount {
                request.pointee.buffers.samples(channel).update(from: (channel % 2 == 0 ? left : right) + start, count: count)
            }
            return .noError
        }
    }

    func run() throws -> (rows: [BenchmarkRow], notes: [String]) {
        // As on an audio thread (RealtimeThread does this): denormals flushed, for the host and the C loop alike.
        _ = sonora_flush_denormals()
        let frames = seconds * Int(sampleRate)
        let left = Self.alignedFloats(frames)
        let right = Self.alignedFloats(frames)
        defer { left.deallocate(); right.deallocate() }
        var seed: UInt32 = 1
        for frame in 0..<frames {
            seed = seed &* 1_664_525 &+ 1_013_904_223
            let noise = Float(Int32(bitPattern: seed)) / Float(Int32.max) * 0.05
            let t = Float(frame) / Float(sampleRate)
            left[frame] = 0.3 * sin(2 * .pi * 220 * t) + noise
            right[frame] = 0.3 * sin(2 * .pi * 330 * t) - noise
        }
        var wavPath: String?
        if withLV2Apply {
            let path = NSTemporaryDirectory() + "sonora-bench-lv2-\(getpid()).wav"
            // Mono: lv2apply feeds a mono file to every audio input, so one file fits every plugin.
            let format = StreamFormat.linearPCM(sampleRate: sampleRate, channels: 1, sample: .float32)
            let file = try AudioFile.create(path, type: .wave, format: format, erase: true)
            let buffers = try OwnedAudioBufferList(channelCount: 1, frameCapacity: 65536)
            var position = 0
            while position < frames {
                let count = min(65536, frames - position)
                buffers.list.samples(0).update(from: left + position, count: count)
                try file.writeFrames(from: buffers.list(frameCount: count))
                position += count
            }
            try file.close()
            wavPath = path
        }
        defer { if let wavPath { try? FileManager.default.removeItem(atPath: wavPath) } }

        // Output memory for both renders, touched before timing so page faults are not measured.
        let outputs = (0..<8).map { _ in Self.alignedFloats(frames) }
        defer { outputs.forEach { $0.deallocate() } }
        for output in outputs { output.initialize(repeating: 0, count: frames) }

        var rows: [BenchmarkRow] = []
        var notes = [
            "\(seconds) s stereo at 48 kHz, \(blockSize)-frame blocks, rendered as many times per trial as needed for"
                + " \(minimumTrialCPU) s of thread CPU per side; median of \(trials) trials, host and C loop taking turns every 96 blocks;"
                + " the 'fastest turns' rows sum each turn's fastest time over the trials and passes"
        ]
        for (name, uri) in plugins {
            let unit: LV2Unit
            do {
                unit = try LV2Unit(uri: uri, options: .init(sampleRate: sampleRate, maximumFrames: blockSize, workerMode: .inline))
            } catch {
                notes.append("  \(name): skipped (\(error))")
                continue
            }
            // One bare instance for all trials, as the unit keeps one; both warm up (touching their
            // plugin's delay lines and tanks) before anything is timed.
            let host = try HostRunner(unit: unit, left: left, right: right, outputs: outputs, frames: frames, blockSize: blockSize)
            _ = try host.run(from: 0, count: min(frames, 48000))
            // The C loop's blocks sit where the host's buffers do within a page (see `LoopRunner`).
            let loop = try LoopRunner(
                bare: try unit.makeBareInstance(), left: left, right: right, outputs: outputs, blockSize: blockSize,
                placedLike: (inputs: host.inputBuffers, outputs: host.outputBuffers))
            _ = loop.run(from: 0, count: min(frames, 48000))
            // The side timed against the C loop: the host, or (`--versus`) a check of the harness.
            let first: (Int, Int, Int) throws -> Double
            switch versus {
            case .host:
                first = { try host.run(from: $0, count: $1, pass: $2) }
            case .hostCopyFirst:
                try host.copyInputFirst()
                first = { try host.runCopyingFirst(from: $0, count: $1, pass: $2) }
            case .loop, .loopInHostBuffers:
                let other = try LoopRunner(
                    bare: try unit.makeBareInstance(), left: left, right: right, outputs: outputs, blockSize: blockSize,
                    placedLike: (inputs: host.inputBuffers, outputs: host.outputBuffers),
                    inPlace: versus == .loopInHostBuffers)
                _ = other.run(from: 0, count: min(frames, 48000))
                first = { start, count, _ in other.run(from: start, count: count) }
            case .swiftLoop:
                let other = try SwiftLoopRunner(
                    bare: try unit.makeBareInstance(), left: left, right: right, outputs: outputs, blockSize: blockSize,
                    inputBlocks: host.inputBuffers, outputBlocks: host.outputBuffers)
                other.probeStores = probeStores
                other.probeAfterCopyOut = probeAt != "run"
                other.probeMXCSR = probeMXCSR
                _ = other.run(from: 0, count: min(frames, 48000))
                first = { start, count, _ in other.run(from: start, count: count) }
            }
            if versus != .host {
                let offsets = { (pointers: [UnsafeMutablePointer<Float>]) in
                    pointers.map { String(Int(bitPattern: $0) & 4095) }.joined(separator: ",")
                }
                let what = versus == .hostCopyFirst
                    ? "the host, its input copied before render, not in the pull" : "a check of the harness: Sonora's host is not timed"
                notes.append(
                    "  \(name): --versus \(versus.rawValue) (\(what)); host buffers' page offsets:"
                        + " inputs \(offsets(host.inputBuffers)), outputs \(offsets(host.outputBuffers))")
            }
            let passes = try self.passes(first: first, loop: loop, frames: frames)
            var sonoraTimes: [Double] = []
            var loopTimes: [Double] = []
            // Per turn (the same frames in every trial), the fastest time each side took: the
            // turn least disturbed by the machine's other tenants, for the steadier rows below.
            let turns = (frames + Self.chunkFrames - 1) / Self.chunkFrames
            var fastestHost = [Double](repeating: .infinity, count: turns)
            var fastestLoop = [Double](repeating: .infinity, count: turns)
            // Time by who went first in the turn (host first, loop first), summed over all trials.
            var byOrder = (hostFirst: 0.0, loopSecond: 0.0, loopFirst: 0.0, hostSecond: 0.0)
            for trial in 0..<trials {
                // The two take turns every ~1 s of audio (in alternating order), so a change in the
                // machine's speed — frequent on this shared VM — hits both alike.
                var hostTime = 0.0
                var loopTime = 0.0
                var turn = trial
                for pass in 0..<passes {
                    var position = 0
                    while position < frames {
                        let count = min(Self.chunkFrames, frames - position)
                        let hostTurn: Double
                        let loopTurn: Double
                        if turn % 2 == 0 {
                            loopTurn = loop.run(from: position, count: count)
                            hostTurn = try first(position, count, pass)
                        } else {
                            hostTurn = try first(position, count, pass)
                            loopTurn = loop.run(from: position, count: count)
                        }
                        hostTime += hostTurn
                        loopTime += loopTurn
                        if turn % 2 == 0 {
                            byOrder.loopFirst += loopTurn
                            byOrder.hostSecond += hostTurn
                        } else {
                            byOrder.hostFirst += hostTurn
                            byOrder.loopSecond += loopTurn
                        }
                        let index = position / Self.chunkFrames
                        fastestHost[index] = min(fastestHost[index], hostTurn)
                        fastestLoop[index] = min(fastestLoop[index], loopTurn)
                        position += count
                        turn += 1
                    }
                }
                sonoraTimes.append(hostTime)
                loopTimes.append(loopTime)
            }
            host.finish()
            let ratios = zip(sonoraTimes, loopTimes).map { $0 / $1 }
            let ratio = median(ratios)
            let audioSeconds = Double(seconds * passes)
            let realtime = audioSeconds / median(sonoraTimes)
            let blocks = Double((frames + blockSize - 1) / blockSize * passes)
            // Host work per render: the time over the C loop, per block (median of the trials' differences).
            let hostWork = median(zip(sonoraTimes, loopTimes).map { ($0 - $1) / blocks * 1e9 })
            rows.append(
                BenchmarkRow(
                    metric: "\(name): LV2Unit ÷ bare C run() loop, overhead", unit: "%", sonora: (ratio - 1) * 100,
                    anchor: "bare C loop + 3 %", anchorValue: 3, better: .lower))
            rows.append(
                BenchmarkRow(
                    metric: "\(name): host work per \(blockSize)-frame render (LV2Unit − bare C loop)", unit: "ns",
                    sonora: hostWork, anchor: "30 ns per render", anchorValue: 30, better: .lower))
            // The same two rows from each turn's fastest time (summed over the turns): on a loaded
            // machine the medians above carry the other tenants' noise, these far less of it.
            let bestHost = fastestHost.reduce(0, +)
            let bestLoop = fastestLoop.reduce(0, +)
            let passBlocks = Double((frames + blockSize - 1) / blockSize)
            rows.append(
                BenchmarkRow(
                    metric: "\(name): LV2Unit ÷ bare C run() loop, overhead (fastest turns)", unit: "%",
                    sonora: (bestHost / bestLoop - 1) * 100, anchor: "bare C loop + 3 %", anchorValue: 3, better: .lower))
            rows.append(
                BenchmarkRow(
                    metric: "\(name): host work per \(blockSize)-frame render (fastest turns)", unit: "ns",
                    sonora: (bestHost - bestLoop) / passBlocks * 1e9, anchor: "30 ns per render", anchorValue: 30,
                    better: .lower))
            let works = zip(sonoraTimes, loopTimes).map { ($0 - $1) / blocks * 1e9 }
            notes.append(
                String(
                    format: "  %@: Sonora %.3f s, C loop %.3f s of CPU for %.0f s of audio (%d passes, %.0f× realtime); host work per %d-frame render: trials %+.1f … %+.1f ns, overhead %+.2f … %+.2f %%",
                    name, median(sonoraTimes), median(loopTimes), audioSeconds, passes, realtime, blockSize,
                    works.min() ?? 0, works.max() ?? 0, ((ratios.min() ?? 1) - 1) * 100, ((ratios.max() ?? 1) - 1) * 100))
            // Half the blocks each way (turns alternate): ns per block for each side by its place in the turn.
            let halfBlocks = blocks * Double(trials) / 2
            notes.append(
                String(
                    format: "  %@: per block by order in the turn: host first %.1f ns, C loop second %.1f ns; C loop first %.1f ns, host second %.1f ns",
                    name, byOrder.hostFirst / halfBlocks * 1e9, byOrder.loopSecond / halfBlocks * 1e9,
                    byOrder.loopFirst / halfBlocks * 1e9, byOrder.hostSecond / halfBlocks * 1e9))
            if let wavPath, unit.plugin.requiredFeatures.isEmpty, !unit.plugin.ports.contains(where: { $0.kind == .atom }) {
                if let applyTime = lv2apply(uri, input: wavPath) {
                    rows.append(
                        BenchmarkRow(
                            metric: "\(name): time for \(seconds) s of audio", unit: "s", sonora: median(sonoraTimes),
                            anchor: "lv2apply (mono WAV, 1 frame per run, file I/O)", anchorValue: applyTime, better: .lower))
                }
            } else if withLV2Apply {
                notes.append("  \(name): no lv2apply anchor (it passes no host features; this plugin needs \(unit.plugin.requiredFeatures.isEmpty ? "atom buffers" : "some"))")
            }
        }
        return (rows, notes)
    }

    /// Cache-line-aligned samples (as Sonora's buffer lists are). The signal, the outputs and the
    /// C loop's blocks all are: a large plain allocation starts 16 bytes past a page, and a copy
    /// between buffers aligned differently costs more than one between equally aligned ones, so
    /// which side's copies were dearer depended on where malloc put the blocks, not on the host.
    static func alignedFloats(_ count: Int) -> UnsafeMutablePointer<Float> {
        UnsafeMutableRawPointer.allocate(byteCount: max(1, count) * MemoryLayout<Float>.stride, alignment: 64)
            .bindMemory(to: Float.self, capacity: max(1, count))
    }

    /// Frames per turn of host and C loop: 96 blocks of 512 (about 1 s).
    static let chunkFrames = 96 * 512

    /// Passes over the signal per trial: enough for `minimumTrialCPU` on the cheaper side
    /// (estimated from one untimed pass by each, 25 % margin), at most 10 × `minimumTrialCPU`
    /// on the dearer side and `maximumPasses`. A pass is also the last warm-up.
    func passes(first: (Int, Int, Int) throws -> Double, loop: LoopRunner, frames: Int) throws -> Int {
        let hostPass = try first(0, frames, 0)
        let loopPass = loop.run(from: 0, count: frames)
        guard minimumTrialCPU > 0 else { return 1 }
        let cheaper = max(min(hostPass, loopPass), 1e-7)
        let dearer = max(hostPass, loopPass, 1e-7)
        let needed = min((1.25 * minimumTrialCPU / cheaper).rounded(.up), (10 * minimumTrialCPU / dearer).rounded(.down))
        return min(Self.maximumPasses, max(1, Int(needed)))
    }

    /// The calling thread's CPU seconds (what the C loop measures too): a turn during which the
    /// thread is preempted by another tenant is not charged the time it waited.
    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// Sonora's host: the unit pulls its inputs from memory through a render callback, renders
    /// 512-frame slices into one buffer, and each slice is copied out — the copies the C loop makes.
    final class HostRunner {
        let unit: LV2Unit
        let buffers: OwnedAudioBufferList
        let list: AudioBufferList
        let channels: Int
        let destinations: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
        let blockSize: Int
        let signalFrames: Int
        let sources: [SignalInput]

        init(
            unit: LV2Unit, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>,
            outputs: [UnsafeMutablePointer<Float>], frames: Int, blockSize: Int
        ) throws {
            self.unit = unit
            self.blockSize = blockSize
            signalFrames = frames
            unit.uninitialize()
            sources = (0..<unit.elementCount(.input)).map { _ in SignalInput(left: left, right: right, frames: frames) }
            for (input, source) in sources.enumerated() { try unit.setRenderCallback(source, input: input) }
            try unit.initialize()
            channels = Int(try unit.streamFormat(scope: .output, element: 0).channelsPerFrame)
            buffers = try OwnedAudioBufferList(channelCount: channels, frameCapacity: blockSize)
            list = buffers.list
            destinations = .allocate(capacity: channels)
            for index in 0..<channels { destinations[index] = outputs[index] }
        }

        deinit {
            destinations.deallocate()
            precopy?.deallocate()
        }

        func finish() { unit.uninitialize() }

        /// The unit's input buffers, element by element (known after the first render).
        var inputBuffers: [UnsafeMutablePointer<Float>] {
            sources.flatMap { source in (0..<source.seenCount).compactMap { source.seen[$0] } }
        }

        /// The buffers the unit renders into.
        var outputBuffers: [UnsafeMutablePointer<Float>] { (0..<channels).map { list.samples($0) } }

        /// `--versus host-copy-first`: the unit's inputs fed by callbacks that copy nothing; `runCopyingFirst`
        /// copies the signal into the unit's input buffers itself, before each `render` (where the C loop copies).
        func copyInputFirst() throws {
            let buffers = inputBuffers
            precopy = .allocate(capacity: max(1, buffers.count))
            for (index, buffer) in buffers.enumerated() { precopy![index] = buffer }
            precopyCount = buffers.count
            for input in sources.indices { try unit.setRenderCallback(PassInput(), input: input) }
        }
        var precopy: UnsafeMutablePointer<UnsafeMutablePointer<Float>>?
        var precopyCount = 0
        final class PassInput: RenderCallbackTarget {
            override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code { .noError }
        }

        /// `run`, with the input copied before `render` rather than in the pull (`--versus host-copy-first`).
        func runCopyingFirst(from start: Int, count: Int, pass: Int = 0) throws -> Double {
            guard let precopy, let source = sources.first else { return try run(from: start, count: count, pass: pass) }
            let passStart = Double(pass) * Double(signalFrames)
            let began = LV2Benchmark.threadCPUSeconds()
            var position = start
            while position < start + count {
                let frames = min(blockSize, start + count - position)
                for channel in 0..<precopyCount {
                    precopy[channel].update(from: (channel % 2 == 0 ? source.left : source.right) + position, count: frames)
                }
                var flags = RenderActionFlags()
                let status = unit.render(
                    flags: &flags, timeStamp: AudioTimeStamp(sampleTime: passStart + Double(position)), bus: 0,
                    frameCount: frames, into: list)
                guard status == .noError else { throw AudioError(status, "\(unit.name): render failed at frame \(position)") }
                for channel in 0..<channels {
                    (destinations[channel] + position).update(from: list.samples(channel), count: frames)
                }
                position += frames
            }
            return LV2Benchmark.threadCPUSeconds() - began
        }

        /// Thread CPU seconds to render frames `start ..< start + count` of the signal, in pass
        /// `pass` over it (time stamps carry on from pass to pass).
        func run(from start: Int, count: Int, pass: Int = 0) throws -> Double {
            let passStart = Double(pass) * Double(signalFrames)
            for source in sources { source.passStart.pointee = passStart }
            let began = LV2Benchmark.threadCPUSeconds()
            var position = start
            while position < start + count {
                let frames = min(blockSize, start + count - position)
                var flags = RenderActionFlags()
                let status = unit.render(
                    flags: &flags, timeStamp: AudioTimeStamp(sampleTime: passStart + Double(position)), bus: 0,
                    frameCount: frames, into: list)
                guard status == .noError else { throw AudioError(status, "\(unit.name): render failed at frame \(position)") }
                for channel in 0..<channels {
                    (destinations[channel] + position).update(from: list.samples(channel), count: frames)
                }
                position += frames
            }
            return LV2Benchmark.threadCPUSeconds() - began
        }
    }

    /// The bare C loop over a second instance of the same plugin (same features, same controls).
    /// Its blocks start at the same offsets within a 4 KiB page as the host's input and output
    /// buffers: a copy whose source and destination share their low 12 address bits (or a
    /// plugin reading one while writing the other) stalls on 4K aliasing, so where malloc put
    /// the blocks decided which side's copies were dearer by more than the host's whole work.
    final class LoopRunner {
        let bare: LV2BareInstance
        let left: UnsafeMutablePointer<Float>
        let right: UnsafeMutablePointer<Float>
        let outputs: [UnsafeMutablePointer<Float>]
        let inBlocks: [UnsafeMutablePointer<Float>]
        let outBlocks: [UnsafeMutablePointer<Float>]
        let blockMemory: [UnsafeMutableRawPointer]
        let blockSize: Int
        /// The C call's arguments, made once: a turn only moves the source and destination pointers.
        var inputs: [UnsafePointer<Float>?]
        var destinations: [UnsafeMutablePointer<Float>?]
        let inBlockArguments: [UnsafeMutablePointer<Float>?]
        let outBlockArguments: [UnsafeMutablePointer<Float>?]
        let atoms: [UnsafeMutableRawPointer?]
        let capacities: [UInt32]

        init(
            bare: LV2BareInstance, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>,
            outputs: [UnsafeMutablePointer<Float>], blockSize: Int,
            placedLike host: (inputs: [UnsafeMutablePointer<Float>], outputs: [UnsafeMutablePointer<Float>]),
            inPlace: Bool = false
        ) throws {
            self.bare = bare
            self.left = left
            self.right = right
            self.outputs = Array(outputs.prefix(bare.outputPorts.count))
            self.blockSize = blockSize
            var memory: [UnsafeMutableRawPointer] = []
            /// A block at `like`'s offset within a page (64-aligned when there is nothing to match).
            func block(like: UnsafeMutablePointer<Float>?) -> UnsafeMutablePointer<Float> {
                let base = UnsafeMutableRawPointer.allocate(byteCount: blockSize * MemoryLayout<Float>.stride + 4096, alignment: 4096)
                memory.append(base)
                let offset = like.map { Int(bitPattern: $0) & 4095 } ?? 64
                return (base + offset).bindMemory(to: Float.self, capacity: blockSize)
            }
            if inPlace && host.inputs.count == bare.inputPorts.count && host.outputs.count == bare.outputPorts.count {
                // `--versus loop-in-host-buffers`: the host's own buffers (not rendered by the host meanwhile).
                inBlocks = host.inputs
                outBlocks = host.outputs
            } else {
                inBlocks = bare.inputPorts.indices.map { block(like: $0 < host.inputs.count ? host.inputs[$0] : nil) }
                outBlocks = bare.outputPorts.indices.map { block(like: $0 < host.outputs.count ? host.outputs[$0] : nil) }
                for block in inBlocks + outBlocks { block.initialize(repeating: 0, count: blockSize) }
            }
            blockMemory = memory
            inputs = Array(repeating: nil, count: bare.inputPorts.count)
            destinations = Array(repeating: nil, count: self.outputs.count)
            inBlockArguments = inBlocks.map { Optional($0) }
            outBlockArguments = outBlocks.map { Optional($0) }
            atoms = bare.atomOutputs.map { Optional($0.buffer) }
            capacities = bare.atomOutputs.map(\.capacity)
        }

        deinit { blockMemory.forEach { $0.deallocate() } }

        /// Thread CPU seconds (measured in C) for frames `start ..< start + count`.
        func run(from start: Int, count: Int) -> Double {
            for index in inputs.indices { inputs[index] = UnsafePointer((index % 2 == 0 ? left : right) + start) }
            for index in destinations.indices { destinations[index] = outputs[index] + start }
            return sonora_lv2_anchor_run(
                bare.descriptor, bare.handle, bare.inputPorts, Int32(bare.inputPorts.count), bare.outputPorts,
                Int32(bare.outputPorts.count), inputs, destinations, count, Int32(blockSize), inBlockArguments,
                outBlockArguments, atoms, capacities, Int32(capacities.count), bare.chunkURID)
        }
    }

    /// `--versus swift-loop`: the copies the Swift harness makes (`update(from:count:)`, as in
    /// `SignalInput.render` and `HostRunner.run`) around a direct `run()` of a bare instance, in
    /// the given blocks — the C loop written in Swift, no Sonora code between the copies.
    final class SwiftLoopRunner {
        let bare: LV2BareInstance
        let run: @convention(c) (LV2_Handle?, UInt32) -> Void
        let sources: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
        let destinations: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
        let inBlocks: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
        let outBlocks: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
        let inCount: Int
        let outCount: Int
        let blockSize: Int
        var probeStores = 0
        var probeAfterCopyOut = true
        var probeMXCSR = false
        let scratch = UnsafeMutablePointer<Int>.allocate(capacity: 512)

        /// `count` stores of 8 bytes to `scratch`, not merged or dropped by the optimizer.
        @inline(never)
        static func probe(_ scratch: UnsafeMutablePointer<Int>, _ count: Int) {
            for index in 0..<count { scratch[index] = Int(sonora_opaque_u64(UInt64(index))) }
        }

        init(
            bare: LV2BareInstance, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>,
            outputs: [UnsafeMutablePointer<Float>], blockSize: Int, inputBlocks: [UnsafeMutablePointer<Float>],
            outputBlocks: [UnsafeMutablePointer<Float>]
        ) throws {
            guard let run = bare.descriptor.pointee.run, let connect = bare.descriptor.pointee.connect_port,
                inputBlocks.count == bare.inputPorts.count, outputBlocks.count == bare.outputPorts.count,
                bare.atomOutputs.isEmpty
            else { throw AudioError(.parameterError, "--versus swift-loop: only for plugins with audio ports alone") }
            self.bare = bare
            self.run = run
            self.blockSize = blockSize
            inCount = inputBlocks.count
            outCount = outputBlocks.count
            sources = .allocate(capacity: max(1, inCount))
            destinations = .allocate(capacity: max(1, outCount))
            inBlocks = .allocate(capacity: max(1, inCount))
            outBlocks = .allocate(capacity: max(1, outCount))
            for index in 0..<inCount {
                sources[index] = index % 2 == 0 ? left : right
                inBlocks[index] = inputBlocks[index]
                connect(bare.handle, bare.inputPorts[index], inputBlocks[index])
            }
            for index in 0..<outCount {
                destinations[index] = outputs[index]
                outBlocks[index] = outputBlocks[index]
                connect(bare.handle, bare.outputPorts[index], outputBlocks[index])
            }
        }

        deinit {
            sources.deallocate()
            destinations.deallocate()
            inBlocks.deallocate()
            outBlocks.deallocate()
            scratch.deallocate()
        }

        func run(from start: Int, count: Int) -> Double {
            let began = LV2Benchmark.threadCPUSeconds()
            var position = start
            while position < start + count {
                let frames = min(blockSize, start + count - position)
                for channel in 0..<inCount { inBlocks[channel].update(from: sources[channel] + position, count: frames) }
                if probeStores > 0 && !probeAfterCopyOut { Self.probe(scratch, probeStores) }
                if probeMXCSR {
                    let mode = sonora_lv2_anchor_mxcsr_save()
                    run(bare.handle, UInt32(frames))
                    sonora_lv2_anchor_mxcsr_restore(mode)
                } else {
                    run(bare.handle, UInt32(frames))
                }
                for channel in 0..<outCount { (destinations[channel] + position).update(from: outBlocks[channel], count: frames) }
                if probeStores > 0 && probeAfterCopyOut { Self.probe(scratch, probeStores) }
                position += frames
            }
            return LV2Benchmark.threadCPUSeconds() - began
        }
    }

    /// Seconds lv2apply takes on the WAV (wall clock, process start to exit), or nil if it fails.
    func lv2apply(_ uri: String, input: String) -> Double? {
        let output = input + ".out.wav"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/lv2apply")
        process.arguments = ["-i", input, "-o", output, uri]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let start = HostTime.now
        guard (try? process.run()) != nil else { return nil }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return Double(HostTime.now - start) / 1e9
    }

    func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }
}
