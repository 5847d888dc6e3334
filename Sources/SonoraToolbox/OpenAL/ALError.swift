/// OpenAL's error codes (alGetError), as Swift errors. Every misuse of the API throws one
/// and also records it as the context's sticky error (`ALContext.takeError()`), so code
/// written against alGetError's semantics works too.
public enum ALError: Error, Equatable, Sendable {
    case invalidName, invalidEnum, invalidValue, invalidOperation, outOfMemory

    /// AL_INVALID_NAME (0xA001) … AL_OUT_OF_MEMORY (0xA005).
    public var code: Int32 {
        switch self {
        case .invalidName: 0xA001
        case .invalidEnum: 0xA002
        case .invalidValue: 0xA003
        case .invalidOperation: 0xA004
        case .outOfMemory: 0xA005
        }
    }

    /// The error with OpenAL code `code`, or nil (AL_NO_ERROR and unknown codes).
    public init?(code: Int32) {
        switch code {
        case 0xA001: self = .invalidName
        case 0xA002: self = .invalidEnum
        case 0xA003: self = .invalidValue
        case 0xA004: self = .invalidOperation
        case 0xA005: self = .outOfMemory
        default: return nil
        }
    }

    /// The AL_* name of the code.
    public var name: String {
        switch self {
        case .invalidName: "AL_INVALID_NAME"
        case .invalidEnum: "AL_INVALID_ENUM"
        case .invalidValue: "AL_INVALID_VALUE"
        case .invalidOperation: "AL_INVALID_OPERATION"
        case .outOfMemory: "AL_OUT_OF_MEMORY"
        }
    }
}
