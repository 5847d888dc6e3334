import Foundation
import SonoraCore
import SonoraFile
import SonoraTestSupport
import SonoraToolbox
import Synchronization

/// Interleaved Float32 at `format`'s rate and channels: the offline render format the tests use.
func floatFormat(like format: StreamFormat) -> StreamFormat {
    .linearPCM(sampleRate: format.sampleRate, channels: Int(format.channelsPerFrame), sample: .float32)
}

func floats(_ bytes: [UInt8]) -> [Float] {
    bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
}

func bytes(_ samples: [Float]) -> [UInt8] {
    samples.withUnsafeBytes { Array($0) }
}

/// A mono Float32 PCM queue in offline mode (interleaved Float32 output) with a callback
/// that records the buffers handed back.
final class Recorder: @unchecked Sendable {
    let lock = NSLock()
    var returned: [ObjectIdentifier] = []
    var events: [String] = []
    func add(_ buffer: AudioQueueBuffer) { lock.lock(); returned.append(ObjectIdentifier(buffer)); lock.unlock() }
    func note(_ event: String) { lock.lock(); events.append(event); lock.unlock() }
    var count: Int { lock.lock(); defer { lock.unlock() }; return returned.count }
    var notes: [String] { lock.lock(); defer { lock.unlock() }; return events }
}

func monoFloatQueue(rate: Double = 48000, channels: Int = 1, recorder: Recorder) throws -> AudioQueue {
    let format = StreamFormat.linearPCM(sampleRate: rate, channels: channels, sample: .float32)
    let queue = try AudioQueue(format: format) { _, buffer in recorder.add(buffer) }
    try queue.setOfflineRenderFormat(floatFormat(like: format))
    return queue
}

/// Enqueues `samples` (interleaved Float32) in a new buffer.
@discardableResult
func enqueue(_ samples: [Float], on queue: AudioQueue, trimStart: Int = 0, trimEnd: Int = 0, startTime: Int? = nil,
             events: [AudioQueueParameterEvent] = [], format: StreamFormat? = nil) throws -> AudioQueueBuffer {
    // Float32 unless `format` says 16-bit integer.
    let data = format?.bitsPerChannel == 16 ? samples.map { Int16($0 * 32767) }.withUnsafeBytes { Array($0) } : bytes(samples)
    let buffer = try queue.allocateBuffer(byteCapacity: max(data.count, 4))
    buffer.fill(with: data)
    try queue.enqueue(buffer, trimFramesAtStart: trimStart, trimFramesAtEnd: trimEnd, startTime: startTime, parameterEvents: events)
    return buffer
}

/// The reference document's playback listing (AQPlayerState, HandleOutputBuffer, three
/// buffers) over Sonora's AudioFile: each callback reads the next packets into the buffer
/// and re-enqueues it; at the end of the file it stops the queue after what is queued.
final class FilePlayer: @unchecked Sendable {
    let file: AudioFile
    let queue: AudioQueue
    let packetsPerBuffer: Int
    private(set) var currentPacket = 0
    private(set) var isDone = false
    private let stopped = Atomic<Bool>(false)
    var hasStopped: Bool { stopped.load(ordering: .acquiring) }

    init(path: String, packetsPerBuffer: Int) throws {
        file = try AudioFile.open(path)
        self.packetsPerBuffer = packetsPerBuffer
        let state = Unmanaged<Box>.passRetained(Box())
        queue = try AudioQueue(format: file.dataFormat) { queue, buffer in
            state.takeUnretainedValue().player?.handleOutputBuffer(queue, buffer)
        }
        state.takeUnretainedValue().player = self
        if let cookie = file.magicCookie, !file.dataFormat.isLinearPCM, file.dataFormat.formatID != .appleIMA4 {
            try queue.setMagicCookie(cookie)
        }
        try queue.setOfflineRenderFormat(floatFormat(like: file.dataFormat))
        try queue.addPropertyListener(.isRunning) { [unowned self] queue, _ in
            if !queue.isRunning { self.stopped.store(true, ordering: .releasing) }
        }
    }

    final class Box: @unchecked Sendable { weak var player: FilePlayer? }

    /// HandleOutputBuffer.
    func handleOutputBuffer(_ queue: AudioQueue, _ buffer: AudioQueueBuffer) {
        guard !isDone else { return }
        do {
            let read = try file.readPackets(from: currentPacket, count: packetsPerBuffer)
            let count = read.descriptions?.count ?? read.bytes.count / max(Int(file.dataFormat.bytesPerPacket), 1)
            if count > 0 {
                buffer.fill(with: read.bytes)
                try queue.enqueue(buffer, packetDescriptions: read.descriptions ?? [])
                currentPacket += count
            } else {
                try queue.stop(immediate: false)
                isDone = true
            }
        } catch {
            isDone = true
        }
    }

    /// Allocates three buffers, primes them through the callback, starts, and renders offline
    /// in `slice`-frame steps until IsRunning goes false; returns the interleaved samples.
    func play(slice: Int = 1000) throws -> [Float] {
        let capacity = max(packetsPerBuffer * (file.maximumPacketSize ?? 4096), 64)
        let descriptions = file.dataFormat.bytesPerPacket == 0 ? packetsPerBuffer : 0
        for _ in 0..<3 {
            let buffer = try queue.allocateBuffer(byteCapacity: capacity, packetDescriptionCapacity: descriptions)
            handleOutputBuffer(queue, buffer)
        }
        try queue.prime()
        try queue.start()
        var output: [Float] = []
        var slices = 0
        while !hasStopped && slices < 100_000 {
            output += floats(try queue.offlineRender(frames: slice))
            slices += 1
        }
        try queue.dispose(immediate: true)
        return output
    }
}

/// The file's samples decoded in one go by the file layer's converter (what the queue must play).
func decodedSamples(of path: String) throws -> [Float] {
    let file = try AudioFile.open(path)
    let total = file.packetCount ?? 0
    let read = try file.readPackets(from: 0, count: total)
    let converter = try AudioConverter(from: file.dataFormat, to: floatFormat(like: file.dataFormat))
    if let cookie = file.magicCookie, !file.dataFormat.isLinearPCM, file.dataFormat.formatID != .appleIMA4 {
        converter.decompressionMagicCookie = cookie
    }
    var out: [UInt8]
    if let descriptions = read.descriptions {
        out = try converter.convert(packets: AudioConverterPackets(data: read.bytes, descriptions: descriptions))
    } else {
        out = try converter.convert(read.bytes)
    }
    out += try converter.flush()
    return floats(out)
}

func runTool(_ path: String, _ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw AudioError(.unspecified, "\(path) \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
    }
}

/// Writes `tone` (mono) as an 8 kHz IMA4 CAF through the file layer's encoder.
func writeIMA4CAF(_ path: String, _ tone: [Float]) throws {
    let file = try AudioFile.create(path, type: .caf, format: .appleIMA4(sampleRate: 8000, channels: 1), erase: true)
    let storage = try OwnedAudioBufferList(channelCount: 1, frameCapacity: tone.count)
    let list = storage.list(frameCount: tone.count)
    for index in tone.indices { list.samples(0)[index] = tone[index] }
    try file.writeFrames(from: list)
    try file.close()
}
