import SonoraCore

/// What an `AudioPlayer` tells its delegate (AVAudioPlayerDelegate). Every call comes on the
/// player's queue thread, never the realtime one; each has an empty default.
public protocol AudioPlayerDelegate: AnyObject {
    /// The last frame played (`successfully`), or a decoding failure ended the playback.
    func audioPlayerDidFinishPlaying(_ player: AudioPlayer, successfully: Bool)
    /// A packet the decoder refused (playback then ends unsuccessfully).
    func audioPlayerDecodeErrorDidOccur(_ player: AudioPlayer, error: AudioError)
    /// The audio session interrupted the player: it has paused.
    func audioPlayerBeginInterruption(_ player: AudioPlayer)
    /// The interruption ended; `shouldResume`: the session allows playing again (the player
    /// has then resumed by itself, as AVAudioPlayer does).
    func audioPlayerEndInterruption(_ player: AudioPlayer, shouldResume: Bool)
}

extension AudioPlayerDelegate {
    public func audioPlayerDidFinishPlaying(_ player: AudioPlayer, successfully: Bool) {}
    public func audioPlayerDecodeErrorDidOccur(_ player: AudioPlayer, error: AudioError) {}
    public func audioPlayerBeginInterruption(_ player: AudioPlayer) {}
    public func audioPlayerEndInterruption(_ player: AudioPlayer, shouldResume: Bool) {}
}
