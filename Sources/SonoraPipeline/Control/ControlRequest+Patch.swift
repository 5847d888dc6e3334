/// A `patch` request: an LV2 plugin's patch parameters (`patch:writable` / `patch:readable`
/// properties, set with patch:Set on its control atom input). Without `property`: all of
/// them; with it: one, by URI, by label (rdfs:label, any case) or by URID (a number, the
/// appliance's URID map); with `value` as well: sets it (a number, true/false or a text,
/// as the property's range takes).
public struct PatchRequest: Equatable, Sendable {
    /// A property by URID, or by URI or label.
    public enum Property: Equatable, Sendable {
        case urid(UInt32)
        case name(String)
    }

    public var node: String
    public var property: Property?
    public var value: ControlValue?

    public init(node: String, property: Property? = nil, value: ControlValue? = nil) {
        self.node = node
        self.property = property
        self.value = value
    }

    static let optionalFields = ["property", "value"]

    init(_ fields: RequestFields) throws {
        node = try fields.requiredString("node")
        if fields.contains("property") {
            if let urid = try? fields.integer("property", in: 1...Int(UInt32.max)) {
                property = .urid(UInt32(urid))
            } else if let text = try? fields.string("property"), !text.isEmpty {
                property = .name(text)
            } else {
                throw ControlFailure(
                    .badField, field: "property", "\"property\" must be a URI, a label or a URID (a positive number), not \(fields.kind("property"))")
            }
        }
        if fields.contains("value") {
            guard property != nil else { throw ControlFailure(.missingField, field: "property", "setting a patch value needs \"property\"") }
            value = try fields.value()
        }
    }

    func encode(into container: inout KeyedEncodingContainer<FieldKey>) throws {
        try container.encode(node, forKey: FieldKey("node"))
        switch property {
        case .urid(let urid): try container.encode(urid, forKey: FieldKey("property"))
        case .name(let name): try container.encode(name, forKey: FieldKey("property"))
        case nil: break
        }
        switch value {
        case .number(let number): try container.encode(number, forKey: FieldKey("value"))
        case .text(let text): try container.encode(text, forKey: FieldKey("value"))
        case .flag(let flag): try container.encode(flag, forKey: FieldKey("value"))
        case nil: break
        }
    }
}
