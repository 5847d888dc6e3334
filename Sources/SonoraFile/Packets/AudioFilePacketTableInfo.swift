/// Which of a file's decoded frames are audio (Core Audio's `AudioFilePacketTableInfo`):
/// encoders add priming frames before the first sample (encoder delay) and remainder
/// frames after the last to fill the final packet. A round trip is sample-aligned only
/// when both are dropped.
public struct AudioFilePacketTableInfo: Hashable, Sendable {
    /// Frames of audio once priming and remainder are dropped (`mNumberValidFrames`).
    public var validFrames: Int64
    /// Frames to drop at the start (`mPrimingFrames`).
    public var primingFrames: Int32
    /// Frames to drop at the end (`mRemainderFrames`).
    public var remainderFrames: Int32

    public init(validFrames: Int64, primingFrames: Int32, remainderFrames: Int32) {
        self.validFrames = validFrames
        self.primingFrames = primingFrames
        self.remainderFrames = remainderFrames
    }

    /// Frames the packets decode to: valid + priming + remainder.
    public var totalFrames: Int64 { validFrames + Int64(primingFrames) + Int64(remainderFrames) }
}
