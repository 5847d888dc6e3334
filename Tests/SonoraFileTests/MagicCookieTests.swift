import SonoraCore
@testable import SonoraFile
import Testing

@Suite("Magic cookies ⇄ codec configuration")
struct MagicCookieTests {
    /// AAC LC, 44.1 kHz, stereo: object type 2, frequency index 4, channel configuration 2.
    let audioSpecificConfig: [UInt8] = [0x12, 0x10]

    @Test func aacEsdsRoundTripsAndTheConfigIsFoundInside() throws {
        let cookie = MagicCookie.esds(audioSpecificConfig: audioSpecificConfig, averageBitRate: 128_000, maximumBitRate: 160_000)
        #expect(cookie.first == 0x03)
        #expect(try MagicCookie.audioSpecificConfig(fromCookie: cookie) == audioSpecificConfig)
        #expect(try MagicCookie.codecConfiguration(for: .mpeg4AAC, cookie: cookie) == audioSpecificConfig)
        // A bare AudioSpecificConfig is taken as it is.
        #expect(try MagicCookie.codecConfiguration(for: .mpeg4AAC, cookie: audioSpecificConfig) == audioSpecificConfig)
        #expect(MagicCookie.cookie(for: .mpeg4AAC, codecConfiguration: audioSpecificConfig, averageBitRate: 128_000, maximumBitRate: 160_000) == cookie)
    }

    @Test func aacEsdsWithShortLengthsAndOptionalFieldsParses() throws {
        // One-byte lengths, ES flags announcing a depends-on ID and an OCR stream.
        let specific: [UInt8] = [0x05, 0x02] + audioSpecificConfig
        let decoderConfig: [UInt8] = [0x04, UInt8(13 + specific.count), 0x40, 0x15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] + specific
        let es: [UInt8] = [0x03, UInt8(3 + 2 + 2 + decoderConfig.count), 0, 1, 0xA0, 0, 7, 0, 9] + decoderConfig
        #expect(try MagicCookie.audioSpecificConfig(fromCookie: es) == audioSpecificConfig)
    }

    @Test func truncatedOrLyingEsdsIsAnError() {
        let cookie = MagicCookie.esds(audioSpecificConfig: audioSpecificConfig, averageBitRate: 0, maximumBitRate: 0)
        for length in [1, 5, 8, 20, cookie.count - 3] {
            #expect(throws: AudioError.self, "cut to \(length)") { try MagicCookie.audioSpecificConfig(fromCookie: Array(cookie.prefix(length))) }
        }
        // A length field claiming more than there is.
        #expect(throws: AudioError.self) { try MagicCookie.audioSpecificConfig(fromCookie: [0x03, 0x7F, 0, 0, 0]) }
        // Five continuation bytes in a length.
        #expect(throws: AudioError.self) { try MagicCookie.audioSpecificConfig(fromCookie: [0x03, 0x80, 0x80, 0x80, 0x80, 0x01]) }
        #expect(throws: AudioError.self) { try MagicCookie.audioSpecificConfig(fromCookie: []) }
    }

    @Test func alacCookieInEveryFormFFmpegAndAppleWrite() throws {
        let config: [UInt8] = [0, 0, 0x10, 0, 0, 0x10, 0x28, 0x0A, 0x0E, 0x02, 0, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xAC, 0x44]
        // libavcodec's extradata: an `alac` atom.
        let atom: [UInt8] = [0, 0, 0, 36] + Array("alac".utf8) + [0, 0, 0, 0] + config
        // Apple's 48-byte kuki: `frma` then `alac` then a terminator.
        let apple: [UInt8] = [0, 0, 0, 12] + Array("frma".utf8) + Array("alac".utf8) + atom + [0, 0, 0, 8, 0, 0, 0, 0]
        for cookie in [config, atom, apple] {
            #expect(try MagicCookie.alacSpecificConfig(fromCookie: cookie) == config)
            #expect(try MagicCookie.codecConfiguration(for: .appleLossless, cookie: cookie) == atom)
        }
        #expect(MagicCookie.cookie(for: .appleLossless, codecConfiguration: atom) == config)
        #expect(throws: AudioError.self) { try MagicCookie.alacSpecificConfig(fromCookie: Array(atom.prefix(30))) }
    }

    @Test func flacAndOpusCookies() throws {
        let streamInfo = [UInt8](repeating: 7, count: 34)
        #expect(try MagicCookie.streamInfo(fromCookie: streamInfo) == streamInfo)
        #expect(try MagicCookie.streamInfo(fromCookie: Array("fLaC".utf8) + [0x80, 0, 0, 34] + streamInfo) == streamInfo)
        #expect(throws: AudioError.self) { try MagicCookie.streamInfo(fromCookie: Array(streamInfo.prefix(20))) }
        let head = Array("OpusHead".utf8) + [1, 2, 0x38, 0x01, 0x80, 0xBB, 0, 0, 0, 0, 0]
        #expect(try MagicCookie.codecConfiguration(for: .opus, cookie: head) == head)
        #expect(throws: AudioError.self) { try MagicCookie.codecConfiguration(for: .opus, cookie: Array("OpusTags".utf8) + [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]) }
    }
}
