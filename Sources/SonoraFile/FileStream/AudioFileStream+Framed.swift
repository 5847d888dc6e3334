import SonoraCore

/// MP3 and ADTS: streams of self-describing frames, found by frame sync.
extension AudioFileStream {
    /// Starts a bare MP3 or ADTS stream at `headerBase` (after any leading ID3v2 tag).
    func startFramed(adts isADTS: Bool) throws(AudioError) {
        stage = isADTS ? .adts : .mpeg
        announcesFromFirstFrame = true
        announce(.fileFormat(isADTS ? .adts : .mp3))
        makeSynchronizer(at: headerBase)
    }

    func makeSynchronizer(at position: Int?) {
        // A hinted stream may start with junk (a radio stream joined mid-frame); bound it all the same.
        if stage == .adts {
            adts = FrameSynchronizer(position: position, junkLimitBeforeFirstFrame: Self.maximumHeaderBytes)
        } else {
            mpeg = FrameSynchronizer(position: position, junkLimitBeforeFirstFrame: Self.maximumHeaderBytes)
        }
    }

    /// Finds the whole frames in what has arrived and gathers their packets.
    func feedFrames(_ bytes: UnsafeRawBufferPointer) throws(AudioError) {
        if stage == .adts, var sync = adts {
            adts = nil
            defer { adts = sync }
            sync.append(bytes)
            while let frame = try sync.nextFrame() {
                try withBytes(sync.buffer) { (raw) throws(AudioError) in
                    try takeADTSFrame(frame.header, offset: frame.offset, bytes: UnsafeRawBufferPointer(rebasing: raw[frame.range]))
                }
            }
        } else if stage == .mpeg, var sync = mpeg {
            mpeg = nil
            defer { mpeg = sync }
            sync.append(bytes)
            while let frame = try sync.nextFrame() {
                try withBytes(sync.buffer) { (raw) throws(AudioError) in
                    try takeMPEGFrame(frame.header, offset: frame.offset, bytes: UnsafeRawBufferPointer(rebasing: raw[frame.range]))
                }
            }
        }
    }

    private func takeMPEGFrame(_ frameHeader: MPEGAudioFrameHeader, offset: Int?, bytes: UnsafeRawBufferPointer) throws(AudioError) {
        if !sawFirstFrame {
            sawFirstFrame = true
            framesPerPacket = frameHeader.samplesPerFrame
            // The first frame may be a Xing/Info/VBRI frame: read, not handed out as audio.
            if let tag = MPEGAudioInfoTag(frame: bytes, header: frameHeader) {
                infoTag = tag
                infoTagOffset = offset
            }
            if announcesFromFirstFrame {
                announceMPEG(frameHeader, firstPacketOffset: offset.map { $0 + (infoTag != nil ? bytes.count : 0) })
            }
            if infoTag != nil { return }
        }
        addFramedPacket(bytes, frameLength: bytes.count, offset: offset)
    }

    private func takeADTSFrame(_ frameHeader: ADTSFrameHeader, offset: Int?, bytes: UnsafeRawBufferPointer) throws(AudioError) {
        if !sawFirstFrame {
            sawFirstFrame = true
            guard frameHeader.rawDataBlocks == 1 else {
                throw AudioError(.unsupportedDataFormat, "ADTS frame at byte \(offset ?? -1) holds \(frameHeader.rawDataBlocks) AAC packets (Sonora takes one a frame)")
            }
            framesPerPacket = 1024
            announceADTS(frameHeader, firstPacketOffset: offset)
        }
        // Later frames of the stream share the first one's key, so they hold one block too
        // unless the (unkeyed) block count changed: such a frame is not a packet.
        guard frameHeader.rawDataBlocks == 1 else { return }
        addFramedPacket(UnsafeRawBufferPointer(rebasing: bytes[frameHeader.payloadOffset...]), frameLength: bytes.count, offset: offset)
    }

    private func addFramedPacket(_ packet: UnsafeRawBufferPointer, frameLength: Int, offset: Int?) {
        batch.add(packet)
        framedPacketCount += 1
        framedByteCount += frameLength
        guard let index = packetIndex else { return }
        if let offset, index == packetOffsets.count, index < Self.maximumRememberedPackets {
            packetOffsets.append(offset)
        }
        packetIndex = index + 1
    }

    private func announceMPEG(_ frameHeader: MPEGAudioFrameHeader, firstPacketOffset: Int?) {
        let format = StreamFormat(
            sampleRate: Double(frameHeader.sampleRate), formatID: mpegFormatID(layer: frameHeader.layer), formatFlags: [],
            bytesPerPacket: 0, framesPerPacket: UInt32(frameHeader.samplesPerFrame), bytesPerFrame: 0,
            channelsPerFrame: UInt32(frameHeader.channels), bitsPerChannel: 0)
        self.format = format
        announce(.dataFormat(format))
        if let info = infoTag?.packetTableInfo(samplesPerFrame: frameHeader.samplesPerFrame) {
            announce(.packetTableInfo(info))
        }
        if let firstPacketOffset {
            dataStart = firstPacketOffset
            announce(.dataOffset(firstPacketOffset))
        }
        var bitRate = frameHeader.bitRate
        if let tag = infoTag, let frames = tag.frames {
            if let bytes = tag.bytes, let offset = infoTagOffset, let start = firstPacketOffset {
                let audioBytes = bytes - (start - offset)
                if audioBytes > 0 {
                    announce(.audioDataByteCount(audioBytes))
                    // A LAME "Info" frame marks a constant bit rate: its headers say it. "Xing" and VBRI: the average.
                    if tag.kind != .info {
                        bitRate = Int((Double(audioBytes) * 8 * Double(frameHeader.sampleRate) / Double(frames * frameHeader.samplesPerFrame)).rounded())
                    }
                }
            }
            announce(.audioDataPacketCount(frames))
        }
        announce(.bitRate(bitRate))
        announce(.packetSizeUpperBound(frameHeader.packetSizeUpperBound))
        announce(.readyToProducePackets)
    }

    private func mpegFormatID(layer: Int) -> AudioFormatID {
        switch layer {
        case 1: .mpegLayer1
        case 2: .mpegLayer2
        default: .mpegLayer3
        }
    }

    private func announceADTS(_ frameHeader: ADTSFrameHeader, firstPacketOffset: Int?) {
        let format = StreamFormat.compressed(.mpeg4AAC, sampleRate: Double(frameHeader.sampleRate), channels: frameHeader.channels)
        self.format = format
        announce(.dataFormat(format))
        announce(.formatList([format]))
        announce(.magicCookieData(MagicCookie.esds(audioSpecificConfig: frameHeader.audioSpecificConfig, averageBitRate: 0, maximumBitRate: 0)))
        if let firstPacketOffset {
            dataStart = firstPacketOffset
            announce(.dataOffset(firstPacketOffset))
        }
        announce(.packetSizeUpperBound(frameHeader.packetSizeUpperBound))
        announce(.readyToProducePackets)
    }
}

