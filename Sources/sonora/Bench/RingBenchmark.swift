import CJack
import Foundation
import SonoraCore
import CSonoraSystem

/// `sonora bench ring`: moves stereo Float32 audio between two threads through
/// Sonora's `SampleRing` and JACK's `jack_ringbuffer_t`, driven the same way
/// (copy-in / copy-out of whole chunks, yield when full or empty), and copies the
/// same bytes with memcpy on one thread.
struct RingBenchmark {
    var bytesPerTrial: Int
    var trials: Int
    /// Print every trial's value, not only the medians (the machine's noise shows there).
    var showTrials = false
    var chunkFrames: [Int] = [32, 256, 4096]
    let channels = 2
    /// Frames the rings hold (stereo Float32, so 8 bytes a frame).
    var ringFrames: Int

    struct Throughputs {
        var sonora: Double
        var jack: Double
        var memcpy: Double
    }

    func run() throws -> (rows: [BenchmarkRow], notes: [String]) {
        var rows: [BenchmarkRow] = []
        var notes: [String] = []
        for chunk in chunkFrames {
            let result = try measure(chunk: chunk)
            rows.append(
                BenchmarkRow(
                    metric: "sample ring, \(chunk)-frame stereo chunks, 2 threads", unit: "GB/s",
                    sonora: result.sonora, anchor: "JACK jack_ringbuffer_t", anchorValue: result.jack,
                    better: .higher))
            if chunk == chunkFrames.last {
                rows.append(
                    BenchmarkRow(
                        metric: "sample ring vs memcpy, \(chunk)-frame chunks", unit: "GB/s",
                        sonora: result.sonora, anchor: "memcpy 1 thread ÷ 2", anchorValue: result.memcpy / 2,
                        better: .higher))
            }
            notes.append(
                String(
                    format: "  %5d frames: sonora %.2f GB/s, JACK %.2f GB/s, memcpy %.2f GB/s", chunk,
                    result.sonora, result.jack, result.memcpy))
        }
        let mirrored = try measureMirroring(chunkBytes: 1000 * channels * 4)
        rows.append(
            BenchmarkRow(
                metric: "byte ring mirrored, 1000-frame chunks (wrap splits)", unit: "GB/s",
                sonora: mirrored.mirrored, anchor: "byte ring, two-span regions", anchorValue: mirrored.split,
                better: .higher))
        notes.insert(
            "median of \(trials) trials, \(bytesPerTrial >> 20) MiB each, ring \(ringFrames) stereo frames", at: 0)
        return (rows, notes)
    }

    func measure(chunk: Int) throws -> Throughputs {
        var trialLog: [String] = []
        defer { trialLog.forEach { Swift.print($0) } }
        var sonora: [Double] = []
        var jack: [Double] = []
        var copy: [Double] = []
        for _ in 0..<trials {
            sonora.append(try sampleRingThroughput(chunk: chunk))
            jack.append(try jackThroughput(chunk: chunk))
            copy.append(try memcpyThroughput(chunk: chunk))
        }
        if showTrials {
            trialLog.append(
                "  \(chunk) frames, each trial (GB/s): sonora " + sonora.map { String(format: "%.1f", $0) }.joined(separator: " ")
                    + " | JACK " + jack.map { String(format: "%.1f", $0) }.joined(separator: " "))
        }
        return Throughputs(sonora: median(sonora), jack: median(jack), memcpy: median(copy))
    }

    private var framesPerTrial: Int { bytesPerTrial / (channels * 4) }

    func sampleRingThroughput(chunk: Int) throws -> Double {
        let ring = try SampleRing(channelCount: channels, capacity: ringFrames)
        let source = try OwnedAudioBufferList(channelCount: channels, frameCapacity: chunk)
        let destination = try OwnedAudioBufferList(channelCount: channels, frameCapacity: chunk)
        let total = framesPerTrial / chunk * chunk
        let seconds = try timeTwoThreads(
            producer: {
                let list = source.list
                Unmanaged.passUnretained(ring)._withUnsafeGuaranteedRef { ring in
                    for _ in 0..<total / chunk {
                        while ring.writeRegion(maxFrames: chunk).frameCount < chunk { backOff() }
                        _ = ring.write(from: list)
                    }
                }
            },
            consumer: {
                let list = destination.list
                Unmanaged.passUnretained(ring)._withUnsafeGuaranteedRef { ring in
                    for _ in 0..<total / chunk {
                        while ring.readRegion(maxFrames: chunk).frameCount < chunk { backOff() }
                        _ = ring.read(into: list)
                    }
                }
            })
        return Double(total * channels * 4) / seconds / 1e9
    }

    func jackThroughput(chunk: Int) throws -> Double {
        let frameBytes = channels * 4
        guard let ring = jack_ringbuffer_create(ringFrames * frameBytes) else {
            throw BenchmarkFailure("jack_ringbuffer_create failed")
        }
        defer { jack_ringbuffer_free(ring) }
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
        let seconds = try timeTwoThreads(
            producer: {
                let source = sourceHandle.pointer.assumingMemoryBound(to: CChar.self)
                for _ in 0..<chunks {
                    while jack_ringbuffer_write_space(handle.ring) < chunkBytes { backOff() }
                    _ = jack_ringbuffer_write(handle.ring, source, chunkBytes)
                }
            },
            consumer: {
                let destination = destinationHandle.pointer.assumingMemoryBound(to: CChar.self)
                for _ in 0..<chunks {
                    while jack_ringbuffer_read_space(handle.ring) < chunkBytes { backOff() }
                    _ = jack_ringbuffer_read(handle.ring, destination, chunkBytes)
                }
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
    func measureMirroring(chunkBytes: Int) throws -> (mirrored: Double, split: Double) {
        var mirrored: [Double] = []
        var split: [Double] = []
        for _ in 0..<trials {
            mirrored.append(try byteRingThroughput(chunkBytes: chunkBytes, mirrored: true))
            split.append(try byteRingThroughput(chunkBytes: chunkBytes, mirrored: false))
        }
        return (median(mirrored), median(split))
    }

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
        let totalBytes = bytesPerTrial
        let seconds = try timeTwoThreads(
            producer: {
                var moved = 0
                while moved < totalBytes {
                    let count = min(chunkBytes, totalBytes - moved)
                    let written = ring.write(UnsafeRawBufferPointer(start: sourceHandle.pointer, count: count))
                    if written == 0 { backOff() }
                    moved += written
                }
            },
            consumer: {
                var moved = 0
                let buffer = UnsafeMutableRawBufferPointer(start: destinationHandle.pointer, count: chunkBytes)
                while moved < totalBytes {
                    let read = ring.read(into: buffer)
                    if read == 0 { backOff() }
                    moved += read
                }
            })
        return Double(totalBytes) / seconds / 1e9
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

/// What a benchmark thread does when its ring is full or empty: one CPU pause
/// (both threads have a core each; a syscall here would dominate small chunks).
@inline(__always)
func backOff() {
    sonora_cpu_relax(1)
}
