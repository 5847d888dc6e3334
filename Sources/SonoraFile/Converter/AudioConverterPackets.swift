import SonoraCore

/// Compressed packets with their descriptions, as AudioConverterFillComplexBuffer's input
/// callback supplies them and as an encoding converter hands them out: `descriptions[i]`
/// locates packet `i` in `data` (its `startOffset` counts from the start of `data`).
public struct AudioConverterPackets: Hashable, Sendable {
    public var data: [UInt8]
    public var descriptions: [AudioStreamPacketDescription]

    public init(data: [UInt8] = [], descriptions: [AudioStreamPacketDescription] = []) {
        self.data = data
        self.descriptions = descriptions
    }

    /// Packets described.
    public var count: Int { descriptions.count }

    /// No packets and no bytes: from an input callback, the end of the stream.
    public var isEmpty: Bool { data.isEmpty && descriptions.isEmpty }

    /// The bytes of packet `index`.
    public func packet(_ index: Int) -> ArraySlice<UInt8> {
        let description = descriptions[index]
        let start = Int(description.startOffset)
        return data[start..<start + Int(description.dataByteSize)]
    }

    /// Adds a packet after the others; `variableFrames` is 0 where the format fixes frames per packet.
    public mutating func append(_ bytes: [UInt8], variableFrames: Int = 0) {
        descriptions.append(AudioStreamPacketDescription(
            startOffset: Int64(data.count), variableFramesInPacket: UInt32(variableFrames), dataByteSize: UInt32(bytes.count)))
        data += bytes
    }

    /// Adds `other`'s packets after these.
    public mutating func append(contentsOf other: AudioConverterPackets) {
        for index in 0..<other.count {
            append(Array(other.packet(index)), variableFrames: Int(other.descriptions[index].variableFramesInPacket))
        }
    }

    /// The first `count` packets and the rest, each with descriptions counted from its own start.
    public func split(at count: Int) -> (AudioConverterPackets, AudioConverterPackets) {
        var head = AudioConverterPackets()
        var tail = AudioConverterPackets()
        for index in 0..<self.count {
            let frames = Int(descriptions[index].variableFramesInPacket)
            if index < count { head.append(Array(packet(index)), variableFrames: frames) } else { tail.append(Array(packet(index)), variableFrames: frames) }
        }
        return (head, tail)
    }

    /// Checks every description lies inside `data` (input from a caller is untrusted).
    func validate() throws(AudioError) {
        if !data.isEmpty && descriptions.isEmpty {
            throw AudioError(.requiresPacketDescriptions, "AudioConverter: \(data.count) bytes of variable-size packets came without packet descriptions")
        }
        for (index, description) in descriptions.enumerated() {
            let start = description.startOffset
            let end = start + Int64(description.dataByteSize)
            guard start >= 0, end <= Int64(data.count) else {
                throw AudioError(.invalidInputSize, "AudioConverter: packet description \(index) (offset \(start), \(description.dataByteSize) bytes) lies outside the \(data.count) bytes given")
            }
        }
    }
}

/// kAudioConverterPrimeInfo: frames at the start (the encoder's delay, "priming") and at the
/// end (padding of the last packet, "remainder") of a decoded stream that are not the source's.
public struct AudioConverterPrimeInfo: Hashable, Sendable {
    public var leadingFrames: Int
    public var trailingFrames: Int

    public init(leadingFrames: Int = 0, trailingFrames: Int = 0) {
        self.leadingFrames = leadingFrames
        self.trailingFrames = trailingFrames
    }
}
