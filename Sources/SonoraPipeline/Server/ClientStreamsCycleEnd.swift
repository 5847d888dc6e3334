import SonoraCore
import SonoraHAL
import SonoraUnits

/// Ends each I/O cycle for the appliance's client streams: a post-render notification on
/// the I/O unit that lets the stream table service the streams no `clients` node took
/// this cycle (a role without a node of its own, or a config without any), so those
/// programs keep time instead of stalling. Realtime-safe: the table is held unretained.
final class ClientStreamsCycleEnd: RenderCallbackTarget, @unchecked Sendable {
    let table: ApplianceStreamTable
    @exclusivity(unchecked) private var streams: Unmanaged<ApplianceStreamTable>

    init(table: ApplianceStreamTable) {
        self.table = table
        streams = Unmanaged.passUnretained(table)
    }

    override func render(_ request: UnsafeMutablePointer<RenderRequest>) -> AudioError.Code {
        guard request.pointee.bus == 0, request.pointee.flags.contains(.postRender) else { return .noError }
        let frames = request.pointee.frameCount
        streams._withUnsafeGuaranteedRef { $0.finishCycle(frameCount: frames) }
        return .noError
    }
}
