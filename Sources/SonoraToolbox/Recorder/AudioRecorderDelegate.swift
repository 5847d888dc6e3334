import SonoraCore

/// What an `AudioRecorder` tells its delegate (AVAudioRecorderDelegate); on the recorder's
/// queue thread or the thread that called `stop`, never the realtime one. Empty defaults.
public protocol AudioRecorderDelegate: AnyObject {
    /// The recording ended and its file is complete (`successfully`), or a write failed (the
    /// file then holds what was captured up to the failure).
    func audioRecorderDidFinishRecording(_ recorder: AudioRecorder, successfully: Bool)
    /// Encoding or writing failed; the recording ended.
    func audioRecorderEncodeErrorDidOccur(_ recorder: AudioRecorder, error: AudioError)
    /// The audio session interrupted the recorder: it has paused.
    func audioRecorderBeginInterruption(_ recorder: AudioRecorder)
    /// The interruption ended; with `shouldResume` the recorder has resumed by itself.
    func audioRecorderEndInterruption(_ recorder: AudioRecorder, shouldResume: Bool)
}

extension AudioRecorderDelegate {
    public func audioRecorderDidFinishRecording(_ recorder: AudioRecorder, successfully: Bool) {}
    public func audioRecorderEncodeErrorDidOccur(_ recorder: AudioRecorder, error: AudioError) {}
    public func audioRecorderBeginInterruption(_ recorder: AudioRecorder) {}
    public func audioRecorderEndInterruption(_ recorder: AudioRecorder, shouldResume: Bool) {}
}
