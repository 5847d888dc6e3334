import Dispatch
import Foundation
import SonoraCore
import SonoraFile

/// An input queue's buffers written to a file — the reference documents' recording
/// callback (HandleInputBuffer: write the packets, re-enqueue the buffer), plus what a
/// recording that must not be lost needs: the file hidden under a partial name until it is
/// finished, its header brought up to date about once a second (a killed process leaves
/// that much readable), a frame limit, and the packet table's priming and remainder set at
/// the end. `sonora record` and `AudioRecorder` both record through it.
///
/// Threads: `write` runs on the queue's callback thread; the rest on the program's.
public final class AudioQueueFileRecording: @unchecked Sendable {
    /// The file's final name (it is written under a hidden partial name until `finish`).
    public let path: String
    public let format: StreamFormat
    /// Frames to record at most (nil: until stopped).
    public let frameLimit: Int?
    /// Signalled once the limit is reached or a write failed (the recording is over).
    public let ended = DispatchSemaphore(value: 0)
    let file: AudioFile

    private let lock = NSLock()
    private var framesWritten = 0
    private var failureValue: AudioError?
    private var done = false
    /// Frames in the file when its header was last brought up to date.
    private var updatedFrames = 0
    /// PCM bytes to Float32, for a file that takes frames (made at the first such write).
    private var frameConverter: AudioConverter?

    /// Creates the file for `queue`'s format (and its encoder's magic cookie); `erase`: replace
    /// an existing file at `path` (otherwise refused). `compressionLevel` (0 … 1) is the
    /// file's encoder effort where the file encodes (FLAC).
    public init(
        path: String, type: AudioFileType, queue: AudioInputQueue, frameLimit: Int? = nil, erase: Bool = false,
        compressionLevel: Double? = nil
    ) throws(AudioError) {
        let format = queue.format
        // Room for the packet table before the data (ALAC): the header updates never move it.
        file = try AudioFile.create(
            path, type: type, format: format, magicCookie: try queue.magicCookie, erase: erase,
            packetTableReserve: format.bytesPerPacket == 0 ? 64 << 10 : 0)
        file.keepsWrittenAudioOnFailure = true
        if let compressionLevel {
            do { try file.setCompressionLevel(compressionLevel) } catch {
                file.abandon()
                throw error
            }
        }
        self.path = path
        self.format = format
        self.frameLimit = frameLimit
    }

    /// Frames written so far (packets' frames, as the file counts them).
    public var frames: Int { lock.withLock { framesWritten } }
    /// The write that failed, if one did (the recording then ended).
    public var failure: AudioError? { lock.withLock { failureValue } }
    public var hasEnded: Bool { lock.withLock { done } }

    /// The byte capacity and description count of a buffer of about 100 ms: PCM frames, IMA4
    /// packets, or two ALAC packets (4096 frames, at most 32-bit samples plus headers each).
    public static func bufferSize(for format: StreamFormat) -> (bytes: Int, descriptions: Int) {
        let channels = Int(format.channelsPerFrame)
        if format.isLinearPCM {
            return (max(Int(format.sampleRate / 10), 1) * Int(format.bytesPerFrame), 0)
        }
        if format.bytesPerPacket > 0 {
            return (max(Int(format.sampleRate / 10) / max(Int(format.framesPerPacket), 1), 1) * Int(format.bytesPerPacket), 0)
        }
        return (2 * (max(Int(format.framesPerPacket), 4096) * channels * 4 + 64), 2)
    }

    /// Allocates and enqueues `count` buffers of `bufferSize(for:)` on `queue`.
    public func enqueueBuffers(on queue: AudioInputQueue, count: Int = 3) throws(AudioError) {
        let size = Self.bufferSize(for: format)
        for _ in 0..<count { try queue.enqueue(try queue.allocateBuffer(byteCapacity: size.bytes, packetDescriptionCapacity: size.descriptions)) }
    }

    /// HandleInputBuffer: the buffer's packets into the file (up to the frame limit), the
    /// buffer back into the queue.
    public func write(_ queue: AudioInputQueue, _ buffer: AudioQueueBuffer, _ descriptions: [AudioStreamPacketDescription]) {
        lock.lock()
        defer { lock.unlock() }
        guard !done else { return }
        do throws(AudioError) {
            try writePackets(buffer, descriptions)
            // About once a second the header counts what is written.
            if framesWritten - updatedFrames >= Int(format.sampleRate) {
                try file.updateHeader()
                updatedFrames = framesWritten
            }
        } catch {
            failureValue = error
            end()
            return
        }
        if let frameLimit, framesWritten >= frameLimit {
            end()
            return
        }
        try? queue.enqueue(buffer)
    }

    private func end() {
        done = true
        ended.signal()
    }

    private func writePackets(_ buffer: AudioQueueBuffer, _ descriptions: [AudioStreamPacketDescription]) throws(AudioError) {
        if format.isLinearPCM && !file.dataFormat.isLinearPCM {
            // A file that encodes frames itself (FLAC through libsndfile): PCM in, as frames.
            let frameBytes = Int(format.bytesPerFrame)
            var count = buffer.byteSize / frameBytes
            if let frameLimit { count = min(count, frameLimit - framesWritten) }
            try writeFrames(Array(buffer.bytes.prefix(count * frameBytes)), count: count)
            framesWritten += count
        } else if format.isLinearPCM {
            let frameBytes = Int(format.bytesPerFrame)
            var count = buffer.byteSize / frameBytes
            if let frameLimit { count = min(count, frameLimit - framesWritten) }
            try file.writePackets(Array(buffer.bytes.prefix(count * frameBytes)))
            framesWritten += count
        } else if descriptions.isEmpty {
            // Constant-size packets (IMA4): whole packets, up to the one that reaches the limit.
            let packetBytes = Int(format.bytesPerPacket), packetFrames = Int(format.framesPerPacket)
            var packets = buffer.byteSize / packetBytes
            if let frameLimit { packets = min(packets, (frameLimit - framesWritten + packetFrames - 1) / packetFrames) }
            try file.writePackets(Array(buffer.bytes.prefix(packets * packetBytes)))
            framesWritten += packets * packetFrames
        } else {
            var kept: [AudioStreamPacketDescription] = []
            for description in descriptions {
                if let frameLimit, framesWritten >= frameLimit { break }
                kept.append(description)
                // As the file counts them: a short last packet is a whole one (its padding is the remainder).
                framesWritten += Int(format.framesPerPacket > 0 || description.variableFramesInPacket == 0 ? format.framesPerPacket : description.variableFramesInPacket)
            }
            try file.writePackets(buffer.bytes, descriptions: kept)
        }
    }

    /// Interleaved PCM bytes in the queue's format → Float32 channels → the file's encoder.
    private func writeFrames(_ bytes: [UInt8], count: Int) throws(AudioError) {
        guard count > 0 else { return }
        let channels = Int(format.channelsPerFrame)
        if frameConverter == nil {
            frameConverter = try AudioConverter(from: format, to: .linearPCM(sampleRate: format.sampleRate, channels: channels, sample: .float32))
        }
        let floats = try frameConverter!.convert(bytes)
        let storage = try OwnedAudioBufferList(channelCount: channels, frameCapacity: count)
        let list = storage.list(frameCount: count)
        floats.withUnsafeBytes { raw in
            let samples = raw.bindMemory(to: Float.self)
            for channel in 0..<channels {
                let destination = list.samples(channel)
                for frame in 0..<count { destination[frame] = samples[frame * channels + channel] }
            }
        }
        try file.writeFrames(from: list)
    }

    /// Gives the recording up before anything was captured (the queue never started): the
    /// partial file is removed and nothing appears under the name.
    public func abandon() {
        lock.withLock { done = true }
        file.abandon()
    }

    /// Ends the recording (the queue stopped): the packet table says which frames are audio
    /// (the encoder's priming and padding, or past the limit, are not), and the file takes its
    /// final name. Returns the audio frames it holds. After a failed write the file is still
    /// finished with what it holds, and the failure is thrown, saying how much was kept.
    @discardableResult
    public func finish(primeInfo: AudioConverterPrimeInfo) throws(AudioError) -> Int {
        let (written, failure) = lock.withLock { () -> (Int, AudioError?) in
            done = true
            return (framesWritten, failureValue)
        }
        var frames = written
        if !format.isLinearPCM && failure == nil {
            // Stopped by the limit, the last (flushed, padded) packet never reached the file.
            let valid = if let frameLimit, written >= frameLimit { frameLimit - primeInfo.leadingFrames } else { written - primeInfo.leadingFrames - primeInfo.trailingFrames }
            if valid >= 0 && valid < written {
                try file.setPacketTableInfo(AudioFilePacketTableInfo(
                    validFrames: Int64(valid), primingFrames: Int32(primeInfo.leadingFrames),
                    remainderFrames: Int32(written - primeInfo.leadingFrames - valid)))
                frames = valid
            }
        }
        try file.close()
        if let failure {
            // What the finished file holds (a failed write may have put part of a buffer in it).
            let kept = (try? AudioFile.open(path)).map { file in
                defer { try? file.close() }
                return file.frameCount
            } ?? written
            throw AudioError(failure.code, "recording stopped: \(failure.message); kept \(kept) frames (\(String(format: "%.3f", Double(kept) / format.sampleRate)) s), finished")
        }
        return frames
    }
}
