import Foundation
import SonoraCore
import SonoraHAL

/// The session types travel as the wire's JSON values: encoded the way the control
/// socket encodes its answers (Codable), read back the same way by `sonora session`.
extension ApplianceValue {
    /// `value` as JSON (what `JSONEncoder` writes), as a wire value.
    public init(encoding value: some Encodable) throws(AudioError) {
        let data: Data
        do { data = try JSONEncoder().encode(value) } catch {
            throw AudioError(.unspecified, "cannot encode \(type(of: value)): \(error)")
        }
        // Wrapped in an object: the wire's parser reads objects.
        let wrapped = Array("{\"value\":".utf8) + Array(data) + Array("}".utf8)
        self = try ApplianceJSON.parseObject(wrapped)["value"] ?? .null
    }

    /// The wire value decoded as `type`.
    public func decoded<T: Decodable>(as type: T.Type) throws(AudioError) -> T {
        do {
            return try JSONDecoder().decode(type, from: Data(ApplianceJSON.serialize(self)))
        } catch {
            throw AudioError(.unspecified, "the appliance's answer is not a \(type): \(error)")
        }
    }
}

extension SessionNotice {
    /// The event the server sends for it.
    var applianceEvent: ApplianceEvent {
        switch self {
        case .interruptionBegan: .interruptionBegan
        case .interruptionEnded(let resume): .interruptionEnded(shouldResume: resume)
        case .duck(let gain, let active): .duck(gainDB: gain, active: active)
        }
    }
}

extension SessionActivation {
    /// The reply to `session_activate`.
    var applianceFields: [String: ApplianceValue] {
        (try? ApplianceValue(encoding: self))?.objectValue ?? [:]
    }
}

extension SessionClientStatus {
    var applianceValue: ApplianceValue { (try? ApplianceValue(encoding: self)) ?? .null }
}
