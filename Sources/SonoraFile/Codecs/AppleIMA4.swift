import SonoraCore

/// Apple IMA4 (`'ima4'`, as in CAF and AIFC): packets of 64 frames; per channel
/// 34 bytes — a big-endian 16-bit header whose top 9 bits are the predictor and
/// low 7 bits the step index, then 32 bytes of codes, low nibble first. Channels
/// follow one another inside the packet.
public enum AppleIMA4 {
    public static let framesPerPacket = 64
    public static let bytesPerChannel = 34

    /// Decodes one packet of `channels` channels into `channels` arrays of 64
    /// samples each (−1…1). Throws if the packet is not `34 × channels` bytes.
    public static func decode(packet: UnsafeRawBufferPointer, channels: Int, into output: AudioBufferList) throws(AudioError) {
        guard packet.count == bytesPerChannel * channels, channels > 0 else {
            throw AudioError(.invalidPacketOffset, "an IMA4 packet of \(channels) channels is \(bytesPerChannel * channels) bytes, not \(packet.count)")
        }
        guard output.channelCount >= channels, output.frameCount >= framesPerPacket else {
            throw AudioError(.parameterError, "IMA4 decode needs \(channels) channels × \(framesPerPacket) frames of room")
        }
        IMAADPCMChannel.withTables { tables in
            for channel in 0..<channels {
                let base = channel * bytesPerChannel
                let header = UInt16(packet[base]) << 8 | UInt16(packet[base + 1])
                var state = IMAADPCMChannel(
                    predictor: Int32(Int16(bitPattern: header & 0xFF80)), stepIndex: Int32(header & 0x7F))
                let samples = output.samples(channel)
                for byte in 0..<32 {
                    let value = packet[base + 2 + byte]
                    samples[2 * byte] = Float(state.decode(value & 0x0F, tables)) * (1 / 32768)
                    samples[2 * byte + 1] = Float(state.decode(value >> 4, tables)) * (1 / 32768)
                }
            }
        }
    }

    /// Encodes 64 frames of each channel into one packet (`34 × channels` bytes).
    /// `states` carries each channel's encoder from one packet to the next.
    public static func encode(
        _ input: AudioBufferList, states: inout [IMAADPCMChannel], into packet: UnsafeMutableRawBufferPointer
    ) throws(AudioError) {
        let channels = states.count
        guard packet.count == bytesPerChannel * channels, input.channelCount >= channels, input.frameCount >= framesPerPacket else {
            throw AudioError(.parameterError, "IMA4 encode needs 64 frames of \(channels) channels and \(bytesPerChannel * channels) bytes")
        }
        for channel in 0..<channels {
            let base = channel * bytesPerChannel
            // The header holds only the top 9 bits of the predictor: continue from
            // what the decoder will see, so both stay in step.
            var state = states[channel]
            let predictor = UInt16(bitPattern: Int16(state.predictor)) & 0xFF80
            state.predictor = Int32(Int16(bitPattern: predictor))
            let header = predictor | UInt16(state.stepIndex)
            packet[base] = UInt8(header >> 8)
            packet[base + 1] = UInt8(header & 0xFF)
            let samples = input.samples(channel)
            IMAADPCMChannel.withTables { tables in
                for byte in 0..<32 {
                    let low = state.encode(pcm16(samples[2 * byte]), tables)
                    let high = state.encode(pcm16(samples[2 * byte + 1]), tables)
                    packet[base + 2 + byte] = low | high << 4
                }
            }
            states[channel] = state
        }
    }

    /// A float sample as 16-bit PCM, rounded half away from zero and clipped (NaN is 0).
    ///
    /// Not `Float.rounded()`: on baseline x86-64 (no SSE4.1) that is a call to libm's
    /// `roundf` per sample, a tenth of the encoder's time. In Double, `x ± 0.5` is exact
    /// for every Float `x` in range, so truncating it rounds exactly as `rounded()` does.
    @inlinable
    public static func pcm16(_ value: Float) -> Int16 {
        guard !value.isNaN else { return 0 }
        let scaled = Double(value) * 32768
        let rounded = min(max(scaled + (scaled < 0 ? -0.5 : 0.5), -32768), 32767)
        return Int16(truncatingIfNeeded: Int32(rounded))
    }
}
