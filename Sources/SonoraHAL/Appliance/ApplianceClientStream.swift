import CSonoraSystem
import SonoraCore

#if canImport(Glibc)
import Glibc
#endif

/// One stream a client opened on the appliance: its mapped ring and its wake-up eventfd.
/// Owned by the control side of `ApplianceDevice`; its I/O thread sees only `ring` and
/// `wakeDescriptor`, copied out.
final class ApplianceClientStream: @unchecked Sendable {
    let id: Int
    let direction: ApplianceStreamDirection
    let memory: ApplianceStreamMemory
    let wakeDescriptor: Int32
    var ring: ApplianceRing { memory.ring }

    /// Asks `connection` for a stream and maps what comes back.
    init(connection: ApplianceConnection, direction: ApplianceStreamDirection, channels: Int, role: String? = nil) throws(AudioError) {
        var fields: [String: ApplianceValue] = ["direction": .string(direction.rawValue), "channels": .int(channels)]
        if let role { fields["role"] = .string(role) }
        let (reply, descriptors) = try connection.requestWithDescriptors("open_stream", fields)
        let granted = reply["stream"]?.intValue
        // A stream the appliance opened but this process cannot use is closed again, or it
        // would stay attached (and underrun) for as long as the connection lasts.
        func abandon(_ error: AudioError) -> AudioError {
            if let granted { _ = try? connection.request("close_stream", ["stream": .int(granted)]) }
            return error
        }
        guard descriptors.count == 2, let id = granted, let capacity = reply["capacity"]?.intValue,
              capacity > 0, capacity & (capacity - 1) == 0, capacity <= 1 << 22
        else {
            for fd in descriptors { close(fd) }
            if granted != nil && descriptors.count < 2 {
                // The kernel drops passed descriptors the receiver has no room for (MSG_CTRUNC).
                throw abandon(AudioError(.tooManyFilesOpen, "the appliance's stream descriptors did not arrive: this process is out of file descriptors (\(ApplianceSocket.openDescriptorSummary()))"))
            }
            throw abandon(AudioError(.badStream, "the appliance's open_stream reply lacks the stream, a power-of-two capacity or its two descriptors"))
        }
        do {
            memory = try ApplianceStreamMemory.map(descriptors[0], channels: channels, capacity: capacity)
        } catch {
            close(descriptors[1])
            throw abandon(error)
        }
        self.id = id
        self.direction = direction
        wakeDescriptor = descriptors[1]
    }

    deinit { close(wakeDescriptor) }
}
