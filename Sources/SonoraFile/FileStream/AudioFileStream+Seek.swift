import SonoraCore

/// `AudioFileStreamSeek` and the frame ⇄ packet translations.
extension AudioFileStream {
    /// `AudioFileStreamSeek`: where `packet` starts in the stream. Exact for constant-size
    /// packets, for a CAF's packet table, and for MP3/ADTS packets this parser has already
    /// seen; otherwise estimated (from the Xing table of contents or the average bit rate)
    /// and `isEstimated` is set. As in Core Audio, the offset counts from the start of the
    /// audio data: add the DataOffset property to get the stream position, read from there
    /// and pass the bytes to `parse(_:discontinuity: true)`; MP3 and ADTS packets resume at
    /// the next frame sync.
    public func seek(toPacket packet: Int) throws(AudioError) -> (byteOffset: Int, isEstimated: Bool) {
        guard isReady, let format, let start = dataStart else {
            throw AudioError(.dataUnavailable, "seek before the stream is ready to produce packets")
        }
        guard packet >= 0 else { throw AudioError(.parameterError, "seek to packet \(packet)") }
        let result: (byteOffset: Int, isEstimated: Bool)
        switch stage {
        case .constantPackets:
            let (offset, overflow) = packet.multipliedReportingOverflow(by: Int(format.bytesPerPacket))
            guard !overflow, offset <= Int.max - start else { throw AudioError(.invalidPacketOffset, "packet \(packet) is beyond any stream") }
            if let end = dataEnd, start + offset > end {
                throw AudioError(.invalidPacketOffset, "packet \(packet) is beyond the stream's \((end - start) / Int(format.bytesPerPacket)) packets")
            }
            result = (start + offset, false)
        case .packetTable:
            guard packet < packetStarts.count else {
                throw AudioError(.invalidPacketOffset, "packet \(packet) is beyond the packet table's \(packetStarts.count - 1) packets")
            }
            result = (start + packetStarts[packet], false)
        case .mpeg, .adts:
            if packet < packetOffsets.count {
                result = (packetOffsets[packet], false)
            } else if let frames = infoTag?.frames, packet > frames {
                throw AudioError(.invalidPacketOffset, "packet \(packet) is beyond the stream's \(frames) packets (Xing/VBRI header)")
            } else if let tag = infoTag, let offset = infoTagOffset, let estimate = tag.estimatedOffset(ofPacket: packet) {
                result = (max(offset + estimate, start), true)
            } else {
                let estimate = Double(start) + Double(packet) * averageFrameBytes(format)
                guard estimate < Double(Int.max / 2) else { throw AudioError(.invalidPacketOffset, "packet \(packet) is beyond any stream") }
                result = (Int(estimate), true)
            }
        case .detecting, .chunks:
            throw AudioError(.dataUnavailable, "seek before the stream is ready to produce packets")
        }
        pendingSeek = (result.byteOffset, packet, result.isEstimated)
        return (result.byteOffset - start, result.isEstimated)
    }

    /// Bytes a frame takes on average: from the Xing/VBRI header, else the frames seen, else the bit rate.
    private func averageFrameBytes(_ format: StreamFormat) -> Double {
        if let tag = infoTag, let frames = tag.frames, let bytes = tag.bytes, frames > 0 {
            return Double(bytes) / Double(frames)
        }
        if framedPacketCount > 0 { return Double(framedByteCount) / Double(framedPacketCount) }
        if let rate = wavMP3BitRate, rate > 0 { return Double(rate) / 8 * Double(format.framesPerPacket) / format.sampleRate }
        return 0
    }

    /// What a `discontinuity: true` parse does first: drop partial packets and, after a seek,
    /// continue from the packet it named.
    func discontinue() throws(AudioError) {
        let target = pendingSeek
        pendingSeek = nil
        switch stage {
        case .detecting, .chunks:
            return
        case .constantPackets:
            carry.removeAll()
            streamPosition = target?.byteOffset
            if let target {
                packetIndex = target.packet
                if let end = dataEnd { dataRemaining = max(0, end - target.byteOffset) }
            } else {
                packetIndex = nil
            }
        case .packetTable:
            carry.removeAll()
            streamPosition = target?.byteOffset
            guard let target else {
                packetIndex = nil
                throw AudioError(.discontinuityCantRecover, "a discontinuity in a CAF packet table stream without a seek: call seek(toPacket:) first")
            }
            nextTablePacket = target.packet
            packetIndex = target.packet
            if let end = dataEnd { dataRemaining = max(0, end - target.byteOffset) }
        case .mpeg, .adts:
            streamPosition = target?.byteOffset
            let exact = target.map { !$0.isEstimated } ?? false
            if stage == .adts { adts?.reset(at: target?.byteOffset, atFrame: exact) } else { mpeg?.reset(at: target?.byteOffset, atFrame: exact) }
            packetIndex = target.flatMap { $0.isEstimated ? nil : $0.packet }
            if let target, let end = dataEnd, dataRemaining != nil { dataRemaining = max(0, end - target.byteOffset) }
        }
    }

    /// `kAudioFileStreamProperty_PacketToFrame`: the first frame of `packet`.
    public func packetToFrame(_ packet: Int) throws(AudioError) -> Int {
        guard let format, isReady else { throw AudioError(.dataUnavailable, "packetToFrame before the stream is ready to produce packets") }
        guard packet >= 0 else { throw AudioError(.parameterError, "packet \(packet)") }
        if format.framesPerPacket > 0 {
            let (frame, overflow) = packet.multipliedReportingOverflow(by: Int(format.framesPerPacket))
            guard !overflow else { throw AudioError(.invalidPacketOffset, "packet \(packet) is beyond any stream") }
            return frame
        }
        guard let table = packetTable, packet <= table.packetCount else {
            throw AudioError(.invalidPacketOffset, "packet \(packet): the stream's packets vary in frames and no table lists them")
        }
        return table.packetFrames[0..<packet].reduce(0, +)
    }

    /// `kAudioFileStreamProperty_FrameToPacket`: the packet holding `frame`, and where in it.
    public func frameToPacket(_ frame: Int) throws(AudioError) -> (packet: Int, frameOffsetInPacket: Int) {
        guard let format, isReady else { throw AudioError(.dataUnavailable, "frameToPacket before the stream is ready to produce packets") }
        guard frame >= 0 else { throw AudioError(.parameterError, "frame \(frame)") }
        if format.framesPerPacket > 0 {
            let frames = Int(format.framesPerPacket)
            return (frame / frames, frame % frames)
        }
        guard let table = packetTable else {
            throw AudioError(.invalidPacketOffset, "frame \(frame): the stream's packets vary in frames and no table lists them")
        }
        var first = 0
        for (index, frames) in table.packetFrames.enumerated() {
            if frame < first + frames { return (index, frame - first) }
            first += frames
        }
        throw AudioError(.invalidPacketOffset, "frame \(frame) is beyond the stream's \(first) frames")
    }
}
