import SonoraCore
import SonoraDSP

/// Supplies PCM frames in the converter's input format (subclass; `fill` runs on
/// the realtime thread: no allocation, locks, logging or Foundation).
open class PCMInputProvider {
    public init() {}

    /// Writes `list.frameCount` frames into `list`'s buffers, starting at sample
    /// time `sampleTime`; returns `.noError` or a failure status.
    open func fill(_ list: PCMBufferList, sampleTime: Double) -> AudioError.Code {
        for index in 0..<list.format.bufferCount {
            list.buffers[index].initializeMemory(as: UInt8.self, repeating: 0, count: list.frameCount * Int(list.format.bytesPerFrame))
        }
        return .noError
    }
}
