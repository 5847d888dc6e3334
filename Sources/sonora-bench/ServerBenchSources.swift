import CServerBenchAnchor
import SonoraCore
import SonoraHAL
import SonoraUnits
import Synchronization

/// The per-source job of `sonora-bench server`, the same for every contender: a stereo sine
/// from a 200-entry table, as jack_simple_client's process callback (the C code the JACK
/// clients run), so the rows compare what the frameworks add around it.

/// An in-process source: a render callback on one of the mixer's inputs.
final class ServerBenchSourceCallback: RenderCallbackTarget, @unchecked Sendable {
    private let source: UnsafeMutablePointer<sonora_simple_source>

    init(offset: Int) {
        source = .allocate(capacity: 1)
        sonora_simple_source_init(source, Int32(offset))
    }

    deinit { source.deallocate() }

    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        let buffers = request.pointee.buffers
        let frames = UInt32(request.pointee.frameCount)
        let right = buffers.channelCount > 1 ? buffers.samples(1) : nil
        sonora_simple_source_fill(source, buffers.samples(0), right, frames)
        return .noError
    }
}

/// A client program's whole audio work on its own device (for the appliance's client streams:
/// one per `sonora:` device): the same sine into the first two output channels each cycle.
final class ServerBenchClientCycle: IOCycleTarget, @unchecked Sendable {
    private let source: UnsafeMutablePointer<sonora_simple_source>
    let cycles = Atomic<Int>(0)

    init(offset: Int) {
        source = .allocate(capacity: 1)
        sonora_simple_source_init(source, Int32(offset))
    }

    deinit { source.deallocate() }

    override func process(_ cycle: UnsafeMutablePointer<IOCycle>) -> Int32 {
        let output = cycle.pointee.output
        if output.channelCount > 0 {
            let right = output.channelCount > 1 ? output.samples(1) : nil
            sonora_simple_source_fill(source, output.samples(0), right, UInt32(cycle.pointee.frameCount))
            for channel in min(output.channelCount, 2)..<output.channelCount {
                output.samples(channel).update(repeating: 0, count: cycle.pointee.frameCount)
            }
        }
        cycles.wrappingAdd(1, ordering: .relaxed)
        return 0
    }
}
