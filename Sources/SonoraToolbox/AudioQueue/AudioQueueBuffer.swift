import SonoraCore

/// One buffer of an audio queue (AudioQueueBufferRef): memory the program fills with
/// packets in the queue's stream format, then enqueues; the queue's callback hands it
/// back when the queue is done with it.
///
/// Buffers are made only by `AudioQueue.allocateBuffer` and belong to that queue.
public final class AudioQueueBuffer: @unchecked Sendable {
    /// The bytes the buffer can hold (mAudioDataBytesCapacity).
    public let byteCapacity: Int
    /// The buffer's memory; the program writes packets here.
    public let audioData: UnsafeMutableRawPointer
    /// The valid bytes in `audioData` (mAudioDataByteSize); set before enqueueing.
    public var byteSize: Int = 0
    /// Descriptions the buffer can carry (mPacketDescriptionCapacity; 0 for constant-size packets).
    public let packetDescriptionCapacity: Int
    /// The program's own value, untouched by the queue (mUserData).
    public var userData: UnsafeMutableRawPointer?

    /// The queue that made the buffer (compared, never dereferenced).
    let owner: ObjectIdentifier
    /// Where the buffer is: with the program, in the queue, or freed. Guarded by the queue's lock.
    var state: State = .idle

    enum State { case idle, enqueued, freed }

    init(owner: ObjectIdentifier, byteCapacity: Int, packetDescriptionCapacity: Int) {
        self.owner = owner
        self.byteCapacity = byteCapacity
        self.packetDescriptionCapacity = packetDescriptionCapacity
        audioData = .allocate(byteCount: max(byteCapacity, 1), alignment: 16)
    }

    deinit { audioData.deallocate() }

    /// The valid bytes as an array (a copy).
    public var bytes: [UInt8] { Array(UnsafeRawBufferPointer(start: audioData, count: byteSize)) }

    /// Copies `bytes` into the buffer and sets `byteSize`; false if they do not fit.
    @discardableResult
    public func fill(with bytes: [UInt8]) -> Bool {
        guard bytes.count <= byteCapacity else { return false }
        bytes.withUnsafeBytes { audioData.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        byteSize = bytes.count
        return true
    }

    /// The buffer as an opaque pointer, for C-convention callbacks (not retained).
    public var opaque: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// The buffer behind a pointer from `opaque`.
    public static func from(_ pointer: UnsafeMutableRawPointer) -> AudioQueueBuffer {
        Unmanaged<AudioQueueBuffer>.fromOpaque(pointer).takeUnretainedValue()
    }
}

/// A parameter of a queue (AudioQueueParameterID), set on the queue or carried by one buffer.
public enum AudioQueueParameter: UInt32, Sendable, CaseIterable {
    /// Linear gain 0…1 (kAudioQueueParam_Volume), ramped over `volumeRampTime`.
    case volume = 1
    /// Playback speed 0.5…2 (kAudioQueueParam_PlayRate), pitch following (varispeed); applies
    /// only with time-pitch enabled (`AudioQueue.setTimePitchEnabled`), otherwise stored.
    case playRate = 2
    /// Seconds a volume change takes (kAudioQueueParam_VolumeRampTime), 0…10.
    case volumeRampTime = 4
    /// −1 (left) … 1 (right), equal power (kAudioQueueParam_Pan).
    case pan = 13
}

/// A parameter value that takes effect with one enqueued buffer's first frame
/// (AudioQueueParameterEvent).
public struct AudioQueueParameterEvent: Hashable, Sendable {
    public var parameter: AudioQueueParameter
    public var value: Float
    public init(_ parameter: AudioQueueParameter, _ value: Float) {
        self.parameter = parameter
        self.value = value
    }
}
