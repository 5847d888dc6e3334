import CLV2BenchAnchor
import CSonoraSystem
import Foundation
import SonoraCore
import SonoraFile
import SonoraLV2
import SonoraUnits

/// `sonora bench lv2`: Sonora's LV2 host against a bare C loop around the same plugin's
/// run() (same buffers, same block size, same copies in and out), and lv2apply.
struct LV2Benchmark {
    var seconds: Int
    var trials: Int
    var withLV2Apply: Bool
    let blockSize = 512
    let sampleRate = 48000.0

    var plugins = Self.defaultPlugins

    static let defaultPlugins: [(name: String, uri: String)] = [
        ("mda Delay", "http://drobilla.net/plugins/mda/Delay"),
        ("swh gverb", "http://plugin.org.uk/swh-plugins/gverb"),
        ("zam ZamCompX2", "urn:zamaudio:ZamCompX2"),
        ("dragonfly plate", "urn:dragonfly:plate"),
        ("lsp compressor_stereo", "http://lsp-plug.in/plugins/lv2/compressor_stereo"),
        ("x42-eq stereo", "http://gareus.org/oss/lv2/fil4#stereo"),
    ]

    /// Feeds every input channel from preallocated stereo signal memory by sample time (no ARC, no allocation).
    final class SignalInput: RenderCallbackTarget {
        let left: UnsafeMutablePointer<Float>
        let right: UnsafeMutablePointer<Float>
        let frames: Int
        init(left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>, frames: Int) {
            self.left = left
            self.right = right
            self.frames = frames
        }
        override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
            let start = Int(request.pointee.timeStamp.sampleTime)
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
        let left = UnsafeMutablePointer<Float>.allocate(capacity: frames)
        let right = UnsafeMutablePointer<Float>.allocate(capacity: frames)
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
        let outputs = (0..<8).map { _ in UnsafeMutablePointer<Float>.allocate(capacity: frames) }
        defer { outputs.forEach { $0.deallocate() } }
        for output in outputs { output.initialize(repeating: 0, count: frames) }

        var rows: [BenchmarkRow] = []
        var notes = ["\(seconds) s stereo at 48 kHz, \(blockSize)-frame blocks; median of \(trials) trials, host and C loop back to back in each"]
        for (name, uri) in plugins {
            let unit: LV2Unit
            do {
                unit = try LV2Unit(uri: uri, options: .init(sampleRate: sampleRate, maximumFrames: blockSize, workerMode: .inline))
            } catch {
                notes.append("  \(name): skipped (\(error))")
                continue
            }
            // Warm-up: first calls page in code and plugin tables for both.
            _ = try bareLoop(unit, left: left, right: right, outputs: outputs, frames: min(frames, 48000))
            _ = try host(unit, left: left, right: right, outputs: outputs, frames: min(frames, 48000))
            var sonoraTimes: [Double] = []
            var loopTimes: [Double] = []
            for trial in 0..<trials {
                // Alternate which goes first, so neither always inherits the other's cache state.
                if trial % 2 == 0 {
                    loopTimes.append(try bareLoop(unit, left: left, right: right, outputs: outputs, frames: frames))
                    sonoraTimes.append(try host(unit, left: left, right: right, outputs: outputs, frames: frames))
                } else {
                    sonoraTimes.append(try host(unit, left: left, right: right, outputs: outputs, frames: frames))
                    loopTimes.append(try bareLoop(unit, left: left, right: right, outputs: outputs, frames: frames))
                }
            }
            let ratio = median(zip(sonoraTimes, loopTimes).map { $0 / $1 })
            let realtime = Double(seconds) / median(sonoraTimes)
            rows.append(
                BenchmarkRow(
                    metric: "\(name): LV2Unit ÷ bare C run() loop, overhead", unit: "%", sonora: (ratio - 1) * 100,
                    anchor: "bare C loop + 3 %", anchorValue: 3, better: .lower))
            let blocks = Double((frames + blockSize - 1) / blockSize)
            notes.append(
                String(
                    format: "  %@: Sonora %.3f s, C loop %.3f s for %d s of audio (%.0f× realtime); %+.0f ns per %d-frame render",
                    name, median(sonoraTimes), median(loopTimes), seconds, realtime,
                    (median(sonoraTimes) - median(loopTimes)) / blocks * 1e9, blockSize))
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

    /// Seconds for Sonora's host: the unit pulls its inputs from memory, renders 512-frame
    /// slices into one buffer, and each slice is copied out — the same copies the C loop makes.
    func host(
        _ unit: LV2Unit, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>,
        outputs: [UnsafeMutablePointer<Float>], frames: Int
    ) throws -> Double {
        unit.uninitialize()
        for input in 0..<unit.elementCount(.input) {
            try unit.setRenderCallback(SignalInput(left: left, right: right, frames: frames), input: input)
        }
        try unit.initialize()
        defer { unit.uninitialize() }
        let channels = Int(try unit.streamFormat(scope: .output, element: 0).channelsPerFrame)
        let buffers = try OwnedAudioBufferList(channelCount: channels, frameCapacity: blockSize)
        let list = buffers.list
        let destinations = UnsafeMutablePointer<UnsafeMutablePointer<Float>>.allocate(capacity: channels)
        defer { destinations.deallocate() }
        for index in 0..<channels { destinations[index] = outputs[index] }
        let start = HostTime.now
        var position = 0
        while position < frames {
            let count = min(blockSize, frames - position)
            var flags = RenderActionFlags()
            let status = unit.render(
                flags: &flags, timeStamp: AudioTimeStamp(sampleTime: Double(position)), bus: 0, frameCount: count, into: list)
            guard status == .noError else { throw AudioError(status, "\(unit.name): render failed at frame \(position)") }
            for channel in 0..<channels { (destinations[channel] + position).update(from: list.samples(channel), count: count) }
            position += count
        }
        return Double(HostTime.now - start) / 1e9
    }

    /// Seconds for the bare C loop over a second instance of the same plugin, same controls.
    func bareLoop(
        _ unit: LV2Unit, left: UnsafeMutablePointer<Float>, right: UnsafeMutablePointer<Float>,
        outputs allOutputs: [UnsafeMutablePointer<Float>], frames: Int
    ) throws -> Double {
        let bare = try unit.makeBareInstance()
        let inputs = bare.inputPorts.indices.map { UnsafePointer($0 % 2 == 0 ? left : right) }
        let outputs = Array(allOutputs.prefix(bare.outputPorts.count))
        let inBlocks = bare.inputPorts.map { _ in UnsafeMutablePointer<Float>.allocate(capacity: blockSize) }
        let outBlocks = bare.outputPorts.map { _ in UnsafeMutablePointer<Float>.allocate(capacity: blockSize) }
        for block in inBlocks + outBlocks { block.initialize(repeating: 0, count: blockSize) }
        defer { (inBlocks + outBlocks).forEach { $0.deallocate() } }
        let atomBuffers = bare.atomOutputs.map { Optional($0.buffer) }
        let atomCapacities = bare.atomOutputs.map(\.capacity)
        let seconds = sonora_lv2_anchor_run(
            bare.descriptor, bare.handle, bare.inputPorts, Int32(bare.inputPorts.count), bare.outputPorts,
            Int32(bare.outputPorts.count), inputs.map { Optional($0) }, outputs.map { Optional($0) }, frames, Int32(blockSize),
            inBlocks.map { Optional($0) }, outBlocks.map { Optional($0) }, atomBuffers.map { UnsafeRawPointer($0) }.map { UnsafeMutableRawPointer(mutating: $0) },
            atomCapacities, Int32(atomCapacities.count), bare.chunkURID)
        withExtendedLifetime(bare) {}
        return seconds
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
