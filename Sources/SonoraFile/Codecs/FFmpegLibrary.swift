import CFFmpeg
import SonoraCore

/// Facts about the FFmpeg libraries Sonora's codecs run on.
enum FFmpegLibrary {
    /// libavcodec's version as "major.minor.micro", for `sonora info --codecs` and error messages.
    static var codecVersion: String {
        let version = avcodec_version()
        return "\(version >> 16).\(version >> 8 & 0xFF).\(version & 0xFF)"
    }

    /// FFmpeg's message for an error code.
    static func message(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        av_strerror(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Turns FFmpeg's own logging off (once, for the process): its warnings went to stderr
    /// beside Sonora's errors, which already carry FFmpeg's message for every failure.
    static func silenceLogging() { _ = quiet }

    private static let quiet: Void = av_log_set_level(AV_LOG_QUIET)
}
