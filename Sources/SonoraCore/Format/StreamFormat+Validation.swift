extension StreamFormat {
    /// Everything inconsistent about this format, one sentence each; empty when valid.
    public var validationProblems: [String] {
        var problems: [String] = []
        if !(sampleRate > 0 && sampleRate.isFinite) {
            problems.append("sampleRate \(sampleRate) is not a positive rate")
        }
        if channelsPerFrame == 0 {
            problems.append("channelsPerFrame is 0")
        }
        switch formatID {
        case .linearPCM: problems += linearPCMProblems
        case .appleIMA4: problems += ima4Problems
        default:
            if bytesPerFrame != 0 {
                problems.append("bytesPerFrame \(bytesPerFrame) must be 0 for compressed format \(formatID)")
            }
        }
        return problems
    }

    /// Throws `AudioError` `'fmt?'` naming every inconsistency when the format is not valid.
    public func validate() throws(AudioError) {
        let problems = validationProblems
        guard problems.isEmpty else {
            throw AudioError(.unsupportedDataFormat, "\(self): " + problems.joined(separator: "; "))
        }
    }

    private var linearPCMProblems: [String] {
        var problems: [String] = []
        let layout = isInterleaved ? "interleaved" : "non-interleaved"
        if framesPerPacket != 1 {
            problems.append("framesPerPacket \(framesPerPacket) must be 1 for linear PCM")
        }
        let fractionBits = sampleFractionBits
        if fractionBits > 0 && isFloat {
            problems.append("float samples have no fraction bits (\(fractionBits) given)")
        } else if fractionBits > 0 && fractionBits >= Int(bitsPerChannel) {
            problems.append("\(fractionBits) fraction bits leave no integer bits in \(bitsPerChannel)-bit samples")
        }
        if isFloat && isSignedInteger {
            problems.append("isFloat and isSignedInteger are both set")
        }
        if isFloat && bitsPerChannel != 32 && bitsPerChannel != 64 {
            problems.append("float samples are 32 or 64 bits, not \(bitsPerChannel)")
        } else if !isFloat && !(1...32).contains(bitsPerChannel) {
            problems.append("bitsPerChannel \(bitsPerChannel) is outside 1…32 for integer samples")
        }
        if isPacked && bitsPerChannel % 8 != 0 {
            problems.append("packed samples fill whole bytes; \(bitsPerChannel) bits do not")
        }
        // 64-bit arithmetic: a format read from a damaged file may hold any 32-bit values.
        let samplesPerFrame = UInt64(channelsPerBuffer)
        let bytesPerFrame = UInt64(self.bytesPerFrame)
        if samplesPerFrame > 0 {
            if isPacked {
                let expected = samplesPerFrame * UInt64(bitsPerChannel / 8)
                if bytesPerFrame != expected {
                    let what = isInterleaved ? "\(channelsPerFrame) channels" : "one channel"
                    problems.append(
                        "bytesPerFrame \(bytesPerFrame) does not match \(what) × \(bitsPerChannel) bits \(layout)")
                }
            } else if bytesPerFrame % samplesPerFrame != 0 {
                problems.append("bytesPerFrame \(bytesPerFrame) is not a multiple of \(samplesPerFrame) channels")
            } else if (bytesPerFrame / samplesPerFrame) * 8 < UInt64(bitsPerChannel) {
                problems.append(
                    "bytesPerFrame \(bytesPerFrame) leaves \((bytesPerFrame / samplesPerFrame) * 8) bits per sample, "
                        + "fewer than bitsPerChannel \(bitsPerChannel)")
            }
        }
        if UInt64(bytesPerPacket) != bytesPerFrame * UInt64(framesPerPacket) {
            problems.append(
                "bytesPerPacket \(bytesPerPacket) does not match bytesPerFrame \(bytesPerFrame) × framesPerPacket \(framesPerPacket)")
        }
        return problems
    }

    private var ima4Problems: [String] {
        var problems: [String] = []
        if framesPerPacket != 64 {
            problems.append("framesPerPacket \(framesPerPacket) must be 64 for IMA4")
        }
        if UInt64(bytesPerPacket) != 34 * UInt64(channelsPerFrame) {
            problems.append("bytesPerPacket \(bytesPerPacket) must be 34 × \(channelsPerFrame) channels for IMA4")
        }
        if bytesPerFrame != 0 {
            problems.append("bytesPerFrame \(bytesPerFrame) must be 0 for IMA4")
        }
        return problems
    }
}
