/// Where one packet lies in a buffer of packets, field for field Core Audio's
/// `AudioStreamPacketDescription` (CoreAudioTypes): what variable-size packets (VBR data)
/// and packets of varying frame counts need beside the bytes.
@frozen
public struct AudioStreamPacketDescription: Hashable, Codable, Sendable, BitwiseCopyable {
    /// Bytes from the start of the buffer to the packet (`mStartOffset`).
    public var startOffset: Int64
    /// Frames in the packet when the format's `framesPerPacket` is 0 (varies), else 0
    /// (`mVariableFramesInPacket`).
    public var variableFramesInPacket: UInt32
    /// Bytes in the packet (`mDataByteSize`).
    public var dataByteSize: UInt32

    @inlinable
    public init(startOffset: Int64, variableFramesInPacket: UInt32 = 0, dataByteSize: UInt32) {
        self.startOffset = startOffset
        self.variableFramesInPacket = variableFramesInPacket
        self.dataByteSize = dataByteSize
    }
}
