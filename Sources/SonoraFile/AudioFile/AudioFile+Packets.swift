import CSndfile
import SonoraCore

extension AudioFile {
    /// Bytes of one packet for constant-size formats (PCM: a frame; IMA4: 34 × channels); nil when it varies.
    public var maximumPacketSize: Int? {
        if dataFormat.isLinearPCM { return Int(dataFormat.bytesPerFrame) * dataFormat.bufferCount }
        return dataFormat.bytesPerPacket > 0 ? Int(dataFormat.bytesPerPacket) : nil
    }

    /// Packets in the file (frames for PCM), when the format's packets have a known size.
    public var packetCount: Int? {
        if dataFormat.isLinearPCM { return frameCount }
        guard dataFormat.framesPerPacket > 0, maximumPacketSize != nil else { return nil }
        return (frameCount + Int(dataFormat.framesPerPacket) - 1) / Int(dataFormat.framesPerPacket)
    }

    /// Bytes of audio data, when known.
    public var audioDataByteCount: Int? {
        guard let size = maximumPacketSize, let packets = packetCount else { return nil }
        return size * packets
    }

    /// Reads `count` packets from packet `start` as the file stores them. For
    /// constant-size packets no descriptions are returned (nil), as in Core Audio.
    /// Formats whose packets libsndfile does not expose give 'op??'.
    public func readPackets(from start: Int, count: Int) throws(AudioError) -> (bytes: [UInt8], descriptions: [AudioStreamPacketDescription]?) {
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

    /// Reads `count` bytes of audio data from byte `start` (PCM: whole frames).
    public func readBytes(from start: Int, count: Int) throws(AudioError) -> [UInt8] {
        guard let size = maximumPacketSize else {
            throw AudioError(.operationNotSupported, "\(path): \(dataFormat) data is not addressable by byte")
        }
        guard start % size == 0, count % size == 0 else {
            throw AudioError(.invalidPacketOffset, "\(path): byte reads go by whole packets of \(size) bytes")
        }
        return try readPackets(from: start / size, count: count / size).bytes
    }

    /// Appends whole packets given as the file stores them (PCM: frames in the file's own format).
    public func writePackets(_ bytes: [UInt8]) throws(AudioError) {
        guard dataFormat.isLinearPCM, dataFormat.isInterleaved || dataFormat.channelsPerFrame == 1, let size = maximumPacketSize else {
            throw AudioError(.operationNotSupported, "\(path): writing \(dataFormat) packets directly is not supported; write frames")
        }
        guard bytes.count % size == 0 else {
            throw AudioError(.invalidPacketOffset, "\(path): \(bytes.count) bytes are not whole packets of \(size)")
        }
        try writeRaw(bytes, frames: bytes.count / size)
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
