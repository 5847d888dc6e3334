/// The layout of one stream's shared memory (a sealed memfd the server creates):
///
///     0    header: magic "SNRS", version, channels, capacity (frames, a power of two),
///          sample rate, period — UInt32 each, little-endian as the machine
///     128  writer position: Int64 atomic, alone on its 128-byte line
///     256  reader position: Int64 atomic, alone on its 128-byte line
///     384  channels × capacity Float32, channel after channel (non-interleaved)
///
/// Playback: the client writes, the appliance reads. Capture: the appliance writes, the
/// client reads. Positions only grow; `position & (capacity − 1)` is the frame slot.
enum ApplianceStreamLayout {
    static let magic: UInt32 = 0x5352_4E53  // "SNRS" in memory order
    static let version: UInt32 = 1
    static let lineSize = 128
    static let writerOffset = 128
    static let readerOffset = 256
    static let dataOffset = 384

    static func byteCount(channels: Int, capacity: Int) -> Int {
        dataOffset + channels * capacity * MemoryLayout<Float>.size
    }

    /// The ring's capacity for a period: at least four periods and the appliance's buffer,
    /// a power of two, so a client that is late by a few periods loses nothing.
    static func capacity(periodFrames: Int, periods: Int) -> Int {
        var capacity = 1
        while capacity < max(4 * periodFrames, periods * periodFrames) { capacity <<= 1 }
        return capacity
    }
}
