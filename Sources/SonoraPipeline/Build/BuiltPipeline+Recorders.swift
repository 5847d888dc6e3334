import SonoraFile
import SonoraUnits

/// A recorder whose write failed (a full disk): the recording stopped, the file holds
/// what was written. The runtime logs it at once, shows it in the status line and the
/// `status` answer, and exits non-zero.
public struct RecorderFailure: Codable, Sendable, Equatable, CustomStringConvertible {
    public let node: String
    public let file: String
    public let message: String

    public init(node: String, file: String, message: String) {
        self.node = node
        self.file = file
        self.message = message
    }

    public var description: String { "recorder '\(node)': \(message)" }

    /// In the control protocol's `status` answer: {node, file, error}.
    enum CodingKeys: String, CodingKey {
        case node, file
        case message = "error"
    }
}

extension BuiltPipeline {
    /// Recorders stopped by a write error, in node order (read under the controller's
    /// serialization: a reload changes the nodes).
    public var recorderFailures: [RecorderFailure] {
        retiredRecorderFailures + nodes.compactMap { node in
            guard let recorder = node.unit as? FileRecorderUnit, let failure = recorder.failure else { return nil }
            return RecorderFailure(node: node.id, file: recorder.path ?? "", message: failure.message)
        }
    }

    /// Partial recordings left by killed processes that the recorders found when they
    /// started (recovered to a visible name, or removed when empty), for the log.
    public var staleRecordings: [StalePartialFile] {
        recorders.flatMap(\.staleRecordings)
    }
}
