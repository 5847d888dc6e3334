/// One buffer's samples as the render side reads them: interleaved Float32 in raw memory,
/// immutable once made. `ALBuffer.setData` makes a new storage rather than changing one a
/// source may be reading; queue snapshots keep the storages they point at alive.
final class ALBufferStorage: @unchecked Sendable {
    let samples: UnsafeMutablePointer<Float>
    let frames: Int
    let channels: Int
    let frequency: Int
    /// The format the data came in (AL_BITS, AL_SIZE and byte offsets are in its units).
    let format: ALFormat

    init(frames: Int, channels: Int, frequency: Int, format: ALFormat) {
        self.frames = frames
        self.channels = channels
        self.frequency = frequency
        self.format = format
        // One frame more than asked, zeroed: the interpolator may read one frame past the end.
        samples = .allocate(capacity: max(1, (frames + 1) * channels))
        samples.initialize(repeating: 0, count: max(1, (frames + 1) * channels))
    }

    deinit { samples.deallocate() }

    /// Bytes of the data in its original format (AL_SIZE).
    var byteSize: Int { frames * format.bytesPerFrame }

    /// Converts `bytes` of `format` into a new storage.
    static func decode(_ bytes: UnsafeRawBufferPointer, format: ALFormat, frequency: Int) -> ALBufferStorage {
        let frames = bytes.count / format.bytesPerFrame
        let storage = ALBufferStorage(frames: frames, channels: format.channels, frequency: frequency, format: format)
        let count = frames * format.channels
        let out = storage.samples
        switch format.bits {
        case 8:
            for index in 0..<count { out[index] = (Float(bytes[index]) - 128) / 128 }
        case 16:
            for index in 0..<count {
                out[index] = Float(bytes.loadUnaligned(fromByteOffset: index * 2, as: Int16.self)) / 32768
            }
        default:
            for index in 0..<count { out[index] = bytes.loadUnaligned(fromByteOffset: index * 4, as: Float.self) }
        }
        return storage
    }
}
