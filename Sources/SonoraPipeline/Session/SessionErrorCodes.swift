import SonoraCore

/// The status codes a refused session request carries: Core Audio's own values
/// (AVAudioSessionErrorCode / Audio Session Services), so a ported program recognises them.
extension AudioError.Code {
    /// '!pri' — another session of higher priority holds the audio (InsufficientPriority).
    public static let sessionInsufficientPriority = AudioError.Code(rawValue: 0x2170_7269)
    /// '!rec' — the session may not take the input (CannotStartRecording).
    public static let sessionCannotStartRecording = AudioError.Code(rawValue: 0x2172_6563)
    /// '!cat' — an option does not go with the category (kAudioSessionIncompatibleCategory).
    public static let sessionIncompatibleCategory = AudioError.Code(rawValue: 0x2163_6174)
    /// '!ini' — the client has no session here: it never attached (kAudioSessionNotInitialized).
    public static let sessionNotInitialized = AudioError.Code(rawValue: 0x2169_6E69)
}
