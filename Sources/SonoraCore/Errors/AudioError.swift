/// The one error type of the Sonora runtime.
///
/// `code` keeps Core Audio's numeric status wherever Core Audio documents one
/// (`-10879` invalid property, `'fmt?'` unsupported data format, `-43` file not
/// found …) so that ported code can compare statuses; `message` says, in words,
/// what went wrong and where.
public struct AudioError: Error, Hashable, Sendable {
    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The numeric status as Core Audio's `OSStatus`.
    public var status: Int32 { code.rawValue }
}

extension AudioError: CustomStringConvertible {
    /// `invalid scope (-10866): scope 'output' has no element 3`.
    public var description: String {
        "\(code.name) (\(code)): \(message)"
    }
}

extension AudioError {
    /// A status code. Constants carry Core Audio's values; where Core Audio has
    /// several names for one value (`'fmt?'` is both the file and converter error),
    /// there is one constant here.
    @frozen
    public struct Code: RawRepresentable, Hashable, Sendable, BitwiseCopyable {
        public var rawValue: Int32
        @inlinable public init(rawValue: Int32) { self.rawValue = rawValue }

        init(_ code: FourCharCode) { rawValue = Int32(bitPattern: code.rawValue) }

        /// Success (`noErr`). Computed, so the render path compares with a constant.
        @inlinable public static var noError: Code { Code(rawValue: 0) }

        // General (CoreAudioBaseTypes).
        public static let unimplemented = Code(rawValue: -4)
        public static let fileNotFound = Code(rawValue: -43)
        public static let filePermission = Code(rawValue: -54)
        public static let tooManyFilesOpen = Code(rawValue: -42)
        public static let badFilePath = Code(FourCharCode(rawValue: 0x2170_7468)) // '!pth'
        public static let parameterError = Code(rawValue: -50)
        public static let memoryFull = Code(rawValue: -108)

        // Audio units (AUComponent.h).
        public static let invalidProperty = Code(rawValue: -10879)
        public static let invalidParameter = Code(rawValue: -10878)
        public static let invalidElement = Code(rawValue: -10877)
        public static let noConnection = Code(rawValue: -10876)
        public static let failedInitialization = Code(rawValue: -10875)
        public static let tooManyFramesToProcess = Code(rawValue: -10874)
        public static let invalidFile = Code(rawValue: -10871)
        public static let unknownFileType = Code(rawValue: -10870)
        public static let fileNotSpecified = Code(rawValue: -10869)
        public static let formatNotSupported = Code(rawValue: -10868)
        public static let uninitialized = Code(rawValue: -10867)
        public static let invalidScope = Code(rawValue: -10866)
        public static let propertyNotWritable = Code(rawValue: -10865)
        public static let cannotDoInCurrentContext = Code(rawValue: -10863)
        public static let invalidPropertyValue = Code(rawValue: -10851)
        public static let propertyNotInUse = Code(rawValue: -10850)
        public static let initialized = Code(rawValue: -10849)
        public static let invalidOfflineRender = Code(rawValue: -10848)
        public static let renderTimeout = Code(rawValue: -66745)
        public static let invalidParameterValue = Code(rawValue: -66743)
        public static let invalidFilePath = Code(rawValue: -66742)
        public static let missingKey = Code(rawValue: -66741)

        // Audio components.
        public static let componentUnsupportedType = Code(rawValue: -66751)
        public static let componentInvalidFormat = Code(rawValue: -66746)

        // AUGraph.
        public static let graphNodeNotFound = Code(rawValue: -10860)
        public static let graphInvalidConnection = Code(rawValue: -10861)
        public static let graphOutputNodeError = Code(rawValue: -10862)
        public static let graphInvalidAudioUnit = Code(rawValue: -10864)

        // Audio files, file streams, converters, formats (shared four-char codes).
        public static let unspecified = Code(FourCharCode(rawValue: 0x7768_743F)) // 'wht?'
        public static let unsupportedFileType = Code(FourCharCode(rawValue: 0x7479_703F)) // 'typ?'
        public static let unsupportedDataFormat = Code(FourCharCode(rawValue: 0x666D_743F)) // 'fmt?'
        public static let unsupportedProperty = Code(FourCharCode(rawValue: 0x7074_793F)) // 'pty?'
        public static let badPropertySize = Code(FourCharCode(rawValue: 0x2173_697A)) // '!siz'
        public static let permissions = Code(FourCharCode(rawValue: 0x7072_6D3F)) // 'prm?'
        public static let notOptimized = Code(FourCharCode(rawValue: 0x6F70_746D)) // 'optm'
        public static let invalidChunk = Code(FourCharCode(rawValue: 0x6368_6B3F)) // 'chk?'
        public static let doesNotAllow64BitDataSize = Code(FourCharCode(rawValue: 0x6F66_663F)) // 'off?'
        public static let invalidPacketOffset = Code(FourCharCode(rawValue: 0x7063_6B3F)) // 'pck?'
        public static let invalidPacketDependency = Code(FourCharCode(rawValue: 0x6465_703F)) // 'dep?'
        public static let invalidFileData = Code(FourCharCode(rawValue: 0x6474_613F)) // 'dta?'
        public static let operationNotSupported = Code(FourCharCode(rawValue: 0x6F70_3F3F)) // 'op??'
        public static let fileNotOpen = Code(rawValue: -38)
        public static let endOfFile = Code(rawValue: -39)
        public static let filePosition = Code(rawValue: -40)
        public static let valueUnknown = Code(FourCharCode(rawValue: 0x756E_6B3F)) // 'unk?'
        public static let dataUnavailable = Code(FourCharCode(rawValue: 0x6D6F_7265)) // 'more'
        public static let illegalOperation = Code(FourCharCode(rawValue: 0x6E6F_7065)) // 'nope'
        public static let discontinuityCantRecover = Code(FourCharCode(rawValue: 0x6473_6321)) // 'dsc!'
        public static let converterPropertyNotSupported = Code(FourCharCode(rawValue: 0x7072_6F70)) // 'prop'
        public static let invalidInputSize = Code(FourCharCode(rawValue: 0x696E_737A)) // 'insz'
        public static let invalidOutputSize = Code(FourCharCode(rawValue: 0x6F74_737A)) // 'otsz'
        public static let requiresPacketDescriptions = Code(FourCharCode(rawValue: 0x2170_6B64)) // '!pkd'
        public static let inputSampleRateOutOfRange = Code(FourCharCode(rawValue: 0x2169_7372)) // '!isr'
        public static let outputSampleRateOutOfRange = Code(FourCharCode(rawValue: 0x216F_7372)) // '!osr'

        // Audio hardware (HAL).
        public static let hardwareNotRunning = Code(FourCharCode(rawValue: 0x7374_6F70)) // 'stop'
        public static let hardwareUnspecified = Code(FourCharCode(rawValue: 0x7768_6174)) // 'what'
        public static let badDevice = Code(FourCharCode(rawValue: 0x2164_6576)) // '!dev'
        public static let badStream = Code(FourCharCode(rawValue: 0x2173_7472)) // '!str'
        public static let unsupportedOperation = Code(FourCharCode(rawValue: 0x756E_6F70)) // 'unop'
        public static let notReady = Code(FourCharCode(rawValue: 0x6E72_6479)) // 'nrdy'
        public static let deviceUnsupportedFormat = Code(FourCharCode(rawValue: 0x2164_6174)) // '!dat'
        public static let devicePermissions = Code(FourCharCode(rawValue: 0x2168_6F67)) // '!hog'

        // Audio queues (AudioQueue.h).
        public static let queueInvalidBuffer = Code(rawValue: -66687)
        public static let queueBufferEmpty = Code(rawValue: -66686)
        public static let queueDisposalPending = Code(rawValue: -66685)
        public static let queueInvalidProperty = Code(rawValue: -66684)
        public static let queueInvalidPropertySize = Code(rawValue: -66683)
        public static let queueInvalidParameter = Code(rawValue: -66682)
        public static let queueCannotStart = Code(rawValue: -66681)
        public static let queueInvalidDevice = Code(rawValue: -66680)
        public static let queueBufferInQueue = Code(rawValue: -66679)
        public static let queueInvalidRunState = Code(rawValue: -66678)
        public static let queueInvalidQueueType = Code(rawValue: -66677)
        public static let queuePermissions = Code(rawValue: -66676)
        public static let queueInvalidPropertyValue = Code(rawValue: -66675)
        public static let queuePrimeTimedOut = Code(rawValue: -66674)
        public static let queueCodecNotFound = Code(rawValue: -66673)
        public static let queueInvalidCodecAccess = Code(rawValue: -66672)
        public static let queueInvalidated = Code(rawValue: -66671)
        public static let queueTooManyTaps = Code(rawValue: -66670)
        public static let queueInvalidTapContext = Code(rawValue: -66669)
        public static let queueRecordUnderrun = Code(rawValue: -66668)
        public static let queueInvalidTapType = Code(rawValue: -66667)
        public static let queueBufferEnqueuedTwice = Code(rawValue: -66666)
        public static let queueCannotStartYet = Code(rawValue: -66665)
        public static let queueEnqueueDuringReset = Code(rawValue: -66632)
        public static let queueInvalidOfflineMode = Code(rawValue: -66626)

        // System sound services.
        public static let systemSoundUnspecified = Code(rawValue: -1500)
        public static let systemSoundClientTimedOut = Code(rawValue: -1501)
        public static let systemSoundExceededMaximumDuration = Code(rawValue: -1502)

        // Audio session (AudioServices.h's kAudioSession… and AVAudioSession.ErrorCode).
        public static let sessionNotInitialized = Code(FourCharCode(rawValue: 0x2169_6E69)) // '!ini'
        public static let sessionNotActive = Code(FourCharCode(rawValue: 0x2161_6374)) // '!act' (also "is busy")
        public static let sessionNoCategorySet = Code(FourCharCode(rawValue: 0x3F63_6174)) // '?cat'
        public static let sessionIncompatibleCategory = Code(FourCharCode(rawValue: 0x2163_6174)) // '!cat'
        public static let sessionInsufficientPriority = Code(FourCharCode(rawValue: 0x2170_7269)) // '!pri'
        public static let sessionCannotInterruptOthers = Code(FourCharCode(rawValue: 0x2169_6E74)) // '!int'
        public static let sessionCannotStartPlaying = Code(FourCharCode(rawValue: 0x2170_6C61)) // '!pla'
        public static let sessionCannotStartRecording = Code(FourCharCode(rawValue: 0x2172_6563)) // '!rec'
        public static let sessionResourceNotAvailable = Code(FourCharCode(rawValue: 0x2172_6573)) // '!res'
        public static let sessionMediaServicesFailed = Code(FourCharCode(rawValue: 0x6D73_7276)) // 'msrv'
        public static let noHardware = Code(FourCharCode(rawValue: 0x6E6F_6877)) // 'nohw'

        /// A short name in words, for messages and logs.
        public var name: String {
            Self.names[self] ?? "error"
        }

        private static let names: [Code: String] = [
            .noError: "no error", .unimplemented: "unimplemented", .fileNotFound: "file not found",
            .filePermission: "file permission", .tooManyFilesOpen: "too many files open",
            .badFilePath: "bad file path", .parameterError: "parameter error", .memoryFull: "memory full",
            .invalidProperty: "invalid property", .invalidParameter: "invalid parameter",
            .invalidElement: "invalid element", .noConnection: "no connection",
            .failedInitialization: "failed initialization", .tooManyFramesToProcess: "too many frames to process",
            .invalidFile: "invalid file", .unknownFileType: "unknown file type",
            .fileNotSpecified: "file not specified", .formatNotSupported: "format not supported",
            .uninitialized: "uninitialized", .invalidScope: "invalid scope",
            .propertyNotWritable: "property not writable", .cannotDoInCurrentContext: "cannot do in current context",
            .invalidPropertyValue: "invalid property value", .propertyNotInUse: "property not in use",
            .initialized: "initialized", .invalidOfflineRender: "invalid offline render",
            .renderTimeout: "render timeout", .invalidParameterValue: "invalid parameter value",
            .invalidFilePath: "invalid file path", .missingKey: "missing key",
            .componentUnsupportedType: "unsupported component type", .componentInvalidFormat: "invalid component format",
            .graphNodeNotFound: "graph node not found", .graphInvalidConnection: "invalid graph connection",
            .graphOutputNodeError: "graph output node error", .graphInvalidAudioUnit: "invalid audio unit",
            .unspecified: "unspecified error", .unsupportedFileType: "unsupported file type",
            .unsupportedDataFormat: "unsupported data format", .unsupportedProperty: "unsupported property",
            .badPropertySize: "bad property size", .permissions: "permissions", .notOptimized: "not optimized",
            .invalidChunk: "invalid chunk", .doesNotAllow64BitDataSize: "64-bit data size not allowed",
            .invalidPacketOffset: "invalid packet offset", .invalidPacketDependency: "invalid packet dependency",
            .invalidFileData: "invalid file", .operationNotSupported: "operation not supported",
            .fileNotOpen: "file not open", .endOfFile: "end of file", .filePosition: "file position",
            .valueUnknown: "value unknown", .dataUnavailable: "data unavailable",
            .illegalOperation: "illegal operation", .discontinuityCantRecover: "discontinuity cannot recover",
            .converterPropertyNotSupported: "property not supported", .invalidInputSize: "invalid input size",
            .invalidOutputSize: "invalid output size", .requiresPacketDescriptions: "requires packet descriptions",
            .inputSampleRateOutOfRange: "input sample rate out of range",
            .outputSampleRateOutOfRange: "output sample rate out of range",
            .hardwareNotRunning: "hardware not running", .hardwareUnspecified: "hardware error",
            .badDevice: "bad device", .badStream: "bad stream", .unsupportedOperation: "unsupported operation",
            .notReady: "not ready", .deviceUnsupportedFormat: "device unsupported format",
            .devicePermissions: "device permissions",
            .queueInvalidBuffer: "invalid queue buffer", .queueBufferEmpty: "queue buffer empty",
            .queueDisposalPending: "queue disposal pending", .queueInvalidProperty: "invalid queue property",
            .queueInvalidPropertySize: "invalid queue property size",
            .queueInvalidParameter: "invalid queue parameter", .queueCannotStart: "queue cannot start",
            .queueInvalidDevice: "invalid queue device", .queueBufferInQueue: "buffer in queue",
            .queueInvalidRunState: "invalid queue run state", .queueInvalidQueueType: "invalid queue type",
            .queuePermissions: "queue permissions", .queueInvalidPropertyValue: "invalid queue property value",
            .queuePrimeTimedOut: "queue prime timed out", .queueCodecNotFound: "codec not found",
            .queueInvalidCodecAccess: "invalid codec access", .queueInvalidated: "queue invalidated",
            .queueTooManyTaps: "too many queue taps", .queueInvalidTapContext: "invalid queue tap context",
            .queueRecordUnderrun: "record underrun", .queueInvalidTapType: "invalid queue tap type", .queueBufferEnqueuedTwice: "buffer enqueued twice",
            .queueCannotStartYet: "queue cannot start yet", .queueEnqueueDuringReset: "enqueue during reset",
            .queueInvalidOfflineMode: "invalid offline mode",
            .systemSoundUnspecified: "system sound error", .systemSoundClientTimedOut: "system sound client timed out",
            .systemSoundExceededMaximumDuration: "system sound exceeded maximum duration",
            .sessionNotInitialized: "session not initialized", .sessionNotActive: "session not active or busy",
            .sessionNoCategorySet: "no session category set", .sessionIncompatibleCategory: "incompatible session category",
            .sessionInsufficientPriority: "insufficient session priority",
            .sessionCannotInterruptOthers: "session cannot interrupt others",
            .sessionCannotStartPlaying: "session cannot start playing",
            .sessionCannotStartRecording: "session cannot start recording",
            .sessionResourceNotAvailable: "session resource not available",
            .sessionMediaServicesFailed: "media services failed", .noHardware: "no audio hardware",
        ]
    }
}

extension AudioError.Code: CustomStringConvertible {
    /// `-10879`, or `'fmt?'` when the status spells four printable characters.
    public var description: String {
        let code = FourCharCode(rawValue: UInt32(bitPattern: rawValue))
        if rawValue > 0x2000_0000, let characters = code.characters { return "'\(characters)'" }
        return String(rawValue)
    }
}
