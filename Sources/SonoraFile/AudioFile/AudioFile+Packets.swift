import CSndfile
import SonoraCore

extension AudioFile {
    /// The largest packet in the file (kAudioFilePropertyMaximumPacketSize): a frame for
    /// PCM, 34 × channels for IMA4, the largest packet the file holds for VBR formats.
    public var maximumPacketSize: Int? {
        if dataFormat.isLinearPCM { return Int(dataFormat.bytesPerFrame) * dataFormat.bufferCount }
        if dataFormat.bytesPerPacket > 0 { return Int(dataFormat.bytesPerPacket) }
        if let packetWriter { return packetWriter.maximumPacketSize }
        return loadedPacketIndex?.maximumPacketSize
    }

    /// Packets in the file (kAudioFilePropertyAudioDataPacketCount; frames for PCM).
    public var packetCount: Int? {
        if dataFormat.isLinearPCM { return frameCount }
        if let packetWriter { return packetWriter.packetCount }
        if let index = loadedPacketIndex { return index.packetCount }
        guard dataFormat.framesPerPacket > 0, dataFormat.bytesPerPacket > 0 else { return nil }
        return (frameCount + Int(dataFormat.framesPerPacket) - 1) / Int(dataFormat.framesPerPacket)
    }

    /// Bytes of audio data (kAudioFilePropertyAudioDataByteCount): the packets back to back.
    public var audioDataByteCount: Int? {
        if let packetWriter { return Int(packetWriter.byteCount) }
        if !dataFormat.isLinearPCM, dataFormat.bytesPerPacket == 0, let index = loadedPacketIndex { return Int(index.byteCount) }
        guard let size = maximumPacketSize, let packets = packetCount else { return nil }
        return size * packets
    }

    /// Reads `count` packets from packet `start` as the file stores them
    /// (AudioFileReadPacketData with no byte bound). Constant-size packets come without
    /// descriptions (nil), as in Core Audio; variable ones with one description each
    /// (offsets from the start of `bytes`; frames when the format's framesPerPacket is 0).
    public func readPackets(from start: Int, count: Int) throws(AudioError) -> (bytes: [UInt8], descriptions: [AudioStreamPacketDescription]?) {
        if let index = try packetIndexForReading() {
            let read = try index.read(from: start, count: count)
            return (read.bytes, index.format.bytesPerPacket == 0 ? read.descriptions : nil)
        }
        guard let size = maximumPacketSize, let total = packetCount else {
            throw AudioError(.operationNotSupported, "\(path): \(dataFormat) packets are not readable one by one")
        }
        guard start >= 0, count >= 0, start <= total else {
            throw AudioError(.invalidPacketOffset, "\(path): packet \(start) is outside 0…\(total)")
        }
        let wanted = min(count, total - start)
        if let bytes = try readRawPackets(from: start, count: wanted, packetSize: size) { return (bytes, nil) }
        throw AudioError(.operationNotSupported, "\(path): \(dataFormat) packets are not readable one by one")
    }

    /// Reads as many whole packets from `start` as fit in `maximumBytes`, at most `count`
    /// (AudioFileReadPacketData): possibly none, when the next packet is larger than the
    /// bound. `packetCount` says how many were read.
    public func readPacketData(from start: Int, count: Int, maximumBytes: Int) throws(AudioError)
        -> (bytes: [UInt8], descriptions: [AudioStreamPacketDescription]?, packetCount: Int)
    {
        guard maximumBytes >= 0, count >= 0 else {
            throw AudioError(.parameterError, "\(path): negative byte bound \(maximumBytes) or count \(count)")
        }
        let fitting: Int
        if let index = try packetIndexForReading() {
            guard start >= 0, start <= index.packetCount else {
                throw AudioError(.invalidPacketOffset, "\(path): packet \(start) is outside 0…\(index.packetCount)")
            }
            fitting = index.packetsFitting(from: start, count: count, maximumBytes: maximumBytes)
        } else {
            guard let size = maximumPacketSize, size > 0 else {
                throw AudioError(.operationNotSupported, "\(path): \(dataFormat) packets are not readable one by one")
            }
            fitting = min(count, maximumBytes / size)
        }
        let read = try readPackets(from: start, count: fitting)
        return (read.bytes, read.descriptions, read.descriptions?.count ?? (maximumPacketSize.map { read.bytes.count / max($0, 1) } ?? 0))
    }

    /// As `readPacketData(from:count:maximumBytes:)` for linear PCM that libsndfile reads
    /// raw (constant-size packets, no descriptions), straight into `destination`, which has
    /// room for `maximumBytes`: the bytes and packets read, nil when this file's packets are
    /// not read that way (then use the array form). The same packets as the array form, with
    /// no array made, zeroed and copied again (a file source refilling a queue's buffers).
    public func readPacketData(from start: Int, count: Int, maximumBytes: Int, into destination: UnsafeMutableRawPointer) throws(AudioError)
        -> (byteCount: Int, packetCount: Int)?
    {
        guard dataFormat.isLinearPCM, packetWriter == nil, !isBeingCreated else { return nil }
        guard maximumBytes >= 0, count >= 0 else {
            throw AudioError(.parameterError, "\(path): negative byte bound \(maximumBytes) or count \(count)")
        }
        guard let size = maximumPacketSize, size > 0, let total = packetCount else { return nil }
        guard start >= 0, start <= total else {
            throw AudioError(.invalidPacketOffset, "\(path): packet \(start) is outside 0…\(total)")
        }
        let wanted = min(min(count, maximumBytes / size), total - start)
        guard let bytes = try readRawPackets(from: start, count: wanted, packetSize: size, into: destination) else { return nil }
        return (bytes, bytes / size)
    }

    /// Reads `count` bytes of audio data from byte `start` (AudioFileReadBytes), at any
    /// offset: across packet boundaries, and in mid-packet. Fewer at the end of the data.
    public func readBytes(from start: Int, count: Int) throws(AudioError) -> [UInt8] {
        if let index = try packetIndexForReading() { return try index.readBytes(from: Int64(start), count: count) }
        guard let size = maximumPacketSize, size > 0, let total = audioDataByteCount else {
            throw AudioError(.operationNotSupported, "\(path): \(dataFormat) data is not addressable by byte")
        }
        guard start >= 0, count >= 0, start <= total else {
            throw AudioError(.invalidPacketOffset, "\(path): byte \(start) is outside the \(total) bytes of audio data")
        }
        let end = min(start + count, total)
        guard end > start else { return [] }
        let first = start / size
        let packets = try readPackets(from: first, count: (end - 1) / size - first + 1).bytes
        let from = start - first * size
        return Array(packets[from..<min(from + end - start, packets.count)])
    }

    /// Appends whole packets as the file stores them (AudioFileWritePackets). PCM: frames
    /// in the file's own format. Variable-size formats (bytesPerPacket 0) need one
    /// description per packet ('!pkd' without them); the bytes of each are taken from its
    /// `startOffset` in `bytes`, and its frames from `variableFramesInPacket` when the
    /// format's framesPerPacket is 0.
    public func writePackets(_ bytes: [UInt8], descriptions: [AudioStreamPacketDescription]? = nil) throws(AudioError) {
        if let writer = packetWriter {
            do { try writeCompressedPackets(bytes, descriptions: descriptions, into: writer) } catch {
                if error.code != .requiresPacketDescriptions && error.code != .invalidPacketOffset { markFailed() }
                throw error
            }
            return
        }
        if let ima4 = ima4File {
            do { try ima4.writeEncoded(bytes) } catch {
                // Refused before anything was written (not whole packets, or after frames): the file stays good.
                if error.code != .invalidPacketOffset && error.code != .operationNotSupported { markFailed() }
                throw AudioError(error.code, "\(path): \(error.message)")
            }
            updateFrameCountFromIMA4()
            return
        }
        guard dataFormat.isLinearPCM, dataFormat.isInterleaved || dataFormat.channelsPerFrame == 1, let size = maximumPacketSize else {
            throw AudioError(.operationNotSupported, "\(path): writing \(dataFormat) packets directly is not supported; write frames")
        }
        guard bytes.count % size == 0 else {
            throw AudioError(.invalidPacketOffset, "\(path): \(bytes.count) bytes are not whole packets of \(size)")
        }
        try writeRaw(bytes, frames: bytes.count / size)
    }

    private func writeCompressedPackets(_ bytes: [UInt8], descriptions: [AudioStreamPacketDescription]?, into writer: PacketWriter) throws(AudioError) {
        let format = writer.format
        var sizes: [Int] = []
        var frames: [Int] = []
        var data = bytes
        if let descriptions {
            data = []
            data.reserveCapacity(bytes.count)
            for (number, description) in descriptions.enumerated() {
                let size = Int(description.dataByteSize)
                guard description.startOffset >= 0, size > 0, description.startOffset + Int64(size) <= Int64(bytes.count) else {
                    throw AudioError(.invalidPacketOffset, "\(path): packet description \(number) (offset \(description.startOffset), \(size) bytes) lies outside the \(bytes.count) bytes given")
                }
                guard format.bytesPerPacket == 0 || size == Int(format.bytesPerPacket) else {
                    throw AudioError(.invalidPacketOffset, "\(path): packet \(number) has \(size) bytes; \(format.formatID) packets have \(format.bytesPerPacket)")
                }
                let packetFrames = format.framesPerPacket > 0 ? Int(format.framesPerPacket) : Int(description.variableFramesInPacket)
                guard packetFrames > 0 else {
                    throw AudioError(.invalidPacketOffset, "\(path): packet \(number) says 0 frames; \(format.formatID) here needs variableFramesInPacket")
                }
                data += bytes[Int(description.startOffset)..<Int(description.startOffset) + size]
                sizes.append(size)
                frames.append(packetFrames)
            }
        } else {
            guard format.bytesPerPacket > 0, format.framesPerPacket > 0 else {
                throw AudioError(.requiresPacketDescriptions, "\(path): \(format.formatID) packets vary in size: writePackets needs their descriptions")
            }
            let size = Int(format.bytesPerPacket)
            guard bytes.count % size == 0 else {
                throw AudioError(.invalidPacketOffset, "\(path): \(bytes.count) bytes are not whole packets of \(size)")
            }
            sizes = Array(repeating: size, count: bytes.count / size)
            frames = Array(repeating: Int(format.framesPerPacket), count: sizes.count)
        }
        try writer.write(data, sizes: sizes, frames: frames)
        setFrameCount(Int(writer.totalFrames))
    }
}

extension AudioFile {
    /// The roles of the file's channels, where the container says (CAF chan, WAVE_FORMAT_EXTENSIBLE mask …).
    public var channelLayout: [AudioChannelLabel]? {
        guard let handle = sndfileHandle else { return nil }
        var map = [Int32](repeating: 0, count: Int(dataFormat.channelsPerFrame))
        let status = map.withUnsafeMutableBytes {
            sf_command(handle, Int32(SFC_GET_CHANNEL_MAP_INFO), $0.baseAddress, Int32($0.count))
        }
        guard status == Int32(SF_TRUE) else { return nil }
        return map.map(AudioChannelLabel.init(sndfile:))
    }

    /// Sets the channel roles of a file being created, before any audio is written.
    public func setChannelLayout(_ labels: [AudioChannelLabel]) throws(AudioError) {
        guard let handle = sndfileHandle else { throw AudioError(.fileNotOpen, "\(path) is closed") }
        guard labels.count == Int(dataFormat.channelsPerFrame) else {
            throw AudioError(.badPropertySize, "\(path): \(labels.count) labels for \(dataFormat.channelsPerFrame) channels")
        }
        var map = labels.map(\.sndfileValue)
        let status = map.withUnsafeMutableBytes {
            sf_command(handle, Int32(SFC_SET_CHANNEL_MAP_INFO), $0.baseAddress, Int32($0.count))
        }
        guard status == Int32(SF_TRUE) else {
            throw AudioError(.unsupportedProperty, "\(path): a \(fileType) file cannot record this channel layout")
        }
    }
}
