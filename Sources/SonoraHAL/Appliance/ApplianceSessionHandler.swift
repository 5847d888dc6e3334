import SonoraCore

/// What the appliance decides about sessions (the policy): the server passes it the
/// session ops and asks it before opening a stream. Called on the server's event-loop
/// thread, one call at a time.
public protocol ApplianceSessionHandler: AnyObject, Sendable {
    /// A session op (`session_activate`, `session_deactivate`, `session_status`) from
    /// `client`; returns the reply's fields, or throws (→ `ok:false` with the status and
    /// the message).
    func handle(op: String, fields: [String: ApplianceValue], from client: ApplianceClientInfo) throws(AudioError) -> [String: ApplianceValue]
    /// The connection closed or its process died (called once per connection, after its
    /// streams were detached).
    func clientDetached(_ client: ApplianceClientInfo)
    /// Whether `client` may open a stream of this direction: nil = yes, else the reason.
    func mayOpenStream(direction: ApplianceStreamDirection, client: ApplianceClientInfo) -> String?
}
