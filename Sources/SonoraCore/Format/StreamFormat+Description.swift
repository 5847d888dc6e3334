// afconvert-style format strings: `LEI16@44100`, `BEF32@48000x2`, `LEF32@48000x2 deinterleaved`.
//
// Grammar (PCM):  (LE|BE)(F|I|UI)BITS[.FRACTION_BITS][/CONTAINER_BITS[h]]@RATE[xCHANNELS][ deinterleaved]
//  - `.FRACTION_BITS` makes integers fixed point, as CAStreamBasicDescription writes them: `LEI8.24`
//    is 32-bit samples with 24 fraction bits (the iPhone's audio-unit canonical);
//  - `/32` names a container wider than the sample (24 bits in 32: `LEI24/32`), `h` marks it aligned high;
//  - `@RATE` may be omitted (rate 0, "any"); `x1` is implied when CHANNELS is omitted.
// Grammar (other formats): FOURCC@RATE[xCHANNELS], the code without trailing spaces (`ima4@44100x2`, `aac@48000`).

extension StreamFormat: CustomStringConvertible {
    public var description: String {
        var text: String
        if isLinearPCM {
            text = isBigEndian ? "BE" : "LE"
            text += isFloat ? "F" : (isSignedInteger ? "I" : "UI")
            let fractionBits = sampleFractionBits
            text += fractionBits > 0 && !isFloat
                ? "\(Int(bitsPerChannel) - fractionBits).\(fractionBits)" : String(bitsPerChannel)
            let containerBits = bytesPerSample * 8
            if !isPacked || containerBits != Int(bitsPerChannel) {
                text += "/\(containerBits)"
                if formatFlags.contains(.isAlignedHigh) { text += "h" }
            }
        } else {
            let code = formatID.rawValue.characters ?? String(formatID.rawValue.rawValue)
            text = String(code.reversed().drop(while: { $0 == " " }).reversed())
        }
        if sampleRate != 0 {
            text += "@" + Self.format(rate: sampleRate)
        }
        if channelsPerFrame != 1 {
            text += "x\(channelsPerFrame)"
        }
        if isLinearPCM && !isInterleaved {
            text += " deinterleaved"
        }
        return text
    }

    private static func format(rate: Double) -> String {
        if rate == rate.rounded(), abs(rate) < 1e15 { return String(Int64(rate)) }
        return String(rate)
    }
}

extension StreamFormat {
    /// Parses an afconvert-style description (see the grammar above).
    /// Throws `'fmt?'` with the reason when the text is not one.
    public init(parsing text: String) throws(AudioError) {
        func fail(_ reason: String) -> AudioError {
            AudioError(.unsupportedDataFormat, "cannot read format '\(text)': \(reason)")
        }
        var rest = Substring(text.trimmingWhitespace)
        var interleaved = true
        if rest.hasSuffix(" deinterleaved") {
            interleaved = false
            rest = rest.dropLast(" deinterleaved".count)
        }
        var channels: UInt32 = 1
        if let x = rest.lastIndex(of: "x"), rest[rest.index(after: x)...].allSatisfy(\.isNumber),
            rest.index(after: x) != rest.endIndex
        {
            guard let count = UInt32(rest[rest.index(after: x)...]), count > 0 else {
                throw fail("channel count must be a positive integer")
            }
            channels = count
            rest = rest[..<x]
        }
        var sampleRate = 0.0
        if let at = rest.firstIndex(of: "@") {
            guard let rate = Double(rest[rest.index(after: at)...]), rate > 0, rate.isFinite else {
                throw fail("sample rate after '@' must be a positive number")
            }
            sampleRate = rate
            rest = rest[..<at]
        }
        if rest.hasPrefix("LE") || rest.hasPrefix("BE") {
            self = try Self.parsePCM(
                rest, sampleRate: sampleRate, channels: channels, interleaved: interleaved, fail: fail)
            return
        }
        guard interleaved else { throw fail("only linear PCM can be deinterleaved") }
        // Names people type for codes whose four characters are awkward ('.mp3', 'aach').
        let aliases: [String: String] = ["mp3": ".mp3", "he-aac": "aach", "heaac": "aach"]
        if let code = aliases[rest.lowercased()] { rest = Substring(code) }
        guard !rest.isEmpty, rest.count <= 4,
            let code = FourCharCode(characters: rest.padding(toLength: 4)),
            code.characters?.allSatisfy({ $0.isLetter || $0.isNumber || $0 == " " || $0 == "." }) == true
        else {
            throw fail("expected LE/BE followed by F, I or UI and a bit depth, or a four-character format code")
        }
        self = .compressed(AudioFormatID(rawValue: code), sampleRate: sampleRate, channels: Int(channels))
    }

    private static func parsePCM(
        _ spec: Substring, sampleRate: Double, channels: UInt32, interleaved: Bool,
        fail: (String) -> AudioError
    ) throws(AudioError) -> StreamFormat {
        var rest = spec
        var flags: AudioFormatFlags = rest.hasPrefix("BE") ? [.isBigEndian] : []
        rest = rest.dropFirst(2)
        if rest.hasPrefix("UI") {
            rest = rest.dropFirst(2)
        } else if rest.hasPrefix("I") {
            flags.insert(.isSignedInteger)
            rest = rest.dropFirst()
        } else if rest.hasPrefix("F") {
            flags.insert(.isFloat)
            rest = rest.dropFirst()
        } else {
            throw fail("sample type must be F, I or UI")
        }
        var container: Substring?
        if let slash = rest.firstIndex(of: "/") {
            container = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        if let dot = rest.firstIndex(of: ".") {
            guard !flags.contains(.isFloat), let fraction = UInt32(rest[rest.index(after: dot)...]), fraction > 0,
                fraction < 64, let whole = UInt32(rest[..<dot]), whole > 0
            else {
                throw fail("fixed point is integer bits '.' fraction bits (I8.24), both positive, fewer than 64 fraction bits")
            }
            rest = Substring(String(whole + fraction))
            flags.insert(.sampleFractionBits(Int(fraction)))
        }
        guard let bits = UInt32(rest), bits > 0 else { throw fail("bit depth must be a positive integer") }
        var containerBits = bits
        if var container {
            if container.hasSuffix("h") {
                flags.insert(.isAlignedHigh)
                container = container.dropLast()
            }
            guard let value = UInt32(container), value % 8 == 0, value >= bits else {
                throw fail("container after '/' must be a whole number of bytes, at least the bit depth")
            }
            containerBits = value
        }
        guard containerBits % 8 == 0 else { throw fail("\(bits)-bit samples need a container ('/\((bits + 7) / 8 * 8)')") }
        if containerBits == bits { flags.insert(.isPacked) }
        if !interleaved { flags.insert(.isNonInterleaved) }
        let bytesPerFrame = containerBits / 8 * (interleaved ? channels : 1)
        return StreamFormat(
            sampleRate: sampleRate, formatID: .linearPCM, formatFlags: flags,
            bytesPerPacket: bytesPerFrame, framesPerPacket: 1, bytesPerFrame: bytesPerFrame,
            channelsPerFrame: channels, bitsPerChannel: bits)
    }
}

extension StringProtocol {
    fileprivate var trimmingWhitespace: SubSequence {
        let start = firstIndex(where: { !$0.isWhitespace }) ?? endIndex
        let end = lastIndex(where: { !$0.isWhitespace }).map { index(after: $0) } ?? start
        return self[start..<end]
    }

    fileprivate func padding(toLength length: Int) -> String {
        String(self) + String(repeating: " ", count: Swift.max(0, length - count))
    }
}
