import Foundation
import SonoraCore
import SonoraFile
import SonoraHAL
import SonoraToolbox
import SonoraUnits
import Synchronization
import Testing

// What the sonoraloop suites drive queues with: the reference listing played live, a
// capture-only unit's recorder, a signal source, and SpeakHere's CAF writer.

/// The playback listing, live: HandleOutputBuffer reads the next packets
/// (AudioFileReadPackets) into the buffer that came back and enqueues it; at the end of the
/// file it stops the queue after what is queued. Three buffers of about half a second
/// (DeriveBufferSize's bound).
final class LiveListingPlayer: @unchecked Sendable {
    let file: AudioFile
    var queue: AudioQueue!
    let packetsToRead: Int
    private var currentPacket = 0
    private var isRunning = true
    private let finished = DispatchSemaphore(value: 0)

    init(file: AudioFile) throws {
        self.file = file
        let maxPacketSize = max(file.maximumPacketSize ?? 4096, 1)
        // DeriveBufferSize: half a second of packets, the buffer within 16 KiB … 320 KiB.
        let framesPerPacket = max(Int(file.dataFormat.framesPerPacket), 1)
        let halfSecond = Int(file.dataFormat.sampleRate / 2) / framesPerPacket * maxPacketSize
        let bufferSize = min(max(halfSecond, 0x4000), 0x50000)
        packetsToRead = max(bufferSize / maxPacketSize, 1)
        queue = try AudioQueue(format: file.dataFormat) { [unowned self] queue, buffer in self.handleOutputBuffer(queue, buffer) }
        if let cookie = file.magicCookie, !file.dataFormat.isLinearPCM, file.dataFormat.formatID != .appleIMA4 {
            try queue.setMagicCookie(cookie)
        }
        try queue.addPropertyListener(.isRunning) { [unowned self] queue, _ in if !queue.isRunning { self.finished.signal() } }
    }

    func handleOutputBuffer(_ queue: AudioQueue, _ buffer: AudioQueueBuffer) {
        guard isRunning else { return }
        do {
            let read = try file.readPackets(from: currentPacket, count: packetsToRead)
            let count = read.descriptions?.count ?? read.bytes.count / max(Int(file.dataFormat.bytesPerPacket), 1)
            if count > 0 {
                buffer.fill(with: read.bytes)
                try queue.enqueue(buffer, packetDescriptions: read.descriptions ?? [])
                currentPacket += count
                return
            }
        } catch {
            Issue.record("HandleOutputBuffer: \(error)")
        }
        try? queue.stop(immediate: false)
        isRunning = false
    }

    /// Three buffers, primed through the callback, start, wait for IsRunning to go false.
    func run() throws {
        let descriptions = file.dataFormat.bytesPerPacket == 0 ? packetsToRead : 0
        for _ in 0..<3 {
            handleOutputBuffer(queue, try queue.allocateBuffer(byteCapacity: packetsToRead * max(file.maximumPacketSize ?? 4096, 1), packetDescriptionCapacity: descriptions))
        }
        try queue.prime()
        try queue.start()
        _ = finished.wait(timeout: .now() + 60)
        try queue.dispose(immediate: true)
    }
}

/// A capture-only unit's input callback: this cycle's frames into preallocated storage
/// (no allocation on the I/O thread).
final class LoopbackCapture: RenderCallbackTarget, @unchecked Sendable {
    unowned let unit: IOUnit
    let channels: Int
    let capacity: Int
    private let storage: UnsafeMutableBufferPointer<Float>
    private let scratch: OwnedAudioBufferList
    private let count = Atomic<Int>(0)

    init(unit: IOUnit, channels: Int, capacity: Int) {
        self.unit = unit
        self.channels = channels
        self.capacity = capacity
        storage = .allocate(capacity: capacity * channels)
        storage.initialize(repeating: 0)
        scratch = try! OwnedAudioBufferList(channelCount: channels, frameCapacity: 8192)
    }

    deinit { storage.deallocate() }

    var frames: Int { count.load(ordering: .acquiring) }
    var interleaved: [Float] { Array(storage.prefix(frames * channels)) }

    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        let frameCount = request.pointee.frameCount
        let list = scratch.list(frameCount: frameCount)
        var flags = RenderActionFlags()
        let status = unit.render(flags: &flags, timeStamp: request.pointee.timeStamp, bus: 1, frameCount: frameCount, into: list)
        guard status == .noError else { return status }
        let done = count.load(ordering: .relaxed)
        let take = min(frameCount, capacity - done)
        for channel in 0..<channels {
            let source = list.samples(channel)
            for frame in 0..<take { storage[(done + frame) * channels + channel] = source[frame] }
        }
        count.store(done + take, ordering: .releasing)
        return .noError
    }
}

/// Plays a mono signal once, then silence (the playback unit's render callback).
final class LoopbackSignalSource: RenderCallbackTarget, @unchecked Sendable {
    private let samples: UnsafeMutableBufferPointer<Float>
    private var position = 0

    init(_ signal: [Float]) {
        samples = .allocate(capacity: signal.count)
        _ = samples.initialize(from: signal)
    }

    deinit { samples.deallocate() }

    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        let output = request.pointee.buffers.samples(0)
        let frames = request.pointee.frameCount
        for frame in 0..<frames {
            output[frame] = position < samples.count ? samples[position] : 0
            position += 1
        }
        return .noError
    }
}

/// The input callback of the SpeakHere recorder: each buffer's packets into the CAF, the
/// buffer back into the queue.
final class SpeakHereCAFWriter: @unchecked Sendable {
    let file: AudioFile
    private let lock = NSLock()
    private var written = 0
    private var stopped = false
    private(set) var failure: AudioError?

    init(file: AudioFile) { self.file = file }

    var frames: Int { lock.withLock { written } }
    func stop() { lock.withLock { stopped = true } }

    func write(_ queue: AudioInputQueue, _ buffer: AudioQueueBuffer) {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        do throws(AudioError) {
            try file.writePackets(buffer.bytes)
            written += buffer.byteSize / 2
            try queue.enqueue(buffer)
        } catch {
            failure = error
        }
    }
}

extension AudioQueueLoopbackALSATests {
    /// One duplex device on a new loop whose I/O unit captures into `LoopbackCapture`: what
    /// the unit plays at stream frame F is captured at F + the device's buffer.
    static func duplexCapture(_ label: String, channels: Int, seconds: Double) throws -> (ALSADevice, IOUnit, LoopbackCapture) {
        let loop = newLoop(label)
        let device = try ALSADevice(capture: loop, playback: loop, configuration: configuration(input: channels, output: channels))
        let io = IOUnit()
        try io.setDevice(device)
        try io.setIOEnabled(true, scope: .input, element: IOUnit.inputElement)
        try io.setStreamFormat(.canonical(sampleRate: 48000, channels: channels), scope: .output, element: IOUnit.inputElement)
        let capture = LoopbackCapture(unit: io, channels: channels, capacity: Int(48000 * seconds))
        try io.setInputCallback(capture)
        return (device, io, capture)
    }
}
