import SonoraCore
import Testing

@Suite("StreamFormat")
struct StreamFormatTests {
    /// Every format the runtime constructs: each PCM sample type, interleaved or not,
    /// either endianness, mono to 8 channels, plus the compressed formats.
    static var supportedFormats: [StreamFormat] {
        var formats: [StreamFormat] = []
        for sample in PCMSample.allCases {
            for channels in [1, 2, 6, 8] {
                for interleaved in [true, false] {
                    for bigEndian in [false, true] {
                        for rate in [8000.0, 44100, 48000, 96000] {
                            formats.append(
                                .linearPCM(
                                    sampleRate: rate, channels: channels, sample: sample,
                                    interleaved: interleaved, bigEndian: bigEndian))
                        }
                    }
                }
            }
        }
        for id in [AudioFormatID.appleIMA4, .appleLossless, .mpeg4AAC, .mpegLayer3, .flac, .opus, .vorbis, .uLaw, .aLaw] {
            formats.append(.compressed(id, sampleRate: 44100, channels: 2))
            formats.append(.compressed(id, sampleRate: 48000, channels: 1))
        }
        return formats
    }

    @Test func everySupportedFormatValidatesAndRoundTripsThroughItsDescription() throws {
        for format in Self.supportedFormats {
            #expect(format.validationProblems.isEmpty, "\(format): \(format.validationProblems)")
            let parsed = try StreamFormat(parsing: format.description)
            #expect(parsed == format, "\(format.description) parsed as \(parsed)")
        }
    }

    @Test func descriptionsReadLikeAfconvert() {
        #expect(StreamFormat.linearPCM(sampleRate: 44100, channels: 1, sample: .int16).description == "LEI16@44100")
        #expect(StreamFormat.canonical(sampleRate: 48000, channels: 2).description == "LEF32@48000x2 deinterleaved")
        #expect(
            StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .float32, bigEndian: true).description
                == "BEF32@48000x2")
        #expect(StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .int24In32).description == "LEI24/32@48000x2")
        #expect(StreamFormat.linearPCM(sampleRate: 8000, channels: 1, sample: .uint8).description == "LEUI8@8000")
        #expect(StreamFormat.appleIMA4(sampleRate: 44100, channels: 2).description == "ima4@44100x2")
        #expect(StreamFormat.compressed(.mpeg4AAC, sampleRate: 44100, channels: 2).description == "aac@44100x2")
    }

    @Test func canonicalFormatFields() {
        let format = StreamFormat.canonical(sampleRate: 48000, channels: 2)
        #expect(format.formatID == .linearPCM)
        #expect(format.formatFlags == [.isFloat, .isPacked, .isNonInterleaved])
        #expect(format.bytesPerFrame == 4 && format.bytesPerPacket == 4 && format.framesPerPacket == 1)
        #expect(format.channelsPerFrame == 2 && format.bitsPerChannel == 32)
        #expect(format.isCanonical && format.bufferCount == 2 && format.channelsPerBuffer == 1)
        #expect(!StreamFormat.linearPCM(sampleRate: 48000, channels: 2, sample: .float32).isCanonical)
    }

    @Test func interchangeFormatFields() {
        let s16 = StreamFormat.linearPCM(sampleRate: 44100, channels: 2, sample: .int16)
        #expect(s16.bytesPerFrame == 4 && s16.formatFlags == [.isSignedInteger, .isPacked] && s16.bytesPerSample == 2)
        let s24 = StreamFormat.linearPCM(sampleRate: 44100, channels: 2, sample: .int24)
        #expect(s24.bytesPerFrame == 6 && s24.bitsPerChannel == 24 && s24.pcmSample == .int24)
        let s24in32 = StreamFormat.linearPCM(sampleRate: 44100, channels: 2, sample: .int24In32, interleaved: false)
        #expect(s24in32.bytesPerFrame == 4 && !s24in32.isPacked && s24in32.pcmSample == .int24In32)
        let ima = StreamFormat.appleIMA4(sampleRate: 44100, channels: 2)
        #expect(ima.bytesPerPacket == 68 && ima.framesPerPacket == 64 && ima.bytesPerFrame == 0)
    }

    @Test func validationExplainsInconsistencies() {
        var format = StreamFormat.linearPCM(sampleRate: 44100, channels: 2, sample: .int16)
        format.bytesPerFrame = 6
        format.bytesPerPacket = 6
        #expect(format.validationProblems == ["bytesPerFrame 6 does not match 2 channels × 16 bits interleaved"])

        var nonInterleaved = StreamFormat.canonical(sampleRate: 48000, channels: 2)
        nonInterleaved.bytesPerFrame = 8
        #expect(nonInterleaved.validationProblems.contains("bytesPerFrame 8 does not match one channel × 32 bits non-interleaved"))
        #expect(nonInterleaved.validationProblems.contains("bytesPerPacket 4 does not match bytesPerFrame 8 × framesPerPacket 1"))

        var zero = StreamFormat.canonical(sampleRate: 0, channels: 1)
        zero.channelsPerFrame = 0
        #expect(zero.validationProblems.contains("sampleRate 0.0 is not a positive rate"))
        #expect(zero.validationProblems.contains("channelsPerFrame is 0"))

        var both = StreamFormat.canonical(sampleRate: 48000, channels: 1)
        both.formatFlags.insert(.isSignedInteger)
        #expect(both.validationProblems.contains("isFloat and isSignedInteger are both set"))

        var float24 = StreamFormat.linearPCM(sampleRate: 48000, channels: 1, sample: .int24)
        float24.formatFlags = [.isFloat, .isPacked]
        #expect(float24.validationProblems.contains("float samples are 32 or 64 bits, not 24"))

        var packed20 = StreamFormat.linearPCM(sampleRate: 48000, channels: 1, sample: .int24)
        packed20.bitsPerChannel = 20
        #expect(packed20.validationProblems.contains("packed samples fill whole bytes; 20 bits do not"))

        var narrow = StreamFormat.linearPCM(sampleRate: 48000, channels: 1, sample: .int24In32)
        narrow.bytesPerFrame = 2
        narrow.bytesPerPacket = 2
        #expect(narrow.validationProblems.contains("bytesPerFrame 2 leaves 16 bits per sample, fewer than bitsPerChannel 24"))

        var ima = StreamFormat.appleIMA4(sampleRate: 44100, channels: 2)
        ima.bytesPerPacket = 34
        #expect(ima.validationProblems == ["bytesPerPacket 34 must be 34 × 2 channels for IMA4"])

        var aac = StreamFormat.compressed(.mpeg4AAC, sampleRate: 44100, channels: 2)
        aac.bytesPerFrame = 4
        #expect(aac.validationProblems == ["bytesPerFrame 4 must be 0 for compressed format 'aac '"])
    }

    @Test func validateThrowsUnsupportedDataFormatNamingEveryProblem() {
        var format = StreamFormat.linearPCM(sampleRate: -1, channels: 2, sample: .int16)
        format.framesPerPacket = 2
        let error = #expect(throws: AudioError.self) { try format.validate() }
        #expect(error?.code == .unsupportedDataFormat)
        #expect(error?.status == 1_718_449_215)  // 'fmt?'
        #expect(error?.message.contains("sampleRate -1.0 is not a positive rate") == true)
        #expect(error?.message.contains("framesPerPacket 2 must be 1 for linear PCM") == true)
    }

    @Test func extremeFieldValuesAreProblemsNotOverflows() {
        // As a damaged file's header might give them.
        for flags: AudioFormatFlags in [[.isPacked, .isSignedInteger], [.isSignedInteger], [.isFloat], [.isNonInterleaved]] {
            let format = StreamFormat(
                sampleRate: .infinity, formatID: .linearPCM, formatFlags: flags, bytesPerPacket: .max, framesPerPacket: .max,
                bytesPerFrame: .max, channelsPerFrame: .max, bitsPerChannel: .max)
            #expect(!format.validationProblems.isEmpty)
        }
        let ima = StreamFormat(
            sampleRate: 44100, formatID: .appleIMA4, formatFlags: [], bytesPerPacket: .max, framesPerPacket: 64,
            bytesPerFrame: 0, channelsPerFrame: .max, bitsPerChannel: 0)
        #expect(!ima.validationProblems.isEmpty)
        #expect(!ima.description.isEmpty)
    }

    @Test func parsingAcceptsAfconvertStrings() throws {
        #expect(try StreamFormat(parsing: "LEI16@44100") == .linearPCM(sampleRate: 44100, channels: 1, sample: .int16))
        #expect(try StreamFormat(parsing: " BEI24@96000x2 ") == .linearPCM(sampleRate: 96000, channels: 2, sample: .int24, bigEndian: true))
        #expect(try StreamFormat(parsing: "LEF32@48000x2 deinterleaved") == .canonical(sampleRate: 48000, channels: 2))
        #expect(try StreamFormat(parsing: "LEF64x4").sampleRate == 0)
        let high = try StreamFormat(parsing: "LEI24/32h@48000")
        #expect(high.formatFlags == [.isSignedInteger, .isAlignedHigh] && high.bytesPerFrame == 4)
        #expect(try StreamFormat(parsing: "ima4@22050").bytesPerPacket == 34)
    }

    @Test(arguments: [
        "", "XEI16@44100", "LEQ16@44100", "LEI@44100", "LEI16@-5", "LEI16@abc", "LEI16@44100x0",
        "LEI20@44100", "LEI24/20@48000", "ima4@44100 deinterleaved", "toolong@44100",
    ])
    func parsingRejectsMalformedStrings(_ text: String) {
        let error = #expect(throws: AudioError.self) { try StreamFormat(parsing: text) }
        #expect(error?.code == .unsupportedDataFormat)
        #expect(error?.message.contains("'\(text)'") == true)
    }
}

@Suite("StreamFormat parsing of codec names")
struct StreamFormatCodecNameTests {
    @Test func codecNamesAsPeopleTypeThem() throws {
        let mp3 = try StreamFormat(parsing: "mp3@44100x2")
        #expect(mp3.formatID == .mpegLayer3)
        #expect(mp3.framesPerPacket == 1152)
        #expect(try StreamFormat(parsing: ".mp3").formatID == .mpegLayer3)
        #expect(try StreamFormat(parsing: "aac@48000").formatID == .mpeg4AAC)
        #expect(try StreamFormat(parsing: "HE-AAC@48000").formatID.rawValue.characters == "aach")
        #expect(try StreamFormat(parsing: "alac").formatID == .appleLossless)
        #expect(try StreamFormat(parsing: "opus@48000x2").formatID == .opus)
    }
}
