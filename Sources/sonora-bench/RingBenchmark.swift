import CJack
import Foundation
import SonoraCore
import CSonoraSystem

/// `sonora-bench ring`: moves stereo Float32 audio between two threads through
/// Sonora's `SampleRing` (non-interleaved) and `ByteRing` and JACK's
/// `jack_ringbuffer_t` (both carrying interleaved frames), driven the same way
/// (copy-in / copy-out of whole chunks, a CPU pause while full or empty), and
/// copies the same bytes with memcpy on one thread. A side that finds its ring full or
/// empty waits `pauses` CPU pauses before it looks again (16 unless told), every ring alike.
///
/// Goals are judged on ratios taken within one trial: each trial runs every
/// contender back to back (in rotating order), so all see the same state of a
/// shared machine, whose other tenants move whole runs of trials between speed
/// regimes several times apart. The reported value is the median of the
/// per-trial ratios; absolute GB/s (medians) are printed as notes.
struct RingBenchmark {
    var bytesPerTrial: Int
    var trials: Int
    /// Print every trial's value, not only the medians (the machine's noise shows there).
    var showTrials = false
    var chunkFrames: [Int] = [32, 256, 4096]
    /// CPU pauses a waiting side makes between two looks at its ring (the same for every ring).
    var pauses: Int32 = 16
    /// Where the two sides of the last two-thread run left their count of looks that found the ring full or empty.
    let waits = WaitCounts()
    let channels = 2
    /// Frames the rings hold (stereo Float32, so 8 bytes a frame).
    var ringFrames: Int

    /// One trial's throughputs in GB/s.
    struct Trial {
        var sampleRing = 0.0
        var byteRing = 0.0
        var jack = 0.0
        var memcpy = 0.0
        /// Looks per chunk that found the ring full (producer) or empty (consumer), per contender.
        var sampleRingWaits = (producer: 0.0, consumer: 0.0)
        var byteRingWaits = (producer: 0.0, consumer: 0.0)
        var jackWaits = (producer: 0.0, consumer: 0.0)
    }

    func run() throws -> (rows: [BenchmarkRow], notes: [String]) {
        var rows: [BenchmarkRow] = []
        var notes = ["median of \(trials) trials, \(bytesPerTrial >> 20) MiB each, ring \(ringFrames) stereo frames"]
        for chunk in chunkFrames {
            let trials = try measure(chunk: chunk)
            rows.append(
                BenchmarkRow(
                    metric: "sample ring (non-interleaved) ÷ JACK ring, \(chunk)-frame stereo chunks", unit: "ratio",
                    sonora: median(trials.map { $0.sampleRing / $0.jack }), anchor: "JACK jack_ringbuffer_t = 1",
                    anchorValue: 1, better: .higher))
            rows.append(
                BenchmarkRow(
                    metric: "byte ring (interleaved) ÷ JACK ring, \(chunk)-frame stereo chunks", unit: "ratio",
                    sonora: median(trials.map { $0.byteRing / $0.jack }), anchor: "JACK jack_ringbuffer_t = 1",
                    anchorValue: 1, better: .higher))
            if chunk == chunkFrames.last {
                rows.append(
                    BenchmarkRow(
                        metric: "sample ring (2 threads) ÷ memcpy (1 thread), \(chunk)-frame chunks", unit: "ratio",
                        sonora: median(trials.map { $0.sampleRing / $0.memcpy }), anchor: "half of memcpy = 0.5",
                        anchorValue: 0.5, better: .higher))
            }
            notes.append(
                String(
                    format: "  %5d frames: sample ring %.2f GB/s, byte ring %.2f GB/s, JACK %.2f GB/s, memcpy %.2f GB/s",
                    chunk, median(trials.map(\.sampleRing)), median(trials.map(\.byteRing)),
                    median(trials.map(\.jack)), median(trials.map(\.memcpy))))
        }
        // One thread, write + read per call pair: the per-operation cost, without the hand-over.
        for chunk in chunkFrames {
            let cost = try operationCost(chunk: chunk, trials: trials)
            rows.append(
                BenchmarkRow(
                    metric: "sample ring ÷ JACK ring, one thread write + read, \(chunk)-frame stereo chunks (per call)",
                    unit: "ratio", sonora: cost.jack / cost.sampleRing, anchor: "JACK jack_ringbuffer_t = 1", anchorValue: 1,
                    better: .higher))
            notes.append(String(format: "  %5d frames, one thread: sample ring %.1f ns, JACK %.1f ns per write + read (fastest trial)", chunk, cost.sampleRing, cost.jack))
        }
        let mirroring = try measureMirroring(chunkBytes: 1000 * channels * 4)
        rows.append(
            BenchmarkRow(
                metric: "mirrored byte ring ÷ two-span byte ring, 1000-frame chunks", unit: "ratio",
                sonora: median(mirroring.map { $0.mirrored / $0.split }), anchor: "two-span byte ring = 1",
                anchorValue: 1, better: .higher))
        notes.append(
            String(
                format: "  1000 frames: mirrored byte ring %.2f GB/s, two-span byte ring %.2f GB/s",
                median(mirroring.map(\.mirrored)), median(mirroring.map(\.split))))
        return (rows, notes)
    }

    func measure(chunk: Int) throws -> [Trial] {
        var results: [Trial] = []
        for index in 0..<trials {
            var trial = Trial()
            // Rotate the order so that no contender always runs first (or last).
            for step in 0..<3 {
                switch (index + step) % 3 {
                case 0:
                    trial.sampleRing = try sampleRingThroughput(chunk: chunk)
                    trial.sampleRingWaits = waits.perChunk(framesPerTrial / chunk)
                case 1:
                    trial.byteRing = try byteRingThroughput(chunk: chunk)
                    trial.byteRingWaits = waits.perChunk(framesPerTrial / chunk)
                default:
                    trial.jack = try jackThroughput(chunk: chunk)
                    trial.jackWaits = waits.perChunk(framesPerTrial / chunk)
                }
            }
            trial.memcpy = try memcpyThroughput(chunk: chunk)
            results.append(trial)
        }
        if showTrials {
            func list(_ values: [Double]) -> String { values.map { String(format: "%.1f", $0) }.joined(separator: " ") }
            Swift.print(
                "  \(chunk) frames, each trial (GB/s): sample ring \(list(results.map(\.sampleRing)))"
                    + " | byte ring \(list(results.map(\.byteRing))) | JACK \(list(results.map(\.jack)))")
            func looks(_ values: [(producer: Double, consumer: Double)]) -> String {
                String(format: "%.2f / %.2f", median(values.map(\.producer)), median(values.map(\.consumer)))
            }
            Swift.print(
                "  \(chunk) frames, looks per chunk that found the ring full / empty (median): sample ring "
                    + "\(looks(results.map(\.sampleRingWaits))) | byte ring \(looks(results.map(\.byteRingWaits)))"
                    + " | JACK \(looks(results.map(\.jackWaits)))")
        }
        return results
    }

    private var framesPerTrial: Int { bytesPerTrial / (channels * 4) }

    func sampleRingThroughput(chunk: Int) throws -> Double {
        let ring = try SampleRing(channelCount: channels, capacity: ringFrames)
        let source = try OwnedAudioBufferList(channelCount: channels, frameCapacity: chunk)
        let destination = try OwnedAudioBufferList(channelCount: channels, frameCapacity: chunk)
        let total = framesPerTrial / chunk * chunk
        let pauses = self.pauses
        let waits = self.waits
        let seconds = try timeTwoThreads(
            producer: {
                let list = source.list
                Unmanaged.passUnretained(ring)._withUnsafeGuaranteedRef { ring in
                    var polls = 0
                    for _ in 0..<total / chunk {
                        while ring.writeRegion(maxFrames: chunk).frameCount < chunk { polls &+= 1; backOff(pauses) }
                        _ = ring.write(from: list)
                    }
                    waits.producer = polls
                }
            },
            consumer: {
                let list = destination.list
                Unmanaged.passUnretained(ring)._withUnsafeGuaranteedRef { ring in
                    var polls = 0
                    for _ in 0..<total / chunk {
                        while ring.readRegion(maxFrames: chunk).frameCount < chunk { polls &+= 1; backOff(pauses) }
                        _ = ring.read(into: list)
                    }
                    waits.consumer = polls
                }
            })
        return Double(total * channels * 4) / seconds / 1e9
    }

    /// Sonora's byte ring carrying the same interleaved frames JACK's ring carries.
    func byteRingThroughput(chunk: Int) throws -> Double {
        try byteRingThroughput(chunkBytes: chunk * channels * 4, mirrored: false)
    }

    /// The byte ring moving whole chunks of `chunkBytes`, double-mapped or not.
    func byteRingThroughput(chunkBytes: Int, mirrored: Bool) throws -> Double {
        let ring = try ByteRing(capacity: ringFrames * channels * 4, mirrored: mirrored)
        let source = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkBytes, alignment: 64)
        let destination = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkBytes, alignment: 64)
        source.initializeMemory(as: UInt8.self, repeating: 1)
        defer {
            source.deallocate()
            destination.deallocate()
        }
        let sourceHandle = RawPointer(source.baseAddress!)
        let destinationHandle = RawPointer(destination.baseAddress!)
        let chunks = bytesPerTrial / chunkBytes
        let pauses = self.pauses
        let waits = self.waits
        let seconds = try timeTwoThreads(
            producer: {
                let chunk = UnsafeRawBufferPointer(start: sourceHandle.pointer, count: chunkBytes)
                Unmanaged.passUnretained(ring)._withUnsafeGuaranteedRef { ring in
                    var polls = 0
                    for _ in 0..<chunks {
                        while ring.writeRegion(maxBytes: chunkBytes).count < chunkBytes { polls &+= 1; backOff(pauses) }
                        _ = ring.write(chunk)
                    }
                    waits.producer = polls
                }
            },
            consumer: {
                let chunk = UnsafeMutableRawBufferPointer(start: destinationHandle.pointer, count: chunkBytes)
                Unmanaged.passUnretained(ring)._withUnsafeGuaranteedRef { ring in
                    var polls = 0
                    for _ in 0..<chunks {
                        while ring.readRegion(maxBytes: chunkBytes).count < chunkBytes { polls &+= 1; backOff(pauses) }
                        _ = ring.read(into: chunk)
                    }
                    waits.consumer = polls
                }
            })
        return Double(chunks * chunkBytes) / seconds / 1e9
    }

    func jackThroughput(chunk: Int) throws -> Double {
        let frameBytes = channels * 4
        guard let ring = jack_ringbuffer_create(ringFrames * frameBytes) else {
            throw BenchmarkFailure("jack_ringbuffer_create failed")
        }
        // JACK's ring gets a buffer of the bench's own on a page boundary, as Sonora's rings get aligned
        // storage: left to malloc, its 128 KiB land wherever the previous contender's freed storage was,
        // and JACK's 32-frame rate moved by 13 % with the size of the sample ring's channels.
        let ownBuffer = UnsafeMutableRawPointer.allocate(byteCount: ring.pointee.size, alignment: 4096)
        ownBuffer.initializeMemory(as: UInt8.self, repeating: 0, count: ring.pointee.size)
        let jackBuffer = ring.pointee.buf
        ring.pointee.buf = ownBuffer.assumingMemoryBound(to: CChar.self)
        defer {
            ring.pointee.buf = jackBuffer
            ownBuffer.deallocate()
            jack_ringbuffer_free(ring)
        }
        let handle = JackRing(ring)
        let source = UnsafeMutableRawPointer.allocate(byteCount: chunk * frameBytes, alignment: 64)
        let destination = UnsafeMutableRawPointer.allocate(byteCount: chunk * frameBytes, alignment: 64)
        source.initializeMemory(as: UInt8.self, repeating: 1, count: chunk * frameBytes)
        defer {
            source.deallocate()
            destination.deallocate()
        }
        let sourceHandle = RawPointer(source)
        let destinationHandle = RawPointer(destination)
        let chunkBytes = chunk * frameBytes
        let chunks = framesPerTrial / chunk
        let totalBytes = chunks * chunkBytes
        let pauses = self.pauses
        let waits = self.waits
        let seconds = try timeTwoThreads(
            producer: {
                let source = sourceHandle.pointer.assumingMemoryBound(to: CChar.self)
                var polls = 0
                for _ in 0..<chunks {
                    while jack_ringbuffer_write_space(handle.ring) < chunkBytes { polls &+= 1; backOff(pauses) }
                    _ = jack_ringbuffer_write(handle.ring, source, chunkBytes)
                }
                waits.producer = polls
            },
            consumer: {
                let destination = destinationHandle.pointer.assumingMemoryBound(to: CChar.self)
                var polls = 0
                for _ in 0..<chunks {
                    while jack_ringbuffer_read_space(handle.ring) < chunkBytes { polls &+= 1; backOff(pauses) }
                    _ = jack_ringbuffer_read(handle.ring, destination, chunkBytes)
                }
                waits.consumer = polls
            })
        return Double(totalBytes) / seconds / 1e9
    }

    /// One thread copying the same chunks into a buffer the size of the ring.
    func memcpyThroughput(chunk: Int) throws -> Double {
        let chunkBytes = chunk * channels * 4
        let ringBytes = ringFrames * channels * 4
        let source = UnsafeMutableRawPointer.allocate(byteCount: chunkBytes, alignment: 64)
        let destination = UnsafeMutableRawPointer.allocate(byteCount: ringBytes, alignment: 64)
        source.initializeMemory(as: UInt8.self, repeating: 1, count: chunkBytes)
        destination.initializeMemory(as: UInt8.self, repeating: 0, count: ringBytes)
        defer {
            source.deallocate()
            destination.deallocate()
        }
        let totalBytes = framesPerTrial * channels * 4
        let began = HostTime.now
        var moved = 0
        var offset = 0
        while moved < totalBytes {
            let count = min(chunkBytes, totalBytes - moved)
            (destination + offset).copyMemory(from: source, byteCount: count)
            offset = (offset + count) % max(1, ringBytes - chunkBytes + 1)
            moved += count
        }
        let seconds = Double(HostTime.now - began) / 1e9
        return Double(totalBytes) / seconds / 1e9
    }

    /// Byte ring with and without the double mapping, with chunks that do not
    /// divide the capacity so that regions split at the wrap.
    func measureMirroring(chunkBytes: Int) throws -> [(mirrored: Double, split: Double)] {
        try (0..<trials).map { index in
            if index % 2 == 0 {
                let mirrored = try byteRingThroughput(chunkBytes: chunkBytes, mirrored: true)
                return (mirrored, try byteRingThroughput(chunkBytes: chunkBytes, mirrored: false))
            }
            let split = try byteRingThroughput(chunkBytes: chunkBytes, mirrored: false)
            return (try byteRingThroughput(chunkBytes: chunkBytes, mirrored: true), split)
        }
    }

}

/// Two counters, one a side on lines of their own, that a two-thread run's sides set once at their end.
final class WaitCounts: @unchecked Sendable {
    private let base = UnsafeMutableRawPointer.allocate(byteCount: 256, alignment: 128)

    init() { base.initializeMemory(as: UInt8.self, repeating: 0, count: 256) }
    deinit { base.deallocate() }

    var producer: Int {
        get { base.load(as: Int.self) }
        set { base.storeBytes(of: newValue, as: Int.self) }
    }
    var consumer: Int {
        get { (base + 128).load(as: Int.self) }
        set { (base + 128).storeBytes(of: newValue, as: Int.self) }
    }

    func perChunk(_ chunks: Int) -> (producer: Double, consumer: Double) {
        (Double(producer) / Double(max(chunks, 1)), Double(consumer) / Double(max(chunks, 1)))
    }
}

/// Carries C pointers into @Sendable closures (each is used by one thread at a time).
struct RawPointer: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer
    init(_ pointer: UnsafeMutableRawPointer) { self.pointer = pointer }
}

struct JackRing: @unchecked Sendable {
    let ring: UnsafeMutablePointer<jack_ringbuffer_t>
    init(_ ring: UnsafeMutablePointer<jack_ringbuffer_t>) { self.ring = ring }
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// What a benchmark thread does when its ring is full or empty: `pauses` CPU pauses, the same
/// for every ring (both threads have a core each; a syscall here would dominate small chunks).
/// The default is 16 (about 0.4 µs on the reference VM, where a pause takes 25 ns), not 1: with a
/// single pause the consumer looks again within half a 32-frame chunk's hand-over, so the row ranks
/// the two loops' instruction timing (libjack's ring and a C copy of the same source differ by 30 %
/// there) rather than the rings; see BENCHMARKS.md, ring section, "2026-11-28 late".
@inline(__always)
func backOff(_ pauses: Int32) {
    sonora_cpu_relax(pauses)
}
